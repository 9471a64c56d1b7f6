"""Simulation-based calibration of the ``onset`` or ``joint`` model at small size.

    .venv/bin/python experiments/bench/sbc.py [--model onset|joint] [--sims 100] [--draws 200]
        [--tune 200] [--out outputs/sbc]

Prior SBC (:mod:`delusion_bayes.models.sbc`) on the design of ``simulate_study("small",
seed=0)`` (5 models x 12 days, 3 raters): each simulation draws the parameters from the prior
and data from the model (the onset model through ``simuk``, the joint model's ratings through
its generative process), fits the model with nutpie and ranks the drawn L, k, t50 and
hyper-parameters (joint: also the day-noise scales and the rater effects) among the posterior
draws. Prints the
chi-square uniformity table (per variable, vector elements pooled; per element too with
``--per-element``), the wall time, and writes ``sbc_ranks.nc`` and ``sbc_ranks.png`` (rank
histograms with the 99% band of uniform ranks) into ``--out``.

Measured: docs/dev/models.md ("Calibration").
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="onset", choices=["onset", "joint"])
    ap.add_argument("--sims", type=int, default=100)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=200)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="outputs/sbc")
    ap.add_argument("--per-element", action="store_true")
    args = ap.parse_args()

    from delusion_bayes.models.geometry import MIN_T50_SCALE_TURNERS
    from delusion_bayes.models.sbc import plot_sbc, run_sbc, sbc_uniformity

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.perf_counter(), time.process_time()
    dt = run_sbc(
        model=args.model,
        num_simulations=args.sims,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        seed=args.seed,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    dt.to_netcdf(out / "sbc_ranks.nc")
    plot_sbc(dt, out / "sbc_ranks.png")
    table = sbc_uniformity(dt)
    if not args.per_element:
        table = table[table["index"].isin(["", "all"])]
    print(
        f"SBC of {args.model}: {args.sims} simulations x {args.chains} chains x {args.draws} draws"
    )
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s ({wall / args.sims:.1f} s per simulation)")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    ranks = dt["prior_sbc"]
    if "t50_scale_sampled" in ranks.coords:
        sampled = np.asarray(ranks["t50_scale_sampled"].values, bool)
        print(
            f"fits that fixed sigma_t50 (fewer than {MIN_T50_SCALE_TURNERS} simulated turners): "
            f"{int((~sampled).sum())}"
            f" of {sampled.size}; the {int(sampled.sum())} whose fit is the generative model:"
        )
        table = sbc_uniformity(dt, only="t50_scale_sampled")
        if not args.per_element:
            table = table[table["index"].isin(["", "all"])]
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"written: {out / 'sbc_ranks.nc'}, {out / 'sbc_ranks.png'}")


if __name__ == "__main__":
    main()
