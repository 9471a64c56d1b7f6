"""Logistic fits (Table D1): NIST StRD Rat42 certified values, flags, bootstrap, recovery."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import curve_fit

from delusion_bayes.baselines import (
    consensus_np,
    fit_logistic,
    fit_logistic_batch,
    logistic,
    logistic_bootstrap,
)

#: NIST StRD nonlinear regression, Rat42 (Ratkowsky 1983, pasture yield; higher difficulty),
#: https://www.itl.nist.gov/div898/strd/nls/data/ratkowsky2.shtml
#: model y = b1 / (1 + exp(b2 - b3 x)): with floor = 0, L = b1, k = b3, t50 = b2 / b3
RAT42_X = np.array([9.0, 14.0, 21.0, 28.0, 42.0, 57.0, 63.0, 70.0, 79.0])
RAT42_Y = np.array([8.930, 10.800, 18.590, 22.330, 39.350, 56.110, 61.730, 64.620, 67.080])
RAT42_B = (7.2462237576e01, 2.6180768402e00, 6.7359200066e-02)  # certified b1, b2, b3
RAT42_RSS = 8.0565229338e00  # certified residual sum of squares


@pytest.mark.parametrize("start", [None, (100.0, 0.1, 1.0 / 0.1), (75.0, 0.07, 2.5 / 0.07)])
def test_rat42_certified_values(start):
    """NIST certified values (11 digits); starts: multistart grid, NIST start 1 and start 2
    (b1, b2, b3) = (100, 1, 0.1) and (75, 2.5, 0.07) mapped to (L, k, t50)."""
    fit = fit_logistic(RAT42_X, RAT42_Y, floor=0.0, p0=start)
    assert fit.converged and fit.status == "ok"
    b1, b2, b3 = RAT42_B
    assert fit.L == pytest.approx(b1, rel=1e-6)
    assert fit.k == pytest.approx(b3, rel=1e-6)
    assert fit.k * fit.t50 == pytest.approx(b2, rel=1e-6)
    assert fit.rss == pytest.approx(RAT42_RSS, rel=1e-9)
    assert fit.summary.loc[0, "status"] == "ok"
    assert "L" in fit.to_latex()


def test_flat_and_step_are_flagged_not_crashes():
    t = np.arange(1, 31.0)
    flat = fit_logistic(t, np.ones(30))
    assert flat.status == "flat" and not flat.converged
    assert flat.L == 1.0 and np.isnan(flat.k) and np.isnan(flat.t50) and flat.rss == 0.0
    np.testing.assert_array_equal(flat.predict([1, 2]), [1.0, 1.0])
    # an overnight switch on day 21 (Claude Opus 4.1 in the paper): k runs to its bound
    step = fit_logistic(t, np.where(t >= 21, 4.0, 1.0), upper=4.0, k_max=20.0)
    assert step.converged and step.status == "ok"
    assert step.k == pytest.approx(20.0) and "k" in step.at_bound
    assert step.t50 == pytest.approx(20.5, abs=1e-3)
    # one bump in a naive trajectory: no transition located
    bump = np.ones(30)
    bump[10] = 2.0
    weak = fit_logistic(t, bump, upper=4.0)
    assert weak.status in {"unidentified", "ok"} and np.isfinite(weak.rss)


def test_missing_days_are_excluded():
    t = np.arange(1, 31.0)
    y = logistic(t, 3.8, 0.9, 12.0)
    y_nan = y.copy()
    y_nan[[4, 29]] = np.nan
    fit = fit_logistic(t, y_nan, upper=4.0)
    assert fit.n_obs == 28
    assert (fit.L, fit.k, fit.t50) == pytest.approx((3.8, 0.9, 12.0), rel=1e-5)
    assert fit.r2 == pytest.approx(1.0)


def test_batch_agrees_with_curve_fit():
    """Converged batch fits equal scipy's curve_fit (trf, same bounds and start) to 1e-4."""
    rng = np.random.default_rng(2)
    t = np.arange(1, 31.0)
    truth = np.column_stack(
        [rng.uniform(3, 4, 12), rng.uniform(0.3, 2.5, 12), rng.uniform(4, 24, 12)]
    )
    y = np.clip(
        logistic(t, truth[:, :1], truth[:, 1:2], truth[:, 2:3]) + rng.normal(0, 0.3, (12, 30)), 1, 4
    )
    res = fit_logistic_batch(t, y, upper=4.0, p0=truth)
    lower, upper = [1.0, 0.0, 1 - 29.0], [4.0, 20.0, 30 + 29.0]
    for i in range(12):
        ref, _ = curve_fit(lambda x, L, k, t50: logistic(x, L, k, t50), t, y[i], p0=truth[i],
                           bounds=(lower, upper), ftol=1e-12, xtol=1e-12, gtol=1e-12)  # fmt: skip
        assert res["converged"][i]
        got = [res["L"][i], res["k"][i], res["t50"][i]]
        np.testing.assert_allclose(got, ref, atol=1e-4)


