"""Model-day log-likelihood with the model-day's latent integrated out, for leave-one-model-day-out
PSIS-LOO.

Comparing trajectories or rater models asks how well a model predicts a *new model-day*: the
*marginal* likelihood per model-day, not PyMC's per rating given the latent (Merkle, Furr &
Rabe-Hesketh 2019, Psychometrika 84; Vehtari et al. 2016, JMLR 17):

.. math::

    \\log p(y_{m,t} \\mid \\phi) = \\log \\int \\prod_{i \\in (m,t)} p(y_i \\mid s)\\;
        N(s;\\, \\mu_{m,t}, \\sigma_m)\\, ds

with ``mu = trajectory[m, t]``, ``sigma = sigma_eps[m]`` (``joint``; ``disengagement`` adds the
model-day's level to the product) or ``mu_theta``, ``sigma_theta`` (``rater``). This module
builds each model-day's integrand from a fit's draws; :mod:`delusion_bayes.models.quadrature`
integrates them (adaptive quadrature, by hand in numba). Check ``loo_khat.png`` before trusting
a close comparison.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL, RATER, STAGE_CUTPOINTS, STAGE_MIDPOINT
from .modelspec import OPEN
from .quadrature import DEFAULT_NODES, one_each, run_shared

#: dimension of the per-model-day log-likelihood (observed model-days only)
MODEL_DAY = "model_day"
#: name of the marginal log-likelihood variable in the ``log_likelihood`` group
MARGINAL_VAR = "y_model_day"
#: more for the rater model: its latent's wide prior (sigma_theta ~1.6) against raters as steep
#: as 7-9 per stage makes box-like integrands (31 nodes: up to 5e-5 on its paper_like fit,
#: 41: 7e-6; joint and disengagement: 5e-7 and 8e-7 with 31)
MODEL_NODES: dict[str, int] = {"rater": 41}


def ordinal_terms(y: np.ndarray, alpha: np.ndarray, beta: np.ndarray, gamma: np.ndarray):
    """``(alpha, a0, b0)`` of ``P(Y > j) = sigmoid(alpha s + beta - gamma_j)`` at category y
    (``gamma``: ``(..., n_obs, n_cuts)``)."""
    n_cut = gamma.shape[-1]
    lo = np.clip(y - 1, 0, n_cut - 1)
    hi = np.clip(y, 0, n_cut - 1)
    g_lo = np.take_along_axis(gamma, np.broadcast_to(lo[..., None], gamma.shape[:-1] + (1,)), -1)
    g_hi = np.take_along_axis(gamma, np.broadcast_to(hi[..., None], gamma.shape[:-1] + (1,)), -1)
    a0 = np.where(y == 0, OPEN, beta - g_lo[..., 0])
    b0 = np.where(y == n_cut, -OPEN, beta - g_hi[..., 0])
    return alpha, a0, b0


def model_day_loglik(dt: Any, n_nodes: int | None = None, chunk: int = 250) -> xr.DataArray:
    """Marginal log-likelihood of each rated model-day of a ``joint``, ``rater`` or
    ``disengagement`` fit (module docstring), dims ``(chain, draw, model_day)`` in (model, day)
    order, coords ``model_day_model``/``model_day_day``. ValueError for a fit without the
    variables the integral needs (``onset``: its likelihood is one term per model-day already).
    ``n_nodes`` default: :data:`MODEL_NODES` of the fit's model, else :data:`DEFAULT_NODES`.
    """
    return _integrate(dt, n_nodes, chunk, rng=None)[0]


def loglik_and_stage(
    dt: Any, rng: np.random.Generator, n_nodes: int | None = None, chunk: int = 250
) -> tuple[xr.DataArray, xr.DataArray]:
    """:func:`model_day_loglik` and, from the same nodes, one draw per parameter draw of every
    rated model-day's stage from its conditional posterior
    (:func:`~delusion_bayes.models.quadrature.sample_latent`): with the parameter draws, draws
    from the joint posterior with the stage as a parameter."""
    ll, stage = _integrate(dt, n_nodes, chunk, rng=rng)
    stage.name = "stage"
    stage.attrs = {"description": "latent stage drawn from its conditional posterior"}
    return ll, stage


def nodes_for(model: str) -> int:
    """The latent pass's quadrature nodes for a fit of ``model`` (:data:`MODEL_NODES`)."""
    return MODEL_NODES.get(model, DEFAULT_NODES)


