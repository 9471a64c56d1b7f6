"""Adaptive quadrature of a latent observed through cumulative logits with a normal prior: the
numba kernel of the latent pass (:mod:`delusion_bayes.models.marginal` builds its integrands).

.. math::

    \\log \\int \\prod_i [\\sigma(\\alpha_i s + a_{0,i}) - \\sigma(\\alpha_i s + b_{0,i})]\\;
        N(s;\\, \\mu, \\sigma)\\, ds

Every factor is a cumulative logit in ``s``, so the integrand is log-concave: adaptive
quadrature (Pinheiro & Bates 1995, J. Comput. Graph. Stat. 4; lme4's ``nAGQ``) with safeguarded
Newton steps to the mode and sinh-spaced trapezoid nodes there, which also reach the unit-scale
tail of a latent cut off on one side; the same nodes give a draw of the latent from its
conditional posterior. By hand (numba): neither PyMC nor ArviZ integrates latents out of a
log-likelihood.
"""

from __future__ import annotations

import numba
import numpy as np

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

__all__ = [
    "DEFAULT_NODES",
    "NEWTON_STEPS",
    "compile_kernel",
    "kernel",
    "marginal_loglik",
    "one_each",
    "run_shared",
    "sample_latent",
]

#: quadrature nodes (error below 1e-5 on the log scale: tests/models/test_marginal.py)
DEFAULT_NODES = 31
#: safeguarded Newton steps to the integrand's mode (at most; they stop when converged)
NEWTON_STEPS = 40
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
def kernel(alpha, a0, b0, mu, sigma, n_nodes, n_steps, ptr, members, unif, out, out_s):
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


def call_kernel(args) -> None:
    if kernel.signatures:
        kernel(*args)
    else:  # first call here: compiled, or loaded from numba's cache, once across processes
        from ..inference.sampling import compile_lock

        with compile_lock("latent-kernel"):
            kernel(*args)


def one_each(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, members)`` of :func:`kernel` for ``n`` integrands of one group each."""
    return np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)


def run_kernel(alpha, a0, b0, mu, sigma, n_nodes, rng=None):
    """Flatten to ``(n, 1, n_terms)``, run :func:`kernel`; returns (log-lik, draws or None)."""
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
    call_kernel((*flat, mu, sigma, int(n_nodes), NEWTON_STEPS, *one_each(1), unif, out, out_s))
    return out.reshape(lead), (out_s.reshape(lead) if rng is not None else None)


def run_shared(alpha, a0, b0, mu, sigma, n_nodes, ptr, members, n_groups, rng=None):
    """:func:`kernel` on ``(n_draws, n_integrands, n_terms)`` integrands shared by the groups
    ``members[ptr[p]:ptr[p + 1]]``; returns the ``(n_draws, n_groups)`` log-likelihoods and, with
    ``rng``, the latent draws (from the uniforms :func:`run_kernel` would draw for the groups)."""
    n = alpha.shape[0]
    arrays = [np.require(v, float, "CW") for v in (alpha, a0, b0, mu, sigma)]
    out, out_s = np.empty((n, n_groups)), np.full((n, n_groups), np.nan)
    unif = rng.uniform(size=(n * n_groups, 1, 2)) if rng is not None else np.zeros((0, 1, 2))
    unif = unif.reshape(-1, n_groups, 2)
    call_kernel((*arrays, int(n_nodes), NEWTON_STEPS, ptr, members, unif, out, out_s))
    return out, (out_s if rng is not None else None)


def compile_kernel() -> None:
    """Compile (or load from numba's cache) the latent pass's kernel now, on a one-term integral
    (the compile prefetch, ``stages/prefetch.py``, does it ahead of the first fit that needs it)."""
    one = np.ones((1, 1, 1))
    run_kernel(one, one, -one, np.zeros((1, 1)), np.ones((1, 1)), DEFAULT_NODES)


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
    return run_kernel(alpha, a0, b0, mu, sigma, n_nodes)[0]


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
    return run_kernel(alpha, a0, b0, mu, sigma, n_nodes, rng)[1]
