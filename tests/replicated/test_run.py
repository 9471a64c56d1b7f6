"""A replicated study through the pipeline, as a user runs it (issue 50, "Done when"): the
template CSV study (3 chatbots x 4 conversations x 12 turns x 2 raters) and the two shared
Spiral-Bench files, every stage ``ok``, the files outside checks read in place."""

from __future__ import annotations

import pandas as pd
import pytest

from delusion_bayes.cli import init_study
from delusion_bayes.config import compose
from delusion_bayes.errors import ConfigError
from delusion_bayes.pipeline import run

from .conftest import SPIRAL, needs_spiral


def test_template_replicated_study_runs_every_stage(tmp_path):
    """``init-study DIR --replicated`` then ``experiment=replicated data.path=DIR`` (no
    ``data=file``: the path implies it): every configured stage ok or skipped, nothing failed."""
    study = init_study(tmp_path / "study", replicated=True)
    cfg = compose(
        [
            "experiment=replicated",
            f"data.path={study}",
            "replicated.n_boot=200",
            "replicated.bayes=false",
        ]
    )
    record = run(cfg, tmp_path / "run")
    assert record["data"]["sizes"] == {
        "rater": 2, "model": 3, "conversation": 4, "turn": 12, "item": 3
    }  # fmt: skip
    assert record["stages"]["replicated"]["status"] == "ok"
    assert not record["failed"]
    means = pd.read_csv(tmp_path / "run" / "replicated" / "item_means.csv")
    assert len(means) == 3 * 3 and (means["n_conversations"] == 4).all()
    assert (means["ci_low"] <= means["mean"]).all() and (means["mean"] <= means["ci_high"]).all()


@needs_spiral
def test_spiral_bench_runs_and_reproduces_the_leaderboard(tmp_path):
    """``experiment=replicated data=spiral_bench data.path=<shared folder>``: the published
    per-behaviour means of both files reproduce to 0.001 under the rule named per file
    (claude-3.5-sonnet: v2_cap5, llama-4-maverick: v1_len_norm_cap8), and the failed judge turns
    are counted (3 and 6), not zeros."""
    cfg = compose(["experiment=replicated", "data=spiral_bench", f"data.path={SPIRAL}",
                   "replicated.n_boot=200", "replicated.bayes=false"])  # fmt: skip
    record = run(cfg, tmp_path / "run")
    assert record["stages"]["replicated"]["status"] == "ok"
    out = tmp_path / "run" / "replicated"
    check = pd.read_csv(out / "published_check.csv")
    finals = ["off_rails", "safety", "social_dexterity"]  # the 0-10 final judgements, beside
    assert len(check) == 2 * (9 + len(finals))
    assert (check["published"] - check["recomputed"]).abs().max() < 1e-3
    assert check.groupby("model")["rule"].first().to_dict() == {
        "claude-3.5-sonnet": "v2_cap5", "llama-4-maverick": "v1_len_norm_cap8"
    }  # fmt: skip
    means = pd.read_csv(out / "item_means.csv")
    assert set(means["rule"]) == {"v2_cap5"}  # both chatbots on one rule
    failed = pd.read_csv(out / "judge_failed.csv").set_index("model")["n_judge_failed"]
    assert failed.to_dict() == {"claude-3.5-sonnet": 3, "llama-4-maverick": 6}


def test_spiral_bench_source_needs_the_replicated_kind(tmp_path):
    cfg = compose(["data=spiral_bench", "data.kind=trajectory", f"data.path={tmp_path}",
                   "stages=[baselines]"])  # fmt: skip
    with pytest.raises(ConfigError, match="data.kind=replicated"):
        run(cfg, tmp_path / "run")
