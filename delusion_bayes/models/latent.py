"""The latent stage after sampling, for the models that integrate it out (``joint``, ``rater``,
``disengagement``): per parameter draw, a draw of each model-day's stage from its conditional
posterior (:func:`delusion_bayes.models.marginal.loglik_and_stage`), and the groups
``observed_data`` (``y`` on ``obs``, 0-based; ``level`` on ``obs_level``), ``posterior["stage"]``
(NaN where nobody rated), ``log_likelihood`` (``y`` given the drawn stage, ``y_model_day``) and
``posterior_predictive`` (drawn in numpy).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import expit, log_expit

from ..data.schema import DAY, MODEL, STAGE_CUTPOINTS, STAGE_MIDPOINT
from .marginal import MARGINAL_VAR, MODEL_DAY, loglik_and_stage, nodes_for, param_draws
from .spec import OBS, OBS_LEVEL, ModelSpec, observation_coords

#: :data:`~delusion_bayes.data.schema.STAGE_CUTPOINTS` as an array
STAGE_CUTS = np.asarray(STAGE_CUTPOINTS, float)


def observed_group(spec: ModelSpec) -> xr.Dataset:
    """``y`` (and ``level``) as observed, with coords naming each observation's cell."""
    d, coords = spec.data, observation_coords(spec)
    obs = xr.Dataset(
        {"y": (OBS, np.asarray(d.y, np.int64))},
        coords={OBS: np.arange(len(d.y)), **coords[OBS]},
    )
    if d.level is not None:
        obs["level"] = xr.DataArray(
            np.asarray(d.level, np.int64),
            dims=OBS_LEVEL,
            coords={OBS_LEVEL: np.arange(len(d.level)), **coords[OBS_LEVEL]},
        )
    return obs


def _ordinal_logp(y: np.ndarray, eta: np.ndarray, scale: np.ndarray, cuts: np.ndarray):
    """``log P(Y = y)`` with ``P(Y > j) = sigmoid(scale (eta - cuts_j))``; ``cuts`` of shape
    ``(n_cuts,)``, or ``(..., n_cuts)`` when they vary by draw; exact in the tails (log-space)."""
    n_cut = cuts.shape[-1]
    if cuts.ndim == 1:  # the same cuts for every draw: index them per observation only
        lo, hi = cuts[np.clip(y - 1, 0, n_cut - 1)], cuts[np.clip(y, 0, n_cut - 1)]
    else:
        yb = np.broadcast_to(y, eta.shape)
        lo = np.take_along_axis(cuts, np.clip(yb - 1, 0, n_cut - 1)[..., None], -1)[..., 0]
        hi = np.take_along_axis(cuts, np.clip(yb, 0, n_cut - 1)[..., None], -1)[..., 0]
    a = np.where(y > 0, scale * (eta - lo), np.inf)
    b = np.where(y < n_cut, scale * (eta - hi), -np.inf)
    gap = np.where((y > 0) & (y < n_cut), scale * (hi - lo), np.inf)
    # log(sigmoid(a) - sigmoid(b)) = log sigmoid(a) + log sigmoid(-b) + log(1 - e^{-(a - b)})
    with np.errstate(over="ignore", invalid="ignore"):
        return log_expit(a) + log_expit(-b) + np.log1p(-np.exp(-gap))


def ordinal_draw(eta: np.ndarray, scale: np.ndarray, cuts: np.ndarray, rng) -> np.ndarray:
    """``Y = #{j : u < P(Y > j)}``, ``u ~ U(0, 1)``."""
    p_gt = expit(scale[..., None] * (eta[..., None] - cuts))
    u = rng.uniform(size=eta.shape)
    # int8: categories 0-3; the predictive draws are the largest group of a fit
    return (u[..., None] < p_gt).sum(axis=-1).astype(np.int8)


