"""Benchmark: PSIS-LOO of a fit-sized log-likelihood, ``inference.psis.loo`` against ``az.loo``.

    .venv/bin/python experiments/bench/bench_loo.py                      # 1,796 x 4 x 1,000
    .venv/bin/python experiments/bench/bench_loo.py --fit outputs/<run>/models/joint/posterior.nc
    .venv/bin/python experiments/bench/bench_loo.py --obs 200 --draws 250 --reps 1

By default a simulated log-likelihood of the main job's per-rating shape (1,796 ratings, 4
chains x 1,000 draws; a mix of light and heavy importance-ratio tails) with a posterior of 50
scalars; with ``--fit``, a saved fit's ``log_likelihood`` variable (``--var``). Both routes get
the same ``r_eff`` (``psis.relative_eff``), so they smooth the same tails; the script checks
that elpd, its SE, p_loo and every Pareto k agree, then prints seconds per call (best of
``--reps``) and the ratio.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import xarray as xr


def simulated_fit(n_obs: int, n_chain: int, n_draw: int, seed: int = 0) -> xr.DataTree:
    """A DataTree with a ``log_likelihood`` ``y`` of ``n_obs`` observations and a posterior."""
    rng = np.random.default_rng(seed)
    scale = rng.choice([0.1, 0.5, 1.5], n_obs)[:, None, None]
    ll = -np.abs(rng.standard_t(3.0, (n_obs, n_chain, n_draw))) * scale - 1.0
    post = rng.normal(size=(n_chain, n_draw, 50))
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"theta": (("chain", "draw", "k"), post)}),
            "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), ll.transpose(1, 2, 0))}),
        }
    )


def _best(fn, reps: int) -> float:
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", help="a saved fit (posterior.nc) instead of the simulated one")
    ap.add_argument("--var", default="y", help="its log_likelihood variable")
    ap.add_argument("--obs", type=int, default=1796)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    import arviz as az

    from delusion_bayes.inference.psis import loo, relative_eff

    if args.fit:
        dt = xr.open_datatree(args.fit)
        dt.load()
        source = f"{args.fit} ({args.var})"
    else:
        dt = simulated_fit(args.obs, args.chains, args.draws)
        source = "simulated (y)"
    var = args.var if args.fit else "y"
    r_eff = relative_eff(dt["posterior"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = az.loo(dt, var_name=var, reff=r_eff, pointwise=True)
        got = loo(dt, var, r_eff)
        t_az = _best(lambda: az.loo(dt, var_name=var, reff=r_eff, pointwise=True), args.reps)
        t_new = _best(lambda: loo(dt, var, r_eff), args.reps)
    diff = max(
        abs(got.elpd - want.elpd) / abs(want.elpd),
        abs(got.se - want.se) / want.se,
        abs(got.p - want.p) / max(1.0, abs(want.p)),
        float(np.nanmax(np.abs(got.pareto_k.values - want.pareto_k.values))),
    )
    n_obs = int(
        np.prod(
            [n for d, n in dt["log_likelihood"][var].sizes.items() if d not in ("chain", "draw")]
        )
    )
    print(f"PSIS-LOO of {source}: {n_obs:,} observations, r_eff {r_eff:.3f}")
    print(
        f"loo: az.loo {t_az:.3f} s, psis.loo {t_new:.3f} s, ratio {t_az / t_new:.2f}x, "
        f"max relative difference {diff:.1e}"
    )
    if diff > 1e-10:
        print("the two disagree beyond 1e-10")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
