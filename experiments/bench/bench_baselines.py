"""Benchmarks of the frequentist baselines (issue 3), printed as ratios from one run.

    nice -n 10 .venv/bin/python experiments/bench/bench_baselines.py            # about 1 minute
    nice -n 10 .venv/bin/python experiments/bench/bench_baselines.py --n-loop 1000  # full, slow

1. Rater bootstrap of the logistic fits (Table D1), 1,000 replicates x 15 models of the
   ``paper_like`` study: the vectorised batch Levenberg-Marquardt (``logistic_bootstrap``) against
   a loop of ``scipy.optimize.curve_fit`` (one call per replicate and model, same consensus, same
   warm start, same bounds). The loop runs on the first ``--n-loop`` replicates and its time is
   extrapolated linearly to 1,000 (said in the output). Accuracy: the same replicates refitted by
   ``curve_fit`` at tolerance 1e-12; parameters compared where both reach the same optimum (RSS
   within 1e-9), no parameter sits on a bound (a bound means k = 0, a step, or t50 outside
   the study: no identified midpoint) and k is identified (asymptotic SE < k / 2; a sigmoid
   saturated on every day off its midpoint fits any steeper k equally well); the counts of fits
   where either finds the lower RSS are printed too.
2. Exact rank-sum test (``rank_sum_test``) against ``scipy.stats.permutation_test``: at n = 15
   (the paper's 6-vs-9 cohort contrast, tied censored latencies) scipy enumerates all 5,005
   splits; at n = 200 (100 vs 100, heavy ties; C(200, 100) ~ 9e58 splits) scipy can only sample
   (9,999 permutations), while ``rank_sum_test`` stays exact.
3. Krippendorff's alpha, 10 raters x 100,000 units (4-point scale, 10% missing), against the
   ``krippendorff`` package, every level; and a 1,000-replicate unit bootstrap CI of alpha (which
   the package lacks).

Timings are wall-clock on whatever else the machine runs (best of ``--repeat`` runs for the
short ones); the bootstrap also reports process CPU time, the fairer ratio on a shared machine.
Ratios > 1 mean ours is faster.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_bootstrap(n_boot: int, n_loop: int, seed: int) -> list[tuple[str, str]]:
    from scipy.optimize import OptimizeWarning, curve_fit

    from delusion_bayes.baselines import consensus_np, logistic, logistic_bootstrap
    from delusion_bayes.baselines.logistic import model_jacobian, param_bounds
    from delusion_bayes.data import simulate_study
    from delusion_bayes.data.schema import DAY, MODEL, RATER

    ds = simulate_study(preset="paper_like", seed=0, texts=False)
    rec = ds.recognition.transpose(RATER, MODEL, DAY)
    x, t = rec.values.astype(float), rec[DAY].values.astype(float)
    n_m = x.shape[1]
    t0, c0 = time.perf_counter(), time.process_time()
    res = logistic_bootstrap(rec, n_boot=n_boot, seed=seed, upper=4.0, progress=False)
    t_vec, c_vec = time.perf_counter() - t0, time.process_time() - c0
    reps = res.extra["replicates"]
    idx, p0 = reps.rater_index.values, reps.p0.values
    lower, upper = param_bounds(t, 1.0, 4.0, 20.0)

    def f(tt, L, k, t50):
        return logistic(tt, L, k, t50, 1.0)

    n_loop = min(n_loop, n_boot)
    cons_all = np.stack([consensus_np(x[idx[b]], axis=0) for b in range(n_loop)])

    def loop(**tol) -> tuple[np.ndarray, np.ndarray, float, float, int]:
        """curve_fit per replicate and model: consensus of the replicate, then one fit each."""
        out = np.full((n_loop, n_m, 3), np.nan)
        ok = np.zeros((n_loop, n_m), bool)
        n_calls = 0
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            for b in range(n_loop):
                cons = consensus_np(x[idx[b]], axis=0)  # the same replicate's median consensus
                for m in range(n_m):
                    y = cons[m]
                    keep = ~np.isnan(y)
                    if np.ptp(y[keep]) == 0:  # flat: no curve (the batch flags these too)
                        continue
                    n_calls += 1
                    try:
                        out[b, m], _ = curve_fit(
                            f, t[keep], y[keep], p0=p0[m], bounds=(lower, upper), **tol
                        )
                        ok[b, m] = True
                    except RuntimeError:  # "optimal parameters not found"
                        pass
        return out, ok, time.perf_counter() - t0, time.process_time() - c0, n_calls

    loop_default, _, t_loop, c_loop, n_calls = loop()
    loop_tight, ok, t_tight, c_tight, _ = loop(ftol=1e-12, xtol=1e-12, gtol=1e-12, max_nfev=5000)
    scale = n_boot / n_loop
    t_loop_full, c_loop_full = t_loop * scale, c_loop * scale
    ours = np.stack([reps[p].values[:n_loop] for p in ("L", "k", "t50")], axis=-1)
    both = ok & reps.converged.values[:n_loop]

    def rss(p):
        with np.errstate(invalid="ignore"):
            fit = logistic(t, p[..., 0:1], p[..., 1:2], p[..., 2:3], 1.0)
        return np.nansum((fit - cons_all) ** 2, axis=-1)

    r_ours, r_ref = rss(ours), rss(loop_tight)
    same_opt = both & np.isclose(r_ours, r_ref, rtol=1e-9, atol=1e-12)
    ours_better = both & (r_ours < r_ref * (1 - 1e-9) - 1e-12)
    ref_better = both & (r_ref < r_ours * (1 - 1e-9) - 1e-12)
    # identified fits: same optimum, no parameter on a bound (k on a bound = a step, whose t50
    # is not identified between two days; k = 0 or t50 on a bound = no transition)
    on_bound = np.isclose(ours, lower, atol=1e-6) | np.isclose(ours, upper, atol=1e-6)
    # ... and an identified steepness: asymptotic SE of k (from sigma^2 (J'J)^-1 at the optimum)
    # below half of k. A sigmoid saturated on every day off its midpoint fits any steeper k
    # equally well, so k there is arbitrary for every solver.
    obs = ~np.isnan(cons_all)
    _, jac = model_jacobian(t, ours.reshape(-1, 3), 1.0)
    jac = jac.reshape(n_loop, n_m, t.size, 3) * obs[..., None]
    jtj = np.einsum("bmtp,bmtq->bmpq", jac, jac)
    sigma2 = r_ours / np.maximum(obs.sum(axis=-1) - 3, 1)
    with np.errstate(all="ignore"):
        safe = np.where(np.isfinite(jtj).all(axis=(-2, -1))[..., None, None], jtj, np.eye(3))
        cov = np.linalg.pinv(safe) * sigma2[..., None, None]
        resolved = np.sqrt(np.abs(cov[..., 1, 1])) < 0.5 * ours[..., 1]
    ident = same_opt & ~on_bound.any(axis=-1) & resolved
    d_ident = np.abs(ours - loop_tight)[ident]
    d_default = np.abs(ours - loop_default)[ident]
    return [
        ("bootstrap replicates x models", f"{n_boot} x {n_m}"),
        (
            "vectorised logistic_bootstrap (incl. consensus, multistart base fit)",
            f"{t_vec:.2f} s wall, {c_vec:.2f} s CPU",
        ),
        (
            f"curve_fit loop (default tol), measured on {n_loop} replicates ({n_calls} calls)",
            f"{t_loop:.2f} s wall, {c_loop:.2f} s CPU",
        ),
        (
            f"  extrapolated x{scale:.3g} to {n_boot} replicates (flat series skipped)",
            f"{t_loop_full:.1f} s wall, {c_loop_full:.1f} s CPU",
        ),
        (
            "SPEED RATIO bootstrap (curve_fit loop / vectorised), CPU time",
            f"{c_loop_full / c_vec:.1f}x (wall: {t_loop_full / t_vec:.1f}x)",
        ),
        (
            "  same loop at tol 1e-12 (reference for the accuracy check)",
            f"{c_tight:.2f} s CPU -> ratio {c_tight * scale / c_vec:.1f}x",
        ),
        ("fits converged in both (tight reference)", f"{int(both.sum())} of {both.size}"),
        (
            "  same optimum (RSS within 1e-9 rel) / ours lower RSS / curve_fit lower RSS",
            f"{int(same_opt.sum())} / {int(ours_better.sum())} / {int(ref_better.sum())}",
        ),
        (
            f"max |delta (L, k, t50)| vs tight curve_fit, {int(ident.sum())} identified fits",
            _fmt3(d_ident.max(axis=0) if d_ident.size else None),
        ),
        (
            "  the same fits vs default-tolerance curve_fit",
            _fmt3(d_default.max(axis=0) if d_default.size else None),
        ),
    ]


def _fmt3(v) -> str:
    return "n/a" if v is None else ", ".join(f"{a:.1e}" for a in v)


def bench_rank_sum(repeat: int) -> list[tuple[str, str]]:
    from scipy import stats

    from delusion_bayes.baselines import rank_sum_test

    rows = []
    late = np.array([3, 6, 5, 10, 16, 23])  # the paper-sized cohort contrast, censored at 31
    early = np.array([21, 23, 24, 25, 10, 31, 31, 31, 31])
    x200 = (np.arange(100) * 7) % 31 + 1
    y200 = (np.arange(100) * 11) % 29 + 3

    def scipy_test(x, y, n_resamples):
        r = stats.rankdata(np.r_[x, y])
        return stats.permutation_test(
            (r[: len(x)], r[len(x) :]),
            lambda a, b, axis: np.sum(a, axis=axis),
            permutation_type="independent",
            n_resamples=n_resamples,
            vectorized=True,
            random_state=0,
        )

    for label, x, y, n_res in (
        ("n = 15 (6 vs 9)", late, early, np.inf),
        ("n = 200 (100 vs 100)", x200, y200, 9999),
    ):
        t_ours, ours = _best(lambda x=x, y=y: rank_sum_test(x, y), repeat)
        t_sp, sp = _best(lambda x=x, y=y, n=n_res: scipy_test(x, y, n), max(1, repeat // 5))
        kind = "exact enumeration" if np.isinf(n_res) else f"Monte Carlo, {n_res} permutations"
        rows += [
            (
                f"rank_sum_test {label}: exact={ours.exact}",
                f"{t_ours * 1e3:.2f} ms, p = {ours.pvalue:.6g}",
            ),
            (
                f"scipy permutation_test {label} ({kind})",
                f"{t_sp * 1e3:.1f} ms, p = {sp.pvalue:.6g}",
            ),
            (f"SPEED RATIO rank-sum {label} (scipy / ours)", f"{t_sp / t_ours:.2g}x"),
        ]
    return rows


def bench_alpha(repeat: int, n_boot: int) -> list[tuple[str, str]]:
    import krippendorff

    from delusion_bayes.baselines import alpha_bootstrap, krippendorff_alpha

    rng = np.random.default_rng(0)
    truth = rng.integers(1, 5, 100_000)
    data = np.clip(truth + rng.integers(-1, 2, size=(10, 100_000)), 1, 4).astype(float)
    data[rng.random(data.shape) < 0.1] = np.nan
    dom = (1, 2, 3, 4)
    rows = [("Krippendorff alpha data", "10 raters x 100,000 units, 4-point scale, 10% missing")]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        t_ours, a = _best(lambda lv=level: krippendorff_alpha(data, lv, dom), repeat)
        t_pkg, b = _best(
            lambda lv=level: krippendorff.alpha(
                reliability_data=data, level_of_measurement=lv, value_domain=list(dom)
            ),
            repeat,
        )
        rows.append(
            (
                f"alpha {level}: ours vs krippendorff package (|diff| {abs(a - b):.1e})",
                f"{t_ours * 1e3:.1f} ms vs {t_pkg * 1e3:.1f} ms = {t_pkg / t_ours:.1f}x",
            )
        )
    t_boot, boot = _best(
        lambda: alpha_bootstrap(data, "interval", dom, n_boot=n_boot, seed=0), max(1, repeat // 2)
    )
    rows.append(
        (
            f"alpha_bootstrap interval, {n_boot} replicates (target <= 2 s; package: none)",
            f"{t_boot:.2f} s, 95% CI [{boot['ci_low']:.4f}, {boot['ci_high']:.4f}]",
        )
    )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (default 1000)")
    ap.add_argument("--n-loop", type=int, default=30, help="replicates run by the curve_fit loop")
    ap.add_argument("--repeat", type=int, default=5, help="repeats of the short timings (best of)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sections = [
        (
            "Rater bootstrap (Table D1), paper_like",
            bench_bootstrap(args.n_boot, args.n_loop, args.seed),
        ),
        ("Exact rank-sum test", bench_rank_sum(args.repeat)),
        ("Krippendorff's alpha", bench_alpha(args.repeat, 1000)),
    ]
    width = max(len(k) for _, rows in sections for k, _ in rows)
    for title, rows in sections:
        print(f"\n== {title} ==")
        for k, v in rows:
            print(f"  {k:<{width}}  {v}")


if __name__ == "__main__":
    main()