def add_latent_groups(
    dt: xr.DataTree,
    spec: ModelSpec,
    *,
    seed: int,
    log_likelihood: bool = True,
    posterior_predictive: bool = True,
) -> xr.DataTree:
    """Add the module docstring's groups to a fit of a marginal model (in place; returns
    ``dt``); ``seed`` seeds the stage and predictive draws."""
    rng = np.random.default_rng([int(seed), 7])
    obs = observed_group(spec)
    dt["observed_data"] = xr.DataTree(obs)
    post = dt["posterior"].to_dataset()
    md_ll, md = loglik_and_stage(dt, rng, n_nodes=nodes_for(spec.name))
    grid = _stage_grid(spec, post, md)
    dt["posterior"] = xr.DataTree(post)
    ratings = _rating_predictors(spec, post, grid)
    levels = _level_predictors(spec, post, grid) if spec.data.level is not None else None
    obs_coords = {k: v for k, v in obs.coords.items() if OBS in v.dims}
    lvl_coords = {k: v for k, v in obs.coords.items() if OBS_LEVEL in v.dims}
    y_dims, lvl_dims = ("chain", "draw", OBS), ("chain", "draw", OBS_LEVEL)
    if log_likelihood:
        eta, scale = ratings
        y_ll = _ordinal_logp(spec.data.y, eta, scale, STAGE_CUTS)
        ll = xr.Dataset({"y": (y_dims, y_ll)}, coords=obs_coords)
        if levels is not None:
            level_eta, level_cuts = levels
            lc = np.broadcast_to(level_cuts, level_eta.shape + (2,))
            lvl = _ordinal_logp(spec.data.level, level_eta, np.ones_like(level_eta), lc)
            ll["level"] = xr.DataArray(lvl, dims=lvl_dims, coords=lvl_coords)
        ll[MARGINAL_VAR] = md_ll
        dt["log_likelihood"] = xr.DataTree(ll)
    if posterior_predictive:
        y_pp = ordinal_draw(*ratings, STAGE_CUTS, rng)
        pp = xr.Dataset({"y": (y_dims, y_pp)}, coords=obs_coords)
        if levels is not None:
            level_eta, level_cuts = levels
            lvl = ordinal_draw(level_eta, np.ones_like(level_eta), level_cuts, rng)
            pp["level"] = xr.DataArray(lvl, dims=lvl_dims, coords=lvl_coords)
        dt["posterior_predictive"] = xr.DataTree(pp)
    return dt


def _stage_grid(spec: ModelSpec, post: xr.Dataset, md: xr.DataArray) -> np.ndarray:
    """The drawn stage on the ``(chain, draw, model, day)`` grid (NaN where nobody rated), also
    added to ``post`` as ``stage``."""
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    models, days = list(spec.coords[MODEL]), list(spec.coords[DAY])
    mi = np.array([models.index(str(m)) for m in md[f"{MODEL_DAY}_model"].values])
    di = np.array([days.index(int(t)) for t in md[f"{MODEL_DAY}_day"].values])
    grid = np.full((n_chain, n_draw, len(models), len(days)), np.nan)
    grid[:, :, mi, di] = md.values
    model_coord = post[MODEL].values if MODEL in post.coords else models
    attrs = {"description": "latent stage, drawn from its conditional posterior per draw"}
    post["stage"] = xr.DataArray(
        grid,
        dims=("chain", "draw", MODEL, DAY),
        attrs=attrs,
        coords={MODEL: model_coord, DAY: days},
    )
    return grid


def _rating_predictors(spec: ModelSpec, post: xr.Dataset, grid: np.ndarray):
    """``(eta, scale)`` per draw and rating: ``P(y > j) = sigmoid(scale (eta - c_j))``."""
    d = spec.data
    stage_obs = grid[:, :, d.model_idx, d.day_idx]  # (chain, draw, obs)
    sev, disc = param_draws(post, "severity"), param_draws(post, "discrimination")
    return stage_obs + sev[..., d.rater_idx], disc[..., d.rater_idx]


def _level_predictors(spec: ModelSpec, post: xr.Dataset, grid: np.ndarray):
    """``(eta, cuts)`` per draw and adjudicated level (``disengagement``)."""
    d = spec.data
    beta, u, c1 = (param_draws(post, v) for v in ("beta_level", "u", "c_level_1"))
    c2 = c1 + np.exp(param_draws(post, "log_gap_level"))
    s_l = grid[:, :, d.level_model_idx, d.level_day_idx]
    level_eta = beta[..., None] * (s_l - STAGE_MIDPOINT) + u[..., d.level_model_idx]
    return level_eta, np.stack([c1, c2], -1)[:, :, None, :]


def onset_predictive(dt: xr.DataTree, spec: ModelSpec, seed: int) -> xr.DataTree:
    """Posterior predictive consensus of the ``onset`` model, ``max(1, N(trajectory, sigma_y))``,
    drawn in numpy."""
    from .onset import SCALE_MIN

    rng = np.random.default_rng([int(seed), 8])
    post = dt["posterior"].to_dataset()
    d = spec.data
    mu = param_draws(post, "trajectory")[:, :, d.model_idx, d.day_idx]
    sigma = param_draws(post, "sigma_y")[..., None]
    y = np.maximum(SCALE_MIN, rng.normal(mu, sigma))
    pp = xr.Dataset({"y": (("chain", "draw", OBS), y)}, coords={OBS: np.arange(mu.shape[-1])})
    dt["posterior_predictive"] = xr.DataTree(pp)
    return dt