def param_draws(post: xr.Dataset, name: str) -> np.ndarray:
    """The draws of posterior variable ``name`` as floats, ``(chain, draw, ...)``."""
    return np.asarray(post[name].transpose("chain", "draw", ...).values, float)


def _integrate(dt: Any, n_nodes: int | None, chunk: int, rng: np.random.Generator | None):
    """:func:`model_day_loglik` and, with ``rng``, the stage draws of :func:`loglik_and_stage`."""
    if n_nodes is None:
        n_nodes = nodes_for(str(dt.attrs.get("model", "")))
    post = dt["posterior"]
    cells = _observed_cells(dt)
    layout = _ModelDays.of(cells, post)
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    n_s = n_chain * n_draw

    def flat(name: str) -> np.ndarray:  # (chain * draw, elements)
        return param_draws(post, name).reshape(n_s, -1)

    mu, sigma = _latent_prior(post, flat, cells, layout, str(dt.attrs.get("model", "")))
    level_cuts = None
    if layout.level is not None:
        beta, u, c1 = flat("beta_level")[:, 0], flat("u"), flat("c_level_1")[:, 0]
        level_cuts = (beta, u, c1, c1 + np.exp(flat("log_gap_level")[:, 0]))
    out = np.empty((n_s, layout.n_md))
    draws_s = np.full((n_s, layout.n_md), np.nan)
    sev, disc = flat("severity"), flat("discrimination")
    # one integral per distinct integrand: where every model-day has the latent's prior (the
    # rater model), model-days rated alike share it (paper_like: 52 for 449); else one each
    first, ptr, members = _shared_integrands(cells, layout, "trajectory" not in post)
    rep_cells, rep_layout = _representatives(cells, layout, first)
    for lo in range(0, n_s, chunk):
        sl = slice(lo, min(lo + chunk, n_s))
        A, A0, B0 = _integrand_terms(rep_cells, rep_layout, sev[sl], disc[sl], level_cuts, sl)
        mu_p, sigma_p = mu[sl][:, first], sigma[sl][:, first]
        out[sl], s_draw = run_shared(
            A, A0, B0, mu_p, sigma_p, n_nodes, ptr, members, layout.n_md, rng
        )
        if s_draw is not None:
            draws_s[sl] = s_draw
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        MODEL_DAY: np.arange(layout.n_md),
        f"{MODEL_DAY}_model": (MODEL_DAY, np.asarray(cells.models)[layout.md_model]),
        f"{MODEL_DAY}_day": (MODEL_DAY, np.asarray(cells.days)[layout.md_day]),
    }
    dims = ("chain", "draw", MODEL_DAY)
    description = (
        "log p(all ratings of a model-day | parameters), the model-day's latent "
        "stage integrated out (adaptive quadrature)"
    )
    attrs = {"description": description, "n_nodes": int(n_nodes)}
    shape = (n_chain, n_draw, layout.n_md)
    ll = xr.DataArray(out.reshape(shape), dims=dims, coords=coords, name=MARGINAL_VAR, attrs=attrs)
    stage = xr.DataArray(draws_s.reshape(shape), dims=dims, coords=coords)
    return ll, (stage if rng is not None else None)


@dataclass
class _Cells:
    """The observed ratings of a fit with their cells as indices into ``models``/``days``/
    ``raters``; ``level_key`` the model-day key (``model * n_days + day``) of each adjudicated
    level (empty unless a disengagement fit)."""

    y: np.ndarray
    mi: np.ndarray
    di: np.ndarray
    ri: np.ndarray
    models: list
    days: list
    level_key: np.ndarray
    level: np.ndarray | None


