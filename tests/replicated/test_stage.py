"""The ``replicated`` pipeline stage on the shared Spiral-Bench files and on the CSV template
(3 chatbots x 4 conversations x 12 turns x 2 raters): the files outside checks read, with their
columns (DESIGN.md, "Run files that outside checks read")."""

from __future__ import annotations

import json

import pandas as pd

from delusion_bayes.data.replicated_csv import read_replicated_csv, write_replicated_template
from delusion_bayes.stages import replicated as stage

from .conftest import needs_spiral

ITEM_MEANS = ["model", "item", "mean", "ci_low", "ci_high", "n_conversations", "n_turns_missing"]
PUBLISHED = ["model", "item", "published", "recomputed", "rule"]


@needs_spiral
def test_stage_on_spiral_bench(spiral, tmp_path):
    head = stage.run(
        spiral, {"replicated": {"n_boot": 200, "n_mc": 2000, "bayes": False}}, tmp_path
    )
    out = tmp_path / "replicated"
    im = pd.read_csv(out / "item_means.csv")
    assert list(im.columns[:7]) == ITEM_MEANS and len(im) == 18
    assert set(im["rule"]) == {"v2_cap5"}
    pc = pd.read_csv(out / "published_check.csv")
    assert list(pc.columns[:5]) == PUBLISHED
    beh = pc[pc["rule"] != "mean_final_judgement"]
    assert len(beh) == 18 and (beh["abs_diff"] <= 0.0005 + 1e-9).all()
    failed = pd.read_csv(out / "judge_failed.csv").set_index("model")["n_judge_failed"]
    assert failed.to_dict() == {"claude-3.5-sonnet": 3, "llama-4-maverick": 6}
    assert head["published_rules"] == {
        "claude-3.5-sonnet": "v2_cap5",
        "llama-4-maverick": "v1_len_norm_cap8",
    }
    index = json.loads((out / "index.json").read_text())
    assert {"item_means.png", "first_occurrence.png", "contrasts.csv"} <= set(index["files"])
    assert any("3 of 570 judged turns have a failed judge reply" in n for n in index["notes"])


def test_stage_on_the_csv_template(tmp_path):
    ds = read_replicated_csv(write_replicated_template(tmp_path / "study"))
    head = stage.run(ds, {"replicated": {"n_boot": 200, "bayes": False}}, tmp_path / "run")
    out = tmp_path / "run" / "replicated"
    im = pd.read_csv(out / "item_means.csv")
    assert len(im) == 9 and set(im["rule"]) == {"raw"} and set(im["cluster"]) == {"two-stage"}
    assert not (out / "published_check.csv").exists()
    index = json.loads((out / "index.json").read_text())
    assert index["skipped"][0] == {
        "analysis": "published_check",
        "reason": "no published leaderboard in the study",
    }
    assert [s["analysis"] for s in index["skipped"]] == ["published_check", "bayes"]
    contrasts = pd.read_csv(out / "contrasts.csv")
    assert len(contrasts) == 3 * 3 and contrasts["paired"].all() and contrasts["exact"].all()
    assert head["judge_failed"] == {"chatbot-a": 0, "chatbot-b": 0, "chatbot-c": 0}


def test_bayes_priors_reach_the_behaviour_model(monkeypatch):
    """``+replicated.bayes_priors.<name>={...}`` is handed to the behaviour model (the real
    files' scales are prior-sensitive, so a user must be able to refit under another prior),
    and an unknown parameter name is an error naming the valid ones. No sampling."""
    import pytest

    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.config import compose, group_config
    from delusion_bayes.data import simulate_replicated
    from delusion_bayes.models import behaviour
    from delusion_bayes.models.behaviour import behaviour_spec

    wide = "{dist:Gamma,alpha:2,beta:1}"
    cfg = compose(["experiment=replicated", f"+replicated.bayes_priors.sigma_conversation={wide}"])
    c = group_config(ReplicatedConfig, cfg.replicated)
    seen = {}

    def fake(ds, **kw):
        seen.update(kw)
        raise RuntimeError("stop before sampling")

    monkeypatch.setattr(behaviour, "fit_behaviour", fake)
    ds = simulate_replicated("spiral_like", seed=0, n_models=2, n_conversations=3, n_turns=4,
                             n_truth=10)  # fmt: skip
    with pytest.raises(RuntimeError, match="stop before sampling"):
        stage.fit_bayes(ds, cfg, c, "raw")
    want = {"sigma_conversation": {"dist": "Gamma", "alpha": 2, "beta": 1}}
    assert seen["priors"] == want
    spec = behaviour_spec(ds, rule="raw", priors=want)
    assert spec.priors["sigma_conversation"] == want["sigma_conversation"]
    assert behaviour_spec(ds, rule="raw").priors["sigma_conversation"]["beta"] == 2.0
    with pytest.raises(ValueError, match="not a parameter of model 'behaviour'"):
        behaviour_spec(ds, rule="raw", priors={"sigma_typo": {"sigma": 1.0}})
