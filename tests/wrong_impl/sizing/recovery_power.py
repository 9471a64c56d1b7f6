"""Sizing step 2 of the disengagement and rater recovery tests: their rules applied to the pool
of ``recovery_pool.py`` (per fit: fails as fitted, with halved intervals, with a +0.7-SD shift)
and the binomial rates under independent, calibrated targets::

    python tests/wrong_impl/sizing/recovery_power.py /tmp/calib/dis.npz /tmp/calib/rater.npz

(a pool fitted in parts: comma-separated files, ``a.npz,b.npz``)
A 99% interval's rule reads the rank (truth inside the equal-tailed 99% interval <=> its rank
in [0.005, 0.995]); halved, that interval is +-1.29 SD around the centre, taken as ranks in
[0.099, 0.901] (a normal posterior)."""

import sys

import numpy as np
from scipy import stats


def arr(d, scen, v, k):
    return np.asarray(d[f"{scen}|{v}|{k}"], float)


def in99(rank, scen):
    lo, hi = (0.099, 0.901) if scen == "halve" else (0.005, 0.995)
    return (rank >= lo) & (rank <= hi)


def stage_rule(d, scen):
    r, c90, c50 = (arr(d, scen, "stage", k) for k in ("rank", "c90", "c50"))
    return (
        (np.abs(r.mean(1) - 0.5) > 0.12) | (c90.sum(1) < 47) | (c50.sum(1) < 10) | (c50.sum(1) > 48)
    )


def dis_rules(d, scen):
    beta = ~in99(arr(d, scen, "beta_level", "rank")[:, 0], scen)
    c90 = sum(arr(d, scen, v, "c90")[:, 0] for v in ("beta_level", "c_level_1", "log_gap_level"))
    return {"level": beta | (c90 < 2), "stage": stage_rule(d, scen)}


def rater_rules(d, scen):
    r = np.concatenate([arr(d, scen, v, "rank") for v in ("severity", "discrimination")], 1)
    c90 = np.concatenate([arr(d, scen, v, "c90") for v in ("severity", "discrimination")], 1)
    c50 = np.concatenate([arr(d, scen, v, "c50") for v in ("severity", "discrimination")], 1)
    params = (
        (c90.sum(1) < 8) | (c50.sum(1) < 2) | (c50.sum(1) > 11) | (np.abs(r.mean(1) - 0.5) > 0.2)
    )
    rel = np.zeros(len(params), bool)
    for q in ("reliability_single", "reliability_consensus"):
        rel |= ~in99(arr(d, scen, q, "rank")[:, 0], scen)
    return {"params": params, "reliability": rel, "stage": stage_rule(d, scen)}


def load(paths):
    """One pool from comma-separated ``.npz`` files (a pool run in parts)."""
    parts = [np.load(p) for p in paths.split(",")]
    return {k: np.concatenate([np.asarray(d[k]) for d in parts]) for k in parts[0].files}


def report(path, rules):
    d = load(path)
    print(path, "fits", len(d["div"]), "divergences", d["div"].tolist())
    for scen in ("correct", "halve", "shift"):
        res = rules(d, scen)
        print(
            f"  {scen}: "
            + ", ".join(f"{k} fails {int(v.sum())}/{v.size}" for k, v in res.items())
            + f"; any {int(np.any(list(res.values()), axis=0).sum())}"
        )
    keys = sorted({k.split("|")[1] for k in d if "|" in k})
    for v in keys:
        for scen in ("correct", "halve", "shift"):
            r, c90, c50 = (arr(d, scen, v, k).mean(1) for k in ("rank", "c90", "c50"))
            print(
                f"    {v:22s} {scen:8s} rank {r.round(3).tolist()} c90 {c90.round(3).tolist()} "
                f"c50 {c50.round(3).tolist()}"
            )


def binomial():
    b = stats.binom
    print("binomial, independent calibrated targets")
    # 60 model-days
    print("  stage: c90 < 47 correct", b.cdf(46, 60, 0.9), "halved", b.cdf(46, 60, 0.59))
    print(
        "  stage: c50 outside 10-48 correct",
        b.cdf(9, 60, 0.5) + b.sf(48, 60, 0.5),
        "doubled (c50 ~0.82) > 48",
        b.sf(48, 60, 0.82),
    )
    sd60 = np.sqrt(1 / 12 / 60)
    print("  stage: mean rank, correct", 2 * stats.norm.sf(0.12 / sd60))
    # 12 rater parameters
    sd12 = np.sqrt(1 / 12 / 12)
    fa = b.cdf(7, 12, 0.9), b.cdf(1, 12, 0.5) + b.sf(11, 12, 0.5), 2 * stats.norm.sf(0.2 / sd12)
    print(
        "  rater params: correct",
        fa,
        "halved c90 < 8",
        b.cdf(7, 12, 0.59),
        "halved c50 < 2",
        b.cdf(1, 12, 0.26),
    )
    # shifted ranks: E = Phi(-0.7 / sqrt 2) = 0.31, sd of one rank under the shift
    rng = np.random.default_rng(0)
    rs = stats.norm.cdf(rng.standard_normal((200_000, 12)) - 0.7).mean(1)
    print(
        "  rater params: shift, P(|mean rank - .5| > .2)",
        np.mean(np.abs(rs - 0.5) > 0.2),
        "c90 shifted",
        b.cdf(7, 12, stats.norm.cdf(1.645 - 0.7) - stats.norm.cdf(-1.645 - 0.7)),
    )
    # 3 level parameters: >= 2 of 3 inside 90%
    print(
        "  level: c90 < 2 of 3 correct",
        b.cdf(1, 3, 0.9),
        "halved",
        b.cdf(1, 3, 0.59),
        "shift",
        b.cdf(1, 3, 0.818),
    )


report(sys.argv[1], dis_rules)
if len(sys.argv) > 2:
    report(sys.argv[2], rater_rules)
binomial()
