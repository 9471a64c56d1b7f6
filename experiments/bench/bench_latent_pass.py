"""Benchmark: the latent pass's quadrature kernel, today's against the one it replaced.

    .venv/bin/python experiments/bench/bench_latent_pass.py                 # joint-fit shape
    .venv/bin/python experiments/bench/bench_latent_pass.py --draws 500 --reps 1
    .venv/bin/python experiments/bench/bench_latent_pass.py --terms 5       # disengagement

After sampling, each marginal fit (joint, rater, disengagement) integrates every model-day's
latent stage out of its ratings, once per posterior draw (:mod:`delusion_bayes.models.marginal`:
the model-day log-likelihood for PSIS-LOO and a draw of the stage). At the main job's size that
is 4,000 draws x 449 model-days x 31 adaptive nodes, on both cores. This script times, on the
same inputs, in one process, interleaved:

- **old**: the kernel until this benchmark was written, copied below verbatim: each category
  probability as ``log(sigmoid(a) - sigmoid(b))`` in the mirrored form (three libm ``exp`` and
  three ``log1p`` per term and node; four ``exp`` per term and Newton step);
- **new**: what the package runs (``marginal._kernel``): ``log sigmoid(a) + log sigmoid(-b) +
  log(1 - exp(b - a))``, the last a constant per term (``b - a`` does not depend on the
  latent), each ``log sigmoid`` from one ``exp`` and the rating kernel's ``log1p`` polynomial
  (``rating_terms.log_sigmoid_parts``); two ``exp`` per term and Newton step.

Inputs are synthetic at the joint fit's shape: ratings of 4 raters per model-day drawn around a
latent stage, rater discriminations and severities near the paper_like simulator's, the
package's stage cutpoints (``--terms 5`` adds an adjudicated level as the disengagement model
does: a fifth, flatter ordinal term). Prints the largest difference of the two kernels'
log-likelihoods, then seconds per call (best of ``--reps``) and the ratio.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from delusion_bayes.data.schema import STAGE_CUTPOINTS
from delusion_bayes.models import marginal
from delusion_bayes.models.marginal import DEFAULT_NODES, ordinal_terms
from delusion_bayes.models.rating_terms import OPEN_AT


# ---- the old kernel (delusion_bayes/models/marginal.py before the gap identity), verbatim ----
@numba.njit(cache=True, inline="always")
def old_log_expit(x):
    if x < 0.0:
        return x - np.log1p(np.exp(x))
    return -np.log1p(np.exp(-x))


@numba.njit(cache=True, inline="always")
def old_expit(x):
    if x < 0.0:
        z = np.exp(x)
        return z / (1.0 + z)
    return 1.0 / (1.0 + np.exp(-x))


@numba.njit(cache=True, inline="always")
def old_open_ends(c_a, c_b):
    # (up, down): is the term's upper bound +OPEN (lowest category), its lower bound -OPEN
    # (highest category)? Both: a padding term, which contributes 0 and no slope
    return c_a >= OPEN_AT, c_b <= -OPEN_AT


@numba.njit(cache=True, inline="always")
def old_log_cat(a, b, up, down):
    # log(sigmoid(a) - sigmoid(b)), a > b, in the form without cancellation: the mirrored
    # sigmoid(-b) - sigmoid(-a) where both sigmoids are near 1. An open bound's sigmoid is
    # exactly 1 or 0 in float64, so its transcendentals are skipped (the same bits)
    if up:
        return old_log_expit(-b)
    if down:
        return old_log_expit(a)
    if a + b > 0.0:
        hi, lo = -b, -a
    else:
        hi, lo = a, b
    lh = old_log_expit(hi)
    return lh + np.log1p(-np.exp(old_log_expit(lo) - lh))


@numba.njit(cache=True, inline="always")
def old_derivs(a, b, alpha, up, down):
    # first and second derivative in s of log(sigmoid(a) - sigmoid(b)), a, b = alpha s + c.
    # An open bound (up: a = +OPEN + ..., down: b = -OPEN + ...) has sigmoid exactly 1 or 0 in
    # float64, so its two exps are skipped: the same bits as the general branch, at half the cost
    if up:
        p, sa, sb = old_expit(-b), 1.0, old_expit(b)
    elif down:
        sa, sb = old_expit(a), 0.0
        p = sa
    else:
        if a + b > 0.0:
            p = old_expit(-b) - old_expit(-a)
        else:
            p = old_expit(a) - old_expit(b)
        sa, sb = old_expit(a), old_expit(b)
    p = max(p, 1e-300)
    qa, qb = sa * (1.0 - sa), sb * (1.0 - sb)
    g = alpha * (qa - qb) / p
    h = alpha * alpha * (qa * (1.0 - 2.0 * sa) - qb * (1.0 - 2.0 * sb)) / p - g * g
    return g, h


@numba.njit(cache=True, inline="always")
def old_mode(alpha, a0, b0, i, j, m, sg, n_terms, n_steps):
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
            up, down = old_open_ends(c_a, c_b)
            if up and down:
                continue
            gk, hk = old_derivs(al * s + c_a, al * s + c_b, al, up, down)
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
        up, down = old_open_ends(c_a, c_b)
        if not (up and down):
            g2 += old_derivs(al * s + c_a, al * s + c_b, al, up, down)[1]
    return e, 1.0 / np.sqrt(1.0 - sg * sg * g2)


@numba.njit(cache=True, inline="always")
def old_log_nodes(alpha, a0, b0, i, j, m, sg, e, tau, n_terms, n_nodes, vals):
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
            al, c_a, c_b = alpha[i, j, k], a0[i, j, k], b0[i, j, k]
            up, down = old_open_ends(c_a, c_b)
            if not (up and down):
                v += old_log_cat(al * sq + c_a, al * sq + c_b, up, down)
        vals[q] = v
        best = max(best, v)
    return -umax, du, best


@numba.njit(cache=True, parallel=True)
def old_kernel(alpha, a0, b0, mu, sigma, n_nodes, n_steps, unif, out, out_s):
    # the integral per (draw, group) into out; with unif of shape (n_draws, n_groups, 2) also
    # one draw of the latent into out_s (:func:`sample_latent`)
    n_draws, n_groups, n_terms = alpha.shape
    sample = unif.shape[0] == n_draws
    for i in numba.prange(n_draws):
        vals = np.empty(n_nodes)
        for j in range(n_groups):
            m, sg = mu[i, j], sigma[i, j]
            e, tau = old_mode(alpha, a0, b0, i, j, m, sg, n_terms, n_steps)
            u0, du, best = old_log_nodes(alpha, a0, b0, i, j, m, sg, e, tau, n_terms, n_nodes, vals)
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


def synthetic_terms(n_draws: int, n_groups: int, n_terms: int, seed: int = 0):
    """(alpha, a0, b0, mu, sigma) of marginal._kernel at a fit's shape."""
    rng = np.random.default_rng(seed)
    cuts = np.asarray(STAGE_CUTPOINTS, float)
    stage = rng.uniform(0.5, 4.5, n_groups)  # each model-day's latent stage
    n_r = min(n_terms, 4)
    disc_true = np.exp(rng.normal(np.log(3.5), 0.4, n_r))
    sev_true = rng.normal(0.0, 0.3, n_r)
    z = disc_true * (stage[:, None] + sev_true)
    p_gt = 1.0 / (1.0 + np.exp(-(z[..., None] - disc_true[:, None] * cuts)))
    y = (rng.uniform(size=p_gt.shape[:2])[..., None] < p_gt).sum(-1)  # (groups, raters)
    # posterior draws scattered around the truth
    shape = (n_draws, n_groups, n_r)
    disc = np.broadcast_to(disc_true * np.exp(rng.normal(0.0, 0.1, (n_draws, 1, n_r))), shape)
    sev = np.broadcast_to(sev_true + rng.normal(0.0, 0.1, (n_draws, 1, n_r)), shape)
    al, a0, b0 = ordinal_terms(
        np.broadcast_to(y, (n_draws, *y.shape)), disc, disc * sev, disc[..., None] * cuts
    )
    if n_terms > n_r:  # an adjudicated level: one flatter two-cut ordinal term
        lv = rng.integers(0, 3, n_groups)
        bt = np.full((n_draws, n_groups), 0.8)
        gam = np.broadcast_to(np.array([0.5, 2.0]), (n_draws, n_groups, 2))
        la, la0, lb0 = ordinal_terms(lv, bt, -2.5 * bt, gam)
        al, a0, b0 = (
            np.concatenate([x, y_[..., None]], -1) for x, y_ in ((al, la), (a0, la0), (b0, lb0))
        )
    mu = stage + rng.normal(0.0, 0.2, (n_draws, n_groups))
    sigma = np.exp(rng.normal(np.log(0.5), 0.2, (n_draws, 1))) * np.ones((1, n_groups))
    return [np.ascontiguousarray(v, float) for v in (al, a0, b0, mu, sigma)]


