"""Coverage of the behaviour model's chatbot-level intervals (issue 54, item 4): S simulated
replicated studies (``data.replicated_simulate``: trajectories, hurdle counts, raters; not the
graph the model fits), each fitted by the replicated stage's procedure (the behaviour model with
the gate's refits, :func:`delusion_bayes.stages.replicated.fit_bayes`), and the 90/95% intervals
of every chatbot x item expected value per judged turn of a NEW conversation
(``bayes_item_means``) scored against the simulator's ``true_item_mean``; the conversation
bootstrap's intervals (``item_means``) on the same studies beside them.

Chatbot contrasts (item 4) go to ``<out stem>_contrasts.csv``: per pair x item the posterior
difference for a new conversation (``bayes_contrasts``) scored against the true difference, and
the stage's permutation test on conversation means (``chatbot_contrasts``). With ``--null`` the
chatbots share one population (``sd_t50 = sd_log_k = sd_L_logit = 0``): every true difference is
0 and the rejection rate is the type-I error.

Coverage SEs are cluster-robust (the cells of one study share its fit: the SE is that of the
per-study coverage shares over the S studies), not binomial over cells.

    .venv/bin/python experiments/bench/behaviour_coverage.py --studies 20 --out cov.csv
    .venv/bin/python experiments/bench/behaviour_coverage.py --studies 20 --null --out null.csv
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


def study(preset: str, seed: int, null: bool = False):
    from delusion_bayes.data.replicated_simulate import NULL_CHATBOTS, simulate_replicated

    return simulate_replicated(preset, seed=seed, **(NULL_CHATBOTS if null else {}))


def contrast_rows(ds, tree, base: dict, null: bool) -> list[dict]:
    """Per chatbot pair x item: the behaviour model's difference (95/90% intervals) and the
    permutation test's p on the same study, each with the true difference (0 under ``null``)."""
    from delusion_bayes.baselines.replicated_compare import chatbot_contrasts
    from delusion_bayes.models.behaviour_posterior import bayes_contrasts

    truth = ds["true_item_mean"]

    def true_diff(r) -> float:
        return (
            0.0
            if null
            else float(truth.sel(model=r.a, item=r.item) - truth.sel(model=r.b, item=r.item))
        )

    post = {lv: bayes_contrasts(tree, lv).set_index(["item", "a", "b"]) for lv in (0.95, 0.9)}
    perm = chatbot_contrasts(ds, n_mc=20_000, seed=base["seed"]).set_index(["item", "a", "b"])
    rows = []
    for r in post[0.95].reset_index().itertuples():
        key, t = (r.item, r.a, r.b), true_diff(r)
        row = {**base, "item": r.item, "a": r.a, "b": r.b, "truth": t}
        rows.append(
            {
                **row,
                "method": "behaviour",
                "estimate": r.diff,
                "lo95": r.ci_low,
                "hi95": r.ci_high,
                "lo90": post[0.9].loc[key, "ci_low"],
                "hi90": post[0.9].loc[key, "ci_high"],
                "p": np.nan,
            }
        )
        rows.append(
            {
                **row,
                "method": "permutation",
                "estimate": perm.loc[key, "diff"],
                "lo95": np.nan,
                "hi95": np.nan,
                "lo90": np.nan,
                "hi90": np.nan,
                "p": perm.loc[key, "pvalue"],
            }
        )
    return rows


def summarise_contrasts(df: pd.DataFrame) -> pd.DataFrame:
    """Per preset x method: S, pairs, the rejection rate (interval excludes 0, or p < 0.05)
    with its cluster-robust SE, and the 90/95% coverage of the true difference."""
    iv = df["method"] == "behaviour"
    df = df.assign(
        reject=np.where(iv, (df["lo95"] > 0) | (df["hi95"] < 0), df["p"] < 0.05),
        cover95=np.where(iv, (df["lo95"] <= df["truth"]) & (df["truth"] <= df["hi95"]), np.nan),
        cover90=np.where(iv, (df["lo90"] <= df["truth"]) & (df["truth"] <= df["hi90"]), np.nan),
    )
    out = []
    for (preset, method), g in df.groupby(["preset", "method"], sort=False):
        per = g.groupby("seed")[["reject", "cover95", "cover90"]].mean()
        s = len(per)
        row = {"preset": preset, "method": method, "S": s, "pairs": len(g)}
        for col in ("reject", "cover95", "cover90"):
            row[col] = per[col].mean()
            row[f"{col}_se"] = per[col].std(ddof=1) / np.sqrt(s)
        out.append(row)
    return pd.DataFrame(out).round(3)


def analyse(
    preset: str, seed: int, sampler: dict, refits: bool = True, null: bool = False
) -> tuple[list[dict], list[dict]]:
    """Both methods' scored rows of one study: the chatbot means, and the contrasts."""
    from omegaconf import OmegaConf

    from delusion_bayes.baselines.replicated import item_means
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.inference.diagnostics import gate
    from delusion_bayes.models.behaviour_posterior import bayes_item_means, reported_vars
    from delusion_bayes.stages.replicated import fit_bayes

    ds = study(preset, seed, null)
    label = f"{preset}-null" if null else preset
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
                    "preset": label,
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
    base = {"preset": label, "seed": seed, "passed": bool(verdict["passed"])}
    return rows, contrast_rows(ds, tree, base, null)


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
    ap.add_argument("--null", action="store_true", help="chatbots from one population (type-I)")
    ap.add_argument("--out", default="behaviour_coverage.csv")
    ap.add_argument("--summary", help="print the table of this CSV and stop")
    a = ap.parse_args(argv)
    if a.summary:
        _print(Path(a.summary))
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
        rows, contrasts = analyse(a.preset, s, sampler, not a.no_refits, a.null)
        if contrasts:  # before the means: a study counts as done once its means are written
            pd.DataFrame(contrasts).to_csv(
                _contrasts_path(out),
                mode="a",
                header=not _contrasts_path(out).exists(),
                index=False,
            )
        pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
        print(f"study {s}: fit {rows[-1]['seconds']:.0f} s", flush=True)
    _print(out)
    return 0


def _contrasts_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}_contrasts.csv")


def _print(out: Path) -> None:
    print(summarise(pd.read_csv(out)).to_string())
    if _contrasts_path(out).exists():
        print("\nchatbot contrasts (reject: 95% interval excludes 0, or permutation p < 0.05)")
        print(summarise_contrasts(pd.read_csv(_contrasts_path(out))).to_string())


if __name__ == "__main__":
    sys.exit(main())
