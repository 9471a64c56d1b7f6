"""Coverage of the Bayesian replay prevalence intervals, next to the two-stage cluster bootstrap.

    nice -n 10 .venv/bin/python experiments/bench/coverage_replay_bayes.py [--sims 20]
        [--n-participants 18] [--scale small] [--draws 500] [--tune 500] [--out FILE.csv]

``--sims`` studies from one truth: ``simulate_replay(seed=100 + i, params_seed=0, scale=...,
n_participants=..., truth_participants=300)`` (the design of the bootstrap's coverage test,
``tests/replay/test_analysis.py::test_two_stage_cis_cover_at_about_the_nominal_rate``; the
``small`` scale has the original + 2 models, 16 codes, 5 categories, conversations of 16-44
messages). Each study is analysed by

- :func:`~delusion_bayes.models.replay.fit_replay_model` (package defaults: level ``code``,
  nutpie, 2 chains x ``--draws`` after ``--tune``): equal-tailed 90% and 95% intervals of the
  posterior ``category_prevalence`` (population prevalence, intercepts integrated out);
- :func:`~delusion_bayes.baselines.replay.replay_prevalence` (two-stage cluster bootstrap,
  ``--n-boot`` resamples, seed 42) at 90% and 95%,

and every model x category interval is scored against ``true_category_prevalence`` (the truth's
Monte Carlo superpopulation prevalence). Printed: coverage per method and level with a binomial
standard error (intervals within a study are correlated, so the per-study spread is printed
too), median interval width, and each fit's diagnostics. Rows go to ``--out`` as they are made
(default ``outputs/coverage_replay_bayes.csv``, not versioned).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

LEVELS = (0.90, 0.95)


def one_study(i: int, args) -> tuple[list[dict], dict]:
    import arviz as az

    from delusion_bayes.baselines.replay import replay_prevalence, true_category_prevalence
    from delusion_bayes.data import simulate_replay
    from delusion_bayes.models.replay import fit_replay_model

    ds = simulate_replay(
        seed=100 + i,
        params_seed=0,
        scale=args.scale,
        n_participants=args.n_participants,
        truth_participants=300,
    )
    truth = true_category_prevalence(ds).set_index(["model", "category"])["truth"]
    rows = []
    for lev in LEVELS:
        boot = replay_prevalence(ds, n_boot=args.n_boot, ci_prob=lev, levels=("category",))
        for r in boot.itertuples():
            rows.append(
                {
                    "sim": i,
                    "method": "bootstrap",
                    "level": lev,
                    "model": r.model,
                    "category": r.category,
                    "estimate": r.estimate,
                    "ci_low": r.ci_low,
                    "ci_high": r.ci_high,
                }
            )
    w, c = time.perf_counter(), time.process_time()
    tree = fit_replay_model(ds, draws=args.draws, tune=args.tune, chains=2, seed=i)
    fit = {"sim": i, "wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}
    pg = tree["posterior"]["category_prevalence"]
    summ = az.summary(tree, var_names=["category_prevalence"], kind="diagnostics")
    fit.update(
        {
            "cells": tree.attrs["n_cells"],
            "divergences": tree.attrs["divergences"],
            "max_rhat_params": tree.attrs["max_rhat"],
            "max_rhat_prev": float(summ["r_hat"].max()),
            "min_ess_bulk_prev_per_chain": float(summ["ess_bulk"].min()) / 2,
        }
    )
    x = pg.stack(s=("chain", "draw"))
    mean = x.mean("s")
    for lev in LEVELS:
        a = (1 - lev) / 2
        lo, hi = x.quantile(a, "s"), x.quantile(1 - a, "s")
        for m in pg["model"].values:
            for cat in pg["category"].values:
                sel = {"model": m, "category": cat}
                rows.append(
                    {
                        "sim": i,
                        "method": "bayes",
                        "level": lev,
                        "model": str(m),
                        "category": str(cat),
                        "estimate": float(mean.sel(sel)),
                        "ci_low": float(lo.sel(sel)),
                        "ci_high": float(hi.sel(sel)),
                    }
                )
    for r in rows:
        r["truth"] = float(truth.loc[(r["model"], r["category"])])
        r["covered"] = bool(r["ci_low"] <= r["truth"] <= r["ci_high"])
    return rows, fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=20)
    ap.add_argument("--first", type=int, default=0, help="first study index (resume)")
    ap.add_argument("--scale", default="small")
    ap.add_argument("--n-participants", type=int, default=18)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--out", default="outputs/coverage_replay_bayes.csv")
    args = ap.parse_args()

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fits_path = out.with_name(out.stem + "_fits.csv")
    all_rows, fits = [], []
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(args.first, args.first + args.sims):
        rows, fit = one_study(i, args)
        all_rows.extend(rows)
        fits.append(fit)
        pd.DataFrame(all_rows).to_csv(out, index=False)
        pd.DataFrame(fits).to_csv(fits_path, index=False)
        df = pd.DataFrame(rows)
        cov = df.groupby(["method", "level"])["covered"].mean()
        print(f"study {i}: fit {fit['wall_s']:.0f} s wall / {fit['cpu_s']:.0f} s CPU, "
              f"{fit['cells']} cells, {fit['divergences']} divergences, max R-hat prevalences "
              f"{fit['max_rhat_prev']:.3f} (parameters {fit['max_rhat_params']:.3f}); coverage "
              + ", ".join(f"{m} {lv:.0%}: {v:.2f}" for (m, lv), v in cov.items()),
              flush=True)  # fmt: skip
    df = pd.DataFrame(all_rows)
    n_studies = df["sim"].nunique()
    print(f"\n{n_studies} studies ({args.scale} scale, {args.n_participants} participants), "
          f"{len(df) // (2 * len(LEVELS))} model x category intervals per method and level; "
          f"{time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    df["width"] = df["ci_high"] - df["ci_low"]
    for (method, lev), g in df.groupby(["method", "level"]):
        p = g["covered"].mean()
        per_study = g.groupby("sim")["covered"].mean()
        print(f"  {method:<9s} {lev:.0%} interval: coverage {p:.3f} "
              f"(binomial s.e. {np.sqrt(p * (1 - p) / len(g)):.3f}; per-study mean "
              f"{per_study.mean():.3f}, s.d. {per_study.std():.3f}), median width "
              f"{g['width'].median():.4f}")  # fmt: skip
    by_cat = df.groupby(["method", "level", "category"])["covered"].mean().unstack("category")
    print("\ncoverage by category:\n" + by_cat.round(2).to_string())
    f = pd.DataFrame(fits)
    print(f"\nfits: {int((f['divergences'] > 0).sum())} of {len(f)} with divergences; max R-hat "
          f"(prevalences) {f['max_rhat_prev'].max():.3f}, (parameters) "
          f"{f['max_rhat_params'].max():.3f}; min bulk ESS per chain (prevalences) "
          f"{f['min_ess_bulk_prev_per_chain'].min():.0f}; median fit {f['wall_s'].median():.0f} s "
          f"wall / {f['cpu_s'].median():.0f} s CPU")  # fmt: skip


if __name__ == "__main__":
    main()
