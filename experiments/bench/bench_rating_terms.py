"""Benchmark: the marginal models' rating terms, today's kernel against the one it replaced.

    .venv/bin/python experiments/bench/bench_rating_terms.py                 # joint, paper_like
    .venv/bin/python experiments/bench/bench_rating_terms.py --model rater --reps 500
    NUMBA_CPU_NAME=haswell .venv/bin/python experiments/bench/bench_rating_terms.py  # AVX2 only
    .venv/bin/python experiments/bench/bench_rating_terms.py --jax           # also JAX/XLA

The only ``U x R x Q`` part of the joint, rater and disengagement models is the sum over raters
of each rating's log category probability at each quadrature node
(:mod:`delusion_bayes.models.rating_terms`). One log-density and gradient needs the values and a
vector-Jacobian product. This script times, on the same inputs, in one process, interleaved:

- **old**: the one-pass kernel the package ran until the three-pass rewrite (a scalar libm
  ``exp`` and ``log1p`` per term; copied below verbatim) and the contraction of its partials
  with the upstream gradient as its pullback did (numpy);
- **new**: what the models run now: ``rating_terms_kernel`` (flat buffer of the finite
  bounds, vectorised polynomial ``exp``/``log1p``) and ``contract_partials`` (the pullback);
- with ``--jax``: the same terms in ``jax.numpy``, value and ``jax.vjp`` under one ``jax.jit``
  (XLA on the CPU, one thread; ``jax_enable_x64``).

It checks that the outputs agree (max absolute difference), then prints milliseconds per call
and the ratio. LLVM compiles the numba kernels for this machine's CPU (AVX-512 here);
``NUMBA_CPU_NAME=haswell`` measures the AVX2 code a machine without AVX-512 would run
(numpy's own SIMD dispatch plays no part: the kernels call no numpy ufunc).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numba
import numpy as np

from delusion_bayes.models.rating_terms import OPEN_AT


@numba.njit(cache=True)
def old_kernel(s, sev, disc, lo, hi):
    """The package's kernel until the three-pass rewrite: one pass, a scalar libm ``exp`` and
    ``log1p`` per term (kept verbatim as the reference)."""
    n_u, n_q = s.shape
    n_r = sev.shape[0]
    ll = np.zeros((n_u, n_q))
    dll_ds = np.zeros((n_u, n_q))
    j_sev = np.empty((n_u, n_r, n_q))
    j_disc = np.empty((n_u, n_r, n_q))
    for u in range(n_u):
        for r in range(n_r):
            d = disc[r]
            lo_ur = lo[u, r]
            hi_ur = hi[u, r]
            # a rating at an end of the scale (1 or 4) has one finite bound: its other softplus
            # is exactly 0 and is skipped (about half the ratings; exp(-1e4) is also slow)
            lo_open = lo_ur < -OPEN_AT
            hi_open = hi_ur > OPEN_AT
            for q in range(n_q):
                z = s[u, q] + sev[r]
                val = 0.0
                sig_na = 0.0  # sigmoid(-a)
                sig_b = 0.0  # sigmoid(b)
                gd = 0.0
                if not lo_open:
                    za = z - lo_ur
                    a = d * za
                    # -softplus(-a) = -log1p(exp(-a)) for a > 0, a - log1p(exp(a)) otherwise
                    if a > 0.0:
                        e = math.exp(-a)
                        val -= math.log1p(e)
                        sig_na = e / (1.0 + e)
                    else:
                        e = math.exp(a)
                        val += a - math.log1p(e)
                        sig_na = 1.0 / (1.0 + e)
                    gd += za * sig_na
                if not hi_open:
                    zb = z - hi_ur
                    b = d * zb
                    # -softplus(b)
                    if b > 0.0:
                        e = math.exp(-b)
                        val -= b + math.log1p(e)
                        sig_b = 1.0 / (1.0 + e)
                    else:
                        e = math.exp(b)
                        val -= math.log1p(e)
                        sig_b = e / (1.0 + e)
                    gd -= zb * sig_b
                # d l / d z = d (sigmoid(-a) - sigmoid(b));
                # d l / d d = za sigmoid(-a) - zb sigmoid(b)
                gz = d * (sig_na - sig_b)
                ll[u, q] += val
                dll_ds[u, q] += gz
                j_sev[u, r, q] = gz
                j_disc[u, r, q] = gd
    return ll, dll_ds, j_sev, j_disc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--model", default="joint", choices=["joint", "disengagement", "rater"])
    ap.add_argument("--reps", type=int, default=300, help="calls per timing (3 timings each)")
    ap.add_argument("--jax", action="store_true", help="also time JAX/XLA on the same terms")
    args = ap.parse_args(argv)
    import delusion_bayes as db
    from delusion_bayes.models.blocks import GH_NODES
    from delusion_bayes.models.rating_terms import contract_partials, rating_terms_kernel
    from delusion_bayes.models.spec import build_spec

    spec = build_spec(db.data.simulate_study(preset=args.preset, seed=0), args.model)
    lo, hi = spec.data["md_lo"], spec.data["md_hi"]
    n_u, n_r = lo.shape
    n_q = GH_NODES[args.model]
    rng = np.random.default_rng(0)
    s = np.sort(rng.normal(2.4, 1.0, (n_u, n_q)), axis=1)  # nodes around a stage of ~2.4
    sev, disc = rng.normal(0.0, 0.3, n_r), rng.uniform(1.5, 2.5, n_r)
    g = rng.random((n_u, n_q))  # the upstream gradient (logsumexp's node weights)

    def old():
        ll, dll_ds, j_sev, j_disc = old_kernel(s, sev, disc, lo, hi)
        gq = g[:, None, :]
        return ll, g * dll_ds, (gq * j_sev).sum(axis=(0, 2)), (gq * j_disc).sum(axis=(0, 2))

    def new():
        ll, dll_ds, j_sev, j_disc = rating_terms_kernel(s, sev, disc, lo, hi)
        return ll, g * dll_ds, *contract_partials(g, j_sev, j_disc)

    # the kernels' own outputs (values and partials, O(1)) element by element; the gradient
    # sums (over thousands of terms, summed in another order) relative to their size
    kernels = zip(
        old_kernel(s, sev, disc, lo, hi), rating_terms_kernel(s, sev, disc, lo, hi), strict=True
    )
    diff = max(float(np.abs(x - y).max()) for x, y in kernels)
    rel = max(
        float(np.abs(x - y).max() / max(1.0, np.abs(x).max()))
        for x, y in zip(old(), new(), strict=True)
    )
    bounds = int((lo >= -OPEN_AT).sum() + (hi <= OPEN_AT).sum())
    print(
        f"{args.model} on {args.preset}: {n_u} model-days x {n_r} raters x {n_q} nodes, "
        f"{bounds:,} finite category bounds; numba compiles for {numba.config.CPU_NAME or 'host'}"
    )
    timings = {"old": [], "new": []}
    for _ in range(3):
        for name, fn in (("old", old), ("new", new)):
            t0 = time.perf_counter()
            for _ in range(args.reps):
                fn()
            timings[name].append((time.perf_counter() - t0) / args.reps * 1e3)
    t_old, t_new = min(timings["old"]), min(timings["new"])
    print(
        f"rating kernel: old {t_old:.3f} ms, new {t_new:.3f} ms, ratio {t_old / t_new:.2f}x, "
        f"max abs diff {diff:.1e}"
    )
    print(f"value and gradient after the contraction: max relative difference {rel:.1e}")
    if diff > 1e-12 or rel > 1e-12:
        print("the two kernels disagree beyond 1e-12")
        return 1
    if args.jax:
        return _jax(s, sev, disc, lo, hi, g, new, args.reps)
    return 0


def _jax(s, sev, disc, lo, hi, g, new, reps: int) -> int:
    """The same terms and vector-Jacobian product under ``jax.jit`` (one XLA thread)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault(
        "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    )
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax is not installed (pip install -e '.[all]'): nothing to compare with")
        return 1
    jax.config.update("jax_enable_x64", True)
    lo_open, hi_open = lo < -OPEN_AT, hi > OPEN_AT
    lo_j, hi_j = jnp.where(lo_open, 0.0, lo), jnp.where(hi_open, 0.0, hi)

    def terms(s, sev, disc):
        z = s[:, None, :] + sev[None, :, None]
        a = disc[None, :, None] * (z - lo_j[:, :, None])
        b = disc[None, :, None] * (z - hi_j[:, :, None])
        t = jnp.where(lo_open[:, :, None], 0.0, -jax.nn.softplus(-a)) + jnp.where(
            hi_open[:, :, None], 0.0, -jax.nn.softplus(b)
        )
        return t.sum(axis=1)

    @jax.jit
    def xla(s, sev, disc, g):
        value, vjp = jax.vjp(terms, s, sev, disc)
        return value, *vjp(g)

    ref = new()
    got = jax.block_until_ready(xla(s, sev, disc, g))
    err = max(float(np.abs(np.asarray(x) - y).max()) for x, y in zip(got, ref, strict=True))
    t0 = time.perf_counter()
    for _ in range(reps):
        new()
    t_new = (time.perf_counter() - t0) / reps * 1e3
    t0 = time.perf_counter()
    for _ in range(reps):
        jax.block_until_ready(xla(s, sev, disc, g))
    t_xla = (time.perf_counter() - t0) / reps * 1e3
    print(
        f"JAX/XLA value + vjp {t_xla:.3f} ms, numba {t_new:.3f} ms, XLA / numba "
        f"{t_xla / t_new:.2f}x, max abs diff {err:.1e}"
    )
    return 0 if err <= 1e-12 else 1


if __name__ == "__main__":
    raise SystemExit(main())