def test_bootstrap_reproducible_and_recovers(traj):
    base = fit_logistic_batch(
        traj.day.values,
        consensus_np(traj.recognition.transpose("rater", "model", "day").values, axis=0),
        upper=4.0,
    )
    weak = base["flat"] | ~base["converged"] | base["at_bound"][:, 1] | base["at_bound"][:, 2]
    res = logistic_bootstrap(traj.recognition, n_boot=60, seed=7, upper=4.0, progress=False)
    again = logistic_bootstrap(traj.recognition, n_boot=60, seed=7, upper=4.0, progress=False)
    other = logistic_bootstrap(traj.recognition, n_boot=60, seed=8, upper=4.0, progress=False)
    rep, rep2 = res.extra["replicates"], again.extra["replicates"]
    np.testing.assert_array_equal(rep.t50.values, rep2.t50.values)
    assert res.summary.equals(again.summary)
    assert not np.array_equal(rep.t50.values, other.extra["replicates"].t50.values)
    tab = res.summary
    assert dict(rep.L.sizes) == {"resample": 60, "model": 15}
    # every replicate can be refitted on its own from the stored rater draws and warm starts
    b = 11
    x = traj.recognition.transpose("rater", "model", "day").values
    cons = consensus_np(x[rep.rater_index.values[b]], axis=0)
    one = fit_logistic_batch(traj.day.values, cons, upper=4.0, p0=rep.p0.values, multistart=weak)
    ok = one["converged"]
    np.testing.assert_allclose(one["t50"][ok], rep.t50.values[b][ok], rtol=1e-12)
    for col in ("L_ci_low", "k_ci_high", "t50_ci_low", "t50_ci_high", "n_boot_used"):
        assert col in tab.columns
    # recovery of the generator's midpoints for the models that turn inside the study
    regime = traj.true_regime.to_pandas()
    turning = regime.index[regime.isin(["early", "gradual", "late"])]
    err = (tab.loc[turning, "t50"] - traj.true_t50.to_pandas()[turning]).abs()
    assert err.max() < 3.0, err
    assert (tab.loc[turning, "status"] == "ok").all()
    # intervals cover the point estimate of turning models
    inside = (tab.t50_ci_low <= tab.t50 + 1e-9) & (tab.t50 <= tab.t50_ci_high + 1e-9)
    assert inside[turning].all()
    # the never-turners have no located transition
    never = regime.index[regime == "never"]
    assert (
        tab.loc[never, "status"].isin(["unidentified", "flat"]).all()
        or (tab.loc[never, "r2"] < 0.3).all()
    )


def test_warm_start_in_degenerate_corner_escapes_with_multistart():
    """A rater-bootstrap replicate of a never-turning model (paper_like seed 0, Gemini 2.5 Pro,
    replicate 12), warm-started at the original fit (k on its bound k_max: a step at day 2.3).
    From there the local method ends at k = 0 (a constant, RSS 1.5417); scipy's curve_fit (trf)
    from the same start reaches RSS 1.5185; the added grid starts find RSS 1.2500 (the late
    bump on day 29)."""
    t = np.arange(1, 31.0)
    y = np.ones(30)
    y[[3, 6, 7]] = 1.5
    y[28] = 2.0
    p0 = np.array([[1.19642855, 20.0, 2.32601352]])
    stuck = fit_logistic_batch(t, y[None], upper=4.0, p0=p0)
    free = fit_logistic_batch(t, y[None], upper=4.0, p0=p0, multistart=[True])
    ref, _ = curve_fit(lambda x, L, k, t50: logistic(x, L, k, t50), t, y, p0=p0[0],
                       bounds=([1, 0, -28], [4, 20, 59]))  # fmt: skip
    rss_ref = np.sum((logistic(t, *ref) - y) ** 2)
    assert stuck["rss"][0] == pytest.approx(1.5416667, abs=1e-6)
    assert rss_ref == pytest.approx(1.5185185, abs=1e-5)
    assert free["converged"][0] and free["rss"][0] == pytest.approx(1.25, abs=1e-5)
    assert free["t50"][0] == pytest.approx(28.33, abs=0.05)


def test_fit_errors():
    with pytest.raises(ValueError, match="must match len"):
        fit_logistic_batch(np.arange(3.0), np.ones((2, 4)))
    with pytest.raises(ValueError, match="upper=1.0 must exceed floor=1.0"):
        fit_logistic(np.arange(5.0), np.arange(5.0), upper=1.0)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_boot=st.integers(1, 12))
def test_bootstrap_reproducible_from_its_seed(seed, n_boot):
    """Property: the same seed gives identical replicates (and tables); the rater draws come
    from the seed alone."""
    rng = np.random.default_rng(0)
    days = np.arange(1, 13)
    stage = np.clip(np.rint(logistic(days, 4.0, 1.0, [[4.0], [8.0]])), 1, 4)
    x = np.clip(stage[None] + rng.integers(-1, 2, size=(3, 2, 12)), 1, 4).astype(float)
    ratings = xr.DataArray(x, dims=("rater", "model", "day"),
                           coords={"model": ["a", "b"], "day": days})  # fmt: skip
    one = logistic_bootstrap(ratings, n_boot=n_boot, seed=seed, upper=4.0, progress=False)
    two = logistic_bootstrap(ratings, n_boot=n_boot, seed=seed, upper=4.0, progress=False)
    assert one.extra["replicates"].identical(two.extra["replicates"])
    assert one.summary.equals(two.summary)
    expected = np.random.default_rng(seed).integers(0, 3, size=(n_boot, 3))
    np.testing.assert_array_equal(one.extra["replicates"].rater_index.values, expected)


def test_zero_replicates_give_the_fits_without_intervals(small_study):
    """``n_boot=0`` (allowed: "no bootstrap") returns the point fits with NaN intervals and
    ``n_boot_used`` 0; it crashed inside the interval helper before."""
    import numpy as np

    from delusion_bayes.baselines.logistic import logistic_bootstrap

    with_ci = logistic_bootstrap(small_study["recognition"], n_boot=5, progress=False).summary
    none = logistic_bootstrap(small_study["recognition"], n_boot=0, progress=False).summary
    for p in ("L", "k", "t50"):
        np.testing.assert_array_equal(none[p].to_numpy(), with_ci[p].to_numpy())
        assert none[f"{p}_ci_low"].isna().all() and none[f"{p}_ci_high"].isna().all()
    assert (none["n_boot_used"] == 0).all()
