"""The latent stage after sampling, for the models that integrate it out (``joint``, ``rater``,
``disengagement``): per parameter draw, a draw of each model-day's stage from its conditional
posterior (:func:`delusion_bayes.models.marginal.loglik_and_stage`), and the groups
``observed_data`` (``y`` on ``obs``, 0-based; ``level`` on ``obs_level``), ``posterior["stage"]``
(NaN where nobody rated), ``log_likelihood`` (``y`` given the drawn stage, ``y_model_day``) and
``posterior_predictive``; the ratings' log-likelihood and predictive draws come from one numba
pass (:func:`rating_loglik_and_draw`), the adjudicated levels' (a few hundred) from numpy.
"""

from __future__ import annotations

from types import SimpleNamespace

import numba
import numpy as np
import xarray as xr
from scipy.special import expit, log_expit

from ..data.schema import DAY, MODEL, STAGE_CUTPOINTS, STAGE_MIDPOINT
from .marginal import MARGINAL_VAR, MODEL_DAY, loglik_and_stage, nodes_for, param_draws
from .modelspec import OBS, OBS_LEVEL, ModelSpec, observation_coords
from .rating_terms import NJIT_OPTIONS, exp_nonpositive_or_zero, log1p_unit

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


@numba.njit(cache=True, parallel=True, **NJIT_OPTIONS)
def _rating_pass(cell_stage, cell, rater, y, sev, disc, cuts, log_gap, unif, ll, pp):
    """Per draw ``i`` and rating ``o``: ``eta = stage[i, cell[o]] + sev[i, rater[o]]``, ``x_j =
    disc[i, rater[o]] (eta - cuts[j])``; ``ll[i, o] = log P(Y = y[o])`` (when ``ll`` has rows)
    and ``pp[i, o] = #{j : unif[i, o] < sigmoid(x_j)}`` (when ``pp`` has rows).

    ``log P(Y = y) = log sigmoid(x_{y-1}) + log sigmoid(-x_y) + log(1 - exp(-(x_{y-1} - x_y)))``
    (a missing bound's term is 0), the identity of :mod:`.rating_terms`: no two probabilities
    are subtracted, so the tails are exact. The last term depends on the draw's discrimination
    and the category only: ``log_gap[i, rater, y]``, computed once per draw and rater. Both
    ``log sigmoid(x)`` and ``log sigmoid(-x)`` are ``min(+-x, 0) - log1p(exp(-|x|))`` from one
    ``exp``; below ``exp(-40)`` it counts as 0 (:func:`.rating_terms.exp_nonpositive_or_zero`)."""
    n_cut = cuts.shape[0]
    n_obs = cell.shape[0]
    want_ll, want_pp = ll.shape[0] > 0, pp.shape[0] > 0
    for i in numba.prange(max(ll.shape[0], pp.shape[0])):
        for o in range(n_obs):
            r, k = rater[o], y[o]
            eta = cell_stage[i, cell[o]] + sev[i, r]
            d = disc[i, r]
            lp = log_gap[i, r, k]
            count = 0
            for j in range(n_cut):
                x = d * (eta - cuts[j])
                e = exp_nonpositive_or_zero(-abs(x))
                lg = log1p_unit(e)
                if j == k - 1:
                    lp += min(x, 0.0) - lg
                elif j == k:
                    lp += min(-x, 0.0) - lg
                p_gt = 1.0 / (1.0 + e) if x > 0.0 else e / (1.0 + e)
                if want_pp and unif[i, o] < p_gt:
                    count += 1
            if want_ll:
                ll[i, o] = lp
            if want_pp:
                pp[i, o] = count


