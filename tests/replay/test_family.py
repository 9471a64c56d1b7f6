"""Multiplicity over the replay deltas and chatbot rankings (issue 51): Holm and BH per family
equal the library's adjustments of the raw bootstrap p-values, max-T intervals contain the
pointwise ones and are NaN for independent arms, the pooled sign-error probability is the
partial-pooling model's, and rankings follow the category's direction."""

from __future__ import annotations

import numpy as np
import pytest

from delusion_bayes.baselines.multiplicity import benjamini_hochberg, holm
from delusion_bayes.baselines.replay import replay_deltas, replay_rankings
from delusion_bayes.models.family_pooling import pool_family
from delusion_bayes.stages.replay import pooled_sign_errors


@pytest.fixture(scope="module")
def deltas(small_replay):
    return replay_deltas(small_replay, n_boot=400, seed=3)


def test_holm_and_bh_per_level_family(deltas):
    for level, part in deltas.groupby("level"):
        assert (part["family"] == level).all()
        assert (part["family_size"] == part["p_boot"].notna().sum()).all()
        np.testing.assert_allclose(part["p_holm"], holm(part["p_boot"].to_numpy()))
        np.testing.assert_allclose(part["p_bh"], benjamini_hochberg(part["p_boot"].to_numpy()))


def test_one_run_family(small_replay):
    d = replay_deltas(small_replay, n_boot=200, seed=3, family="run")
    assert set(d["family"]) == {"run"} and (d["family_size"] == d["p_boot"].notna().sum()).all()
    with pytest.raises(ValueError, match="family"):
        replay_deltas(small_replay, n_boot=10, family="model")


def test_maxt_intervals_contain_the_pointwise_ones(deltas):
    ok = deltas["se_boot"] > 0
    d = deltas[ok]
    # max-T's critical value is at least the pointwise normal one, so the simultaneous interval
    # is at least as wide as estimate -/+ 1.96 SE; it is centred on the estimate
    assert (d["ci_high_maxt"] - d["ci_low_maxt"] >= 2 * 1.959 * d["se_boot"]).all()
    np.testing.assert_allclose((d["ci_high_maxt"] + d["ci_low_maxt"]) / 2, d["estimate"])
    excl = (d["ci_low_maxt"] > 0) | (d["ci_high_maxt"] < 0)
    assert (excl == (d["p_maxt"] < 0.05)).mean() > 0.95  # the same decision up to ties


def test_independent_arms_have_no_simultaneous_interval(small_replay):
    d = replay_deltas(small_replay, n_boot=200, seed=3, paired=False)
    assert d[["ci_low_maxt", "ci_high_maxt", "p_maxt"]].isna().all(axis=None)
    assert d["p_holm"].notna().any()


def test_pooled_sign_error_is_the_partial_pooling_model(deltas):
    out = pooled_sign_errors(deltas)
    cat = out[(out["family"] == "category") & (out["se_boot"] > 0)]
    ref = pool_family(cat["estimate"], cat["se_boot"])
    np.testing.assert_allclose(cat["p_sign_error"], ref["p_sign_error"])
    assert out["p_sign_error"].between(0, 0.5).all()


def test_rankings_follow_each_categorys_direction(de_replay):
    """Rank 1 = the lowest prevalence of a harm and the highest of 'discourages harm'; the
    baseline transcript is not ranked; the median rank orders the bootstrap estimates."""
    r = replay_rankings(de_replay, n_boot=300, seed=5)
    models = {str(m) for m in de_replay["model"].values} - {"original"}
    assert set(r["model"]) == models
    for cat, part in r.groupby("quantity"):
        expected = "better" if cat == "discourages harm" else "worse"
        assert (part["higher_is"] == expected).all()
        best = part.loc[part["rank_median"].idxmin(), "estimate"]
        extreme = part["estimate"].max() if expected == "better" else part["estimate"].min()
        assert best == extreme, cat
        assert np.isclose(part["p_best"].sum(), 1.0)


def test_no_ranking_below_three_chatbots(small_replay):
    assert replay_rankings(small_replay, n_boot=50) is None  # 2 chatbots beside the original
