"""Known-truth studies and the scoring shared by the disengagement and rater recovery tests and
their sizing script (``tests/wrong_impl/sizing/recovery_pool.py``); a module, not a conftest:
imported explicitly.

Scoring goes through :func:`delusion_bayes.intervals.interval` (so the ``halve_intervals``
plugin shows) and the posterior of :func:`delusion_bayes.models.fit` (so ``shift_posterior``
shows): per scalar target the truth's normalised rank among the draws and whether the 90% and
50% equal-tailed intervals cover it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import expit, logit

SAMPLE = ("chain", "draw")
#: fit settings of both tests and of the sizing pool (2 x 300 draws after 300 tuning steps)
FIT = {"draws": 300, "tune": 300, "chains": 2, "log_likelihood": False, "log_prior": False,
       "posterior_predictive": False}  # fmt: skip
#: the gap between the two level cutpoints, c2 - c1, of the redrawn Level B (log 0.405)
GAP = 1.5


def level_truth(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """The disengagement model's level parameters behind a simulated study's Level A.

    The simulator draws ``P(A) = sigmoid(a0_m + 3 (stage - 2.5))`` (``simulate._adjudication``):
    exactly the model's ``P(D >= 1) = sigmoid(beta (stage - 2.5) + u_m - c1)`` with ``beta = 3``
    and, ``u`` being zero-sum, ``c1 = -mean(a0)``, ``u_m = a0_m - mean(a0)``. Read back from the
    study's ``true_p_level_a`` and ``true_stage`` (a least-squares line of logit P(A) on the
    stage per model, exact to rounding), not copied from the simulator's table."""
    lp = logit(ds["true_p_level_a"].transpose("model", "day").values)
    x = ds["true_stage"].transpose("model", "day").values - 2.5
    slopes, a0 = [], []
    for i in range(lp.shape[0]):
        b, a = np.polyfit(x[i], lp[i], 1)
        slopes.append(b)
        a0.append(a)
    beta = float(np.mean(slopes))
    assert np.allclose(slopes, beta, atol=1e-8), slopes  # one slope for every model
    a0 = np.asarray(a0)
    return {"beta_level": np.array([beta]), "c_level_1": np.array([-a0.mean()]),
            "log_gap_level": np.array([np.log(GAP)]), "u": a0 - a0.mean()}  # fmt: skip


def disengagement_study(seed: int) -> tuple[xr.Dataset, dict[str, np.ndarray]]:
    """``simulate_study("small", seed)`` with its Level A as simulated and Level B given A
    redrawn from the disengagement model's own ordinal form, ``P(D = 2 | D >= 1) =
    sigmoid(logit P(A) - GAP) / P(A)`` (seeded by ``seed``); and the level truth
    (:func:`level_truth`).

    Why redrawn: the simulator's Level B, ``P(A) sigmoid(b0_m + 3 (stage - 3))`` with a second
    per-model propensity, is not the model's ``sigmoid(eta - c2)`` with one shared gap, so the
    model has no true ``c2`` (or ``log_gap_level``) on it and its one ``beta`` is a compromise of
    two processes. Level A, the level effect's definition, is the simulator's own."""
    from delusion_bayes.data import simulate_study

    ds = simulate_study(preset="small", seed=seed).copy(deep=True)
    truth = level_truth(ds)
    pa = ds["true_p_level_a"].transpose("model", "day").values
    p_b_given_a = expit(logit(pa) - GAP) / pa
    rng = np.random.default_rng([seed, 34])
    a = ds["level_a"].transpose("model", "day").values
    b = np.where(np.isnan(a), np.nan, a * (rng.random(a.shape) < p_b_given_a))
    ds["level_b"] = (("model", "day"), b)
    ds["true_p_level_b"] = (("model", "day"), pa * p_b_given_a)
    return ds, truth


def rater_study(seed: int, n_raters: int = 6) -> tuple[xr.Dataset, dict[str, np.ndarray]]:
    """``simulate_study("small", seed, n_raters=6)`` and its rater truth: the simulated
    severities and discriminations, and the reliabilities of the rater model's docstring
    computed from the simulated stage (variance over the model-days, as
    :func:`delusion_bayes.models.derived.reliability_draws` takes it of a posterior draw)."""
    from delusion_bayes.data import simulate_study

    ds = simulate_study(preset="small", seed=seed, n_raters=n_raters)
    sev, disc = ds["true_severity"].values, ds["true_discrimination"].values
    v_theta = float(np.nanvar(ds["true_stage"].values))
    v_s = float(np.var(sev))
    v_e = float(np.mean((np.pi**2 / 3.0) / disc**2))
    truth = {
        "severity": sev, "discrimination": disc,
        "reliability_single": np.array([v_theta / (v_theta + v_s + v_e)]),
        "reliability_consensus": np.array([v_theta / (v_theta + (v_s + v_e) / len(sev))]),
    }  # fmt: skip
    return ds, truth


def rater_draws(dt: xr.DataTree) -> xr.Dataset:
    """The rater model's scored draws: severity, discrimination and the two reliabilities."""
    from delusion_bayes.models.derived import reliability_draws

    post = dt["posterior"]
    rel = reliability_draws(dt)
    return xr.Dataset({"severity": post["severity"], "discrimination": post["discrimination"],
                       **rel.data_vars}).reset_coords(drop=True)  # fmt: skip


def score(draws: xr.Dataset, truth: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Per target variable: the truth's normalised rank among the draws (``rank``) and whether
    the 90% / 50% intervals of :func:`delusion_bayes.intervals.interval` cover it (``c90``,
    ``c50``), each an array over the variable's elements (a scalar: one element)."""
    from delusion_bayes.intervals import interval

    out = {}
    for v, t in truth.items():
        x = draws[v]
        t = np.asarray(t, float).reshape(np.shape(x.isel(chain=0, draw=0)))
        rank = (x < t).mean(SAMPLE).values + 0.5 * (x == t).mean(SAMPLE).values
        res = {"rank": np.ravel(rank)}
        for prob, key in ((0.9, "c90"), (0.5, "c50")):
            lo, hi = interval(x, prob)
            res[key] = np.ravel((np.asarray(lo) <= t) & (t <= np.asarray(hi)))
        out[v] = res
    return out


def pooled(scores: dict[str, dict[str, np.ndarray]], names) -> dict[str, np.ndarray]:
    """The ``rank``, ``c90``, ``c50`` arrays of the variables ``names``, concatenated."""
    return {k: np.concatenate([scores[v][k] for v in names]) for k in ("rank", "c90", "c50")}
