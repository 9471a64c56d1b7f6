"""Reliability against published values: Krippendorff (2011), Shrout & Fleiss (1979),
Cohen (1968)."""

from __future__ import annotations

import itertools
import warnings

import hypothesis.extra.numpy as hnp
import krippendorff
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from delusion_bayes.baselines import (
    adjudication_agreement,
    alpha_bootstrap,
    cohen_kappa,
    icc,
    krippendorff_alpha,
    percent_agreement,
    reliability_table,
    weighted_kappa,
)

NAN = np.nan
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers x 12
#: units, values 1-5, missing values
K2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)

#: Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges
SF1979 = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_alpha_krippendorff_2011_worked_example(level, published):
    """Krippendorff (2011), sections C-E: alpha = .743 nominal, .815 ordinal, .849 interval,
    .797 ratio for the 4 x 12 example with missing values (published to 3 decimals)."""
    assert krippendorff_alpha(K2011, level) == pytest.approx(published, abs=5e-4)
    # and to machine precision against the `krippendorff` package
    ref = krippendorff.alpha(reliability_data=K2011, level_of_measurement=level)
    assert krippendorff_alpha(K2011, level) == pytest.approx(ref, rel=1e-12)


def test_alpha_domain_and_errors():
    # a domain covering the data gives the same alpha for interval data
    assert krippendorff_alpha(K2011, "interval", domain=range(1, 7)) == pytest.approx(
        0.8491071, 1e-6
    )
    with pytest.raises(ValueError, match=r"outside the domain \[1\.0, 2\.0, 3\.0, 4\.0\]"):
        krippendorff_alpha(K2011, "interval", domain=(1, 2, 3, 4))
    with pytest.raises(ValueError, match="level='cardinal' is not valid"):
        krippendorff_alpha(K2011, "cardinal")
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha(K2011[0], "interval")
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(krippendorff_alpha(np.ones((3, 5)), "interval"))


