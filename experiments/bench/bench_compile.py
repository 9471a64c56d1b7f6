"""Fits of same-shaped studies: one compiled graph per structure against a compile per study.

    .venv/bin/python experiments/bench/bench_compile.py [--model joint] [--preset small]
        [--seeds 0-5] [--draws 200] [--tune 300] [--chains 2]

Simulates one study per seed (the preset's design, each its own draw: which chatbots turn, and
so which coordinates the graph uses, varies), then fits them all twice in one process:

- **per study** (``share_graph=False``, what a one-off fit such as the main job's does): each
  study's graph is compiled anew with its data frozen in as constants (the on-disk numba
  kernels stay warm, as in a long session);
- **per structure** (``share_graph=True``, what the coverage, SBC and design loops do): the
  graph of the design is built and compiled once, and each study's arrays are swapped in
  (``pm.Data``, nutpie's ``with_data``).

Prints, per mode, the first fit, the mean of the others and the total, then the ratio of the
totals; and checks that the two modes' posteriors agree (each seed's ``mu_t50`` mean within
5 Monte Carlo standard errors: the two graphs evaluate the density in another floating-point
order, and so give other draws). The SBC and coverage studies are this loop (docs/dev/models.md,
"Speed").
"""

from __future__ import annotations

import argparse
import logging
import time


def _seeds(text: str) -> list[int]:
    if "-" in text:
        lo, hi = (int(x) for x in text.split("-"))
        return list(range(lo, hi + 1))
    return [int(x) for x in text.split(",")]


def run(model: str, studies: list, draws: int, tune: int, chains: int) -> dict:
    import arviz as az

    from delusion_bayes.models.build import forget_graphs
    from delusion_bayes.models.fit import fit

    out = {}
    for mode in ("per study", "per structure"):
        forget_graphs()
        times, means = [], []
        for ds in studies:
            t = time.perf_counter()
            dt = fit(ds, model, draws=draws, tune=tune, chains=chains, seed=1, log_prior=False,
                     posterior_predictive=False, share_graph=mode == "per structure")  # fmt: skip
            times.append(time.perf_counter() - t)
            mu = dt["posterior"]["mu_t50"]
            ess = float(az.ess(dt["posterior"].to_dataset()[["mu_t50"]])["mu_t50"])
            means.append((float(mu.mean()), float(mu.std()) / max(1.0, ess) ** 0.5))
        out[mode] = {"times": times, "means": means}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    models = ["joint", "onset", "rater", "disengagement"]
    ap.add_argument("--model", default="joint", choices=models)
    ap.add_argument("--preset", default="small")
    ap.add_argument("--seeds", default="0-5")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--chains", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    from delusion_bayes.data import simulate_study

    studies = [simulate_study(args.preset, seed=s) for s in _seeds(args.seeds)]
    res = run(args.model, studies, args.draws, args.tune, args.chains)
    print(f"{args.model} on {len(studies)} simulated {args.preset!r} studies, "
          f"{args.chains} x {args.draws} draws after {args.tune} tuning steps")  # fmt: skip
    for mode, r in res.items():
        t = r["times"]
        rest = sum(t[1:]) / max(1, len(t) - 1)
        print(f"  {mode:>13}: first fit {t[0]:6.1f} s, others {rest:6.1f} s each, "
              f"total {sum(t):7.1f} s")  # fmt: skip
    ratio = sum(res["per study"]["times"]) / sum(res["per structure"]["times"])
    print(f"compile per structure: total ratio {ratio:.2f}x (per study / per structure)")
    worst = 0.0
    for (m1, e1), (m2, e2) in zip(res["per study"]["means"], res["per structure"]["means"],
                                  strict=True):  # fmt: skip
        worst = max(worst, abs(m1 - m2) / max(1e-12, (e1**2 + e2**2) ** 0.5))
    print(f"posterior mean of mu_t50, the two modes: largest difference {worst:.2f} MCSEs")
    if worst > 5.0:
        raise SystemExit("the two modes' posteriors disagree (more than 5 Monte Carlo SEs)")


if __name__ == "__main__":
    main()
