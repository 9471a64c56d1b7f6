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

import dataclasses
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL, RATER, STAGE_CUTPOINTS, STAGE_MIDPOINT
from .rating_terms import (
    EXP_FLOOR,
    NJIT_OPTIONS,
    OPEN_AT,
    exp_nonpositive,
    exp_nonpositive_or_zero,
    log1p_unit,
    log_sigmoid_parts,
    log_sigmoid_pass,
)
from .spec import OPEN

#: dimension of the per-model-day log-likelihood (observed model-days only)
MODEL_DAY = "model_day"
#: name of the marginal log-likelihood variable in the ``log_likelihood`` group
MARGINAL_VAR = "y_model_day"
#: quadrature nodes (error below 1e-5 on the log scale: tests/models/test_marginal.py)
DEFAULT_NODES = 31
#: more for the rater model: its latent's wide prior (sigma_theta ~1.6) against raters as steep
#: as 7-9 per stage makes box-like integrands (31 nodes: up to 5e-5 on its paper_like fit,
#: 41: 7e-6; joint and disengagement: 5e-7 and 8e-7 with 31)
MODEL_NODES: dict[str, int] = {"rater": 41}
_NEWTON_STEPS = 40
_LOG2 = float(np.log(2.0))
_LOG_2PI = float(np.log(2.0 * np.pi))


@numba.njit(cache=True, inline="always")
def _parts(x):
    # (log sigmoid(x), sigmoid(x), sigmoid(-x)) from one libm exp
    return log_sigmoid_parts(x, np.exp(-abs(x)))


@numba.njit(cache=True, inline="always")
def _open_ends(c_a, c_b):
    # (up, down): is the term's upper bound +OPEN (lowest category), its lower bound -OPEN
    # (highest category)? Both: a padding term, which contributes 0 and no slope
    return c_a >= OPEN_AT, c_b <= -OPEN_AT


@numba.njit(cache=True, inline="always")
def _derivs(a, b, alpha, up, down, gap):
    # first and second derivative in s of log(sigmoid(a) - sigmoid(b)), a, b = alpha s + c,
    # with p = sigmoid(a) sigmoid(-b) gap (gap = 1 - exp(b - a), :func:`_group_terms`): one exp per
    # bound, none for an open one (sigmoid exactly 1 or 0 there: the same bits as the general
    # branch)
    if up:
        sa, na = 1.0, 0.0
    else:
        _, sa, na = _parts(a)
    if down:
        sb, nb = 0.0, 1.0
    else:
        _, sb, nb = _parts(b)
    p = max(sa * nb * gap, 1e-300)
    qa, qb = sa * na, sb * nb
    g = alpha * (qa - qb) / p
    h = alpha * alpha * (qa * (na - sa) - qb * (nb - sb)) / p - g * g
    return g, h


@numba.njit(cache=True, inline="always")
def _group_terms(alpha, a0, b0, i, j, n_terms, gap, slopes, offsets):
    # the terms of group (i, j), once: gap[k] = 1 - exp(b - a) (1 for an open bound) for the
    # Newton steps; every finite bound as x = slope s + offset for the node pass; returns
    # (number of finite bounds, sum of the terms' log gaps).
    # sigmoid(a) - sigmoid(b) = sigmoid(a) sigmoid(-b) (1 - exp(b - a)), a > b, and b - a =
    # c_b - c_a does not depend on s: log(sigmoid(a) - sigmoid(b)) = log sigmoid(a) +
    # log sigmoid(-b) + log_gap, with the last a constant of the term (the sampler's rating
    # terms drop it, rating_terms.py), and no difference of two sigmoids to cancel. An open
    # bound's sigmoid is exactly 1 or 0 in float64 and its gap 1, so its part is skipped
    # (the same bits)
    n_b, const = 0, 0.0
    for k in range(n_terms):
        al, c_a, c_b = alpha[i, j, k], a0[i, j, k], b0[i, j, k]
        up, down = _open_ends(c_a, c_b)
        gap[k] = 1.0
        if up and down:
            continue
        if not up:  # log sigmoid(alpha s + c_a)
            slopes[n_b], offsets[n_b] = al, c_a
            n_b += 1
        if not down:  # log sigmoid(-(alpha s + c_b))
            slopes[n_b], offsets[n_b] = -al, -c_b
            n_b += 1
        if not (up or down):
            gap[k] = -np.expm1(c_b - c_a)
            const += np.log(gap[k])
    return n_b, const


