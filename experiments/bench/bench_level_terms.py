"""Benchmark: the disengagement model's log-density and gradient, with the level-terms Op
against the PyTensor ``softplus`` graph it replaced.

    .venv/bin/python experiments/bench/bench_level_terms.py              # paper_like
    .venv/bin/python experiments/bench/bench_level_terms.py --preset small --reps 50

The disengagement model adds to the joint model's integrand the adjudicated Level A/B at every
model-day and quadrature node (:mod:`delusion_bayes.models.level_terms`). Until the Op, the
package built those terms as ``-softplus(c_lo - eta) - softplus(eta - c_hi)`` with PyTensor's
elementwise ``softplus``, open bounds included (kept below as ``old``). This script builds the
model both ways on the same study, compiles each log-density with its gradient in PyTensor's
numba backend (what nutpie runs; data frozen in, as a one-off fit compiles it), checks both give
the same value and gradient at random points of the unconstrained space, and prints
milliseconds per call (one thread) and their ratio, with the joint model beside them for
reference.
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np


def old_level_terms(spec, s, level):
    """The graph ``blocks._level_terms`` built until the Op (verbatim, as one expression)."""
    import pytensor.tensor as pt

    from delusion_bayes.data.schema import STAGE_MIDPOINT
    from delusion_bayes.models.blocks import spec_data
    from delusion_bayes.models.spec import OPEN

    beta, u, c1, c2 = level
    lv = spec_data(spec, "md_level")
    eta = beta * (s - STAGE_MIDPOINT) + u[spec_data(spec, "md_model")][:, None]
    big = pt.fill(lv, OPEN).astype("float64")
    c_lo = pt.switch(pt.eq(lv, 0) | pt.lt(lv, 0), -big, pt.switch(pt.eq(lv, 1), c1, c2))
    c_hi = pt.switch(pt.eq(lv, 2) | pt.lt(lv, 0), big, pt.switch(pt.eq(lv, 0), c1, c2))
    return -pt.softplus(-(eta - c_lo[:, None])) - pt.softplus(eta - c_hi[:, None])


def _logp_dlogp(spec):
    """The compiled log-density-and-gradient of ``spec``'s model, data frozen in; its size."""
    from pymc.model.transform.optimization import freeze_dims_and_data

    from delusion_bayes.models.build import build_model

    model = freeze_dims_and_data(build_model(spec))
    fn = model.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    fn.set_extra_values({})
    size = sum(int(np.prod(v.shape)) for v in model.initial_point().values())
    return fn, size


def _time(fn, points, reps: int) -> float:
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(reps):
            fn(points[i % len(points)])
        best = min(best, (time.perf_counter() - t0) / reps * 1e3)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--reps", type=int, default=300, help="calls per timing (best of 3)")
    args = ap.parse_args(argv)
    import delusion_bayes as db
    from delusion_bayes.models import blocks
    from delusion_bayes.models.spec import build_spec

    study = db.data.simulate_study(preset=args.preset, seed=0)
    spec = build_spec(study, "disengagement")
    new, size = _logp_dlogp(spec)
    with mock.patch.object(blocks, "_level_terms", old_level_terms):
        old, _ = _logp_dlogp(spec)
    joint, joint_size = _logp_dlogp(build_spec(study, "joint"))
    rng = np.random.default_rng(0)
    points = [rng.normal(0.0, 0.5, size) for _ in range(8)]
    diff_v, diff_g = 0.0, 0.0
    for x in points:
        (v_old, g_old), (v_new, g_new) = old(x), new(x)
        diff_v = max(diff_v, abs(float(v_old - v_new)) / max(1.0, abs(float(v_old))))
        diff_g = max(diff_g, float(np.abs(g_old - g_new).max() / max(1.0, np.abs(g_old).max())))
    t_old, t_new = _time(old, points, args.reps), _time(new, points, args.reps)
    n_md = spec.data["md_level"].size
    print(f"disengagement on {args.preset}: {size} parameters, {n_md} model-days")
    print(
        f"log-density and gradient: old {t_old:.3f} ms, new {t_new:.3f} ms, "
        f"ratio {t_old / t_new:.2f}x; max relative difference value {diff_v:.1e}, "
        f"gradient {diff_g:.1e}"
    )
    t_joint = _time(joint, [rng.normal(0.0, 0.5, joint_size) for _ in range(8)], args.reps)
    print(f"joint model for reference: {t_joint:.3f} ms (the same model without the level)")
    if diff_v > 1e-12 or diff_g > 1e-12:
        print("the two graphs disagree beyond 1e-12")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
