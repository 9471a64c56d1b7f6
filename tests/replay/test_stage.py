"""The ``replay`` pipeline stage writes the contract's tables and figures (Bayes off: fast)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from omegaconf import OmegaConf

from delusion_bayes.config import ReplayConfig

CONTRACT_FILES = (
    "prevalence.csv",
    "deltas.csv",
    "cluster_bootstrap.csv",
    "lopo.csv",
    "family.csv",
    "context_depth.csv",
    "onset.csv",
)


def _cfg(**over):
    base = OmegaConf.structured(ReplayConfig)
    return OmegaConf.create({"replay": OmegaConf.merge(base, over)})


def test_stage_writes_tables_and_figures(tmp_path, small_replay):
    from delusion_bayes.stages import replay as stage

    assert stage.NEEDS == ("replay", "sampler", "inference", "cache_dir")
    assert stage.KIND == ("replay",)
    cfg = _cfg(n_boot=200, bayes=False, figure_formats=["png"])
    headline = stage.run(small_replay, cfg, tmp_path)
    out = tmp_path / "replay"
    for name in CONTRACT_FILES + ("prevalence.png", "prevalence_heatmap.png", "deltas_forest.png",
                                  "context_depth.png", "context_depth_lpm.csv"):  # fmt: skip
        assert (out / name).is_file(), name
    index = json.loads((out / "index.json").read_text())
    assert set(CONTRACT_FILES) <= set(index["files"])
    assert index["headline"] == headline
    assert any("replay.bayes = false" in n for n in index["notes"])
    prev = pd.read_csv(out / "prevalence.csv", keep_default_na=False, na_values=[""])
    assert {"model", "category", "estimate", "ci_low", "ci_high", "truth"} <= set(prev.columns)
    cb = pd.read_csv(out / "cluster_bootstrap.csv")
    assert set(cb["cluster"]) == {"two-stage", "participant", "conversation", "none"}
    # the cluster bootstrap is wider than resampling samples as if independent
    two = cb[cb["cluster"] == "two-stage"]["width_vs_iid"]
    assert two.median() > 1.0
    assert headline["n_models"] == 3 and 0 <= headline["truth_covered_share"] <= 1
    # same seed, same tables
    stage.run(small_replay, cfg, tmp_path / "again")
    pd.testing.assert_frame_equal(
        prev,
        pd.read_csv(
            tmp_path / "again/replay/prevalence.csv", keep_default_na=False, na_values=[""]
        ),  # fmt: skip
    )


def test_stage_cutoff_override(tmp_path, small_replay):
    from delusion_bayes.stages.replay import apply_cutoffs

    code = str(small_replay["code"].values[0])
    strict = apply_cutoffs(small_replay, {code: 10})
    assert float(strict["cutoff"].sel(code=code)) == 10
    assert strict["hit"].sel(code=code).sum() <= small_replay["hit"].sel(code=code).sum()
    with pytest.raises(ValueError, match="names code.*'nope'"):
        apply_cutoffs(small_replay, {"nope": 3})


def test_a_figure_that_fails_is_a_note_not_a_failed_stage(tmp_path, small_replay, monkeypatch):
    """Issue 32: a plotting error was a note in the models stage but failed the whole replay
    stage, taking its written tables' index with it. Now the stage ends, its index lists the
    tables and the other figures, and a note names the figure and the error."""
    from delusion_bayes.stages import replay as stage

    def broken(table, path, formats):
        raise RuntimeError("no font for this label")

    monkeypatch.setattr(stage.plots, "plot_heatmap", broken)
    cfg = _cfg(n_boot=50, bayes=False, figure_formats=["png"])
    stage.run(small_replay, cfg, tmp_path)
    index = json.loads((tmp_path / "replay" / "index.json").read_text())
    assert set(CONTRACT_FILES) <= set(index["files"])
    assert "prevalence.png" in index["files"] and "prevalence_heatmap.png" not in index["files"]
    assert (
        "figure prevalence_heatmap not drawn: RuntimeError: no font for this label"
        in (index["notes"])
    )