@numba.njit(cache=True, inline="always")
def _mode(alpha, a0, b0, i, j, m, sg, n_terms, n_steps, gap):
    # mode e_hat of G(e) = sum_k l_k(m + sg e) - e^2 / 2 and the node scale tau there: Newton
    # safeguarded by bisection (Numerical Recipes' rtsafe; plain Newton cycles in the logistic
    # tails) in the bracket |e| <= sg sum_k alpha_k
    half = 1e-9
    for k in range(n_terms):
        half += sg * abs(alpha[i, j, k])
    lo, hi, e = -half, half, 0.0
    last = 2.0 * half  # the step before the last (rtsafe's dxold)
    for _ in range(n_steps):
        s = m + sg * e
        g1, g2 = 0.0, 0.0
        for k in range(n_terms):
            al, c_a, c_b = alpha[i, j, k], a0[i, j, k], b0[i, j, k]
            up, down = _open_ends(c_a, c_b)
            if up and down:
                continue
            gk, hk = _derivs(al * s + c_a, al * s + c_b, al, up, down, gap[k])
            g1 += gk
            g2 += hk
        grad = sg * g1 - e
        hess = sg * sg * g2 - 1.0
        if grad > 0.0:
            lo = e
        else:
            hi = e
        new = e - grad / min(hess, -1e-12)
        # bisect when Newton leaves the open bracket or would not halve the step before last
        # (rtsafe's test): without the second, Newton cycled between two points on either
        # side of a steep rater's category edge and stopped at the wrong one
        if not (lo < new < hi) or abs(2.0 * grad) > abs(last * hess):
            new = 0.5 * (lo + hi)
        step = abs(new - e)
        last = step
        e = new
        if step < 1e-10:
            break
    s = m + sg * e
    g2 = 0.0
    for k in range(n_terms):
        al, c_a, c_b = alpha[i, j, k], a0[i, j, k], b0[i, j, k]
        up, down = _open_ends(c_a, c_b)
        if not (up and down):
            g2 += _derivs(al * s + c_a, al * s + c_b, al, up, down, gap[k])[1]
    return e, 1.0 / np.sqrt(1.0 - sg * sg * g2)


@numba.njit(**NJIT_OPTIONS)
def _node_grid(umax, du, e, tau, m, sg, n_nodes, s_nodes, vals):
    # nodes e_q = e_hat + tau sinh(u_q), u_q = -umax + q du; s_nodes[q] = m + sg e_q and
    # vals[q] = log(tau cosh(u_q) du) - e_q^2 / 2 - log(2 pi) / 2, with sinh and cosh from one
    # a = exp(-|u|) and log cosh(u) = |u| - log 2 + log1p(a^2): branch-free, so LLVM
    # vectorises it (libm's sinh, cosh and log were a third of the node pass). |u| <= umax =
    # asinh(7 / tau) stays below 40 unless tau < 1e-17
    base = np.log(tau * du) - _LOG2 - 0.5 * _LOG_2PI
    for q in range(n_nodes):
        u = -umax + q * du
        au = abs(u)
        a = exp_nonpositive(max(-au, EXP_FLOOR))
        half = 0.5 * (1.0 / a - a)
        eq = e + tau * (half if u >= 0.0 else -half)
        s_nodes[q] = m + sg * eq
        vals[q] = base + au + log1p_unit(a * a) - 0.5 * eq * eq


@numba.njit(**NJIT_OPTIONS)
def _bound_args(slopes, offsets, n_bounds, s_nodes, n_nodes, x):
    # x[q * n_bounds + f] = slopes[f] s_q + offsets[f]: every finite bound at every node
    for q in range(n_nodes):
        s = s_nodes[q]
        for f in range(n_bounds):
            x[q * n_bounds + f] = slopes[f] * s + offsets[f]


@numba.njit(**NJIT_OPTIONS)
def _exp_shifted(vals, best, n_nodes):
    # vals[q] = exp(vals[q] - best) in place (0 below exp(-40): the same bits in the sum, which
    # holds 1); returns the sum
    total = 0.0
    for q in range(n_nodes):
        vals[q] = exp_nonpositive_or_zero(vals[q] - best)
        total += vals[q]
    return total


