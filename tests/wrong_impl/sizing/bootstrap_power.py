"""Sizing step 2: resample 60 studies of the pool 20,000 times and apply the test's t-tests."""

import pickle

import numpy as np
from scipy import stats

res = pickle.load(open("/tmp/calib/boot_200.pkl", "rb"))
rng = np.random.default_rng(0)
R = 60
A = 0.001
B = 20000


def rate(key, expected):
    v = np.array([r[key] for r in res])
    idx = rng.integers(0, len(v), (B, R))
    x = v[idx]
    m = x.mean(1)
    s = x.std(1, ddof=1)
    t = (m - expected) / (s / np.sqrt(R))
    crit = stats.t.ppf(1 - A / 2, R - 1)
    rej = ~(np.abs(t) <= crit)  # NaN sd (all equal) -> reject unless mean==expected
    return rej.mean()


for prob in (0.95, 0.5):
    for name in ("ok", "half", "double"):
        print(prob, name, rate((prob, name), prob))
