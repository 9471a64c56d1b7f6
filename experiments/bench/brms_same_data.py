"""brms fitted to the package's own study, for ``bench_models.py``'s ratios (issue 29).

R and brms are optional (Debian: ``apt-get install r-base-core r-cran-brms``); tests and CI do
not need them. On Debian 12 rstan looks for Boost inside the BH package, whose Debian build
uses the system's headers instead: ``mkdir -p /usr/lib/R/site-library/BH/include && ln -s
/usr/include/boost /usr/lib/R/site-library/BH/include/boost`` (else brms stops with "Boost not
found"). :func:`have_brms` says whether this machine can run them, :func:`fit_brms`
writes the study as a CSV, writes and runs an R script, and returns the whole process's wall
time (R start, Stan compile, sampling: "end to end, cold", as the recorded figures).

The models, on the same data as the package's:

- ``rater``: brms' standard cumulative model with rater-specific thresholds and a latent score
  per model-day, ``y | thres(gr = rater) ~ 1 + (1 | md)``, ``family = cumulative("logit")``
  (the package's rater model has a rater discrimination too; brms' exact twin of it took 552 s
  in issue 29's run, kept as ``BRMS_TWIN``);
- ``onset``: the three-parameter logistic on each model's median consensus,
  ``y ~ 1 + (L - 1) * inv_logit(exp(logk) * (day - t50))`` with ``L``, ``logk`` and ``t50``
  varying by model (``nl = TRUE``; Gaussian errors; weakly informative priors on the package's
  scales).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

_RATER = """
f <- bf(y | thres(gr = rater) ~ 1 + (1 | md))
fit <- brm(f, data = d, family = cumulative("logit"), chains = {chains}, cores = {cores},
           iter = {iter}, warmup = {warmup}, seed = {seed}, refresh = 0, silent = 2)
"""

_ONSET = """
f <- bf(y ~ 1 + (L - 1) * inv_logit(exp(logk) * (day - t50)),
        L ~ 1 + (1 | model), logk ~ 1 + (1 | model), t50 ~ 1 + (1 | model), nl = TRUE)
pr <- c(prior(normal(3, 1), nlpar = "L"), prior(normal(-1, 1), nlpar = "logk"),
        prior(normal({mid}, {scale}), nlpar = "t50"), prior(exponential(1), class = "sigma"))
fit <- brm(f, data = d, family = gaussian(), prior = pr, chains = {chains}, cores = {cores},
           iter = {iter}, warmup = {warmup}, seed = {seed}, refresh = 0, silent = 2)
"""

_TAIL = """
np <- nuts_params(fit)
cat(sprintf("BRMS divergences %d\\n", sum(subset(np, Parameter == "divergent__")$Value)))
cat(sprintf("BRMS chain seconds %.2f\\n", sum(rstan::get_elapsed_time(fit$fit))))
"""


def have_brms(rscript: str = "Rscript") -> bool:
    """Whether ``Rscript`` is on the PATH and loads brms."""
    exe = shutil.which(rscript)
    if exe is None:
        return False
    probe = 'quit(status = as.integer(!requireNamespace("brms", quietly = TRUE)))'
    try:
        return subprocess.run([exe, "-e", probe], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def study_table(ds, model: str):
    """The rows brms fits: ``rater``: one per rating (``y`` 1-4, ``rater``, ``md`` = model-day);
    ``onset``: one per model-day with its median consensus (``y``, ``model``, ``day``)."""
    import pandas as pd

    from delusion_bayes.baselines.consensus import consensus

    rec = ds["recognition"]
    if model == "rater":
        df = rec.to_dataframe().reset_index().dropna(subset=["recognition"])
        df = df.rename(columns={"recognition": "y"})
        df["y"] = df["y"].astype(int)
        df["md"] = df["model"].astype(str) + ":" + df["day"].astype(str)
        return df[["y", "rater", "md"]]
    if model == "onset":
        cons = consensus(rec, "median")
        df = cons.to_dataframe(name="y").reset_index().dropna(subset=["y"])
        return pd.DataFrame({"y": df["y"], "model": df["model"].astype(str), "day": df["day"]})
    raise ValueError(f"brms twin of {model!r} not written; expected 'rater' or 'onset'")


def fit_brms(
    ds,
    model: str,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    cores: int = 2,
    workdir: str | Path | None = None,
) -> dict:
    """Fit brms' version of ``model`` to ``ds`` in a fresh R process, its chains on ``cores``
    cores; returns ``{"seconds": wall time of the whole process, "divergences": int or None,
    "chain_seconds": Stan's warm-up plus sampling time summed over the chains (one core's
    seconds), "script": path}``. A failed R
    run raises ``RuntimeError`` with R's last lines."""
    work = Path(workdir or tempfile.mkdtemp(prefix="brms_"))
    data = work / "study.csv"
    study_table(ds, model).to_csv(data, index=False)
    days = np.asarray(ds["day"].values, float)
    body = (_RATER if model == "rater" else _ONSET).format(
        chains=chains,
        cores=cores,
        iter=draws + tune,
        warmup=tune,
        seed=seed,
        mid=float(days.mean()),
        scale=float(days.max() - days.min()),
    )
    script = work / f"{model}.R"
    script.write_text(
        "suppressPackageStartupMessages(library(brms))\n"
        f'd <- read.csv("{data}")\n'
        + ("d$rater <- factor(d$rater)\nd$y <- ordered(d$y)\n" if model == "rater" else "")
        + body
        + _TAIL
    )
    t0 = time.perf_counter()
    run = subprocess.run(["Rscript", str(script)], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if run.returncode != 0:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"brms ({script}) failed with status {run.returncode}:\n{tail}")
    div = chain_seconds = None
    for line in run.stdout.splitlines():
        if line.startswith("BRMS divergences"):
            div = int(line.split()[-1])
        if line.startswith("BRMS chain seconds"):
            chain_seconds = float(line.split()[-1])
    return {
        "seconds": seconds,
        "divergences": div,
        "chain_seconds": chain_seconds,
        "script": str(script),
    }


__all__ = ["fit_brms", "have_brms", "study_table"]


def main(argv: list[str] | None = None) -> int:
    """``python experiments/bench/brms_same_data.py --preset small --model rater``: fit brms to
    a simulated study and print its wall time (``--write-only``: write the CSV and the R script
    and print their paths, without R)."""
    import argparse

    from delusion_bayes.data import simulate_study

    ap = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--model", default="rater", choices=["rater", "onset"])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cores", type=int, default=2, help="brms' cores (1: chains in turn)")
    ap.add_argument("--write-only", action="store_true")
    args = ap.parse_args(argv)
    ds = simulate_study(args.preset, seed=0)
    if args.write_only:
        work = Path(tempfile.mkdtemp(prefix="brms_"))
        table = study_table(ds, args.model)
        table.to_csv(work / "study.csv", index=False)
        print(
            f"{len(table)} rows of {args.model!r} -> {work / 'study.csv'}; R found: {have_brms()}"
        )
        return 0
    if not have_brms():
        print("Rscript with brms not found (apt-get install r-base-core r-cran-brms)")
        return 1
    res = fit_brms(
        ds,
        args.model,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        seed=args.seed,
        cores=args.cores,
    )
    print(
        f"brms {args.model} on {args.preset}, cores={args.cores}: {res['seconds']:.1f} s end to "
        f"end, chains {res['chain_seconds']} s summed, {res['divergences']} divergences "
        f"({res['script']})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
