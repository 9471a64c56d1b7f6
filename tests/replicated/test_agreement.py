"""Reliability per item and the paper's milestones per conversation in replicated studies
(``baselines.replicated_agreement``; issue 50 item 3), and the stage files they become.

Sources: Krippendorff's alpha is ``baselines.alpha`` (checked against Krippendorff 2011's
worked examples in ``tests/test_alpha.py``); here it must equal that function on the
(rater x judged turn) matrix at the level the item's scale names. Milestones follow the
trajectory paper's Table 1 rules (consensus >= 3; first run of 3 turns at 4; censored at the
last turn + 1), computed by hand below.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.baselines import krippendorff_alpha
from delusion_bayes.baselines.replicated_agreement import (
    conversation_milestones,
    milestone_summary,
    reliability,
)
from delusion_bayes.data.replicated import item_scale_coords
from delusion_bayes.data.replicated_simulate import simulate_replicated
from delusion_bayes.stages import replicated as stage

from .conftest import needs_spiral


def two_rater_study(r1: list[list[float]], r2: list[list[float]]) -> xr.Dataset:
    """One chatbot, conversations as rows of turns, two raters of ``recognition`` (1-4)."""
    score = np.array([r1, r2], dtype=float)[:, None, :, :, None]  # (R, M, C, T, I)
    n_c, n_t = score.shape[2], score.shape[3]
    return xr.Dataset(
        {
            "score": (("rater", "model", "conversation", "turn", "item"), score),
            "has_conversation": (("model", "conversation"), np.ones((1, n_c), dtype=bool)),
        },
        coords={
            "rater": ["R1", "R2"],
            "rater_kind": ("rater", ["human", "judge"]),
            "model": ["m1"],
            "conversation": [f"c{i + 1}" for i in range(n_c)],
            "turn": np.arange(1, n_t + 1),
            "item": ["recognition"],
            **item_scale_coords(["ordinal"], [1.0], [4.0]),
        },
        attrs={"kind": "replicated", "source": "test"},
    )


NAN = np.nan


def test_milestones_per_conversation_by_hand():
    """Conversation 1: medians 1, 2, 3, 3.5, 4, 4, 4 -> first clinical 3 (>= 3), first stable
    5 (turns 5-7 at 4; 3.5 at turn 4 is clinical, not stage 4: half_rule keep). Conversation
    2: rated on turns 1-4 only, never clinical -> both censored at 5 (its last rated turn + 1),
    not at the study's 8."""
    r1 = [[1, 2, 3, 3, 4, 4, 4], [1, 1, 2, 2, NAN, NAN, NAN]]
    r2 = [[1, 2, 3, 4, 4, 4, 4], [1, 2, 2, 2, NAN, NAN, NAN]]
    table = conversation_milestones(two_rater_study(r1, r2)).set_index(
        ["conversation", "milestone"]
    )
    assert table.loc[("c1", "first_clinical"), "first_turn"] == 3.0
    assert table.loc[("c1", "first_stable"), "first_turn"] == 5.0
    assert table.loc[("c1", "first_stable"), "observed"]
    for name in ("first_clinical", "first_stable"):
        row = table.loc[("c2", name)]
        assert (row["first_turn"], row["observed"], row["censor_turn"]) == (5.0, False, 5.0)
    summary = milestone_summary(table.reset_index(), n_boot=200, seed=1)
    clinical = summary.set_index("milestone").loc["first_clinical"]
    assert clinical["n_observed"] == 1 and clinical["share_occurring"] == 0.5
    assert clinical["median_first_turn"] == 4.0  # median of 3 and 5 (censored)


def test_reliability_is_krippendorff_alpha_at_the_scale_level():
    ds = simulate_replicated(seed=3, n_models=2, n_conversations=6, n_truth=50)
    rel, skipped = reliability(ds, n_boot=100, seed=0)
    assert skipped == [] and list(rel["item"]) == list(ds["item"].values)
    assert list(rel["level"]) == ["ordinal", "interval", "interval"]
    for row in rel.itertuples():
        data = ds["score"].sel(item=row.item).values.reshape(2, -1)
        domain = (1, 2, 3, 4) if row.level == "ordinal" else None
        assert row.alpha == pytest.approx(krippendorff_alpha(data, row.level, domain), abs=1e-12)
        assert row.ci_low <= row.alpha <= row.ci_high
        assert row.n_units == 2 * 6 * 12 and row.n_raters == 2


def test_reliability_interval_covers_the_population_alpha():
    """A simulated 2-rater study of 30 conversations per chatbot against the same chatbots and
    raters rated over 1,000 conversations (the population alpha, sampling error < 0.01):
    measured (2026-12, seeds 0-3) 12 of 12 intervals cover; recognition alpha 0.57-0.72, the
    hurdle counts 0.20-0.32 (each rater's zero/non-zero draw is independent given the stage)."""
    small = reliability(simulate_replicated(seed=0, n_conversations=30, n_truth=10), 500)[0]
    big = reliability(simulate_replicated(seed=0, n_conversations=1000, n_truth=10), 10)[0]
    both = small.merge(big[["item", "alpha"]], on="item", suffixes=("", "_population"))
    assert ((both["ci_low"] <= both["alpha_population"])
            & (both["alpha_population"] <= both["ci_high"])).all()  # fmt: skip
    rec = both.set_index("item").loc["recognition"]
    assert rec["alpha_population"] == pytest.approx(0.676, abs=0.02)


def test_one_rater_items_and_no_recognition_are_skipped_with_reasons(tmp_path):
    ds = simulate_replicated("spiral_like", seed=0, n_conversations=6, n_truth=50)
    stage.run(ds, {"replicated": {"n_boot": 100, "n_mc": 500, "bayes": False}}, tmp_path)
    out = tmp_path / "replicated"
    assert not (out / "reliability.csv").exists() and not (out / "milestones.csv").exists()
    skipped = {s["analysis"]: s for s in json.loads((out / "index.json").read_text())["skipped"]}
    assert (
        "pushback, delusion_reinforcement, sycophancy: 1 rater(s)"
        in skipped["reliability"]["reason"]
    )
    assert skipped["milestones"]["reason"].startswith("no 'recognition' item")
    assert skipped["milestones"]["files"] == ["milestones.csv", "milestones_conversations.csv"]


def test_stage_writes_reliability_and_milestones(tmp_path):
    ds = simulate_replicated(seed=0, n_models=2, n_conversations=8, n_truth=50)
    head = stage.run(ds, {"replicated": {"n_boot": 200, "bayes": False}}, tmp_path)
    out = tmp_path / "replicated"
    rel = pd.read_csv(out / "reliability.csv")
    assert list(rel.columns[:7]) == [
        "item", "n_raters", "n_units", "alpha", "ci_low", "ci_high", "level"
    ]  # fmt: skip
    assert head["reliability_alpha"]["recognition"] == pytest.approx(rel["alpha"].iloc[0])
    ms = pd.read_csv(out / "milestones.csv")
    assert len(ms) == 2 * 2 and set(ms["milestone"]) == {"first_clinical", "first_stable"}
    per_conv = pd.read_csv(out / "milestones_conversations.csv")
    assert len(per_conv) == 2 * 8 * 2 and (per_conv["censor_turn"] == 13).all()


@needs_spiral
def test_spiral_bench_has_one_judge_and_no_recognition(spiral):
    rel, skipped = reliability(spiral, n_boot=10)
    assert rel.empty and len(skipped) == 1 and "1 rater(s)" in skipped[0]["reason"]
    assert conversation_milestones(spiral) is None
