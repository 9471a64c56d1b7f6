"""Coverage of the cluster bootstrap's two supports: conditional vs unconditional.

    .venv/bin/python experiments/bench/coverage_replay_support.py --reps 200 --n-boot 1000

Question (issue 16, item 5): in a replay study where each window is scored on one code and each
participant reaches only some codes (the DelusionEval release: each of its 725 windows is scored
on exactly one of 18 codes), should a cell's bootstrap resample

- ``unconditional``: every participant of the study (a participant without rows in the cell adds
  nothing, so the number of supporting participants varies between resamples), or
- ``conditional``: only the participants with rows in the cell (the release's
  ``hierarchical_weighted_mean_ci``)?

Design: ``simulate_replay`` (18 participants, small-scale conversations, the original + one
evaluated model, 6 codes of three categories, fixed parameters ``params_seed=0``); each
participant reaches ``--codes-per-participant`` of the 6 codes, each of its windows is scored on
one of them (uniformly), every other code of the window is masked. So a code cell is supported
by ~18 x 2/6 = 6 participants (the issue's "6 of 18"), a category cell by more. Assignment is
independent of the outcomes, so the target of every cell is the simulator's superpopulation
prevalence (``true_prevalence``; category: the mean of its codes'), computed once on 3,000 fresh
participants. Two-stage (participant -> conversation) percentile bootstrap, 95%.

Prints coverage and mean width per support and level (code, category), with the Monte Carlo
standard error of each coverage. The numbers in ``docs/real_data.md`` come from this script.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

CODES = (
    "positive-affirmation",
    "grand-significance",
    "misrepresents-sentience",
    "endorses-delusion",
    "romantic-interest",
    "platonic-affinity",
)


def mask_one_code_per_window(ds, rng: np.random.Generator, per_participant: int):
    """Score each window on one code from its participant's subset; NaN elsewhere."""
    codes = list(ds["code"].values)
    parts = pd.unique(ds["participant"].values)
    subset = {p: rng.choice(len(codes), size=per_participant, replace=False) for p in parts}
    windows = pd.Series(ds["window"].values)
    first = windows.drop_duplicates().index
    wpart = ds["participant"].values[first]
    wcode = {
        w: subset[p][rng.integers(per_participant)]
        for w, p in zip(windows.iloc[first], wpart, strict=True)
    }
    keep = np.zeros((ds.sizes["sample"], len(codes)), dtype=bool)
    keep[np.arange(ds.sizes["sample"]), [wcode[w] for w in windows]] = True
    out = ds.copy()
    for var in ("score", "hit"):
        arr = out[var].transpose("sample", "model", "code").values.copy()
        arr[~np.broadcast_to(keep[:, None, :], arr.shape)] = np.nan
        out[var] = (("sample", "model", "code"), arr)
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    from delusion_bayes.baselines.replay import replay_prevalence, true_category_prevalence
    from delusion_bayes.data import simulate_replay

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--participants", type=int, default=18)
    ap.add_argument("--codes-per-participant", type=int, default=2)
    ap.add_argument("--truth-participants", type=int, default=3000)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    models = ["original", "gpt-4o"]
    truth_ds = simulate_replay(
        seed=0, params_seed=0, n_participants=args.participants, models=models, codes=CODES,
        truth_participants=args.truth_participants,
    )  # fmt: skip
    code_truth = truth_ds["true_prevalence"].to_dataframe().reset_index()
    code_truth = code_truth.rename(columns={"true_prevalence": "truth"})[["model", "code", "truth"]]
    cat_truth = true_category_prevalence(truth_ds)
    print(f"truth on {args.truth_participants} participants: {time.perf_counter() - t0:.1f} s")

    rows = []
    for rep in range(args.reps):
        rng = np.random.default_rng([rep, 77])
        ds = simulate_replay(
            seed=rep + 1, params_seed=0, n_participants=args.participants, models=models,
            codes=CODES, truth_participants=0,
        )  # fmt: skip
        ds = mask_one_code_per_window(ds, rng, args.codes_per_participant)
        for support in ("unconditional", "conditional"):
            t = replay_prevalence(
                ds, n_boot=args.n_boot, seed=rep, cluster="two-stage", support=support
            )
            code = t[t["level"] == "code"].merge(code_truth, on=["model", "code"])
            cat = t[t["level"] == "category"].merge(cat_truth, on=["model", "category"])
            for level, part in (("code", code), ("category", cat)):
                ok = part["ci_low"].notna() & part["ci_high"].notna()
                part = part[ok]
                rows.append(
                    {
                        "rep": rep,
                        "support": support,
                        "level": level,
                        "covered": float(
                            ((part["ci_low"] <= part["truth"]) & (part["truth"] <= part["ci_high"]))
                            .astype(float)
                            .mean()
                        ),
                        "n_cells": int(len(part)),
                        "width": float((part["ci_high"] - part["ci_low"]).mean()),
                    }
                )
        if (rep + 1) % 25 == 0:
            print(f"  {rep + 1} replicates, {time.perf_counter() - t0:.0f} s", flush=True)
    res = pd.DataFrame(rows)
    summ = (
        res.groupby(["level", "support"])
        .agg(
            coverage=("covered", "mean"),
            mc_se=("covered", lambda x: x.std(ddof=1) / np.sqrt(len(x))),
            mean_width=("width", "mean"),
            cells_per_rep=("n_cells", "mean"),
        )
        .reset_index()
    )
    print(
        f"\n{args.reps} replicates, {args.participants} participants, "
        f"{args.codes_per_participant} of {len(CODES)} codes per participant, two-stage, "
        f"{args.n_boot} resamples, nominal 0.95; {time.perf_counter() - t0:.0f} s\n"
    )
    print(summ.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return summ


if __name__ == "__main__":
    main()