def _observed_cells(dt: Any) -> _Cells:
    post, obs = dt["posterior"], dt["observed_data"]
    model_name = str(dt.attrs.get("model", ""))
    if "y" not in obs or "severity" not in post or "discrimination" not in post:
        raise ValueError(
            f"model_day_loglik: the {model_name or 'given'} fit has no ordinal ratings 'y' with "
            "severity/discrimination; expected a joint, rater or disengagement fit"
        )
    o_model = np.asarray(obs["obs_model"].values).astype(str)
    o_day = np.asarray(obs["obs_day"].values)
    o_rater = np.asarray(obs["obs_rater"].values).astype(str)
    raters = [str(r) for r in post[RATER].values]
    models = (
        [str(m) for m in post[MODEL].values] if MODEL in post.dims else list(dict.fromkeys(o_model))
    )
    days = list(post[DAY].values) if DAY in post.dims else sorted(set(o_day.tolist()))
    level_key, level = np.empty(0, np.int64), None
    if "level" in obs and "beta_level" in post:
        lm = np.array([models.index(str(m)) for m in obs["obs_level_model"].values], np.int64)
        ld = np.array([days.index(d) for d in obs["obs_level_day"].values], np.int64)
        level_key = lm * len(days) + ld
        level = np.asarray(obs["level"].values, np.int64)
    return _Cells(
        y=np.asarray(obs["y"].values, np.int64),
        mi=np.array([models.index(m) for m in o_model]),
        di=np.array([days.index(d) for d in o_day]),
        ri=np.array([raters.index(r) for r in o_rater]),
        models=models,
        days=days,
        level_key=level_key,
        level=level,
    )


@dataclass
class _ModelDays:
    """The observed model-days (a rating or, disengagement, an adjudicated level: a level on a
    day nobody rated is integrated over the trajectory's prior alone, as the fitted graph does,
    spec.model_day_layout) in (model, day) order, and each rating's slot among its model-day's
    (padded to ``n_terms``); ``level``: each level and its model-day."""

    n_md: int
    md_model: np.ndarray
    md_day: np.ndarray
    md_of_obs: np.ndarray
    slot: np.ndarray
    n_terms: int
    level: tuple[np.ndarray, np.ndarray] | None

    @classmethod
    def of(cls, cells: _Cells, post: Any) -> _ModelDays:
        n_days = len(cells.days)
        md_key = cells.mi * n_days + cells.di
        keys = np.unique(np.concatenate([md_key, cells.level_key]))
        md_of_obs = np.searchsorted(keys, md_key)
        n_md = keys.size
        order = np.argsort(md_of_obs, kind="stable")
        slot = np.empty_like(md_of_obs)  # rank of each rating within its model-day
        slot[order] = np.arange(order.size) - np.searchsorted(md_of_obs[order], md_of_obs[order])
        level = None
        if cells.level_key.size:
            level = (cells.level, np.searchsorted(keys, cells.level_key))
        return cls(
            n_md=n_md,
            md_model=keys // n_days,
            md_day=keys % n_days,
            md_of_obs=md_of_obs,
            slot=slot,
            n_terms=int(np.bincount(md_of_obs, minlength=n_md).max()),
            level=level,
        )


def _shared_integrands(cells: _Cells, layout: _ModelDays, one_prior: bool):
    """``(first, ptr, members)``: the model-day whose integrand stands for each distinct one
    (``first``: indices, or a slice of all), and the groups of each for
    :func:`~delusion_bayes.models.quadrature.kernel`. With
    ``one_prior`` (every model-day's latent has the same prior in a draw: the rater model) two
    model-days share their integrand when they hold the same raters' same ratings in the same
    slots (the terms in the same order, so the shared integral is each one's to the bit);
    otherwise every model-day is its own."""
    n_md = layout.n_md
    if not one_prior or layout.level is not None:
        return (slice(None), *one_each(n_md))
    n_cat = len(STAGE_CUTPOINTS) + 1
    codes = np.full((n_md, layout.n_terms), -1, np.int64)
    codes[layout.md_of_obs, layout.slot] = cells.ri * n_cat + cells.y
    _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    members = np.argsort(inverse.ravel(), kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(inverse.ravel(), minlength=first.size))])
    return first, ptr.astype(np.int64), members


