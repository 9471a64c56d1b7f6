"""Sizing of tests/models/test_disengagement_recovery.py and test_rater_recovery.py (issue 34):
a pool of known-truth studies fitted as the tests fit theirs (``tests/models/_recovery.py``),
each scored as fitted, with its intervals halved around their centres and with its posterior
shifted by +0.7 SD (the plugins' own ``shift``). From the repo root::

    python tests/wrong_impl/sizing/recovery_pool.py disengagement 1 8 /tmp/calib/dis.npz
    python tests/wrong_impl/sizing/recovery_pool.py rater 1 8 /tmp/calib/rater.npz

(seeds 1-8; the tests use seed 0). ~40 s a fit on a loaded 2-core machine. A script, not a
test module; ``recovery_power.py`` applies the tests' rules to the pool."""

import sys
import time

import numpy as np

from delusion_bayes import intervals
from delusion_bayes.models import fit
from tests.models import _recovery as R
from tests.wrong_impl.shift_posterior import shift

MODEL, FIRST, LAST, OUT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


def halved(interval0):
    def f(*a, **k):
        lo, hi = interval0(*a, **k)
        c, h = (lo + hi) / 2.0, (hi - lo) / 4.0
        return c - h, c + h

    return f


def draws_of(dt, truth):
    if MODEL == "rater":
        return R.rater_draws(dt).assign(stage=dt["posterior"]["stage"])
    return dt["posterior"].to_dataset()[list(truth)]


rows = {}
interval0 = intervals.interval
for seed in range(FIRST, LAST + 1):
    t0 = time.perf_counter()
    if MODEL == "rater":
        ds, truth = R.rater_study(seed)
    else:
        ds, truth = R.disengagement_study(seed)
    truth["stage"] = ds["true_stage"].transpose("model", "day").values
    dt = fit(ds, MODEL, seed=seed, **R.FIT)
    ndiv = int(dt["sample_stats"]["diverging"].sum())
    scen = {"correct": R.score(draws_of(dt, truth), truth)}
    intervals.interval = halved(interval0)
    scen["halve"] = R.score(draws_of(dt, truth), truth)
    intervals.interval = interval0
    scen["shift"] = R.score(draws_of(shift(dt.copy()), truth), truth)
    for name, sc in scen.items():
        for v, res in sc.items():
            for k, arr in res.items():
                rows.setdefault(f"{name}|{v}|{k}", []).append(arr)
    rows.setdefault("div", []).append(ndiv)
    print(f"seed {seed}: {time.perf_counter() - t0:.0f} s, {ndiv} divergences", flush=True)
    for v, res in scen["correct"].items():
        print(f"  {v}: rank {res['rank'].mean():.3f} c90 {res['c90'].mean():.3f} "
              f"c50 {res['c50'].mean():.3f}", flush=True)  # fmt: skip
    np.savez(OUT, **{k: np.array(v) for k, v in rows.items()})
