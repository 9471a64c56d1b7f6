"""Coverage of the behaviour model's chatbot-level intervals (issue 54, item 4): S simulated
replicated studies (``data.replicated_simulate``: trajectories, hurdle counts, raters; not the
graph the model fits), each fitted by the replicated stage's procedure (the behaviour model with
the gate's refits, :func:`delusion_bayes.stages.replicated.fit_bayes`), and the 90/95% intervals
of every chatbot x item expected value per judged turn of a NEW conversation
(``bayes_item_means``) scored against the simulator's ``true_item_mean``; the conversation
bootstrap's intervals (``item_means``) on the same studies beside them.

Coverage SEs are cluster-robust (the cells of one study share its fit: the SE is that of the
per-study coverage shares over the S studies), not binomial over cells.

    .venv/bin/python experiments/bench/behaviour_coverage.py --studies 20 --out cov.csv
    .venv/bin/python experiments/bench/behaviour_coverage.py --summary cov.csv

One row per study x method x chatbot x item (appended as it goes; a rerun skips done studies).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def study(preset: str, seed: int):
    from delusion_bayes.data.replicated_simulate import simulate_replicated

    return simulate_replicated(preset, seed=seed)


def analyse(preset: str, seed: int, sampler: dict, refits: bool = True) -> list[dict]:
    """Both methods' scored rows of one study."""
    from omegaconf import OmegaConf

    from delusion_bayes.baselines.replicated import item_means
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.inference.diagnostics import gate
    from delusion_bayes.models.behaviour_posterior import bayes_item_means, reported_vars
    from delusion_bayes.stages.replicated import fit_bayes

    ds = study(preset, seed)
    truth = ds["true_item_mean"].to_series()
    c = ReplicatedConfig(n_boot=1000)
    boot = {lv: item_means(ds, c.rule, c.n_boot, seed, lv) for lv in (0.9, 0.95)}
    rule = str(boot[0.95]["rule"].iloc[0])
    off = {"refit_target_accept": None, "refit_draws_factor": None}
    cfg = OmegaConf.create({"sampler": sampler, "inference": {} if refits else off})
    t0 = time.perf_counter()
    tree = fit_bayes(ds, cfg, c, rule)
    secs = time.perf_counter() - t0
    from delusion_bayes.inference.diagnostics import diagnose

    verdict = gate(tree, diagnose(tree, None, var_names=reported_vars(tree)))
    post = {lv: bayes_item_means(tree, lv) for lv in (0.9, 0.95)}
    rows = []
    for method, tabs, lo, hi, est in (
        ("bootstrap", boot, "ci_low", "ci_high", "mean"),
        ("behaviour", post, "ci_low", "ci_high", "median"),
    ):
        t95 = tabs[0.95].set_index(["model", "item"])
        t90 = tabs[0.9].set_index(["model", "item"])
        for key, r in t95.iterrows():
            rows.append(
                {
                    "preset": preset,
                    "seed": seed,
                    "method": method,
                    "model": key[0],
                    "item": key[1],
                    "truth": float(truth.loc[key]),
                    "estimate": float(r[est]),
                    "lo95": float(r[lo]),
                    "hi95": float(r[hi]),
                    "lo90": float(t90.loc[key, lo]),
                    "hi90": float(t90.loc[key, hi]),
                    "passed": bool(verdict["passed"]) if method == "behaviour" else np.nan,
                    "seconds": secs if method == "behaviour" else np.nan,
                }
            )
    return rows


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per preset x method: S, cells, 90/95% coverage with the cluster-robust SE (over the
    studies' coverage shares), mean width, gate-clean share, median seconds per fit."""
    df = df.assign(
        cover95=(df["lo95"] <= df["truth"]) & (df["truth"] <= df["hi95"]),
        cover90=(df["lo90"] <= df["truth"]) & (df["truth"] <= df["hi90"]),
        width95=df["hi95"] - df["lo95"],
    )
    out = []
    for (preset, method), g in df.groupby(["preset", "method"], sort=False):
        per = g.groupby("seed")[["cover95", "cover90"]].mean()
        s = len(per)
        out.append(
            {
                "preset": preset,
                "method": method,
                "S": s,
                "cells": len(g),
                "cover95": per["cover95"].mean(),
                "se95": per["cover95"].std(ddof=1) / np.sqrt(s),
                "cover90": per["cover90"].mean(),
                "se90": per["cover90"].std(ddof=1) / np.sqrt(s),
                "width95": g["width95"].mean(),
                "gate_clean": g.groupby("seed")["passed"].first().mean(),
                "seconds": g.groupby("seed")["seconds"].first().median(),
            }
        )
    return pd.DataFrame(out).round(3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=100)
    ap.add_argument("--first", type=int, default=0, help="first seed")
    ap.add_argument("--preset", default="replicated")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--no-refits", action="store_true", help="one attempt per fit (smoke runs)")
    ap.add_argument("--out", default="behaviour_coverage.csv")
    ap.add_argument("--summary", help="print the table of this CSV and stop")
    a = ap.parse_args(argv)
    if a.summary:
        print(summarise(pd.read_csv(a.summary)).to_string())
        return 0
    sampler = {
        "name": "nutpie",
        "draws": a.draws,
        "tune": a.tune,
        "chains": a.chains,
        "cores": 1,
        "progressbar": False,
        "share_graph": True,
    }
    out = Path(a.out)
    done = set(pd.read_csv(out)["seed"]) if out.exists() else set()
    for s in range(a.first, a.first + a.studies):
        if s in done:
            continue
        rows = analyse(a.preset, s, sampler, refits=not a.no_refits)
        pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(f"study {s}: fit {rows[-1]['seconds']:.0f} s", flush=True)
    print(summarise(pd.read_csv(out)).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