def _representatives(cells: _Cells, layout: _ModelDays, first) -> tuple[_Cells, _ModelDays]:
    """The ratings and layout of the model-days ``first`` only (``_shared_integrands``; all of
    them for a slice), so that the integrands are built once each."""
    if isinstance(first, slice):
        return cells, layout
    position = np.full(layout.n_md, -1, np.int64)
    position[first] = np.arange(first.size)
    keep = position[layout.md_of_obs] >= 0
    sub_cells = dataclasses.replace(
        cells, y=cells.y[keep], mi=cells.mi[keep], di=cells.di[keep], ri=cells.ri[keep]
    )
    sub_layout = dataclasses.replace(
        layout,
        n_md=first.size,
        md_model=layout.md_model[first],
        md_day=layout.md_day[first],
        md_of_obs=position[layout.md_of_obs[keep]],
        slot=layout.slot[keep],
    )
    return sub_cells, sub_layout


def _latent_prior(post: Any, flat, cells: _Cells, layout: _ModelDays, model_name: str):
    """Each draw's prior ``(mu, sigma)`` of every model-day's latent, ``(draw, model_day)``."""
    md_model, md_day, n_md = layout.md_model, layout.md_day, layout.n_md
    if "trajectory" in post:
        traj = flat("trajectory")
        mu = traj.reshape(traj.shape[0], len(cells.models), len(cells.days))[:, md_model, md_day]
        return mu, flat("sigma_eps")[:, md_model]
    if "mu_theta" in post:
        mu = np.repeat(flat("mu_theta"), n_md, axis=1)
        return mu, np.repeat(flat("sigma_theta"), n_md, axis=1)
    raise ValueError(
        f"model_day_loglik: the {model_name or 'given'} fit has neither 'trajectory' and "
        "'sigma_eps' (joint) nor 'mu_theta' and 'sigma_theta' (rater) in its posterior"
    )


def _integrand_terms(cells: _Cells, layout: _ModelDays, sev, disc, level_cuts, sl: slice):
    """``(alpha, a0, b0)`` of :func:`~delusion_bayes.models.quadrature.marginal_loglik` for the
    draws ``sl``: one term per rating of each model-day (``+OPEN``/``-OPEN`` padding), then its
    level if it has one."""
    cuts = np.asarray(STAGE_CUTPOINTS, float)
    extra = 1 if level_cuts is not None else 0
    d, s_ = disc[:, cells.ri], sev[:, cells.ri]
    # P(y > j) = sigmoid(d (s + sev - c_j)): alpha = d, beta = d sev, gamma_j = d c_j
    al, a0, b0 = ordinal_terms(cells.y, d, d * s_, d[..., None] * cuts)
    n = al.shape[0]
    A = np.zeros((n, layout.n_md, layout.n_terms + extra))
    A0 = np.full(A.shape, OPEN)
    B0 = np.full(A.shape, -OPEN)
    md, slot = layout.md_of_obs, layout.slot
    A[:, md, slot], A0[:, md, slot], B0[:, md, slot] = al, a0, b0
    if level_cuts is not None:
        beta, u, c1, c2 = level_cuts
        lv, lpos = layout.level
        bt = np.repeat(beta[sl][:, None], lv.size, 1)
        # eta = beta (s - STAGE_MIDPOINT) + u_m; P(D > j) = sigmoid(eta - c_j)
        gam = np.broadcast_to(np.stack([c1[sl], c2[sl]], -1)[:, None, :], bt.shape + (2,))
        u_m = u[sl][:, layout.md_model[lpos]]
        la, la0, lb0 = ordinal_terms(lv, bt, -STAGE_MIDPOINT * bt + u_m, gam)
        A[:, lpos, -1], A0[:, lpos, -1], B0[:, lpos, -1] = la, la0, lb0
    return A, A0, B0
