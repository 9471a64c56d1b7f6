"""Sizing step 2: resample ``S`` studies of the pool 20,000 times and apply the test's three
t-tests: ``python tests/wrong_impl/sizing/onset_power.py /tmp/calib/pool_60_7.npz 15``."""

import sys

import numpy as np
from scipy import stats

d = np.load(sys.argv[1])
S = int(sys.argv[2])
A = 0.001
B = 20000
rng = np.random.default_rng(0)
n = d["rank"].shape[0]
print("pool", n, "divergences per fit", d["div"].tolist())
idx = rng.integers(0, n, (B, S))


def rej(x, exp):
    ps = x.mean(1)[idx]  # per study mean over params
    m = ps.mean(1)
    s = ps.std(1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (m - exp) / (s / np.sqrt(S))
    return ~(np.abs(t) <= stats.t.ppf(1 - A / 2, S - 1))


for k in d.files:
    if k != "div":
        print(
            k,
            "per-study mean",
            d[k].mean(1).mean().round(3),
            "sd",
            d[k].mean(1).std(ddof=1).round(3),
        )
scen = {
    "correct": (d["rank"], d["c90"], d["c50"]),
    "halve": (d["rank"], d["c90_half"], d["c50_half"]),
    "shift": (d["rank_shift"], d["c90_shift"], d["c50_shift"]),
    "double(50% only)": (d["rank"], d["c90"], d["c50_double"]),
}
for name, (r, c9, c5) in scen.items():
    a, b, c = rej(r, 0.5), rej(c9, 0.9), rej(c5, 0.5)
    print(
        f"{name}: P(reject) rank {a.mean():.4f} cover90 {b.mean():.4f} "
        f"cover50 {c.mean():.4f} any {(a | b | c).mean():.4f}"
    )
