"""Baselines of replicated studies: item means with conversation-clustered bootstrap intervals,
first occurrence, chatbot contrasts; hand-computed cases and the real Spiral-Bench files.

References: Davison & Hinkley (1997), sec. 3.8 (cluster bootstrap); Good (2005), sec. 3.6.2
(sign-flip permutation test); Spiral-Bench (Paech 2025, github.com/sam-paech/spiral-bench,
6b990fa) for the per-turn rule ``min(metric, 5)``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from delusion_bayes.baselines.replicated import item_means
from delusion_bayes.baselines.replicated_compare import (
    chatbot_contrasts,
    first_occurrence,
    first_occurrence_summary,
    sign_flip_test,
    weighted_medians,
)

from .conftest import SPIRAL, needs_spiral, tiny_study


def test_bootstrap_interval_equals_a_hand_computation():
    """One chatbot, 4 conversations whose means are 0, 1, 2, 5, no categories: the interval is
    the 2.5/97.5% quantiles of the mean of 4 conversations drawn with replacement, drawn here
    by hand with the same generator (``integers(0, 4, (n_boot, 4))``)."""
    values = np.array([0.0, 1.0, 2.0, 5.0])
    ds = tiny_study([values.tolist()])
    got = item_means(ds, rule="raw", n_boot=4000, seed=3).iloc[0]
    draws = np.random.default_rng(3).integers(0, 4, size=(4000, 4))
    lo, hi = np.quantile(values[draws].mean(axis=1), [0.025, 0.975])
    assert got["mean"] == 2.0
    assert got["cluster"] == "conversation"
    assert got["ci_low"] == pytest.approx(lo, abs=1e-12)
    assert got["ci_high"] == pytest.approx(hi, abs=1e-12)
    # and they are the quantiles of the exact bootstrap distribution (4**4 equally likely
    # draws): P(mean <= 0.25) = 5/256 < 2.5% < P(mean <= 0.5) = 15/256, and
    # P(mean <= 3.75) = 247/256 < 97.5% < P(mean <= 4) = 251/256
    assert (lo, hi) == (0.5, 4.0)


def test_two_stage_when_categories_exist_and_wider_when_they_differ():
    """Categories A = {0, 1}, B = {4, 5}: resampling categories first keeps their difference in
    the interval (two-stage), which conversations i.i.d. average away."""
    means = [[0.0, 1.0, 4.0, 5.0]]
    two = item_means(tiny_study(means, [["A", "A", "B", "B"]]), "raw", 4000, 0).iloc[0]
    one = item_means(tiny_study(means), "raw", 4000, 0).iloc[0]
    assert two["cluster"] == "two-stage" and one["cluster"] == "conversation"
    assert two["mean"] == one["mean"] == 2.5
    assert two["ci_high"] - two["ci_low"] > one["ci_high"] - one["ci_low"]
    assert two["ci_low"] <= 0.5 and two["ci_high"] >= 4.5  # both "all A" and "all B" resamples


def test_weighted_medians_are_medians_of_the_repeated_values():
    rng = np.random.default_rng(1)
    values = rng.normal(size=7)
    w = rng.integers(0, 4, size=(50, 7))
    w[w.sum(axis=1) == 0, 0] = 1
    want = [np.median(np.repeat(values, row)) for row in w]
    assert np.allclose(weighted_medians(values, w), want)


def test_sign_flip_test_by_hand():
    """d = (1, 2, 3): the 8 sign vectors give sums +-6, +-4, +-2, 0, 0; |sum| >= 6 twice: 2/8."""
    assert sign_flip_test(np.array([1.0, 2.0, 3.0])) == (0.25, True, 8.0)
    assert sign_flip_test(np.array([1.0, -1.0]))[0] == 1.0
    p, exact, n = sign_flip_test(np.arange(1.0, 21.0), max_exact=16, n_mc=20_000, seed=0)
    assert not exact and n == 20_000 and p == pytest.approx(1 / 20_001)


def test_contrasts_paired_by_prompt_or_rank_sum():
    """Two chatbots on the same 3 prompts: paired sign-flip on the differences (2, 2, 2 ->
    p = 2/8); without prompts: the exact rank-sum test ({3, 4, 5} vs {1, 2, 3}: p = 0.2)."""
    ds = tiny_study([[3.0, 4.0, 5.0], [1.0, 2.0, 3.0]])
    unpaired = chatbot_contrasts(ds, rule="raw").iloc[0]
    assert not unpaired["paired"] and unpaired["diff"] == 2.0
    from delusion_bayes.baselines.permutation import rank_sum_test

    assert unpaired["pvalue"] == rank_sum_test([3.0, 4.0, 5.0], [1.0, 2.0, 3.0]).pvalue
    prompts = np.array([["p1", "p2", "p3"], ["p1", "p2", "p3"]], dtype=object)
    paired = chatbot_contrasts(ds.assign_coords(prompt=(("model", "conversation"), prompts)), "raw")
    row = paired.iloc[0]
    assert row["paired"] and row["exact"] and row["pvalue"] == 0.25 and row["n_a"] == 3


def test_first_occurrence_censored_at_last_scored_turn_plus_one():
    """Scores by turn: c1 = 0, 0, 2, 0 (first turn 3); c2 = 0, NaN, 0, NaN (never; the last
    scored turn is 3, so censored at 4)."""
    ds = tiny_study([[0.0, 0.0]], n_turns=4)
    score = ds["score"].values.copy()
    score[0, 0, 0, :, 0] = [0, 0, 2, 0]
    score[0, 0, 1, :, 0] = [0, np.nan, 0, np.nan]
    ds["score"] = (ds["score"].dims, score)
    fo = first_occurrence(ds).set_index("conversation")
    assert fo.loc["c1", ["first_turn", "observed", "censor_turn"]].tolist() == [3.0, True, 5.0]
    assert fo.loc["c2", ["first_turn", "observed", "censor_turn"]].tolist() == [4.0, False, 4.0]
    s = first_occurrence_summary(fo.reset_index(), n_boot=200, seed=0).iloc[0]
    assert s["share_occurring"] == 0.5 and s["median_first_turn"] == 3.5


@needs_spiral
def test_item_means_on_one_rule_left_out_failures_and_intervals(spiral):
    """Both chatbots on v2_cap5 (Spiral-Bench's current rule) with failed turns left out: the
    mean of pushback equals a plain computation from the JSON, every interval contains its mean,
    and the failed turns are counted (3 and 6)."""
    im = item_means(spiral, rule="v2_cap5", n_boot=300, seed=1)
    assert set(im["rule"]) == {"v2_cap5"} and set(im["cluster"]) == {"two-stage"}
    assert (im["n_conversations"] == 30).all()
    assert ((im["ci_low"] <= im["mean"]) & (im["mean"] <= im["ci_high"])).all()
    assert (
        (im["share_ci_low"] <= im["share_with"]) & (im["share_with"] <= im["share_ci_high"])
    ).all()
    missing = im.groupby("model")["n_turns_missing"].first().to_dict()
    assert missing == {"claude-3.5-sonnet": 3, "llama-4-maverick": 6}
    for model in ("claude-3.5-sonnet", "llama-4-maverick"):
        run = json.loads((SPIRAL / f"{model}.json").read_text())["1"]["eval_prompts_v0.2.json"]
        conv = []
        for (c,) in run.values():
            turns = [
                min(j["metrics"]["pushback"], 5) for j in c["judgements"].values() if "metrics" in j
            ]
            conv.append(np.mean(turns))
        got = im[(im["model"] == model) & (im["item"] == "pushback")]["mean"].item()
        assert got == pytest.approx(np.mean(conv), abs=1e-12)


def test_item_rankings_use_item_means_resamples():
    """Rank 1 = the highest mean (no direction is declared for an item); the estimate is the
    median of the same resamples item_means' intervals come from, so it lies inside them; 4
    chatbots, every item ranked; fewer than 3 chatbots: None."""
    import numpy as np

    from delusion_bayes.baselines.replicated import item_means, item_rankings
    from delusion_bayes.data.replicated_simulate import simulate_replicated

    r = simulate_replicated(seed=0)
    ds = r[0] if isinstance(r, tuple) else r
    ranks = item_rankings(ds, n_boot=300, seed=2)
    means = item_means(ds, n_boot=300, seed=2).set_index(["model", "item"])
    assert set(ranks["quantity"]) == {str(i) for i in ds["item"].values}
    assert (ranks["higher_is"] == "better").all()
    for q, part in ranks.groupby("quantity"):
        top = part.loc[part["rank_median"].idxmin(), "model"]
        assert means.xs(q, level="item")["mean"].idxmax() == top, q
        m = means.loc[list(zip(part["model"], [q] * len(part), strict=True))]
        assert (m["ci_low"].to_numpy() <= part["estimate"].to_numpy() + 1e-12).all()
        assert (part["estimate"].to_numpy() <= m["ci_high"].to_numpy() + 1e-12).all()
        assert np.isclose(part["p_best"].sum(), 1.0)
    assert item_rankings(ds.isel(model=[0, 1]), n_boot=50) is None


def test_replicated_contrasts_carry_holm_and_bh_over_the_run():
    """Issue 51: every chatbot pair x behaviour of a replicated run is one family; its Holm and
    BH columns equal the library's adjustments of the raw p-values."""
    import numpy as np

    from delusion_bayes.baselines.multiplicity import benjamini_hochberg, holm
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.data.replicated_simulate import simulate_replicated
    from delusion_bayes.stages.replicated import analyse

    r = simulate_replicated(seed=0)
    ds = r[0] if isinstance(r, tuple) else r
    con = analyse(ds, ReplicatedConfig(n_boot=100, n_mc=500))["contrasts"]
    p = con["pvalue"].to_numpy()
    np.testing.assert_allclose(con["p_holm"], holm(p))
    np.testing.assert_allclose(con["p_bh"], benjamini_hochberg(p))
    assert (con["family_size"] == len(con)).all() and len(con) == 6 * ds.sizes["item"]