def run(kernel, terms, n_nodes: int) -> tuple[np.ndarray, float]:
    al, a0, b0, mu, sigma = terms
    out, out_s = np.empty(mu.shape), np.empty(mu.shape)
    unif = np.zeros((0, mu.shape[1], 2))
    t0 = time.perf_counter()
    kernel(al, a0, b0, mu, sigma, n_nodes, marginal._NEWTON_STEPS, unif, out, out_s)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--groups", type=int, default=449)
    ap.add_argument("--terms", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    terms = synthetic_terms(a.draws, a.groups, a.terms)
    old, _ = run(old_kernel, terms, a.nodes)  # compile (or load) both first
    new, _ = run(marginal._kernel, terms, a.nodes)
    diff = float(np.max(np.abs(old - new)))
    rel = float(np.max(np.abs(old - new) / np.maximum(np.abs(old), 1e-300)))
    t_old = t_new = np.inf
    for _ in range(a.reps):  # interleaved: the machine's speed drifts
        t_old = min(t_old, run(old_kernel, terms, a.nodes)[1])
        t_new = min(t_new, run(marginal._kernel, terms, a.nodes)[1])
    print(
        f"latent pass ({a.draws} draws x {a.groups} model-days x {a.terms} terms, {a.nodes} "
        f"nodes, {numba.get_num_threads()} threads): old {t_old:.3f} s, new {t_new:.3f} s, "
        f"ratio {t_old / t_new:.2f}x, max abs diff {diff:.1e} (relative {rel:.1e})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
