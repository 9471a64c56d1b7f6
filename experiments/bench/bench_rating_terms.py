"""Benchmark: the marginal models' rating terms, the fused numba Op's kernel vs JAX/XLA.

    .venv/bin/python experiments/bench/bench_rating_terms.py                 # joint, paper_like
    .venv/bin/python experiments/bench/bench_rating_terms.py --model rater --reps 500

The only ``U x R x Q`` part of the joint, rater and disengagement models is the sum over raters
of each rating's log category probability at each quadrature node
(:mod:`delusion_bayes.models.rating_terms`). One log-density and gradient needs the values and a
vector-Jacobian product. This script times, on the same inputs, in one process and interleaved:

- the package's path: ``rating_terms_kernel`` (values and partials in one numba pass) and the
  contraction of the partials with the upstream gradient, as the Op's pullback does;
- the same terms written in ``jax.numpy``, value and ``jax.vjp`` under one ``jax.jit`` (XLA on
  the CPU, one thread; ``jax_enable_x64``).

It checks that both give the same numbers (to 1e-12 relative), then prints milliseconds per call and the
ratio. The question it answers: would a JAX backend (nutpie's or numpyro's) make the sampler's
gradient cheaper than the numba kernel (``docs/models.md``, "Speed")?
"""

from __future__ import annotations

import argparse
import os
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--model", default="joint", choices=["joint", "disengagement", "rater"])
    ap.add_argument("--reps", type=int, default=300, help="calls per timing (3 timings each)")
    args = ap.parse_args(argv)
    # one XLA thread: the sampler runs one chain per core
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                          "intra_op_parallelism_threads=1")  # fmt: skip
    import numpy as np

    import delusion_bayes as db
    from delusion_bayes.models.blocks import GH_NODES
    from delusion_bayes.models.rating_terms import rating_terms_kernel
    from delusion_bayes.models.spec import build_spec

    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        print("jax is not installed (pip install -e '.[all]'): nothing to compare with")
        return 1
    jax.config.update("jax_enable_x64", True)

    spec = build_spec(db.data.simulate_study(preset=args.preset, seed=0), args.model)
    lo, hi = spec.data["md_lo"], spec.data["md_hi"]
    n_u, n_r = lo.shape
    n_q = GH_NODES[args.model]
    rng = np.random.default_rng(0)
    s = np.sort(rng.normal(2.4, 1.0, (n_u, n_q)), axis=1)  # nodes around a stage of ~2.4
    sev, disc = rng.normal(0.0, 0.3, n_r), rng.uniform(1.5, 2.5, n_r)
    g = rng.random((n_u, n_q))  # the upstream gradient (logsumexp's node weights)
    lo_open, hi_open = lo < -1e3, hi > 1e3
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

    def fused():
        ll, dll_ds, j_sev, j_disc = rating_terms_kernel(s, sev, disc, lo, hi)
        gq = g[:, None, :]
        return ll, g * dll_ds, (gq * j_sev).sum(axis=(0, 2)), (gq * j_disc).sum(axis=(0, 2))

    ref = fused()
    got = jax.block_until_ready(xla(s, sev, disc, g))
    err = max(float(np.abs(np.asarray(x) - y).max() / max(1.0, np.abs(y).max()))
              for x, y in zip(got, ref, strict=True))  # fmt: skip
    print(f"{args.model} on {args.preset}: {n_u} model-days x {n_r} raters x {n_q} nodes = "
          f"{n_u * n_r * n_q:,} terms; max relative difference numba vs XLA {err:.1e}")  # fmt: skip
    if err > 1e-12:
        print("the two implementations disagree")
        return 1
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(args.reps):
            fused()
        t_numba = (time.perf_counter() - t0) / args.reps * 1e3
        t0 = time.perf_counter()
        for _ in range(args.reps):
            jax.block_until_ready(xla(s, sev, disc, g))
        t_xla = (time.perf_counter() - t0) / args.reps * 1e3
        print(f"numba kernel + contraction {t_numba:.3f} ms | JAX/XLA value + vjp {t_xla:.3f} ms"
              f" | XLA / numba {t_xla / t_numba:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
