"""Sizing of tests/models/test_calibration.py (issue 34), step 1: a pool of simulated studies
fitted as the test does, each also scored with its posterior shifted by +0.7 SD and with its
intervals halved and doubled. From the repo root: ``python tests/wrong_impl/sizing/onset_pool.py
60 7`` writes /tmp/calib/pool_60_7.npz (~8 s a fit). A script, not a test module."""

import copy
import sys

import numpy as np
import pymc as pm

from delusion_bayes.data import simulate_study
from delusion_bayes.intervals import interval
from delusion_bayes.models import fit
from delusion_bayes.models.build import build_model
from delusion_bayes.models.spec import build_spec

POOL = int(sys.argv[1])
SEED = int(sys.argv[2])
VARS = ("L", "k", "t50", "mu_log_k", "mu_t50", "sigma_t50", "sigma_y")
SAMPLE = ("chain", "draw")
ds = simulate_study(preset="small", seed=0)
spec = build_spec(ds, "onset")
spec.data["t50_centred"] = np.ones(5, bool)
prior = pm.sample_prior_predictive(draws=POOL, model=build_model(spec), random_seed=SEED)
y = prior["prior_predictive"]["y"].isel(chain=0)
truth = prior["prior"].isel(chain=0)
out = {
    k: []
    for k in (
        "rank",
        "c90",
        "c50",
        "rank_shift",
        "c90_shift",
        "c50_shift",
        "c90_half",
        "c50_half",
        "c50_double",
        "div",
    )
}


def rc(x, t):
    r = np.ravel((x < t).mean(SAMPLE).values + 0.5 * (x == t).mean(SAMPLE).values)
    cs = {}
    for p in (0.9, 0.5):
        lo, hi = interval(x, p)
        lo, hi = lo.values, hi.values
        cs[p] = np.ravel((lo <= t) & (t <= hi))
        c, h = (lo + hi) / 2, (hi - lo) / 4
        cs[(p, "half")] = np.ravel((c - h <= t) & (t <= c + h))
        cs[(p, "double")] = np.ravel((c - 4 * h <= t) & (t <= c + 4 * h))
    return r, cs


for i in range(POOL):
    sim = copy.deepcopy(spec)
    sim.data["y"] = np.asarray(y.isel(draw=i).values, float)
    dt = fit(
        ds,
        spec=sim,
        draws=100,
        tune=200,
        chains=2,
        seed=i,
        log_likelihood=False,
        log_prior=False,
        posterior_predictive=False,
    )
    post = dt["posterior"]
    out["div"].append(int(dt["sample_stats"]["diverging"].sum()))
    acc = {k: [] for k in out if k != "div"}
    for v in VARS:
        x, t = post[v], truth[v].isel(draw=i).values
        r, cs = rc(x, t)
        acc["rank"].append(r)
        acc["c90"].append(cs[0.9])
        acc["c50"].append(cs[0.5])
        acc["c90_half"].append(cs[(0.9, "half")])
        acc["c50_half"].append(cs[(0.5, "half")])
        acc["c50_double"].append(cs[(0.5, "double")])
        xs = x + 0.7 * x.std(SAMPLE)
        r, cs = rc(xs, t)
        acc["rank_shift"].append(r)
        acc["c90_shift"].append(cs[0.9])
        acc["c50_shift"].append(cs[0.5])
    for k, v in acc.items():
        out[k].append(np.concatenate(v))
    print(i, flush=True)
np.savez(f"/tmp/calib/pool_{POOL}_{SEED}.npz", **{k: np.array(v) for k, v in out.items()})