def test_alpha_matches_package_on_random_data_with_missing():
    rng = np.random.default_rng(1)
    data = rng.integers(1, 5, size=(6, 300)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    for level in ("nominal", "ordinal", "interval", "ratio"):
        ref = krippendorff.alpha(
            reliability_data=data, level_of_measurement=level, value_domain=[1, 2, 3, 4]
        )
        assert krippendorff_alpha(data, level, domain=(1, 2, 3, 4)) == pytest.approx(ref, 1e-10)


def test_interval_alpha_on_continuous_values_matches_package():
    """Many distinct values (continuous scores) take the moment formula, no V x V matrices;
    same value as the `krippendorff` package (which builds units x V x V)."""
    rng = np.random.default_rng(5)
    data = rng.normal(size=(5, 80)) + rng.normal(size=80)
    data[rng.random(data.shape) < 0.2] = np.nan
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert krippendorff_alpha(data, "interval") == pytest.approx(ref, rel=1e-10)
    # the Krippendorff (2011) example through the same formula
    from delusion_bayes.baselines.alpha import interval_alpha_direct

    assert interval_alpha_direct(K2011) == pytest.approx(0.8491071428571428, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    units=hnp.arrays(float, st.integers(3, 30), elements=st.integers(1, 4).map(float)),
    n_raters=st.integers(2, 6),
    level=st.sampled_from(["nominal", "ordinal", "interval", "ratio"]),
)
def test_alpha_is_one_under_perfect_agreement(units, n_raters, level):
    if np.unique(units).size < 2:
        units = np.append(units, 1.0 if units[0] != 1 else 2.0)
    data = np.tile(units, (n_raters, 1))
    assert krippendorff_alpha(data, level) == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(
    data=hnp.arrays(
        float,
        st.tuples(st.integers(2, 5), st.integers(4, 25)),
        elements=st.one_of(st.integers(1, 4).map(float), st.just(np.nan)),
    ),
    seed=st.integers(0, 100),
)
def test_alpha_invariant_to_rater_and_unit_order(data, seed):
    pairable = (np.sum(~np.isnan(data), axis=0) >= 2).any()
    values = np.unique(data[~np.isnan(data)])
    if not pairable or values.size < 2:
        return
    rng = np.random.default_rng(seed)
    shuffled = data[rng.permutation(data.shape[0])][:, rng.permutation(data.shape[1])]
    with np.errstate(all="ignore"):
        a, b = krippendorff_alpha(data, "ordinal"), krippendorff_alpha(shuffled, "ordinal")
    assert (np.isnan(a) and np.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_alpha_bootstrap_reproducible_and_covers():
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 5, 400).astype(float)
    data = np.clip(truth + rng.integers(-1, 2, size=(4, 400)), 1, 4)
    a = alpha_bootstrap(data, "interval", (1, 2, 3, 4), n_boot=500, seed=3)
    b = alpha_bootstrap(data, "interval", (1, 2, 3, 4), n_boot=500, seed=3)
    c = alpha_bootstrap(data, "interval", (1, 2, 3, 4), n_boot=500, seed=4)
    assert np.array_equal(a["replicates"], b["replicates"])
    assert not np.array_equal(a["replicates"], c["replicates"])
    assert a["alpha"] == pytest.approx(krippendorff_alpha(data, "interval", (1, 2, 3, 4)))
    assert a["ci_low"] < a["alpha"] < a["ci_high"]
    # the pattern-multinomial bootstrap has the spread of a plain unit bootstrap
    plain = [
        krippendorff_alpha(data[:, rng.integers(0, 400, 400)], "interval", (1, 2, 3, 4))
        for _ in range(300)
    ]
    assert np.std(a["replicates"]) == pytest.approx(np.std(plain), rel=0.2)


def _expand(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = table.shape[0]
    a = np.repeat(np.repeat(np.arange(1, k + 1), k), table.ravel())
    b = np.repeat(np.tile(np.arange(1, k + 1), k), table.ravel())
    return a.astype(float), b.astype(float)


def test_kappa_cohen_1968_published_example():
    """Cohen (1968), Psychological Bulletin 70(4): 3 x 3 table of proportions (n = 200)
    .44 .07 .09 / .05 .20 .05 / .01 .03 .06; kappa = .492 and weighted kappa = .348 with
    disagreement weights 0 1 3 / 1 0 6 / 3 6 0 (reproduced in R psych's ?cohen.kappa).

    R 4.2.2, psych 2.2.9, psych::cohen.kappa (re-run 2026-11-29)::

        > cohen <- matrix(c(0.44,0.07,0.09, 0.05,0.20,0.05, 0.01,0.03,0.06),ncol=3,byrow=TRUE)
        > r1 <- cohen.kappa(cohen, matrix(c(0,1,3, 1,0,6, 3,6,0),ncol=3), n.obs=200)
        > c(r1$kappa, r1$weighted.kappa)
        [1] 0.4915254237 0.3478260870
        > r2 <- cohen.kappa(cohen, n.obs=200)          # default: quadratic weights
        [1] 0.4915254237 0.4545454545
        > lin <- 1 - abs(outer(1:3,1:3,"-"))/2
        > r3 <- cohen.kappa(cohen, lin, n.obs=200)
        [1] 0.4915254237 0.4736842105
    """
    a, b = _expand(np.array([[88, 14, 18], [10, 40, 10], [2, 6, 12]]))
    assert cohen_kappa(a, b) == pytest.approx(0.4915254237, abs=1e-9)
    assert weighted_kappa(a, b, [[0, 1, 3], [1, 0, 6], [3, 6, 0]]) == pytest.approx(
        0.3478260870, abs=1e-9
    )
    assert weighted_kappa(a, b, "quadratic") == pytest.approx(0.4545454545, abs=1e-9)
    assert weighted_kappa(a, b, "linear") == pytest.approx(0.4736842105, abs=1e-9)
    assert cohen_kappa(a, b) == pytest.approx(29 / 59, rel=1e-12)
    assert weighted_kappa(a, b, [[0, 1, 3], [1, 0, 6], [3, 6, 0]]) == pytest.approx(8 / 23)
    assert weighted_kappa(a, b, "quadratic") == pytest.approx(5 / 11, rel=1e-12)
    assert weighted_kappa(a, b, "linear") == pytest.approx(9 / 19, rel=1e-12)


def test_kappa_labels_nan_and_errors():
    a = np.array([1, 2, 3, 3, np.nan])
    b = np.array([1, 2, 2, 3, 1])
    # unused category 4 changes the quadratic weights' scale but not kappa's agreement structure
    assert weighted_kappa(a, b, "quadratic", labels=(1, 2, 3)) == pytest.approx(
        weighted_kappa(a[:4], b[:4], "quadratic")
    )
    with pytest.raises(ValueError, match=r"outside the domain"):
        weighted_kappa(a, b, labels=(1, 2))
    with pytest.raises(ValueError, match="weights='cubic'"):
        weighted_kappa(a, b, "cubic")
    with pytest.raises(ValueError, match=r"\(3, 3\) matrix"):
        weighted_kappa(a, b, np.eye(2))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=5, max_size=40),
    st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_symmetric(pairs, weights):
    a = np.array([p[0] for p in pairs], float)
    b = np.array([p[1] for p in pairs], float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # kappa of constant ratings: NaN
        ka = weighted_kappa(a, b, weights, labels=(1, 2, 3, 4))
        kb = weighted_kappa(b, a, weights, labels=(1, 2, 3, 4))
    assert (np.isnan(ka) and np.isnan(kb)) or ka == pytest.approx(kb, abs=1e-12)


def test_icc_shrout_fleiss_1979_table2():
    """Shrout & Fleiss (1979), Table 4 (data of Table 2): ICC(1,1) = .17, ICC(2,1) = .29,
    ICC(3,1) = .71, ICC(1,4) = .44, ICC(2,4) = .62, ICC(3,4) = .91.

    Full precision, F tests and 95% CIs from R 4.2.2, psych 2.2.9 (re-run 2026-11-29)::

        > sf <- matrix(c(9,2,5,8, 6,1,3,2, 8,4,6,8, 7,1,2,6, 10,5,6,9, 6,2,4,7), ncol=4, byrow=TRUE)
        > ICC(sf, lmer=FALSE)$results
          type          ICC            F df1 df2               p  lower bound  upper bound
          ICC1 0.1657417684  1.794678492   5  18 0.1647688083446 -0.13293232487 0.7225600623
          ICC2 0.2897637795 11.027247956   5  15 0.0001345665165  0.01878651337 0.7610843696
          ICC3 0.7148407148 11.027247956   5  15 0.0001345665165  0.34246476503 0.9458582600
         ICC1k 0.4427971337  1.794678492   5  18 0.1647688083446 -0.88444215524 0.9124154203
         ICC2k 0.6200505476 11.027247956   5  15 0.0001345665165  0.07113681530 0.9272320402
         ICC3k 0.9093155424 11.027247956   5  15 0.0001345665165  0.67567471382 0.9858916782
    """
    res = icc(SF1979)
    published = {
        "ICC1": 0.17,
        "ICC2": 0.29,
        "ICC3": 0.71,
        "ICC1k": 0.44,
        "ICC2k": 0.62,
        "ICC3k": 0.91,
    }
    for k, v in published.items():
        assert res.loc[k, "icc"] == pytest.approx(v, abs=0.005)
    r = {
        "ICC1": (0.1657417684, 1.794678492, 5, 18, 0.1647688083446, -0.13293232487, 0.7225600623),
        "ICC2": (0.2897637795, 11.027247956, 5, 15, 0.0001345665165, 0.01878651337, 0.7610843696),
        "ICC3": (0.7148407148, 11.027247956, 5, 15, 0.0001345665165, 0.34246476503, 0.9458582600),
        "ICC1k": (0.4427971337, 1.794678492, 5, 18, 0.1647688083446, -0.88444215524, 0.9124154203),
        "ICC2k": (0.6200505476, 11.027247956, 5, 15, 0.0001345665165, 0.07113681530, 0.9272320402),
        "ICC3k": (0.9093155424, 11.027247956, 5, 15, 0.0001345665165, 0.67567471382, 0.9858916782),
    }
    cols = ["icc", "F", "df1", "df2", "pval", "ci_low", "ci_high"]
    assert list(res.columns) == cols
    assert list(res.index) == list(r)
    for k, vals in r.items():
        np.testing.assert_allclose(res.loc[k, cols].to_numpy(float), vals, rtol=1e-8, atol=1e-10)


def test_icc_listwise_deletion_and_errors():
    data = np.vstack([SF1979, [np.nan, 1, 2, 3]])
    res = icc(data)
    assert res.attrs["n_dropped"] == 1 and res.attrs["n_units"] == 6
    assert res.loc["ICC2", "icc"] == pytest.approx(0.2897637795, abs=1e-9)
    with pytest.raises(ValueError, match="at least 2 complete units"):
        icc(np.array([[1.0, np.nan], [2.0, 3.0]]))


def test_percent_agreement():
    data = np.array([[1, 2, 3, 4], [1, 2, 3, 3], [1, 1, 3, np.nan]])
    # pairs: (0,1) 3/4, (0,2) 2/3, (1,2) 2/3
    assert percent_agreement(data) == pytest.approx(100 * (0.75 + 2 / 3 + 2 / 3) / 3)


def test_reliability_table_paper_like(traj):
    """Table C1 on the simulated study: every rated variable, values equal to direct calls."""
    res = reliability_table(traj, n_boot=200, seed=1)
    tab = res.summary
    expected_rows = [
        "recognition",
        "confidence",
        *[f"intervention:{t}" for t in traj.intervention_type.values],
        "disengagement",
    ]
    assert list(tab.index) == expected_rows
    rec = traj.recognition.values.reshape(4, -1)
    assert tab.loc["recognition", "alpha"] == pytest.approx(
        krippendorff_alpha(rec, "interval", (1, 2, 3, 4))
    )
    kap = [
        weighted_kappa(rec[i], rec[j], "quadratic", (1, 2, 3, 4))
        for i, j in itertools.combinations(range(4), 2)
    ]
    assert tab.loc["recognition", "kappa_q_min"] == pytest.approx(min(kap))
    assert tab.loc["recognition", "icc2_k"] == pytest.approx(icc(rec.T).loc["ICC2k", "icc"])
    # 15 x 30 model-days minus Claude Opus 4.1's missing day 30 (paper: 449 model-days)
    assert (tab["n_units"] == 449).all()
    # the generator was tuned to the paper's reliabilities (alpha .761, ICC(2,k) .948, flag .17)
    assert 0.65 < tab.loc["recognition", "alpha"] < 0.85
    assert tab.loc["disengagement", "alpha"] < 0.35
    assert (tab["alpha_ci_low"] < tab["alpha"]).all() and (
        tab["alpha"] < tab["alpha_ci_high"]
    ).all()
    assert "Table C1" in res.to_latex()


def test_adjudication_agreement_rows(traj):
    rec = traj[["level_a", "level_b"]].copy(deep=True)
    sub = np.zeros(rec.level_b.shape, bool)
    sub[:, ::5] = True  # a 20% subsample of days
    for v in ("level_a", "level_b"):
        rec[v] = rec[v].where(xr.DataArray(sub, dims=rec[v].dims))
    # the second coder is stricter on the first two coded Level-B days
    lb = rec.level_b.values
    hits = np.argwhere(lb == 1)[:2]
    for m, d in hits:
        lb[m, d] = 0
    rec["level_b"] = (rec.level_b.dims, lb)
    res = adjudication_agreement(traj, rec).summary
    n = int(np.sum(sub & ~np.isnan(traj.level_b.values)))
    assert res.loc["level_b", "n_units"] == n
    assert res.loc["level_b", "n_stricter"] == 2
    assert res.loc["level_b", "pct_agreement"] == pytest.approx(100 * (n - 2) / n)
    assert res.loc["level_a", "kappa"] == pytest.approx(1.0)
    table = reliability_table(traj[["recognition", "level_a", "level_b"]], recoded=rec).summary
    assert "level_b (re-coded subsample)" in table.index
