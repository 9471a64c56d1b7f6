"""Holm and BH adjusted p-values against R's ``p.adjust``; max-T simultaneous intervals by
simulation and against the Sidak critical value."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from delusion_bayes.baselines import adjust_family, benjamini_hochberg, holm, maxt_intervals

#: ties (0.04 four times) and a NaN (not counted: m = 11)
P = [0.01, 0.04, 0.04, 0.03, np.nan, 0.005, 0.5, 0.2, 0.04, 0.001, 0.04, 0.9]


def test_holm_and_bh_match_r_p_adjust():
    """R 4.2.2 (Debian r-base-core), run 2026 for this test::

        p <- c(0.01, 0.04, 0.04, 0.03, NA, 0.005, 0.5, 0.2, 0.04, 0.001, 0.04, 0.9)
        sprintf("%.17g", p.adjust(p, "holm")); sprintf("%.17g", p.adjust(p, "BH"))

    R drops the NA from the family (n = 11) and keeps it NA, as ours does.
    """
    r_holm = [0.09, 0.28, 0.28, 0.24, np.nan, 0.05, 1, 0.6, 0.28, 0.011, 0.28, 1]
    r_bh = [
        0.036666666666666667,
        0.055,
        0.055,
        0.055,
        np.nan,
        0.0275,
        0.55000000000000004,
        0.24444444444444446,
        0.055,
        0.011,
        0.055,
        0.9,
    ]
    np.testing.assert_allclose(holm(P), r_holm, rtol=0, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(benjamini_hochberg(P), r_bh, rtol=0, atol=1e-12, equal_nan=True)


def test_adjust_family_per_family_and_errors():
    df = pd.DataFrame({"family": ["a"] * 12 + ["b"] * 3, "pvalue": P + [0.01, 0.02, 0.03]})
    out = adjust_family(df, family_col="family")
    np.testing.assert_allclose(out["p_holm"][:12], holm(P), equal_nan=True)
    # family b alone: R p.adjust(c(.01,.02,.03), "holm") = 0.03 0.04 0.04; "BH" = 0.03 x 3
    np.testing.assert_allclose(out["p_holm"][12:], [0.03, 0.04, 0.04])
    np.testing.assert_allclose(out["p_bh"][12:], [0.03, 0.03, 0.03])
    assert out["family_size"].tolist() == [11] * 12 + [3] * 3
    assert "p_holm" not in df.columns  # a copy
    one = adjust_family(df)  # one family of 14
    assert (one["family_size"] == 14).all()
    with pytest.raises(ValueError, match="p_col='p' is not a column"):
        adjust_family(df, p_col="p")
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        holm([0.1, 1.2])


def test_maxt_critical_value_is_sidak_for_independent_items():
    """20 independent N(0, 1) items: the max-T critical value is the Sidak quantile
    ``Phi^-1((1 + 0.95^(1/20)) / 2) = 3.016``; 20,000 replicates give it to ~0.03."""
    rng = np.random.default_rng(1)
    boot = xr.DataArray(rng.standard_normal((20_000, 20)), dims=("resample", "item"))
    out = maxt_intervals(boot, np.zeros(20))
    sidak = stats.norm.ppf((1 + 0.95 ** (1 / 20)) / 2)
    assert out["crit"].iloc[0] == pytest.approx(sidak, abs=0.04)
    assert list(out["item"]) == [str(i) for i in range(20)]
    np.testing.assert_allclose(out["upper"], out["crit"] * out["se"])


def test_maxt_simultaneous_coverage_and_pointwise_undercoverage():
    """400 independent normal families of 20 (true effects drawn once, estimate = truth +
    N(0, se), parametric bootstrap of 1,000 replicates): the max-T intervals cover all 20 at
    once in about 95% of families (MC SE 0.011), the pointwise 95% intervals in about
    0.95^20 = 0.36."""
    rng = np.random.default_rng(7)
    theta = rng.normal(0, 2, 20)
    se = rng.uniform(0.5, 2, 20)
    sim_cover = point_cover = 0
    n_fam = 400
    for _ in range(n_fam):
        est = theta + se * rng.standard_normal(20)
        boot = est + se * rng.standard_normal((1000, 20))
        out = maxt_intervals(boot, est)
        sim_cover += bool(((out["lower"] <= theta) & (theta <= out["upper"])).all())
        half = 1.96 * out["se"]
        point_cover += bool(((est - half <= theta) & (theta <= est + half)).all())
    assert abs(sim_cover / n_fam - 0.95) < 0.035
    assert abs(point_cover / n_fam - 0.95**20) < 0.08
    assert point_cover / n_fam < 0.5


def test_maxt_p_values_reject_only_the_real_effect():
    rng = np.random.default_rng(3)
    est = np.array([0.0, 0.1, 5.0])
    out = maxt_intervals(est + rng.standard_normal((4000, 3)), est, names=["a", "b", "c"])
    assert out["p_maxt"].tolist()[2] == 0.0
    assert out["p_maxt"].iloc[0] > 0.9
    assert out.loc[2, "lower"] > 0 > out.loc[0, "lower"]
