"""Exact rank-sum permutation tests (R coin references) and the pre-specified contrasts."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from delusion_bayes.baselines import (
    ContrastConfig,
    contrast_groups,
    milestones,
    permutation_contrasts,
    rank_sum_test,
)

LATE = [3, 6, 5, 10, 16, 23]
EARLY = [21, 23, 24, 25, 10, 31, 31, 31, 31]
X12 = [1, 4, 1, 2, 5, 3, 2, 3, 3, 1, 5, 5]
Y15 = [2, 2, 1, 5, 5, 1, 1, 5, 5, 2, 2, 1, 4, 1, 4]


@pytest.mark.parametrize(
    ("x", "y", "alternative", "statistic", "pvalue"),
    [
        (LATE, EARLY, "two-sided", 25, 0.0041958041958042),
        (LATE, EARLY, "less", 25, 0.0023976023976024),
        (LATE, EARLY, "greater", 25, 0.998801198801199),
        (X12, Y15, "two-sided", 175.5, 0.722943523475224),
        (X12, Y15, "less", 175.5, 0.649228134603017),
        (X12, Y15, "greater", 175.5, 0.356045262674688),
    ],
)
def test_exact_rank_sum_with_ties_matches_coin(x, y, alternative, statistic, pvalue):
    """R 4.2.2, coin 1.4-2 (exact shift algorithm, midranks; re-run 2026-11-29); statistic =
    linear statistic = rank sum of the first group::

        > library(coin)
        > a <- c(3, 6, 5, 10, 16, 23); b <- c(21, 23, 24, 25, 10, 31, 31, 31, 31)
        > d <- data.frame(y = c(a, b), g = factor(rep(c("a", "b"), c(6, 9))))
        > r <- wilcox_test(y ~ g, data = d, distribution = "exact", alternative = "two.sided")
        > statistic(r, type = "linear"); pvalue(r)
        25   0.0041958041958042     (less: 0.0023976023976024, greater: 0.998801198801199)
        > set.seed(1); x <- sample(1:5, 12, TRUE); y <- sample(1:5, 15, TRUE)
        > # x: 1 4 1 2 5 3 2 3 3 1 5 5   y: 2 2 1 5 5 1 1 5 5 2 2 1 4 1 4
        > d2 <- data.frame(v = c(x, y), g = factor(rep(c("x", "y"), c(12, 15))))
        > wilcox_test(v ~ g, data = d2, distribution = "exact")   # two.sided / less / greater
        175.5   0.722943523475224 / 0.649228134603017 / 0.356045262674688
    """
    r = rank_sum_test(x, y, alternative)
    assert r.exact
    assert r.statistic == statistic
    assert r.pvalue == pytest.approx(pvalue, rel=1e-12)
    assert r.n_arrangements == math.comb(len(x) + len(y), len(x))
    assert r.summary.loc[0, "pvalue"] == r.pvalue


@pytest.mark.slow
def test_exact_rank_sum_n200_with_ties_matches_coin():
    """n = 200 (100 + 100), heavy ties: C(200, 100) ~ 9e58 splits, exact by recursion.

    R 4.2.2, coin 1.4-2 (re-run 2026-11-29)::

        > x <- (0:99 * 7) %% 31 + 1; y <- (0:99 * 11) %% 29 + 3
        > d <- data.frame(v = c(x, y), g = factor(rep(c("x", "y"), c(100, 100))))
        > wilcox_test(v ~ g, data = d, distribution = "exact")                  # two.sided
        9727   0.430917000501683
        > wilcox_test(v ~ g, data = d, distribution = "exact", alternative = "less")
        9727   0.215458500250841
    """
    x = (np.arange(100) * 7) % 31 + 1
    y = (np.arange(100) * 11) % 29 + 3
    r = rank_sum_test(x, y)
    assert r.exact and r.statistic == 9727
    assert r.pvalue == pytest.approx(0.430917000501683, rel=1e-10)
    assert rank_sum_test(x, y, "less").pvalue == pytest.approx(0.215458500250841, rel=1e-10)


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_exact_matches_scipy_permutation_test_enumeration(alternative):
    """scipy.stats.permutation_test enumerates all C(15, 6) = 5005 splits of the paper-sized
    contrast (6 vs 9 models, tied censored latencies at 31) on midranks: same p to 1e-12.

    scipy's two-sided p is 2 min(P_less, P_greater) (capped at 1), not P(|T - E T| >= |t - E T|);
    the two agree only for symmetric null distributions, so the two-sided reference here is the
    enumerated distribution itself with the |T - E T| rule."""
    pooled = stats.rankdata(np.r_[LATE, EARLY])
    m = len(LATE)
    res = stats.permutation_test(
        (pooled[:m], pooled[m:]),
        lambda a, b, axis: np.sum(a, axis=axis),
        permutation_type="independent",
        alternative="two-sided" if alternative == "two-sided" else alternative,
        n_resamples=np.inf,
        vectorized=True,
    )
    assert res.null_distribution.size == math.comb(15, 6)
    r = rank_sum_test(LATE, EARLY, alternative)
    assert r.statistic == res.statistic
    null, e = res.null_distribution, m * (len(pooled) + 1) / 2
    if alternative == "two-sided":
        ref = np.mean(np.abs(null - e) >= abs(r.statistic - e) - 1e-9)
    else:
        ref = res.pvalue
    assert r.pvalue == pytest.approx(ref, rel=1e-12)


def test_exact_without_ties_matches_scipy_mannwhitneyu():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=40), rng.normal(0.3, 1, size=60)
    for alt in ("two-sided", "less", "greater"):
        ref = stats.mannwhitneyu(x, y, alternative=alt, method="exact")
        r = rank_sum_test(x, y, alt)
        assert r.statistic - 40 * 41 / 2 == ref.statistic
        assert r.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=6),
    st.lists(st.integers(1, 5), min_size=1, max_size=6),
    st.sampled_from(["two-sided", "less", "greater"]),
)
def test_exact_equals_full_enumeration(x, y, alternative):
    """Against brute force over all C(n, k) splits with midranks."""
    pooled = np.array(x + y, float)
    r2 = 2 * stats.rankdata(pooled)
    m, big_n = len(x), len(pooled)
    t, e = r2[:m].sum(), m * (big_n + 1)
    sums = np.array([r2[list(c)].sum() for c in itertools.combinations(range(big_n), m)])
    if alternative == "less":
        p = np.mean(sums <= t + 1e-9)
    elif alternative == "greater":
        p = np.mean(sums >= t - 1e-9)
    else:
        p = np.mean(np.abs(sums - e) >= abs(t - e) - 1e-9)
    assert rank_sum_test(x, y, alternative).pvalue == pytest.approx(p, rel=1e-10)


def test_monte_carlo_above_limit_says_so():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=30), rng.normal(size=30)
    exact = rank_sum_test(x, y)
    mc = rank_sum_test(x, y, max_exact=20, n_mc=20_000, seed=1)
    assert not mc.exact and "Monte Carlo" in mc.method
    assert mc.pvalue == pytest.approx(exact.pvalue, abs=0.02)
    assert mc.pvalue == rank_sum_test(x, y, max_exact=20, n_mc=20_000, seed=1).pvalue


def test_rank_sum_errors():
    with pytest.raises(ValueError, match="NaN"):
        rank_sum_test([1, np.nan], [2, 3])
    assert rank_sum_test([1, np.nan], [2, 3], nan_policy="omit").n_x == 1
    with pytest.raises(ValueError, match="alternative='bigger' is not valid"):
        rank_sum_test([1], [2], "bigger")


def test_contrast_groups(traj):
    a, b = contrast_groups(
        traj, {"name": "c", "by": "cohort", "a": ["late-2025"], "b": ["earlier"]}
    )
    assert a.sum() == 6 and b.sum() == 9 and not (a & b).any()
    a, b = contrast_groups(traj, ContrastConfig(name="g", by="generation", a=[4.5]))
    assert a.sum() == 3 and b.sum() == 12  # 4.5 matches "4.5"; b = the rest
    a, b = contrast_groups(
        traj, {"name": "m", "by": "model", "a": ["GPT-4o"], "b": ["DeepSeek-V3"]}
    )
    assert a.sum() == 1 and b.sum() == 1
    with pytest.raises(ValueError, match=r"by='family' is not a coordinate.*vendor"):
        contrast_groups(traj, {"name": "x", "by": "family", "a": ["x"]})
    with pytest.raises(ValueError, match=r"vendor=\['mistral'\].*available values.*anthropic"):
        contrast_groups(traj, {"name": "x", "by": "vendor", "a": ["mistral"]})
    with pytest.raises(ValueError, match="groups overlap"):
        contrast_groups(traj, {"name": "x", "by": "vendor", "a": ["google"], "b": ["google"]})
    with pytest.raises(ValueError, match="unknown key"):
        contrast_groups(traj, {"name": "x", "by": "vendor", "a": ["google"], "side": "less"})


def test_permutation_contrasts_on_paper_like(traj, traj_consensus):
    ms = milestones(traj_consensus.recognition, traj.level_b, level_a=traj.level_a)
    ms = ms.assign_coords({c: traj[c] for c in ("vendor", "generation", "cohort")})
    ms["k"] = ("model", np.where(np.arange(15) == 3, np.nan, np.linspace(0.1, 3, 15)))
    res = permutation_contrasts(
        ms,
        [
            {"name": "cohort", "by": "cohort", "a": ["late-2025"], "b": ["earlier"],
             "alternative": "less", "quantities": ["first_clinical", "k"]},
        ],
    )  # fmt: skip
    tab = res.summary.set_index("quantity")
    mask = traj.cohort.values == "late-2025"
    fc = ms.first_clinical.values
    ref = rank_sum_test(fc[mask], fc[~mask], "less")
    assert tab.loc["first_clinical", "pvalue"] == ref.pvalue
    assert tab.loc["first_clinical", "n_arrangements"] == math.comb(15, 6)
    # the model with NaN k is listed, not silently lost
    assert tab.loc["k", "dropped"] == str(traj.model.values[3])
    assert tab.loc["k", "n_a"] + tab.loc["k", "n_b"] == 14
    with pytest.raises(ValueError, match="quantity 'onset' is not available"):
        permutation_contrasts(ms, [{"name": "x", "by": "cohort", "a": ["earlier"],
                                    "quantities": ["onset"]}])  # fmt: skip