def rating_loglik_and_draw(
    stage: np.ndarray,
    spec_data,
    sev: np.ndarray,
    disc: np.ndarray,
    cuts: np.ndarray,
    unif: np.ndarray | None,
    *,
    log_likelihood: bool = True,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The rating terms given the drawn stage, in one pass over ``(chain, draw, rating)``
    (:func:`_rating_pass`): ``log P(y_o | stage, severity, discrimination)`` per draw and rating
    (``log_likelihood``) and, with ``unif`` (``U(0, 1)`` of shape ``(chain, draw, rating)``),
    the posterior predictive rating ``#{j : u < P(Y > j)}`` as ``int8``.

    ``stage``: ``(chain, draw, model, day)``; ``spec_data``: the spec's data (``model_idx``,
    ``day_idx``, ``rater_idx``, ``y``); ``sev``, ``disc``: ``(chain, draw, rater)``; ``cuts``:
    the stage cutpoints. Why by hand: numpy's version made five ``(chain, draw, rating)``
    temporaries per quantity and took ~1.8 s per fit of the main job (7.2M ratings-by-draws),
    most of the work after the latent pass; this takes ~0.3 s
    (``experiments/bench/bench_latent_pass.py`` times both)."""
    if not log_likelihood and unif is None:  # a fit that keeps neither (coverage, SBC)
        return None, None
    d = spec_data
    n_chain, n_draw, n_model, n_day = stage.shape
    n_s, n_r, n_obs = n_chain * n_draw, sev.shape[-1], len(d.y)
    disc_f = _kernel_array(disc.reshape(n_s, n_r), float)
    n_cut = len(cuts)
    log_gap = np.zeros((n_s, n_r, n_cut + 1))
    log_gap[:, :, 1:n_cut] = np.log1p(-np.exp(-disc_f[..., None] * np.diff(cuts)))
    ll = np.empty((n_s if log_likelihood else 0, n_obs))
    pp = np.empty((n_s if unif is not None else 0, n_obs), np.int8)
    args = (
        _kernel_array(stage.reshape(n_s, n_model * n_day), float),
        _kernel_array(np.asarray(d.model_idx) * n_day + np.asarray(d.day_idx), np.int64),
        _kernel_array(d.rater_idx, np.int64),
        _kernel_array(d.y, np.int64),
        _kernel_array(sev.reshape(n_s, n_r), float),
        disc_f,
        _kernel_array(cuts, float),
        log_gap,
        _kernel_array(unif.reshape(n_s, n_obs), float) if unif is not None else np.empty((0, 1)),
        ll,
        pp,
    )
    if _rating_pass.signatures:
        _rating_pass(*args)
    else:  # first call here: compiled, or loaded from numba's cache, once across processes
        from ..inference.sampling import compile_lock

        with compile_lock("rating-pass"):
            _rating_pass(*args)
    shape = (n_chain, n_draw, n_obs)
    return (
        ll.reshape(shape) if log_likelihood else None,
        pp.reshape(shape) if unif is not None else None,
    )


def _kernel_array(x, dtype) -> np.ndarray:
    """``x`` as a C-contiguous, writable array of ``dtype``: numba compiles a kernel once per
    array type, and a strided or read-only view is another type (another cold compile)."""
    return np.require(x, dtype, "CW")


def compile_kernels() -> None:
    """Compile (or load from numba's cache) the numba kernels run after sampling a marginal
    model: the latent pass (:func:`delusion_bayes.models.quadrature.compile_kernel`) and
    :func:`_rating_pass`, on one term each (the compile prefetch, ``stages/prefetch.py``, runs it
    ahead of the first fit that needs them)."""
    from .quadrature import compile_kernel

    compile_kernel()
    stage = np.full((1, 1, 1, 1), 2.0)
    one = SimpleNamespace(model_idx=[0], day_idx=[0], rater_idx=[0], y=[1])
    unif = np.full((1, 1, 1), 0.5)
    rating_loglik_and_draw(stage, one, np.zeros((1, 1, 1)), np.ones((1, 1, 1)), STAGE_CUTS, unif)


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
    levels = _level_predictors(spec, post, grid) if spec.data.level is not None else None
    obs_coords = {k: v for k, v in obs.coords.items() if OBS in v.dims}
    lvl_coords = {k: v for k, v in obs.coords.items() if OBS_LEVEL in v.dims}
    y_dims, lvl_dims = ("chain", "draw", OBS), ("chain", "draw", OBS_LEVEL)
    sev, disc = param_draws(post, "severity"), param_draws(post, "discrimination")
    # the predictive ratings' uniforms are drawn here, as numpy's version drew them, so the
    # draws that follow (the levels') see the same generator state
    unif = rng.uniform(size=grid.shape[:2] + (len(spec.data.y),)) if posterior_predictive else None
    y_ll, y_pp = rating_loglik_and_draw(
        grid, spec.data, sev, disc, STAGE_CUTS, unif, log_likelihood=log_likelihood
    )
    del unif
    if log_likelihood:
        ll = xr.Dataset({"y": (y_dims, y_ll)}, coords=obs_coords)
        if levels is not None:
            level_eta, level_cuts = levels
            lc = np.broadcast_to(level_cuts, level_eta.shape + (2,))
            lvl = _ordinal_logp(spec.data.level, level_eta, np.ones_like(level_eta), lc)
            ll["level"] = xr.DataArray(lvl, dims=lvl_dims, coords=lvl_coords)
        ll[MARGINAL_VAR] = md_ll
        dt["log_likelihood"] = xr.DataTree(ll)
    if posterior_predictive:
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


def _level_predictors(spec: ModelSpec, post: xr.Dataset, grid: np.ndarray):
    """``(eta, cuts)`` per draw and adjudicated level (``disengagement``)."""
    d = spec.data
    beta, u, c1 = (param_draws(post, v) for v in ("beta_level", "u", "c_level_1"))
    c2 = c1 + np.exp(param_draws(post, "log_gap_level"))
    s_l = grid[:, :, d.level_model_idx, d.level_day_idx]
    level_eta = beta[..., None] * (s_l - STAGE_MIDPOINT) + u[..., d.level_model_idx]
    return level_eta, np.stack([c1, c2], -1)[:, :, None, :]
