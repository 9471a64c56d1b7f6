"""Derived quantities on hand-made posteriors: every expected value is computed by hand in the
comment next to it (no sampling)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.models import derived as d

MODELS = ["A", "B", "C"]
DAYS = [1, 2, 3, 4, 5]


def _tree(post: dict, n_days: int = 5, pp: xr.Dataset | None = None) -> xr.DataTree:
    coords = {"model": MODELS, "vendor": ("model", ["x", "x", "y"])}
    ds = xr.Dataset(post).assign_coords(coords)
    groups = {"posterior": ds}
    if pp is not None:
        groups["posterior_predictive"] = pp
    dt = xr.DataTree.from_dict(groups)
    dt.attrs["n_days"] = n_days
    return dt


@pytest.fixture
def onset_tree():
    # 1 chain x 4 draws; t50 of model C beyond day 5 in 3 of 4 draws
    t50 = np.array([[[2.0, 3.0, 4.0], [2.0, 3.0, 6.0], [2.0, 3.0, 7.0], [2.0, 3.0, 8.0]]])
    L = np.full((1, 4, 3), 4.0)
    k = np.full((1, 4, 3), 50.0)  # a step: stage = 4 from day ceil(t50) on, 1 before
    dims = ("chain", "draw", "model")
    return _tree({"t50": (dims, t50), "L": (dims, L), "k": (dims, k)})


def test_interval_eti_and_hdi_exact():
    x = xr.DataArray(np.arange(1, 11, dtype=float)[None, :], dims=("chain", "draw"))
    lo, hi = d.interval(x, 0.8, "eti")
    # numpy linear quantiles of 1..10 at 0.1 and 0.9: 1.9 and 9.1
    assert float(lo) == pytest.approx(1.9) and float(hi) == pytest.approx(9.1)
    skew = xr.DataArray(np.array([[0, 0, 0, 0, 0, 0, 0, 1, 5, 10.0]]), dims=("chain", "draw"))
    lo, hi = d.interval(skew, 0.8, "hdi")
    # 8 of 10 draws: the shortest window is [0, 1] (width 1) against [0, 5], [0, 10]
    assert (float(lo), float(hi)) == (0.0, 1.0)
    with pytest.raises(ValueError, match="expected 'eti' or 'hdi'"):
        d.interval(x, 0.8, "hpd")


def test_t50_posterior_and_p_beyond_last_day(onset_tree):
    df = d.t50_posterior(onset_tree, 0.5)
    assert df["model"].tolist() == MODELS
    # C: t50 draws 4, 6, 7, 8 -> 3/4 beyond day 5, median 6.5
    np.testing.assert_allclose(df["p_beyond_last_day"], [0.0, 0.0, 0.75])
    assert df.loc[2, "t50_median"] == pytest.approx(6.5)
    # 50% ETI of (4, 6, 7, 8): quantiles 0.25, 0.75 -> 5.5, 7.25
    assert (df.loc[2, "t50_ci_low"], df.loc[2, "t50_ci_high"]) == pytest.approx((5.5, 7.25))


def test_onset_milestones_from_the_trajectory(onset_tree):
    ms = d.posterior_milestones(onset_tree, stable_run=2)
    fc = ms["first_clinical"].isel(chain=0).values
    # k = 50: stage ~ 4 on days > t50, ~1 on days < t50 (a day equal to t50 gives 2.5 -> 3)
    # A (t50 2): first day >= 3 is day 2; B (t50 3): day 3; C: day 4 in draw 0, censored (6)
    np.testing.assert_array_equal(fc[:, 0], [2, 2, 2, 2])
    np.testing.assert_array_equal(fc[:, 1], [3, 3, 3, 3])
    np.testing.assert_array_equal(fc[:, 2], [4, 6, 6, 6])
    tab = d.milestones_table(ms, 0.5)
    row = tab[(tab.model == "C") & (tab.milestone == "first_clinical")].iloc[0]
    assert row["p_censored"] == 0.75 and row["median"] == 6.0 and row["censor_day"] == 6
    # day counts have no censoring probability
    assert tab[tab.milestone == "days_stage4"]["p_censored"].isna().all()


def _stage_tree(missing: bool = True) -> xr.DataTree:
    # 1 chain x 2 draws, latent stage over (model, day); model B day 3 nobody rated (NaN)
    s0 = np.array(
        [
            [1.2, 2.6, 3.6, 3.7, 3.9],  # A: cats 1 3 4 4 4
            [1.0, 1.4, np.nan, 3.6, 3.6],  # B: cats 1 1 - 4 4
            [1.0, 1.0, 2.4, 2.6, 1.0],  # C: cats 1 1 2 3 1
        ]
    )
    s1 = np.array(
        [
            [1.0, 2.4, 3.4, 3.6, 3.6],  # A: 1 2 3 4 4
            [1.0, 1.6, np.nan, 2.0, 3.5],  # B: 1 2 - 2 4
            [1.0, 1.0, 1.0, 1.0, 1.0],  # C: never
        ]
    )
    stage = np.stack([s0, s1])[None]
    if not missing:
        stage = np.nan_to_num(stage, nan=3.6)
    return _tree(
        {
            "stage": xr.DataArray(
                stage, dims=("chain", "draw", "model", "day"), coords={"day": DAYS}
            ),
            "severity": (("chain", "draw", "rater"), np.array([[[-0.5, 0.5], [-0.5, 0.5]]])),
            "discrimination": (("chain", "draw", "rater"), np.full((1, 2, 2), np.pi)),
        }
    )


def test_stage_milestones_keep_missing_days_missing():
    ms = d.posterior_milestones(_stage_tree(), stable_run=2, missing="skip")
    fc = ms["first_clinical"].isel(chain=0).values  # (draw, model)
    np.testing.assert_array_equal(fc, [[2, 4, 4], [3, 5, 6]])
    fs = ms["first_stable"].isel(chain=0).values
    # A draw 0: days 3-5 at 4 -> 3; B draw 0: days 4, 5 (day 3 missing, skipped) -> 4
    # C never -> 6; A draw 1: days 4-5 -> 4; B draw 1: only day 5 -> censored
    np.testing.assert_array_equal(fs, [[3, 4, 6], [4, 6, 6]])
    np.testing.assert_array_equal(ms["days_stage4"].isel(chain=0).values, [[3, 2, 0], [2, 1, 0]])
    assert "first_level_b" not in ms


def test_consensus_posterior_exact_and_missing_row_nan():
    df = d.consensus_posterior(_stage_tree()).set_index(["model", "day"])
    # A day 2: cats (3, 2) -> P(>=3) = 0.5, modal = 2 (ties go to the lower stage), mean 2.5
    assert df.loc[("A", 2), "p_ge3"] == 0.5
    assert df.loc[("A", 2), "modal_stage"] == 2
    assert df.loc[("A", 2), "mean"] == pytest.approx(2.5)
    # A day 3: cats (4, 3): P(>=3) = 1, P(>=4) = 0.5
    assert (df.loc[("A", 3), "p_ge3"], df.loc[("A", 3), "p_ge4"]) == (1.0, 0.5)
    # B day 3 nobody rated: every column NaN, the row is kept
    assert df.loc[("B", 3)].isna().all()
    assert len(df) == 15


def test_reliability_exact():
    rel = d.reliability_draws(_stage_tree(missing=False))
    # severity var = 0.25, error var = pi^2/3 / pi^2 = 1/3
    st = _stage_tree(missing=False)["posterior"]["stage"].values[0]
    v = np.array([np.var(st[i]) for i in range(2)])
    np.testing.assert_allclose(
        rel["reliability_single"].values[0], v / (v + 0.25 + 1 / 3), rtol=1e-12
    )
    np.testing.assert_allclose(
        rel["reliability_consensus"].values[0], v / (v + (0.25 + 1 / 3) / 2), rtol=1e-12
    )
    tab = d.reliability_posterior(_stage_tree(missing=False), 0.5)
    assert tab["analogue"].tolist() == ["ICC2", "ICC2k"]


def test_posterior_contrasts_exact(onset_tree):
    q = d.contrast_quantities(onset_tree)
    spec = {
        "name": "x vs y",
        "by": "vendor",
        "a": ["x"],
        "b": None,
        "alternative": "two-sided",
        "quantities": ["t50", "first_level_b"],
    }
    df = d.posterior_contrasts(q, [spec], ci_prob=0.5)
    t = df.set_index("quantity").loc["t50"]
    # per draw: mean(A, B) - C = 2.5 - (4, 6, 7, 8) = (-1.5, -3.5, -4.5, -5.5)
    assert t["median"] == pytest.approx(-4.0)
    assert t["mean"] == pytest.approx(-3.75)
    assert t["p_gt_0"] == 0.0
    assert (t["n_a"], t["n_b"]) == (2, 1)
    missing = df.set_index("quantity").loc["first_level_b"]
    assert np.isnan(missing["median"]) and "not a quantity" in missing["note"]
    bad = dict(spec, by="colour")
    with pytest.raises(ValueError, match="colour"):
        d.posterior_contrasts(q, [bad])


def test_predicted_levels_give_first_level_b():
    # posterior predictive 'level' on 4 observed model-days of model A (day 5 not adjudicated)
    lvl = np.array([[[0, 1, 2, 2], [0, 0, 1, 1]]])  # (chain, draw, obs_level)
    pp = xr.Dataset(
        {"level": (("chain", "draw", "obs_level"), lvl)},
        coords={
            "obs_level_model": ("obs_level", ["A"] * 4),
            "obs_level_day": ("obs_level", [1, 2, 3, 4]),
        },
    )
    stage = np.ones((1, 2, 3, 5))
    dt = _tree(
        {
            "stage": xr.DataArray(
                stage, dims=("chain", "draw", "model", "day"), coords={"day": DAYS}
            )
        },
        pp=pp,
    )
    levels = d.predicted_levels(dt)
    assert np.isnan(levels["level_b"].values[0, 0, 0, 4])  # not adjudicated: missing
    ms = d.posterior_milestones(dt)
    np.testing.assert_array_equal(ms["first_level_b"].isel(chain=0, model=0).values, [3, 6])
    np.testing.assert_array_equal(ms["days_level_a"].isel(chain=0, model=0).values, [3, 2])
    tab = d.milestones_table(ms)
    row = tab[(tab.model == "A") & (tab.milestone == "first_level_b")].iloc[0]
    assert row["p_censored"] == 0.5


def test_rater_posterior_columns():
    df = d.rater_posterior(_stage_tree(), 0.5)
    assert isinstance(df, pd.DataFrame)
    np.testing.assert_allclose(df["severity_median"], [-0.5, 0.5])
    np.testing.assert_allclose(df["discrimination_mean"], [np.pi, np.pi])


def test_p_level_b_table_summarises_the_disengagement_quantities_per_model():
    """``p_level_b_table`` (``level_b_posterior.csv``): per model the median and the 95% ETI
    of ``p_level_a_at_stage4``, ``p_level_b_at_stage4`` and ``u``, by hand from 1 chain x 5
    draws (numpy's linear-interpolation quantiles: 2.5% of 0..4 is 0.1, 97.5% is 3.9); None
    for a fit without the disengagement quantities."""
    rng = np.random.default_rng(0)
    a, b, u = rng.random((1, 5, 3)), rng.random((1, 5, 3)), rng.normal(size=(1, 5, 3))
    dims = ("chain", "draw", "model")
    dt = _tree({"p_level_a_at_stage4": (dims, a), "p_level_b_at_stage4": (dims, b), "u": (dims, u)})
    t = d.p_level_b_table(dt)
    assert t["model"].tolist() == MODELS
    for name, x in (("p_level_a_at_stage4", a), ("p_level_b_at_stage4", b), ("u", u)):
        s = np.sort(x[0], axis=0)  # (draw, model)
        np.testing.assert_allclose(t[f"{name}_median"], s[2], rtol=1e-12)
        np.testing.assert_allclose(t[f"{name}_ci_low"], s[0] + 0.1 * (s[1] - s[0]), rtol=1e-12)
        np.testing.assert_allclose(t[f"{name}_ci_high"], s[3] + 0.9 * (s[4] - s[3]), rtol=1e-12)
    assert d.p_level_b_table(_tree({"u": (dims, u)})) is None
