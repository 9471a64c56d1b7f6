"""Analyses of the metrics against ratings, on hand-made arrays with hand-computed results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from delusion_bayes.text import (
    first_clinical_day,
    level_b_correlation,
    mean_by_stage,
    model_means,
    spearman,
    turn_contrast,
    within_model,
)


def _da(values, models=None, name="metric"):
    values = np.asarray(values, dtype=float)
    models = models or [f"m{i}" for i in range(values.shape[0])]
    return xr.DataArray(
        values,
        dims=("model", "day"),
        coords={"model": models, "day": np.arange(1, values.shape[1] + 1)},
        name=name,
    )


def test_spearman_hand_computed():
    """x = 1..5, y = (2, 1, 4, 3, 5): d = (-1, 1, -1, 1, 0), rho = 1 - 6*4/(5*24) = 0.8.
    p (two-sided, t approximation as in scipy): t = .8*sqrt(3/.36) = 2.3094, df 3 -> p = .1041."""
    rho, p, n = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert rho == pytest.approx(0.8) and n == 5
    assert p == pytest.approx(0.1041, abs=5e-4)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3])[0])  # constant side -> NaN, not an error


def test_model_means_over_available_days():
    da = _da([[0.1, 0.2, np.nan], [0.3, 0.3, 0.6]])
    mm = model_means(da)
    np.testing.assert_allclose(mm["mean"], [0.15, 0.4])
    assert mm["n_days"].tolist() == [2, 3]


def test_level_b_correlation_hand():
    """Means (.4, .3, .2, .1) vs Level-B days (0, 1, 2, 3): perfectly reversed, rho = -1."""
    metric = _da(np.repeat([[0.4], [0.3], [0.2], [0.1]], 3, axis=1))
    lb = _da([[0, 0, 0], [0, 0, 1], [0, 1, 1], [1, 1, 1]])
    r = level_b_correlation(metric, lb)
    assert r["rho"] == pytest.approx(-1.0) and r["n_models"] == 4


def test_mean_by_stage_hand():
    metric = _da([[0.4, 0.2, 0.0], [0.3, 0.3, 0.1]])
    cons = _da([[1, 3, 4], [1, 1, 4]])
    t = mean_by_stage(metric, cons)
    np.testing.assert_allclose(t.loc[1.0, "mean"], (0.4 + 0.3 + 0.3) / 3)
    np.testing.assert_allclose(t.loc[4.0, "mean"], 0.05)
    assert t.loc[1.0, "n_days"] == 3 and t.loc[3.0, "n_models"] == 1


def test_within_model_hand():
    """Consensus (1, 1, 3, 4), metric (.4, .3, .1, 0): ranks (1.5, 1.5, 3, 4) vs (4, 3, 2, 1);
    Pearson of ranks = -4.5 / sqrt(4.5 * 5) = -0.948683. Never-turning model: rho NaN."""
    metric = _da([[0.4, 0.3, 0.1, 0.0], [0.5, 0.4, 0.5, 0.4]])
    cons = _da([[1, 1, 3, 4], [1, 1, 1, 1]])
    w = within_model(metric, cons)
    assert w.loc["m0", "rho"] == pytest.approx(-4.5 / np.sqrt(22.5))
    assert np.isnan(w.loc["m1", "rho"]) and not w.loc["m1", "escalating"]
    assert w.loc["m0", "mean_naive"] == pytest.approx(0.35)
    assert w.loc["m0", "mean_clinical"] == pytest.approx(0.05)
    assert bool(w.loc["m0", "lower_when_clinical"])


def test_turn_contrast_hand():
    metric = _da([[-0.4, -0.2, 0.1, 0.3], [-0.1, -0.1, -0.2, np.nan]])
    cons = _da([[1, 2, 3, 4], [1, 1, 1, 1]])
    np.testing.assert_array_equal(first_clinical_day(cons).values, [3, np.nan])
    t = turn_contrast(metric, cons)
    assert t.loc["m0", "before"] == pytest.approx(-0.3) and t.loc["m0", "after"] == pytest.approx(
        0.2
    )
    assert t.loc["m0", "change"] == pytest.approx(0.5)
    assert t.loc["m1", "n_before"] == 3 and np.isnan(t.loc["m1", "after"])
    # a turn day given explicitly (e.g. the first_clinical milestone)
    t2 = turn_contrast(metric, turn_day=pd.Series({"m0": 2.0, "m1": 3.0}))
    assert t2.loc["m1", "after"] == pytest.approx(-0.2)


def test_misaligned_inputs_are_rejected():
    with pytest.raises(ValueError, match="different 'model' coords"):
        mean_by_stage(_da([[1.0, 2.0]]), _da([[1, 2]], models=["other"]))
    with pytest.raises(ValueError, match="dims"):
        model_means(xr.DataArray([1.0, 2.0], dims="day"))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 4).map(float), st.just(float("nan"))),
            st.one_of(st.integers(0, 4).map(float), st.just(float("nan"))),
        ),
        min_size=3,
        max_size=20,
    )
)
def test_spearman_agrees_with_scipy_on_complete_pairs(pairs):
    """With ties and NaNs: equals scipy.stats.spearmanr on the complete pairs (NaN when fewer
    than 3 pairs or a constant side)."""
    x, y = np.array(pairs).T
    rho, p, n = spearman(x, y)
    ok = np.isfinite(x) & np.isfinite(y)
    assert n == ok.sum()
    if n < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        assert np.isnan(rho) and np.isnan(p)
    else:
        ref = spearmanr(x[ok], y[ok])
        assert rho == pytest.approx(ref.statistic, abs=1e-12)
        assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15)
