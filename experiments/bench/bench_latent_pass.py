"""Benchmark: the latent pass's quadrature kernel and the rating pass after it, today's against
the ones they replaced.

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
- **new**: what the package runs (``quadrature.kernel``): ``log sigmoid(a) + log sigmoid(-b) +
  log(1 - exp(b - a))``, the last a constant per term (``b - a`` does not depend on the
  latent), each ``log sigmoid`` from one ``exp`` and the rating kernel's ``log1p`` polynomial
  (``rating_terms.log_sigmoid_parts``); two ``exp`` per term and Newton step.

Then the rating terms given the drawn stage (:mod:`delusion_bayes.models.latent`): per draw
and rating, ``log P(y | stage)`` (the per-rating PSIS-LOO unit) and the posterior predictive
rating, 4,000 draws x 1,796 ratings in the main job:

- **old**: numpy, the functions copied below verbatim (``(chain, draw, rating)`` temporaries:
  the predictors by fancy indexing, ``log_expit`` twice, then ``expit`` of three cutpoints);
- **new**: ``latent.rating_loglik_and_draw``, one numba pass over draws and ratings on both
  cores, from the same uniforms (the predictive draws must be equal).

Then the rater model's pass, where model-days rated alike share one integral (52 rating
patterns for paper_like's 449 model-days): one integral per model-day against one per pattern.

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
from scipy.special import expit, log_expit

from delusion_bayes.data.schema import STAGE_CUTPOINTS
from delusion_bayes.models import latent, marginal, quadrature
from delusion_bayes.models.marginal import ordinal_terms
from delusion_bayes.models.quadrature import DEFAULT_NODES
from delusion_bayes.models.rating_terms import OPEN_AT


# ---- the old kernel (models/marginal.py before the gap identity; now quadrature.py), verbatim ----
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


# ---- the old rating pass (delusion_bayes/models/latent.py before the fused pass), verbatim ----
def old_ordinal_logp(y: np.ndarray, eta: np.ndarray, scale: np.ndarray, cuts: np.ndarray):
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


def old_ordinal_draw_from(eta, scale, cuts, u):
    """``ordinal_draw`` with its uniforms given (it drew ``u`` itself, of ``eta``'s shape)."""
    p_gt = expit(scale[..., None] * (eta[..., None] - cuts))
    return (u[..., None] < p_gt).sum(axis=-1).astype(np.int8)


def old_rating_pass(grid, d, sev, disc, cuts, u):
    stage_obs = grid[:, :, d.model_idx, d.day_idx]  # (chain, draw, obs)
    eta, scale = stage_obs + sev[..., d.rater_idx], disc[..., d.rater_idx]
    return old_ordinal_logp(d.y, eta, scale, cuts), old_ordinal_draw_from(eta, scale, cuts, u)


def rating_inputs(n_draws: int, n_groups: int, seed: int = 1):
    """(stage grid, data, severity, discrimination, uniforms) of the rating pass: 4 chains,
    one model of ``n_groups`` days, 4 raters per day."""
    from types import SimpleNamespace

    rng = np.random.default_rng(seed)
    n_chain, n_r = 4, 4
    per = max(1, n_draws // n_chain)
    grid = rng.uniform(0.5, 4.5, (1, 1, 1, n_groups)) + rng.normal(
        0, 0.3, (n_chain, per, 1, n_groups)
    )
    day = np.repeat(np.arange(n_groups), n_r)
    d = SimpleNamespace(
        model_idx=np.zeros_like(day), day_idx=day, rater_idx=np.tile(np.arange(n_r), n_groups),
        y=rng.integers(0, 4, len(day)),
    )  # fmt: skip
    sev = rng.normal(0.0, 0.3, (n_chain, per, n_r))
    disc = np.exp(rng.normal(np.log(3.5), 0.4, (n_chain, per, n_r)))
    return grid, d, sev, disc, rng.uniform(size=(n_chain, per, len(day)))


def synthetic_terms(n_draws: int, n_groups: int, n_terms: int, seed: int = 0):
    """(alpha, a0, b0, mu, sigma) of quadrature.kernel at a fit's shape."""
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


def run(kernel, terms, n_nodes: int, groups=None) -> tuple[np.ndarray, float]:
    """One call of ``kernel`` (the old one, or ``quadrature.kernel`` with its groups: one
    integrand each unless ``groups = (ptr, members, n_groups)``); (log-liks, seconds)."""
    al, a0, b0, mu, sigma = terms
    shared = () if kernel is old_kernel else groups or (*quadrature.one_each(mu.shape[1]),)
    n_groups = groups[2] if groups else mu.shape[1]
    out, out_s = np.empty((mu.shape[0], n_groups)), np.empty((mu.shape[0], n_groups))
    unif = np.zeros((0, n_groups, 2))
    t0 = time.perf_counter()
    kernel(al, a0, b0, mu, sigma, n_nodes, quadrature.NEWTON_STEPS, *shared[:2], unif, out, out_s)
    return out, time.perf_counter() - t0


def shared_rater_case(n_draws: int, n_groups: int, n_patterns: int, n_nodes: int, reps: int):
    """The rater model's latent pass: every model-day has the same prior in a draw, so the
    model-days rated alike share one integrand (``marginal._shared_integrands``; paper_like:
    449 model-days, 52 patterns). Each model-day its own integral against one per pattern,
    written to its model-days; the outputs must be equal."""
    terms = synthetic_terms(n_draws, n_patterns, 4, seed=2)
    terms[3] = np.repeat(terms[3][:, :1], n_patterns, 1)  # the rater model's one prior
    terms[4] = np.repeat(terms[4][:, :1], n_patterns, 1)
    of = np.random.default_rng(3).integers(0, n_patterns, n_groups)  # each model-day's pattern
    each = [np.ascontiguousarray(v[:, of]) for v in terms]
    members = np.argsort(of, kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(of, minlength=n_patterns))]).astype(np.int64)
    groups = (ptr, members, n_groups)
    one, _ = run(quadrature.kernel, each, n_nodes)
    shared, _ = run(quadrature.kernel, terms, n_nodes, groups)
    t_one = t_shared = np.inf
    for _ in range(reps):
        t_one = min(t_one, run(quadrature.kernel, each, n_nodes)[1])
        t_shared = min(t_shared, run(quadrature.kernel, terms, n_nodes, groups)[1])
    print(
        f"rater latent pass ({n_draws} draws x {n_groups} model-days in {n_patterns} rating "
        f"patterns, {n_nodes} nodes): one integral per model-day {t_one:.3f} s, per pattern "
        f"{t_shared:.3f} s, ratio {t_one / t_shared:.2f}x, equal: {np.array_equal(one, shared)}"
    )


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
    new, _ = run(quadrature.kernel, terms, a.nodes)
    diff = float(np.max(np.abs(old - new)))
    rel = float(np.max(np.abs(old - new) / np.maximum(np.abs(old), 1e-300)))
    t_old = t_new = np.inf
    for _ in range(a.reps):  # interleaved: the machine's speed drifts
        t_old = min(t_old, run(old_kernel, terms, a.nodes)[1])
        t_new = min(t_new, run(quadrature.kernel, terms, a.nodes)[1])
    print(
        f"latent pass ({a.draws} draws x {a.groups} model-days x {a.terms} terms, {a.nodes} "
        f"nodes, {numba.get_num_threads()} threads): old {t_old:.3f} s, new {t_new:.3f} s, "
        f"ratio {t_old / t_new:.2f}x, max abs diff {diff:.1e} (relative {rel:.1e})"
    )
    shared_rater_case(a.draws, a.groups, 52, marginal.MODEL_NODES["rater"], a.reps)
    grid, d, sev, disc, u = rating_inputs(a.draws, a.groups)
    cuts = latent.STAGE_CUTS
    latent.compile_kernels()
    ll_old, pp_old = old_rating_pass(grid, d, sev, disc, cuts, u)
    ll_new, pp_new = latent.rating_loglik_and_draw(grid, d, sev, disc, cuts, u)
    rel = float(np.max(np.abs(ll_old - ll_new) / np.maximum(np.abs(ll_old), 1e-300)))
    t_old = t_new = np.inf
    for _ in range(a.reps):
        t0 = time.perf_counter()
        old_rating_pass(grid, d, sev, disc, cuts, u)
        t_old = min(t_old, time.perf_counter() - t0)
        t0 = time.perf_counter()
        latent.rating_loglik_and_draw(grid, d, sev, disc, cuts, u)
        t_new = min(t_new, time.perf_counter() - t0)
    print(
        f"rating pass ({u.shape[0] * u.shape[1]} draws x {u.shape[2]} ratings): old (numpy) "
        f"{t_old:.3f} s, new {t_new:.3f} s, ratio {t_old / t_new:.2f}x, max relative diff of "
        f"log P {rel:.1e}, predictive draws that differ {int((pp_old != pp_new).sum())}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