@numba.njit(cache=True, inline="always")
def _log_nodes(m, sg, e, tau, n_nodes, vals, n_b, const, buf):
    # the trapezoid in u out to e_hat +- 7 (G'' <= -1: nothing lies beyond). Fills vals[q] with
    # the log integrand times the node's weight; returns (u_min, du, max of vals). Each term's
    # log(sigmoid(a) - sigmoid(b)) = log sigmoid(a) + log sigmoid(-b) + log gap
    # (:func:`_group_terms`, which lists the n_b finite bounds and sums the log gaps into
    # const) in passes over flat buffers, as the rating kernel does (rating_terms.py): the
    # arguments of every finite bound at every node, their log sigmoids (vectorised), the sums.
    # An open bound has no argument (its log sigmoid is 0), a padding term neither
    slopes, offsets, s_nodes, x, t = buf
    umax = np.arcsinh(7.0 / tau)
    du = 2.0 * umax / (n_nodes - 1)
    _node_grid(umax, du, e, tau, m, sg, n_nodes, s_nodes, vals)
    _bound_args(slopes, offsets, n_b, s_nodes, n_nodes, x)
    log_sigmoid_pass(x, t, n_nodes * n_b)
    best = -np.inf
    for q in range(n_nodes):
        v = vals[q] + const
        for f in range(n_b):
            v += t[q * n_b + f]
        vals[q] = v
        best = max(best, v)
    return -umax, du, best


@numba.njit(cache=True, parallel=True)
def _kernel(alpha, a0, b0, mu, sigma, n_nodes, n_steps, ptr, members, unif, out, out_s):
    # the integral per (draw, integrand) of alpha's ``(n_draws, n_integrands, n_terms)``; into
    # out[i, members[k]] for every k in ptr[p]:ptr[p + 1], the groups that share integrand p
    # (the rater model's model-days rated alike; else one group each). With unif of shape
    # (n_draws, n_groups, 2) also one draw of each group's latent into out_s
    # (:func:`sample_latent`), from its own uniforms and the shared nodes
    n_draws, n_integrands, n_terms = alpha.shape
    sample = unif.shape[0] == n_draws
    for i in numba.prange(n_draws):
        vals = np.empty(n_nodes)
        gap = np.empty(n_terms)
        buf = (
            np.empty(2 * n_terms),
            np.empty(2 * n_terms),
            np.empty(n_nodes),
            np.empty(2 * n_terms * n_nodes),
            np.empty(2 * n_terms * n_nodes),
        )
        for p in range(n_integrands):
            m, sg = mu[i, p], sigma[i, p]
            n_b, const = _group_terms(alpha, a0, b0, i, p, n_terms, gap, buf[0], buf[1])
            e, tau = _mode(alpha, a0, b0, i, p, m, sg, n_terms, n_steps, gap)
            u0, du, best = _log_nodes(m, sg, e, tau, n_nodes, vals, n_b, const, buf)
            total = _exp_shifted(vals, best, n_nodes)
            ll = best + np.log(total)
            for k in range(ptr[p], ptr[p + 1]):
                j = members[k]
                out[i, j] = ll
                if sample:
                    target = unif[i, j, 0] * total
                    q, acc = 0, vals[0]
                    while acc < target and q < n_nodes - 1:
                        q += 1
                        acc += vals[q]
                    u = u0 + (q + unif[i, j, 1] - 0.5) * du
                    out_s[i, j] = m + sg * (e + tau * np.sinh(u))


def _call_kernel(args) -> None:
    if _kernel.signatures:
        _kernel(*args)
    else:  # first call here: compiled, or loaded from numba's cache, once across processes
        from ..inference.sampling import compile_lock

        with compile_lock("latent-kernel"):
            _kernel(*args)


