"""Model-day log-likelihood with the model-day's latent integrated out, for leave-one-model-day-out
PSIS-LOO.

Comparing trajectories or rater models asks how well a model predicts a *new model-day*: the
*marginal* likelihood per model-day, not PyMC's per rating given the latent (Merkle, Furr &
Rabe-Hesketh 2019, Psychometrika 84; Vehtari et al. 2016, JMLR 17):

.. math::

    \\log p(y_{m,t} \\mid \\phi) = \\log \\int \\prod_{i \\in (m,t)} p(y_i \\mid s)\\;
        N(s;\\, \\mu_{m,t}, \\sigma_m)\\, ds

with ``mu = trajectory[m, t]``, ``sigma = sigma_eps[m]`` (``joint``; ``disengagement`` adds the
model-day's level to the product) or ``mu_theta``, ``sigma_theta`` (``rater``). Every factor is a
cumulative logit in ``s``, so the integrand is log-concave: adaptive quadrature (Pinheiro & Bates
1995, J. Comput. Graph. Stat. 4; lme4's ``nAGQ``) with safeguarded Newton steps to the mode and
sinh-spaced trapezoid nodes there, which also reach the unit-scale tail of a latent cut off on
one side. By hand (numba): neither PyMC nor ArviZ integrates latents out of a log-likelihood.
Check ``loo_khat.png`` before trusting a close comparison.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL, RATER
from .spec import OPEN, STAGE_CUTPOINTS

#: dimension of the per-model-day log-likelihood (observed model-days only)
MODEL_DAY = "model_day"
#: name of the marginal log-likelihood variable in the ``log_likelihood`` group
MARGINAL_VAR = "y_model_day"
#: quadrature nodes (error below 1e-5 on the log scale: tests/models/test_marginal.py)
DEFAULT_NODES = 31
_NEWTON_STEPS = 40


@numba.njit(cache=True, inline="always")
def _log_expit(x):
    if x < 0.0:
        return x - np.log1p(np.exp(x))
    return -np.log1p(np.exp(-x))


@numba.njit(cache=True, inline="always")
def _expit(x):
    if x < 0.0:
        z = np.exp(x)
        return z / (1.0 + z)
    return 1.0 / (1.0 + np.exp(-x))


@numba.njit(cache=True, inline="always")
def _log_cat(a, b):
    # log(sigmoid(a) - sigmoid(b)), a > b, in the form without cancellation: the mirrored
    # sigmoid(-b) - sigmoid(-a) where both sigmoids are near 1
    if a + b > 0.0:
        hi, lo = -b, -a
    else:
        hi, lo = a, b
    lh = _log_expit(hi)
    return lh + np.log1p(-np.exp(_log_expit(lo) - lh))


@numba.njit(cache=True, inline="always")
def _derivs(a, b, alpha):
    # first and second derivative in s of log(sigmoid(a) - sigmoid(b)), a, b = alpha s + c
    if a + b > 0.0:
        p = _expit(-b) - _expit(-a)
    else:
        p = _expit(a) - _expit(b)
    p = max(p, 1e-300)
    sa, sb = _expit(a), _expit(b)
    qa, qb = sa * (1.0 - sa), sb * (1.0 - sb)
    g = alpha * (qa - qb) / p
    h = alpha * alpha * (qa * (1.0 - 2.0 * sa) - qb * (1.0 - 2.0 * sb)) / p - g * g
    return g, h


@numba.njit(cache=True, inline="always")
def _mode(alpha, a0, b0, i, j, m, sg, n_terms, n_steps):
    # mode e_hat of G(e) = sum_k l_k(m + sg e) - e^2 / 2 and the node scale tau there: Newton
    # safeguarded by bisection (Numerical Recipes' rtsafe; plain Newton cycles in the logistic
    # tails) in the bracket |e| <= sg sum_k alpha_k
    half = 1e-9
    for k in range(n_terms):
        half += sg * abs(alpha[i, j, k])
    lo, hi, e = -half, half, 0.0
    for _ in range(n_steps):
        s = m + sg * e
        g1, g2 = 0.0, 0.0
        for k in range(n_terms):
            al = alpha[i, j, k]
            gk, hk = _derivs(al * s + a0[i, j, k], al * s + b0[i, j, k], al)
            g1 += gk
            g2 += hk
        grad = sg * g1 - e
        hess = sg * sg * g2 - 1.0
        if grad > 0.0:
            lo = e
        else:
            hi = e
        new = e - grad / min(hess, -1e-12)
        if not (lo <= new <= hi):
            new = 0.5 * (lo + hi)
        step = abs(new - e)
        e = new
        if step < 1e-10:
            break
    s = m + sg * e
    g2 = 0.0
    for k in range(n_terms):
        al = alpha[i, j, k]
        g2 += _derivs(al * s + a0[i, j, k], al * s + b0[i, j, k], al)[1]
    return e, 1.0 / np.sqrt(1.0 - sg * sg * g2)


@numba.njit(cache=True, inline="always")
def _log_nodes(alpha, a0, b0, i, j, m, sg, e, tau, n_terms, n_nodes, vals):
    # nodes e_q = e_hat + tau sinh(u_q), trapezoid in u, out to e_hat +- 7 (G'' <= -1: nothing
    # lies beyond). Fills vals[q] with the log integrand times the node's weight; returns
    # (u_min, du, max of vals)
    log_2pi = np.log(2.0 * np.pi)
    umax = np.arcsinh(7.0 / tau)
    du = 2.0 * umax / (n_nodes - 1)
    best = -np.inf
    for q in range(n_nodes):
        u = -umax + q * du
        eq = e + tau * np.sinh(u)
        sq = m + sg * eq
        v = np.log(tau * np.cosh(u) * du) - 0.5 * eq * eq - 0.5 * log_2pi
        for k in range(n_terms):
            al = alpha[i, j, k]
            v += _log_cat(al * sq + a0[i, j, k], al * sq + b0[i, j, k])
        vals[q] = v
        best = max(best, v)
    return -umax, du, best


@numba.njit(cache=True, parallel=True)
def _kernel(alpha, a0, b0, mu, sigma, n_nodes, n_steps, unif, out, out_s):
    # the integral per (draw, group) into out; with unif of shape (n_draws, n_groups, 2) also
    # one draw of the latent into out_s (:func:`sample_latent`)
    n_draws, n_groups, n_terms = alpha.shape
    sample = unif.shape[0] == n_draws
    for i in numba.prange(n_draws):
        vals = np.empty(n_nodes)
        for j in range(n_groups):
            m, sg = mu[i, j], sigma[i, j]
            e, tau = _mode(alpha, a0, b0, i, j, m, sg, n_terms, n_steps)
            u0, du, best = _log_nodes(alpha, a0, b0, i, j, m, sg, e, tau, n_terms, n_nodes, vals)
            total = 0.0
            for q in range(n_nodes):
                vals[q] = np.exp(vals[q] - best)
                total += vals[q]
            out[i, j] = best + np.log(total)
            if sample:
                target = unif[i, j, 0] * total
                q, acc = 0, vals[0]
                while acc < target and q < n_nodes - 1:
                    q += 1
                    acc += vals[q]
                u = u0 + (q + unif[i, j, 1] - 0.5) * du
                out_s[i, j] = m + sg * (e + tau * np.sinh(u))


def _run_kernel(alpha, a0, b0, mu, sigma, n_nodes, rng=None):
    """Flatten to ``(n, 1, n_terms)``, run :func:`_kernel`; returns (log-lik, draws or None)."""
    alpha, a0, b0 = np.broadcast_arrays(*(np.asarray(v, float) for v in (alpha, a0, b0)))
    lead = alpha.shape[:-1]
    mu, sigma = (np.broadcast_to(np.asarray(v, float), lead) for v in (mu, sigma))
    n_terms = alpha.shape[-1]
    flat = [np.ascontiguousarray(v.reshape(-1, 1, n_terms)) for v in (alpha, a0, b0)]
    n = flat[0].shape[0]
    out, out_s = np.empty((n, 1)), np.full((n, 1), np.nan)
    unif = rng.uniform(size=(n, 1, 2)) if rng is not None else np.zeros((0, 1, 2))
    mu, sigma = (np.ascontiguousarray(v.reshape(-1, 1)) for v in (mu, sigma))
    _kernel(*flat, mu, sigma, int(n_nodes), _NEWTON_STEPS, unif, out, out_s)
    return out.reshape(lead), (out_s.reshape(lead) if rng is not None else None)


def marginal_loglik(alpha: np.ndarray, a0: np.ndarray, b0: np.ndarray, mu: np.ndarray,
                    sigma: np.ndarray, n_nodes: int = DEFAULT_NODES) -> np.ndarray:  # fmt: skip
    """``log int prod_i [sigmoid(alpha_i s + a0_i) - sigmoid(alpha_i s + b0_i)] N(s; mu, sigma) ds``.

    ``alpha, a0, b0``: ``(..., n_groups, n_terms)``, one ordinal observation of the group's
    latent per term (``a0 = +OPEN`` for the lowest category, ``b0 = -OPEN`` for the highest;
    a padding term has both, contributing 0). ``mu, sigma``: ``(..., n_groups)``, the latent's
    normal prior. Returns the ``(..., n_groups)`` log-likelihoods.
    """
    return _run_kernel(alpha, a0, b0, mu, sigma, n_nodes)[0]


def sample_latent(alpha: np.ndarray, a0: np.ndarray, b0: np.ndarray, mu: np.ndarray,
                  sigma: np.ndarray, rng: np.random.Generator,
                  n_nodes: int = DEFAULT_NODES) -> np.ndarray:  # fmt: skip
    """One draw of each latent ``s`` from its conditional posterior, the integrand of
    :func:`marginal_loglik` (same arguments): a node by inverse CDF of the quadrature weights,
    then uniform within its cell (exact up to that piecewise-constant interpolation).
    """
    return _run_kernel(alpha, a0, b0, mu, sigma, n_nodes, rng)[1]


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


def model_day_loglik(dt: Any, n_nodes: int = DEFAULT_NODES, chunk: int = 250) -> xr.DataArray:
    """Marginal log-likelihood of each rated model-day of a ``joint``, ``rater`` or
    ``disengagement`` fit (module docstring), dims ``(chain, draw, model_day)`` in (model, day)
    order, coords ``model_day_model``/``model_day_day``. ValueError for a fit without the
    variables the integral needs (``onset``: its likelihood is one term per model-day already).
    """
    return _integrate(dt, n_nodes, chunk, rng=None)[0]


def loglik_and_stage(
    dt: Any, rng: np.random.Generator, n_nodes: int = DEFAULT_NODES, chunk: int = 250
) -> tuple[xr.DataArray, xr.DataArray]:
    """:func:`model_day_loglik` and, from the same nodes, one draw per parameter draw of every
    rated model-day's stage from its conditional posterior (:func:`sample_latent`): with the
    parameter draws, draws from the joint posterior with the stage as a parameter."""
    ll, stage = _integrate(dt, n_nodes, chunk, rng=rng)
    stage.name = "stage"
    stage.attrs = {"description": "latent stage drawn from its conditional posterior"}
    return ll, stage


def _draws(post: xr.Dataset, name: str) -> np.ndarray:
    return np.asarray(post[name].transpose("chain", "draw", ...).values, float)


def _integrate(dt: Any, n_nodes: int, chunk: int, rng: np.random.Generator | None):
    post = dt["posterior"]
    obs = dt["observed_data"]
    model_name = str(dt.attrs.get("model", ""))
    if "y" not in obs or "severity" not in post or "discrimination" not in post:
        raise ValueError(
            f"model_day_loglik: the {model_name or 'given'} fit has no ordinal ratings 'y' with "
            "severity/discrimination; expected a joint, rater or disengagement fit"
        )
    y = np.asarray(obs["y"].values, np.int64)
    o_model = np.asarray(obs["obs_model"].values).astype(str)
    o_day = np.asarray(obs["obs_day"].values)
    o_rater = np.asarray(obs["obs_rater"].values).astype(str)
    raters = [str(r) for r in post[RATER].values]
    models = (
        [str(m) for m in post[MODEL].values] if MODEL in post.dims else list(dict.fromkeys(o_model))
    )
    days = list(post[DAY].values) if DAY in post.dims else sorted(set(o_day.tolist()))
    mi = np.array([models.index(m) for m in o_model])
    di = np.array([days.index(d) for d in o_day])
    ri = np.array([raters.index(r) for r in o_rater])

    # observed model-days (a rating or, disengagement, an adjudicated level: a level on a day
    # nobody rated is integrated over the trajectory's prior alone, as the fitted graph does,
    # spec.model_day_layout) and, per model-day, its ratings (padded)
    md_key = mi * len(days) + di
    lv_key = np.empty(0, np.int64)
    if "level" in obs and "beta_level" in post:
        lm = np.array([models.index(str(m)) for m in obs["obs_level_model"].values], np.int64)
        ld = np.array([days.index(d) for d in obs["obs_level_day"].values], np.int64)
        lv_key = lm * len(days) + ld
    keys = np.unique(np.concatenate([md_key, lv_key]))
    md_of_obs = np.searchsorted(keys, md_key)
    n_md = keys.size
    n_terms = int(np.bincount(md_of_obs, minlength=n_md).max())
    order = np.argsort(md_of_obs, kind="stable")
    slot = np.empty_like(md_of_obs)  # rank of each rating within its model-day
    slot[order] = np.arange(order.size) - np.searchsorted(md_of_obs[order], md_of_obs[order])

    level = None
    if lv_key.size:
        level = (np.asarray(obs["level"].values, np.int64), np.searchsorted(keys, lv_key))

    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    n_s = n_chain * n_draw

    def flat(name: str) -> np.ndarray:  # (chain * draw, elements)
        return _draws(post, name).reshape(n_s, -1)

    sev, disc = flat("severity"), flat("discrimination")
    md_model, md_day = keys // len(days), keys % len(days)
    if "trajectory" in post:
        mu = flat("trajectory").reshape(n_s, len(models), len(days))[:, md_model, md_day]
        sigma = flat("sigma_eps")[:, md_model]
    elif "mu_theta" in post:
        mu = np.repeat(flat("mu_theta"), n_md, axis=1)
        sigma = np.repeat(flat("sigma_theta"), n_md, axis=1)
    else:
        raise ValueError(
            f"model_day_loglik: the {model_name or 'given'} fit has neither 'trajectory' and "
            "'sigma_eps' (joint) nor 'mu_theta' and 'sigma_theta' (rater) in its posterior"
        )
    if level is not None:
        beta, u, c1 = flat("beta_level")[:, 0], flat("u"), flat("c_level_1")[:, 0]
        c2 = c1 + np.exp(flat("log_gap_level")[:, 0])
    cuts = np.asarray(STAGE_CUTPOINTS, float)
    extra = 1 if level is not None else 0
    out = np.empty((n_s, n_md))
    draws_s = np.full((n_s, n_md), np.nan)
    for lo in range(0, n_s, chunk):
        sl = slice(lo, min(lo + chunk, n_s))
        d, s_ = disc[sl][:, ri], sev[sl][:, ri]
        # P(y > j) = sigmoid(d (s + sev - c_j)): alpha = d, beta = d sev, gamma_j = d c_j
        al, a0, b0 = ordinal_terms(y, d, d * s_, d[..., None] * cuts)
        n = al.shape[0]
        A = np.zeros((n, n_md, n_terms + extra))
        A0 = np.full(A.shape, OPEN)
        B0 = np.full(A.shape, -OPEN)
        A[:, md_of_obs, slot], A0[:, md_of_obs, slot], B0[:, md_of_obs, slot] = al, a0, b0
        if level is not None:
            lv, lpos = level
            bt = np.repeat(beta[sl][:, None], lv.size, 1)
            # eta = beta (s - 2.5) + u_m; P(D > j) = sigmoid(eta - c_j)
            gam = np.broadcast_to(np.stack([c1[sl], c2[sl]], -1)[:, None, :], bt.shape + (2,))
            la, la0, lb0 = ordinal_terms(lv, bt, -2.5 * bt + u[sl][:, md_model[lpos]], gam)
            A[:, lpos, -1], A0[:, lpos, -1], B0[:, lpos, -1] = la, la0, lb0
        out[sl], s_draw = _run_kernel(A, A0, B0, mu[sl], sigma[sl], n_nodes, rng)
        if s_draw is not None:
            draws_s[sl] = s_draw
    coords = {"chain": post["chain"].values, "draw": post["draw"].values,
              MODEL_DAY: np.arange(n_md),
              f"{MODEL_DAY}_model": (MODEL_DAY, np.asarray(models)[md_model]),
              f"{MODEL_DAY}_day": (MODEL_DAY, np.asarray(days)[md_day])}  # fmt: skip
    dims = ("chain", "draw", MODEL_DAY)
    description = ("log p(all ratings of a model-day | parameters), the model-day's latent "
                   "stage integrated out (adaptive quadrature)")  # fmt: skip
    attrs = {"description": description, "n_nodes": int(n_nodes)}
    ll = xr.DataArray(out.reshape(n_chain, n_draw, n_md), dims=dims, coords=coords,
                      name=MARGINAL_VAR, attrs=attrs)  # fmt: skip
    stage = xr.DataArray(draws_s.reshape(n_chain, n_draw, n_md), dims=dims, coords=coords)
    return ll, (stage if rng is not None else None)


def add_model_day_loglik(dt: Any, n_nodes: int = DEFAULT_NODES) -> Any:
    """Add :data:`MARGINAL_VAR` to ``dt``'s ``log_likelihood`` group (created if absent)."""
    ds = dt["log_likelihood"].to_dataset() if "log_likelihood" in dt.children else xr.Dataset()
    ds[MARGINAL_VAR] = model_day_loglik(dt, n_nodes=n_nodes)
    dt["log_likelihood"] = xr.DataTree(ds)
    return dt
