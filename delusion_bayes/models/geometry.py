"""The sampling geometry a study's ratings call for: which parameters are sampled centred and
which population scales are sampled at all, chosen from the data so that the sampler mixes
(Papaspiliopoulos, Roberts & Skold 2007, Stat. Sci. 22:59).

The centring choices (:func:`onset_geometry`, :func:`log_k_centring`, :func:`noise_identified`)
are reparameterisations: the same prior, the same model, the same posterior. One choice is not:
with fewer than :data:`MIN_T50_SCALE_TURNERS` turning models the t50 population scale
``sigma_t50`` is not sampled but FIXED at its prior's root mean square
(:func:`delusion_bayes.models.blocks.onset_trajectory`). That replaces the prior
``sigma_t50 ~ Gamma(3, 6)`` by a point mass, so each t50's prior keeps its variance but
loses its heavier tails, and the posterior of every t50 (and of the milestones and contrasts
that depend on it) is that of another model, chosen after seeing the data; SBC shows such fits
miscalibrated (docs/dev/models.md). The fit records it (``t50_scale_sampled`` in its attrs,
``t50_scale_fixed`` in ``gate.json``) and the supplement marks every table that uses it (‡).
:func:`delusion_bayes.models.spec.build_spec` records the choices in the spec's arrays;
docs/dev/models.md has the measurements.
By hand: PyMC has no automatic reparameterisation.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL, RATER, STAGE_MIDPOINT

__all__ = [
    "MIN_CENTRED_TURNERS",
    "MIN_T50_SCALE_TURNERS",
    "TURN_RUN",
    "log_k_centring",
    "noise_identified",
    "onset_geometry",
]

#: consecutive rated days on which the median rating must be >= STAGE_MIDPOINT for a model to
#: count as turned (and, on the first days, as turned from the start) when the graph's geometry
#: is chosen
TURN_RUN: int = 2


def onset_geometry(med: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(turned, early)`` per model from the median ratings ``med`` (model, day; NaN unrated):
    which models have their t50 sampled centred, and which of those from the first day
    (:func:`delusion_bayes.models.blocks._t50`; geometry only, the same model).

    Turned: the median is >= :data:`~delusion_bayes.data.schema.STAGE_MIDPOINT` on
    :data:`TURN_RUN` consecutive rated days; early: on the first ``TURN_RUN`` rated days. One
    day is not enough: a never-turner whose raters split 2/3 on day 1 (2 or 4 raters, common in
    small studies) read as "turned from day 1", whose geometry (t50 before the first day) then
    fought its flat ratings: 33 divergences in the disengagement model on 4 paper-roster
    chatbots (docs/dev/models.md). paper_like, ``null``,
    ``small`` and the template classify every model as before.
    """
    turned, early = np.zeros(len(med), bool), np.zeros(len(med), bool)
    for i, row in enumerate(np.asarray(med, float)):
        high = row[np.isfinite(row)] >= STAGE_MIDPOINT
        if high.size < TURN_RUN:  # too few rated days for a run: all of them high
            turned[i] = bool(high.size) and bool(high.all())
        else:
            turned[i] = bool((np.convolve(high, np.ones(TURN_RUN, int), "valid") >= TURN_RUN).any())
        early[i] = turned[i] and bool(high[:TURN_RUN].all())
    return turned, early


#: fewest turning models whose log k the joint models sample centred (fewer: non-centred)
MIN_CENTRED_TURNERS: int = 8
#: fewest turning models (t50 pinned by the ratings) for the t50 population scale to be sampled;
#: fewer: ``sigma_t50`` is fixed at its prior's root mean square (models.blocks.onset_trajectory),
#: a different model (a point-mass prior), not a reparameterisation: disclosed (‡)
MIN_T50_SCALE_TURNERS: int = 2


def log_k_centring(turned: np.ndarray) -> np.ndarray:
    """Which turning models have their log k sampled centred (geometry only; the same model).

    Centred where the data pin log k more tightly than the population does (Papaspiliopoulos,
    Roberts & Skold 2007): true of every turner's own curve on paper_like, but the population
    scale ``sigma_log_k`` is learnt from the turners alone. With fewer than
    :data:`MIN_CENTRED_TURNERS` of them its posterior reaches down to scales below a turner's
    own precision, where the centred pair forms a funnel: on the ``init-study`` template (4
    turners, 12 days, 3 raters) the joint model had 8 divergences centred, 0 non-centred; the
    onset model on ``small`` seed 2 had 3 divergences centred at ``sigma_log_k`` ~0.23, 0
    non-centred (ESS 942 -> 1,917); paper_like (11 turners) mixes best centred
    (docs/dev/models.md). By hand: PyMC has no automatic
    reparameterisation.
    """
    turned = np.asarray(turned, bool)
    return turned if int(turned.sum()) >= MIN_CENTRED_TURNERS else np.zeros_like(turned)


def noise_identified(rec: xr.DataArray) -> np.ndarray:
    """Models whose day noise the ratings identify (their day-noise scale is sampled centred,
    :func:`delusion_bayes.models.blocks.day_noise_scale`; geometry only).

    ``lambda = s2 / (s2 + v) >= 1/2``, the day noise's share of the rater mean's variance around
    the trajectory (Papaspiliopoulos, Roberts & Skold 2007, Stat. Sci. 22:59): ``s2 + v`` from the
    residual around the least-squares logistic fit, ``v`` the pooled between-rater variance over
    the raters per model-day. By hand: PyMC has no automatic reparameterisation.
    """
    from ..baselines.logistic import fit_logistic_batch

    vals = np.asarray(rec.transpose(RATER, MODEL, DAY).values, float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(vals, axis=0)
        n = np.sum(~np.isnan(vals), axis=0).astype(float)
        between = np.nanvar(vals, axis=0, ddof=1)
        ok = (n >= 2) & np.isfinite(between)
        v = float(np.mean(between[ok] / n[ok])) if ok.any() else 0.0
        fit = fit_logistic_batch(np.asarray(rec[DAY].values, float), mean)
        resid2 = np.asarray(fit["rss"], float) / np.maximum(np.asarray(fit["n_obs"], float), 1.0)
        # - 2 v: the residual also holds the logistic's misfit to an ordinal mean, ~v
        s2 = np.maximum(resid2 - 2.0 * v, 0.0)
        lam = s2 / (s2 + v) if v > 0 else np.where(s2 > 0, 1.0, 0.0)
    return np.nan_to_num(lam, nan=0.0) >= 0.5