def _one_each(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, members)`` of :func:`_kernel` for ``n`` integrands of one group each."""
    return np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)


def _run_kernel(alpha, a0, b0, mu, sigma, n_nodes, rng=None):
    """Flatten to ``(n, 1, n_terms)``, run :func:`_kernel`; returns (log-lik, draws or None)."""
    alpha, a0, b0 = np.broadcast_arrays(*(np.asarray(v, float) for v in (alpha, a0, b0)))
    lead = alpha.shape[:-1]
    mu, sigma = (np.broadcast_to(np.asarray(v, float), lead) for v in (mu, sigma))
    n_terms = alpha.shape[-1]
    # C-contiguous and writable, always: numba compiles the kernel once per array type, and a
    # read-only view (np.broadcast_to of an array already of the right shape, as the rater
    # model's mu is) is another type, which cost a second cold compile of ~15 s
    flat = [np.require(v.reshape(-1, 1, n_terms), float, "CW") for v in (alpha, a0, b0)]
    n = flat[0].shape[0]
    out, out_s = np.empty((n, 1)), np.full((n, 1), np.nan)
    unif = rng.uniform(size=(n, 1, 2)) if rng is not None else np.zeros((0, 1, 2))
    mu, sigma = (np.require(v.reshape(-1, 1), float, "CW") for v in (mu, sigma))
    _call_kernel((*flat, mu, sigma, int(n_nodes), _NEWTON_STEPS, *_one_each(1), unif, out, out_s))
    return out.reshape(lead), (out_s.reshape(lead) if rng is not None else None)


def _run_shared(alpha, a0, b0, mu, sigma, n_nodes, ptr, members, n_groups, rng=None):
    """:func:`_kernel` on ``(n_draws, n_integrands, n_terms)`` integrands shared by the groups
    ``members[ptr[p]:ptr[p + 1]]``; returns the ``(n_draws, n_groups)`` log-likelihoods and, with
    ``rng``, the latent draws (from the uniforms :func:`_run_kernel` would draw for the groups)."""
    n = alpha.shape[0]
    arrays = [np.require(v, float, "CW") for v in (alpha, a0, b0, mu, sigma)]
    out, out_s = np.empty((n, n_groups)), np.full((n, n_groups), np.nan)
    unif = rng.uniform(size=(n * n_groups, 1, 2)) if rng is not None else np.zeros((0, 1, 2))
    unif = unif.reshape(-1, n_groups, 2)
    _call_kernel((*arrays, int(n_nodes), _NEWTON_STEPS, ptr, members, unif, out, out_s))
    return out, (out_s if rng is not None else None)


def compile_kernel() -> None:
    """Compile (or load from numba's cache) the latent pass's kernel now, on a one-term integral
    (the compile prefetch, ``stages/prefetch.py``, does it ahead of the first fit that needs it)."""
    one = np.ones((1, 1, 1))
    _run_kernel(one, one, -one, np.zeros((1, 1)), np.ones((1, 1)), DEFAULT_NODES)


def marginal_loglik(
    alpha: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    n_nodes: int = DEFAULT_NODES,
) -> np.ndarray:
    """``log int prod_i [sigmoid(alpha_i s + a0_i) - sigmoid(alpha_i s + b0_i)]
    N(s; mu, sigma) ds``.

    ``alpha, a0, b0``: ``(..., n_groups, n_terms)``, one ordinal observation of the group's
    latent per term (``a0 = +OPEN`` for the lowest category, ``b0 = -OPEN`` for the highest;
    a padding term has both, contributing 0). ``mu, sigma``: ``(..., n_groups)``, the latent's
    normal prior. Returns the ``(..., n_groups)`` log-likelihoods.
    """
    return _run_kernel(alpha, a0, b0, mu, sigma, n_nodes)[0]


def sample_latent(
    alpha: np.ndarray,
    a0: np.ndarray,
    b0: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    rng: np.random.Generator,
    n_nodes: int = DEFAULT_NODES,
) -> np.ndarray:
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
    rated model-day's stage from its conditional posterior (:func:`sample_latent`): with the
    parameter draws, draws from the joint posterior with the stage as a parameter."""
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
        out[sl], s_draw = _run_shared(
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
    (``first``: indices, or a slice of all), and :func:`_kernel`'s groups of each. With
    ``one_prior`` (every model-day's latent has the same prior in a draw: the rater model) two
    model-days share their integrand when they hold the same raters' same ratings in the same
    slots (the terms in the same order, so the shared integral is each one's to the bit);
    otherwise every model-day is its own."""
    n_md = layout.n_md
    if not one_prior or layout.level is not None:
        return (slice(None), *_one_each(n_md))
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
    """``(alpha, a0, b0)`` of :func:`marginal_loglik` for the draws ``sl``: one term per rating
    of each model-day (``+OPEN``/``-OPEN`` padding), then its level if it has one."""
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
