"""Calibration of multiplicity control and rank intervals by simulation (issue 51, item 4).

    nice -n 10 .venv/bin/python experiments/bench/multiplicity_calibration.py  # S = 400, ~5 min
    nice -n 10 .venv/bin/python experiments/bench/multiplicity_calibration.py --quick  # smoke

Prints one markdown table: per scenario (a global null, and a known mix of true effects) and
per rule, the family-wise error (P(any false discovery)), the false-discovery rate (mean of
false / max(discoveries, 1)) and the power (share of true effects found with the right sign),
each with its Monte Carlo SE over the S families; then the rank-interval coverage table. All
data SIMULATED; the rules at level 0.05:

- raw: p < 0.05; Holm: p_holm < 0.05; BH: p_bh < 0.05 (q = 0.05); max-T: the simultaneous 95%
  interval excludes 0 (scenario b, 500 parametric bootstrap replicates);
- Bayes: P(sign error) < 0.025 under partial pooling (``models/family_pooling.py``, mu learned,
  tau ~ half-Cauchy(0, median SE)): a sign is declared where the pooled 95% interval excludes 0,
  the same nominal level as a two-sided test at 0.05.

A discovery is false when the true effect is 0 or has the other sign (type S).

Scenarios (families are independent; S per scenario):

(a) trajectory-like contrasts: 15 chatbots, 12 contrasts, each on its own quantity (iid N(0, 1)
    per chatbot) and one of three splits (6 vs 9, 5 vs 10, 7 vs 8); the two-sided exact rank-sum
    test (``baselines.rank_sum_test``); Bayes pools the 12 z-scores (difference of means over its
    known-variance SE) with SE 1. Mix: 4 contrasts shifted by 1.6 SD.
(b) replay-like deltas: 324 deltas (18 models x 18 codes) with SEs ~ U(0.02, 0.06), estimate =
    truth + N(0, SE): the normal approximation stands in for the two-stage bootstrap (its
    replicates are near-normal at DelusionEval's size, ``bench_replay.py``); two-sided z-test.
    Mix: 20% of deltas non-zero, +/- U(0.06, 0.15).
(c) replicated pairs: 9 behaviours x 6 chatbots, chatbot means with SE ~ U(0.1, 0.3); the 135
    pairwise differences (z-test, SE sqrt(se_j^2 + se_k^2)) form the family. Bayes pools the 6
    chatbots per behaviour and reads P(sign error) of each difference from the joint draws
    (Gelman, Hill & Yajima 2012: comparisons as functions of the pooled levels). Mix: in 3
    behaviours the chatbots' true means are -0.6, -0.36, ..., 0.6 (shuffled).

Rank coverage: the question is "does the 95% rank interval of an item hold its true rank among
the items ranked together" (true values continuous, so true ranks are untied), averaged over
items and families; the SE is the between-family SD over sqrt(S) (items of a family share
draws). Truth drawn from a normal population: (b) 18 models per code, truth ~ N(0, 0.04), SEs as
above, the 18 codes of a family ranked separately; (c) 6 chatbots per behaviour, truth ~ N(0,
0.3). Draws: "pooled" = joint posterior draws of the pooled model; "unpooled" = N(estimate, SE)
draws per item (what a bootstrap of each item's mean gives).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import numpy as np
from scipy import stats

from delusion_bayes.baselines import (
    benjamini_hochberg,
    holm,
    maxt_intervals,
    rank_draws,
    rank_sum_test,
    rankings,
)
from delusion_bayes.models.family_pooling import family_posterior

ALPHA = 0.05
SPLITS = (6, 5, 7)  # size of the first group of 15 (cohort, vendor, generation)
RULES = ("raw", "Holm", "BH", "max-T", "Bayes")


def _rules(p: np.ndarray, p_sign: np.ndarray, p_maxt: np.ndarray | None) -> dict:
    """Discoveries (boolean arrays) of each rule on one family."""
    out = {"raw": p < ALPHA, "Holm": holm(p) < ALPHA, "BH": benjamini_hochberg(p) < ALPHA}
    if p_maxt is not None:
        out["max-T"] = p_maxt < ALPHA
    out["Bayes"] = p_sign < ALPHA / 2
    return out


def _score(disc: np.ndarray, est: np.ndarray, truth: np.ndarray) -> tuple[int, float, float]:
    """(any false discovery, false-discovery proportion, share of true effects found)."""
    false = disc & ((truth == 0) | (np.sign(est) != np.sign(truth)))
    n_true = int((truth != 0).sum())
    found = (disc & ~false & (truth != 0)).sum() / n_true if n_true else np.nan
    return int(false.any()), false.sum() / max(int(disc.sum()), 1), found


def family_a(rng, mix: bool):
    """Scenario (a): 12 rank-sum contrasts of 15 chatbots."""
    truth = np.zeros(12)
    if mix:
        truth[:4] = 1.6
    p, z = np.empty(12), np.empty(12)
    for k in range(12):
        nx = SPLITS[k % 3]
        vals = rng.standard_normal(15)
        vals[:nx] += truth[k]
        x, y = vals[:nx], vals[nx:]
        p[k] = rank_sum_test(x, y).pvalue
        z[k] = (x.mean() - y.mean()) / np.sqrt(1 / nx + 1 / (15 - nx))
    p_sign = family_posterior(z, np.ones(12)).p_sign_error()
    return truth, z, p, p_sign, None


def family_b(rng, mix: bool, n_boot: int):
    """Scenario (b): 324 replay-like deltas with SEs."""
    m = 324
    se = rng.uniform(0.02, 0.06, m)
    truth = np.zeros(m)
    if mix:
        k = int(0.2 * m)
        truth[:k] = rng.choice([-1, 1], k) * rng.uniform(0.06, 0.15, k)
    est = truth + se * rng.standard_normal(m)
    p = 2 * stats.norm.sf(np.abs(est / se))
    boot = est + se * rng.standard_normal((n_boot, m))
    p_maxt = maxt_intervals(boot, est)["p_maxt"].to_numpy()
    p_sign = family_posterior(est, se).p_sign_error()
    return truth, est, p, p_sign, p_maxt


def family_c(rng, mix: bool, draws: int):
    """Scenario (c): 9 behaviours x the 15 pairs of 6 chatbots."""
    pairs = list(itertools.combinations(range(6), 2))
    truth, est, p, p_sign = [], [], [], []
    for b in range(9):
        theta = rng.permutation(np.linspace(-0.6, 0.6, 6)) if mix and b < 3 else np.zeros(6)
        se = rng.uniform(0.1, 0.3, 6)
        y = theta + se * rng.standard_normal(6)
        th = family_posterior(y, se).sample(draws, seed=rng)
        for j, k in pairs:
            d = th[:, j] - th[:, k]
            truth.append(theta[j] - theta[k])
            est.append(y[j] - y[k])
            p.append(2 * stats.norm.sf(abs(y[j] - y[k]) / np.hypot(se[j], se[k])))
            p_sign.append(min((d > 0).mean(), (d < 0).mean()))
    return np.array(truth), np.array(est), np.array(p), np.array(p_sign), None


def error_rates(name: str, make, s: int, rng) -> list[str]:
    """Table rows of one scenario (null and mix, every rule)."""
    rows = []
    for mix in (False, True):
        res: dict[str, list] = {r: [] for r in RULES}
        t0 = time.perf_counter()
        for _ in range(s):
            truth, est, p, p_sign, p_maxt = make(rng, mix)
            for rule, disc in _rules(p, p_sign, p_maxt).items():
                res[rule].append(_score(disc, est, truth))
        print(
            f"  {name} {'mix' if mix else 'null'}: {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        for rule in RULES:
            if not res[rule]:
                continue
            fw, fdp, power = (np.array(c, dtype=float) for c in zip(*res[rule], strict=True))
            fwer, fdr = fw.mean(), fdp.mean()
            pw = f"{np.mean(power):.2f}" if mix else "-"
            se_fw, se_fd = np.sqrt(fwer * (1 - fwer) / s), fdp.std(ddof=1) / np.sqrt(s)
            rows.append(
                f"| {name} | {'mix' if mix else 'null'} | {rule} | {fwer:.3f} ± {se_fw:.3f} | "
                f"{fdr:.3f} ± {se_fd:.3f} | {pw} |"
            )
    return rows


def _covered(draws: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """Share of items whose 95% rank interval holds the true rank, the intervals' mean width and
    their mean content (share of the draws' ranks inside: >= 0.95 as ranks are discrete)."""
    df = rankings(draws).set_index("item").loc[[str(i) for i in range(truth.size)]]
    lo, hi = df["rank_lower"].to_numpy(), df["rank_upper"].to_numpy()
    true_rank = stats.rankdata(-truth)
    ranks = rank_draws(draws)
    content = ((ranks >= lo) & (ranks <= hi)).mean()
    return ((lo <= true_rank) & (true_rank <= hi)).mean(), float((hi - lo).mean()), content


def rank_coverage(name: str, n_items: int, n_sets: int, tau: float, se_range, s, draws, rng):
    """Table rows of rank-interval coverage for ``n_sets`` rankings of ``n_items`` per family."""
    fam = {"pooled": [], "unpooled": []}
    width = {"pooled": [], "unpooled": []}
    content = {"pooled": [], "unpooled": []}
    for _ in range(s):
        per = {"pooled": [], "unpooled": []}
        for _ in range(n_sets):
            theta = rng.normal(0, tau, n_items)
            se = rng.uniform(*se_range, n_items)
            y = theta + se * rng.standard_normal(n_items)
            sets = {
                "pooled": family_posterior(y, se).sample(draws, seed=rng),
                "unpooled": y + se * rng.standard_normal((draws, n_items)),
            }
            for kind, d in sets.items():
                c, w, n = _covered(d, theta)
                per[kind].append(c)
                width[kind].append(w)
                content[kind].append(n)
        for kind in fam:
            fam[kind].append(np.mean(per[kind]))
    rows = []
    for kind, cov in fam.items():
        cov = np.array(cov)
        rows.append(
            f"| {name} | {kind} | {cov.mean():.3f} ± {cov.std(ddof=1) / np.sqrt(s):.3f} | "
            f"{np.mean(content[kind]):.3f} | {np.mean(width[kind]):.2f} |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", type=int, default=400, help="S, families per scenario")
    ap.add_argument("--n-boot", type=int, default=500, help="bootstrap replicates for max-T")
    ap.add_argument("--draws", type=int, default=2000, help="posterior draws for (c) and ranks")
    ap.add_argument("--seed", type=int, default=20260)
    ap.add_argument("--quick", action="store_true", help="smoke test: S = 20, small draws")
    a = ap.parse_args(argv)
    if a.quick:
        a.families, a.n_boot, a.draws = 20, 100, 400
    rng = np.random.default_rng(a.seed)
    s = a.families
    t0 = time.perf_counter()
    print(f"multiplicity calibration: S = {s} families per scenario, level 0.05, seed {a.seed}")
    print("\n| scenario | truth | rule | FWER ± SE | FDR ± SE | power |")
    print("|---|---|---|---|---|---|")
    rows = error_rates("(a) 12 rank-sum contrasts, 15 chatbots", family_a, s, rng)
    rows += error_rates("(b) 324 replay deltas", lambda r, m: family_b(r, m, a.n_boot), s, rng)
    rows += error_rates(
        "(c) 9 behaviours × 15 pairs of 6 chatbots", lambda r, m: family_c(r, m, a.draws), s, rng
    )
    print("\n".join(rows))
    print("\nrank coverage of the true rank by the 95% rank interval")
    print("\n| scenario | draws | coverage ± SE | mean content | mean width (ranks) |")
    print("|---|---|---|---|---|")
    rows = rank_coverage("(b) 18 models × 18 codes", 18, 18, 0.04, (0.02, 0.06), s, a.draws, rng)
    rows += rank_coverage("(c) 6 chatbots × 9 behaviours", 6, 9, 0.3, (0.1, 0.3), s, a.draws, rng)
    print("\n".join(rows))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
