"""Sizing of test_two_stage_cis_cover_at_about_the_nominal_rate (tests/replay/test_analysis.py),
step 1: per-study coverage of 200 studies (seeds 1000-1199) at 95% and 50%, as computed and
with intervals halved / doubled: ``python tests/wrong_impl/sizing/bootstrap_pool.py 200``."""

import pickle
import sys
import time

import numpy as np

from delusion_bayes.baselines import replay_prevalence
from delusion_bayes.baselines.replay import true_category_prevalence
from delusion_bayes.data import simulate_replay

R = int(sys.argv[1])
res = []
t0 = time.time()
for rep in range(R):
    ds = simulate_replay(seed=1000 + rep, params_seed=0, n_participants=18, truth_participants=300)
    truth = true_category_prevalence(ds)
    row = {}
    for prob in (0.95, 0.5):
        t = replay_prevalence(
            ds, n_boot=400, cluster="two-stage", levels=("category",), ci_prob=prob
        ).merge(truth, on=["model", "category"])
        lo, hi, tr = t["ci_low"].values, t["ci_high"].values, t["truth"].values
        c, h = (lo + hi) / 2, (hi - lo) / 2
        for name, f in (("ok", 1.0), ("half", 0.5), ("double", 2.0)):
            row[(prob, name)] = np.mean((c - f * h <= tr) & (tr <= c + f * h))
    res.append(row)
    if rep == 0:
        print("one study", time.time() - t0, len(t), flush=True)
print("time", time.time() - t0)
pickle.dump(res, open(f"/tmp/calib/boot_{R}.pkl", "wb"))
for k in res[0]:
    v = np.array([r[k] for r in res])
    print(k, v.mean().round(3), v.std(ddof=1).round(3))
