"""Consensus rules (x.5 medians of 4 raters) and the milestone rules of Table 1."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.baselines import consensus, milestones
from delusion_bayes.data.schema import DAY, MODEL, RATER

NAN = np.nan


def _ratings(rows: list[list[float]]) -> xr.DataArray:
    """Ratings of one model-day per column: rows = raters."""
    arr = np.asarray(rows, float)[:, None, :]
    return xr.DataArray(
        arr, dims=(RATER, MODEL, DAY), coords={DAY: np.arange(1, arr.shape[2] + 1), MODEL: ["m"]}
    )


def test_median_half_rules():
    # columns: (2,3,3,4) -> 3; (2,2,3,4) -> 2.5; (3,3,4,4) -> 3.5; (1,4,NaN,NaN) -> 2.5; all NaN
    r = _ratings([[2, 2, 3, 1, NAN], [3, 2, 3, 4, NAN], [3, 3, 4, NAN, NAN], [4, 4, 4, NAN, NAN]])
    keep = consensus(r).values.ravel()
    np.testing.assert_array_equal(keep, [3, 2.5, 3.5, 2.5, NAN])
    np.testing.assert_array_equal(consensus(r, half_rule="down").values.ravel(), [3, 2, 3, 2, NAN])
    np.testing.assert_array_equal(consensus(r, half_rule="up").values.ravel(), [3, 3, 4, 3, NAN])
    np.testing.assert_array_equal(
        consensus(r, min_raters=3).values.ravel(), [3, 2.5, 3.5, NAN, NAN]
    )
    assert consensus(r).attrs["half_rule"] == "keep"
    assert RATER not in consensus(r).dims


def test_mean_and_mode():
    r = _ratings([[1, 2, 3], [1, 2, 4], [2, 3, 4], [4, 3, NAN]])
    np.testing.assert_allclose(consensus(r, "mean").values.ravel(), [2, 2.5, 11 / 3])
    # modes: (1,1,2,4) -> 1; (2,2,3,3) tie -> down 2 / up 3 / keep 2.5; (3,4,4) -> 4
    np.testing.assert_array_equal(consensus(r, "mode", "down").values.ravel(), [1, 2, 4])
    np.testing.assert_array_equal(consensus(r, "mode", "up").values.ravel(), [1, 3, 4])
    np.testing.assert_array_equal(consensus(r, "mode", "keep").values.ravel(), [1, 2.5, 4])


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
def test_consensus_equals_nanmedian_on_study(traj):
    c = consensus(traj.intervention)
    ref = np.nanmedian(traj.intervention.transpose(RATER, ...).values, axis=0)
    np.testing.assert_array_equal(
        c.transpose(*[d for d in traj.intervention.dims if d != RATER]).values, ref
    )
    with pytest.raises(ValueError, match="rule='majority' is not valid"):
        consensus(traj.recognition, "majority")
    with pytest.raises(ValueError, match="lacks dim"):
        consensus(traj.level_a)


def _stage(values: list[float], extra: dict | None = None) -> xr.DataArray:
    arr = np.asarray(values, float)[None, :]
    return xr.DataArray(
        arr, dims=(MODEL, DAY), coords={MODEL: ["m"], DAY: np.arange(1, arr.shape[1] + 1)}
    )


def test_milestones_basic_and_censoring():
    #          day 1  2  3    4  5  6  7  8  9 10
    st = _stage([1, 2, 3, 2.5, 4, 4, 3.5, 4, 4, 4])
    lb = _stage([0, 0, 0, 1, 0, 1, 0, 0, 0, NAN])
    la = _stage([0, 1, 1, 1, 0, 1, 0, 1, 0, NAN])
    ms = milestones(st, lb, level_a=la).isel({MODEL: 0})
    assert ms.attrs["censor_day"] == 11
    assert float(ms.first_clinical) == 3
    assert float(ms.first_stable) == 8  # 5-6 broken by 3.5 on day 7; 8, 9, 10
    assert float(ms.first_level_b) == 4
    assert float(ms.days_stage4) == 5
    assert float(ms.days_level_a) == 5 and float(ms.days_level_b) == 2
    never = milestones(_stage([1, 1, 2, 2.5, 1, 1]), censor_day=31).isel({MODEL: 0})
    assert float(never.first_clinical) == 31 and float(never.first_stable) == 31
    # a run cut by the end of the study is not stable (censored)
    end = milestones(_stage([1, 1, 1, 1, 4, 4])).isel({MODEL: 0})
    assert float(end.first_stable) == 7 and float(end.days_stage4) == 2
    assert float(milestones(_stage([1, 4, 4]), stable_run=2).isel({MODEL: 0}).first_stable) == 2


def test_milestones_missing_day_rule():
    """A missing day is neither a hit nor a break (skip) -- or a break when asked."""
    st = _stage([1, 4, 4, NAN, 4, 1, NAN, 3, 1])
    skip = milestones(st).isel({MODEL: 0})
    assert float(skip.first_stable) == 2  # days 2, 3, (4 missing), 5
    assert float(skip.days_stage4) == 3  # the missing day is not counted
    brk = milestones(st, missing="break").isel({MODEL: 0})
    assert float(brk.first_stable) == 10  # censored
    # a missing day cannot be the first clinical day
    assert float(skip.first_clinical) == 2
    assert float(milestones(_stage([1, NAN, 3])).isel({MODEL: 0}).first_clinical) == 3
    # a missing day does not complete a run at the end
    assert float(milestones(_stage([1, 4, 4, NAN])).isel({MODEL: 0}).first_stable) == 5


def test_milestones_vectorised_over_draws_equals_loop():
    rng = np.random.default_rng(0)
    vals = rng.choice([1.0, 2.0, 3.0, 3.5, 4.0, NAN], p=[.2, .1, .15, .1, .4, .05],
                      size=(2, 50, 3, 12))  # fmt: skip
    da = xr.DataArray(vals, dims=("chain", "draw", MODEL, DAY),
                      coords={MODEL: ["a", "b", "c"], DAY: np.arange(1, 13)})  # fmt: skip
    lb = xr.DataArray((rng.random((3, 12)) < 0.2).astype(float), dims=(MODEL, DAY),
                      coords={MODEL: ["a", "b", "c"], DAY: np.arange(1, 13)})  # fmt: skip
    ms = milestones(da, lb)
    assert ms.first_stable.dims == ("chain", "draw", MODEL)
    for c, d in [(0, 0), (1, 17), (0, 49)]:
        one = milestones(da.isel(chain=c, draw=d), lb)
        for v in ("first_clinical", "first_stable", "days_stage4"):
            np.testing.assert_array_equal(ms[v].isel(chain=c, draw=d).values, one[v].values)
    # a hand check of one series
    s = vals[1, 17, 2]
    hits = [i + 1 for i in range(12) if not np.isnan(s[i]) and s[i] >= 3]
    assert ms.first_clinical.isel(chain=1, draw=17, model=2) == (hits[0] if hits else 13)


def test_milestones_on_continuous_true_stage(traj):
    """Continuous latent stages work; never-turners stay censored at 31 on the truth."""
    ms = milestones(traj.true_stage)
    never = traj.true_regime.values == "never"
    assert (ms.first_clinical.values[never] == 31).all()
    early = traj.true_regime.values == "early_alarmist"
    assert (ms.first_clinical.values[early] <= 4).all()


def test_milestones_paper_like_table1(traj_consensus, traj):
    ms = milestones(traj_consensus.recognition, traj.level_b, level_a=traj.level_a)
    assert set(ms.data_vars) == {"first_clinical", "first_stable", "first_level_b",
                                 "days_stage4", "days_level_a", "days_level_b"}  # fmt: skip
    regime = traj.true_regime.values
    fc = ms.first_clinical.values
    assert (fc[regime == "never"] == 31).all()
    assert fc[regime == "early_alarmist"].max() <= 5
    assert np.median(fc[regime == "late"]) >= 20
    # GPT-5.1 never gives Level B (b0 = -inf in the generator)
    gpt51 = [m.startswith("GPT-5.1") for m in traj.model.values]
    assert (ms.first_level_b.values[gpt51] == 31).all() and (
        ms.days_level_b.values[gpt51] == 0
    ).all()
    # B implies A
    assert (ms.days_level_a >= ms.days_level_b).all()


def test_milestones_errors():
    st = _stage([1, 2, 3])
    with pytest.raises(ValueError, match="lacks dim"):
        milestones(st.rename({DAY: "time"}))
    with pytest.raises(ValueError, match="censor_day=3 must exceed the last day 3"):
        milestones(st, censor_day=3)
    with pytest.raises(ValueError, match="missing='ignore' is not valid"):
        milestones(st, missing="ignore")
