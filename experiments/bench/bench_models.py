"""Benchmark: the joint model with nutpie vs PyMC's NUTS vs numpyro, cold compile vs cached.

    .venv/bin/python experiments/bench/bench_models.py                      # paper_like, 4 x 1000
    .venv/bin/python experiments/bench/bench_models.py --preset small --draws 300 --chains 2

For each sampler, two fits of the same model in one process: *cold* (first compile in this
process; the on-disk PyTensor/numba cache in a fresh temporary directory, so nothing from
earlier runs; the samplers after the first reuse kernels the first one put there, so only
nutpie's cold number is fully cold) and *cached* (same spec again: nutpie compiles the study's
frozen graph from the warm kernel cache, PyMC/numpyro reuse their compiled functions). Prints
whole-fit
seconds, sampling seconds, divergences, max R-hat of L/k/t50, min ESS bulk / sampling second,
and every time as a ratio against nutpie. The alternative users know is R's brms, timed on the
same data (``BRMS_SAME_DATA``: the package's paper_like study, seed 0, brms 2.18, 4 x 1,000 draws
after 1,000 warm-up, whole process from cold, on this machine kind; issue 29 records the runs).
Where R and brms are installed (Debian: ``r-base-core``, ``r-cran-brms``; ``brms_same_data.py``)
the script fits brms itself to this run's study with this run's draws (``--brms auto``, the
default; ``--brms recorded`` skips it) and prints that ratio; it always prints the recorded
figures too. Tests and CI do not need R.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

#: brms 2.18 on the same data (paper_like, seed 0), 4 x 1,000 draws after 1,000 warm-up, whole
#: process from cold, this machine kind (issue 29): the onset model (nonlinear logistic on the
#: consensus; 1,441 max-treedepth hits) and the standard cumulative rater model
#: ``y ~ 1 + (1 | model:day)``, ``thres(gr = rater)``; its exact twin with rater
#: discrimination took 552 s. Those runs did not record their settings, and neither reproduces:
#: brms fitted on this machine kind with its 4 chains on 2 cores as ours (``brms_same_data.py``,
#: 2026-12-04) took 87-93 s for the rater model (143 s with the chains one after another) and
#: 299 s for the onset model (104 divergences); docs/dev/models.md compares on those
BRMS_SAME_DATA = {"onset": 1858.0, "rater": 240.0}
BRMS_TWIN = {"rater": 552.0}
#: issue 29's targets: brms seconds / ours, cold, on the same data
BRMS_TARGET = {"onset": 40, "rater": 8}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--model", default="joint")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=None)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--samplers", default="nutpie,pymc,numpyro")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--brms", default="auto", choices=["auto", "recorded"])
    args = ap.parse_args(argv)
    tune = args.tune if args.tune is not None else args.draws

    cache = tempfile.mkdtemp(prefix="bench_models_")
    # fresh compile cache, set before PyTensor is imported
    os.environ["DELUSION_BAYES_CACHE"] = cache
    from delusion_bayes.inference.cache import configure_pytensor_cache

    configure_pytensor_cache(cache)
    t_import = time.perf_counter()
    import delusion_bayes as db
    from delusion_bayes.inference.diagnostics import diagnose, sampler_stats

    ds = db.data.simulate_study(preset=args.preset, seed=0)
    import pymc  # noqa: F401  (import time reported apart)

    print(f"imports: {time.perf_counter() - t_import:.1f} s; cache {cache}")
    print(
        f"{args.model} on {args.preset} ({dict(ds['recognition'].sizes)}), "
        f"{args.chains} chains x {args.draws} draws, {tune} tune"
    )
    rows = []
    for sampler in args.samplers.split(","):
        for phase in ("cold", "cached"):
            t0 = time.perf_counter()
            try:
                dt = db.models.fit(
                    ds,
                    args.model,
                    draws=args.draws,
                    tune=tune,
                    chains=args.chains,
                    sampler=sampler,
                    seed=args.seed,
                    cache_dir=cache,
                    log_likelihood=False,
                    posterior_predictive=False,
                )
            except Exception as err:  # noqa: BLE001
                print(f"{sampler:8s} {phase:6s} FAILED: {type(err).__name__}: {err}")
                continue
            total = time.perf_counter() - t0
            post = dt["posterior"]
            samp = float(post.attrs.get("sampling_time", float("nan")))
            # onset parameters where the model has them; the rater model's are its latent
            # scores and rater effects
            keys = [v for v in ("L", "k", "t50") if v in post] or [
                v for v in ("stage", "severity", "discrimination") if v in post
            ]
            tab = diagnose(dt, var_names=keys)
            st = sampler_stats(dt)
            min_ess = float(tab["ess_bulk"].min())
            rows.append(
                {
                    "sampler": str(post.attrs.get("sampler", sampler)),
                    "phase": phase,
                    "total_s": total,
                    "sampling_s": samp,
                    "divergences": st["divergences"],
                    "max_rhat": float(tab["r_hat"].max()),
                    "min_ess": min_ess,
                    "ess_per_s": min_ess / samp if samp == samp and samp > 0 else float("nan"),
                }
            )
            r = rows[-1]
            print(
                f"{r['sampler']:8s} {phase:6s} total {total:7.1f} s  sampling {samp:6.1f} s  "
                f"div {r['divergences']:3d}  max R-hat {r['max_rhat']:.3f}  "
                f"min ESS {min_ess:6.0f}  ESS/s {r['ess_per_s']:7.1f}",
                flush=True,
            )
    print("\nsummary (seconds; progress output of PyMC/numpyro may have overwritten lines above):")
    for r in rows:
        print(
            f"  {r['sampler']:8s} {r['phase']:6s} total {r['total_s']:7.1f}  sampling "
            f"{r['sampling_s']:6.1f}  div {r['divergences']}  max R-hat {r['max_rhat']:.3f}  "
            f"min ESS {r['min_ess']:.0f}"
        )
    ref = {r["phase"]: r for r in rows if r["sampler"] == "nutpie"}
    if ref:
        print("\nratios vs nutpie (same phase; > 1 = slower than nutpie):")
        for r in rows:
            b = ref.get(r["phase"])
            if b is None or r["sampler"] == "nutpie":
                continue
            print(
                f"  {r['sampler']:8s} {r['phase']:6s} total x{r['total_s'] / b['total_s']:.2f}  "
                f"sampling x{r['sampling_s'] / b['sampling_s']:.2f}  "
                f"ESS/s x{r['ess_per_s'] / b['ess_per_s']:.2f}"
            )
        brms = BRMS_SAME_DATA.get(args.model)
        if brms is not None:
            target = BRMS_TARGET[args.model]
            same = args.preset == "paper_like" and args.draws == 1000 and args.chains == 4
            print(
                f"\nvs brms 2.18 on the same data ({brms:.0f} s end to end, cold, paper_like, "
                f"4 x 1000; recorded, see BRMS_SAME_DATA; target {target}x faster)"
                + ("" if same else " -- NOT this run's data or draws: the ratio is not comparable")
                + ":"
            )
            for r in rows:
                if r["phase"] == "cold":
                    ratio = brms / r["total_s"]
                    verdict = "met" if ratio >= target else "NOT met"
                    twin = BRMS_TWIN.get(args.model)
                    extra = f", {twin / r['total_s']:.1f}x brms' exact twin" if twin else ""
                    print(
                        f"  {r['sampler']:8s} cold {r['total_s']:6.1f} s: {ratio:.1f}x "
                        f"({verdict}){extra}"
                    )
        if "cold" in ref and "cached" in ref:
            ratio = ref["cached"]["total_s"] / ref["cold"]["total_s"]
            print(f"  nutpie cached vs cold whole fit: x{ratio:.2f}")
        if args.brms == "auto" and args.model in ("onset", "rater"):
            _brms_here(ds, args, tune, ref)
    return 0


def _brms_here(ds, args, tune: int, ref: dict) -> None:
    """Fit brms to this run's study when R and brms are installed, and print the ratios of our
    cold and cached fits against it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also under `python -P`
    from brms_same_data import fit_brms, have_brms

    if not have_brms():
        print("\nbrms on this run's data: not run (no Rscript with brms here); recorded above")
        return
    print(f"\nbrms on this run's data ({args.preset}, {args.chains} x {args.draws}, {tune} tune):")
    res = fit_brms(ds, args.model, draws=args.draws, tune=tune, chains=args.chains, seed=args.seed)
    line = (
        f"  brms {res['seconds']:.1f} s end to end (its chains {res['chain_seconds']} s summed), "
        f"{res['divergences']} divergences"
    )
    print(line)
    target = BRMS_TARGET[args.model]
    for phase in ("cold", "cached"):
        if (r := ref.get(phase)) is not None:
            ratio = res["seconds"] / r["total_s"]
            verdict = "met" if ratio >= target else "NOT met"
            total = r["total_s"]
            print(f"  nutpie {phase:6s} {total:.1f} s: {ratio:.1f}x ({verdict}; target {target}x)")


if __name__ == "__main__":
    sys.exit(main())
