"""Benchmark: count-based two-stage cluster bootstrap vs a straightforward per-resample loop.

    .venv/bin/python experiments/bench/bench_replay.py [--n-boot 10000] [--naive-resamples 30]

Study: ``simulate_replay(scale="delusioneval")`` (18 participants, ~600 windows, ~6,800 samples per
model, 16 codes, the original transcript + 5 models). Both methods compute category prevalence
per model (pooled over the category's codes) on two-stage resamples (participants, then
conversations within participant):

- **count-based** (:func:`delusion_bayes.baselines.replay.replay_prevalence`): hit/total counts
  per conversation, resample weights drawn as multinomials, all resamples as one matrix product
  ``(W @ H) / (W @ T)``;
- **naive loop**: for each resample, draw participants and conversations with ``rng.choice``,
  concatenate the drawn conversations' rows of the long table (sample x model x code) and
  ``groupby(["model", "category"]).mean()``.

The naive loop is timed on ``--naive-resamples`` resamples and extrapolated linearly to
``--n-boot`` (running it 10,000 times takes many minutes); the printed ratio is
naive-per-resample / count-based-per-resample. The two methods' intervals are also compared.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd


def naive_two_stage(long: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Category prevalence per model on ``n_boot`` two-stage resamples, one pandas pass each."""
    rng = np.random.default_rng(seed)
    by_conv = {c: g for c, g in long.groupby("conversation", sort=False)}
    convs_of = long.groupby("participant")["conversation"].unique().to_dict()
    people = np.array(list(convs_of))
    out = []
    for _ in range(n_boot):
        pieces = []
        for p in rng.choice(people, people.size):
            convs = convs_of[p]
            pieces.extend(by_conv[c] for c in rng.choice(convs, convs.size))
        out.append(pd.concat(pieces).groupby(["model", "category"])["hit"].mean())
    return pd.concat(out, axis=1).T


def long_table(ds) -> pd.DataFrame:
    hit = ds["hit"].transpose("sample", "model", "code").values
    s, m, k = np.nonzero(np.isfinite(hit))
    cat = ds["category"].values[k]
    keep = cat != ""
    s, m, k = s[keep], m[keep], k[keep]
    return pd.DataFrame(
        {
            "participant": ds["participant"].values[s],
            "conversation": ds["conversation"].values[s],
            "model": ds["model"].values[m],
            "category": ds["category"].values[k],
            "hit": hit[s, m, k],
        }
    )


def main() -> None:
    from delusion_bayes.baselines.replay import replay_prevalence
    from delusion_bayes.data import simulate_replay

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--naive-resamples", type=int, default=30)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    ds = simulate_replay(seed=0, scale="delusioneval", truth_participants=0)
    n_per_model = int(ds["hit"].isel(model=1).notnull().any("code").sum())
    print(
        f"study: {ds.sizes['sample']} samples ({n_per_model} scored per model), "
        f"{ds.sizes['model']} models (incl. original), {ds.sizes['code']} codes, "
        f"{pd.Series(ds['participant'].values).nunique()} participants, "
        f"{pd.Series(ds['conversation'].values).nunique()} conversations; "
        f"{os.cpu_count()} CPUs"
    )

    replay_prevalence(ds, n_boot=20, seed=args.seed, levels=("category",))  # warm-up
    t0 = time.perf_counter()
    fast = replay_prevalence(ds, n_boot=args.n_boot, seed=args.seed, levels=("category",))
    t_fast = time.perf_counter() - t0
    print(f"count-based two-stage bootstrap, {args.n_boot} resamples: {t_fast:.2f} s "
          f"({1e3 * t_fast / args.n_boot:.3f} ms per resample)")  # fmt: skip

    long = long_table(ds)
    t0 = time.perf_counter()
    slow = naive_two_stage(long, args.naive_resamples, args.seed)
    t_slow = time.perf_counter() - t0
    per = t_slow / args.naive_resamples
    print(f"naive per-resample pandas loop, {args.naive_resamples} resamples: {t_slow:.2f} s "
          f"({1e3 * per:.1f} ms per resample; {per * args.n_boot:.0f} s extrapolated to "
          f"{args.n_boot})")  # fmt: skip
    print(f"speed ratio (naive / count-based, per resample): {per / (t_fast / args.n_boot):.0f}x")

    # same estimator: the naive intervals (few resamples) sit near the count-based ones
    lo, hi = np.quantile(slow.to_numpy(), [0.025, 0.975], axis=0)
    ref = fast.set_index(["model", "category"])
    naive = pd.DataFrame({"lo": lo, "hi": hi}, index=slow.columns)
    diff = (naive["lo"] - ref.loc[naive.index, "ci_low"]).abs().max()
    width = (ref["ci_high"] - ref["ci_low"]).median()
    print(f"max |naive - count-based| lower bound: {diff:.4f} (median CI width {width:.4f}; "
          f"naive uses only {args.naive_resamples} resamples)")  # fmt: skip


if __name__ == "__main__":
    main()
