"""Check the power-scaling flags of a fit by refitting (issue 28, item 4b).

    delusion-bayes data=small "stages=[baselines,models]" "model.also_fit=[]" hydra.run.dir=RUN
    .venv/bin/python experiments/bench/refit_priors.py --run RUN [--fit joint]

Reads the run's study, config, ``models/<fit>/posterior.nc``, ``sensitivity.csv`` and
``sensitivity_reported.csv``; refits the study (same sampler settings and seed) with the scales
of the flagged priors (:func:`delusion_bayes.models.refit.flagged_priors`) times 2 and times 0.5;
writes ``models/<fit>/refit_priors.csv`` (per reported number and per parameter: the shift of
its posterior mean in posterior SDs of the original fit under each factor) and fills
``refit_shift_sd`` in ``sensitivity_reported.csv``; prints how many flags the refits confirm
(|shift| >= ``refit.MOVES_SD`` under either factor).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr


def parameter_draws(dt: xr.DataTree, names: list[str]) -> dict:
    """``{(parameter, "parameter", ""): draws}`` for the parameters of ``sensitivity.csv``."""
    post = dt["posterior"].to_dataset()
    out = {}
    for v in dict.fromkeys(n.split("[")[0] for n in names):
        if v not in post:
            continue
        da = post[v]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        if not extra:
            out[(v, "parameter", "")] = da
            continue
        st = da.stack(el=extra)
        for i in range(st.sizes["el"]):
            idx = st["el"].values[i]
            idx = idx if isinstance(idx, tuple) else (idx,)
            out[(f"{v}[{','.join(str(x) for x in idx)}]", "parameter", "")] = st.isel(
                el=i, drop=True
            )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, type=Path)
    ap.add_argument("--fit", default="joint")
    ap.add_argument(
        "--control",
        action="store_true",
        help="instead: refit with the priors unchanged and sampler.seed + 1; the shifts are "
        "then Monte Carlo noise (the floor the refit shifts are read against); writes "
        "refit_control.json only",
    )
    args = ap.parse_args(argv)
    from omegaconf import OmegaConf

    from delusion_bayes.models import derived as d
    from delusion_bayes.models import refit as rf
    from delusion_bayes.models.priors import resolve_priors
    from delusion_bayes.models.sensitivity_reported import fit_reported_draws
    from delusion_bayes.stages.models import fit_one, study_contrasts

    run, fit = args.run, args.fit
    folder = run / "models" / fit
    cfg = OmegaConf.load(run / "config.yaml")
    ds = xr.open_dataset(run / "study.nc").load()
    base = xr.open_datatree(folder / "posterior.nc").load()
    sens = pd.read_csv(folder / "sensitivity.csv")
    reported = pd.read_csv(folder / "sensitivity_reported.csv")
    user = OmegaConf.to_container(cfg.model.priors) or {}
    priors = resolve_priors(fit, user)
    names = rf.flagged_priors(sens, priors)
    contrasts, _ = study_contrasts(ds, cfg.baselines.get("contrasts", []))
    b = cfg.baselines
    seed = int(b.get("seed", 0))

    def draws(dt):
        ms = d.posterior_milestones(
            dt,
            stable_run=int(b.get("stable_run", 3)),
            missing=str(b.get("missing", "skip")),
            censor=b.get("censor_day", None),
        )
        out = fit_reported_draws(dt, ms, contrasts, seed=seed)
        out.update(parameter_draws(dt, sens["parameter"].astype(str).tolist()))
        return out

    print(
        f"{fit} on {run}: flagged priors {names} (from {int((sens['verdict'] != '-').sum())} "
        f"flagged of {len(sens)} parameters)"
    )
    base_draws = draws(base)
    if args.control:
        cfg.sampler.seed = int(cfg.sampler.get("seed", 0)) + 1
        dt = fit_one(ds, fit, cfg, primary=True, overrides={"priors": user or None})
        sh = rf.refit_shifts(base_draws, {1.0: draws(dt)})
        a = sh["refit_shift_sd"].abs()
        rep = sh["kind"] != "parameter"
        summary = {
            "fit": fit,
            "run": str(run),
            "control": "priors unchanged, sampler.seed + 1",
            "n": int(a.notna().sum()),
            "median_abs_shift": float(a.median()),
            "q90_abs_shift": float(a.quantile(0.9)),
            "max_abs_shift": float(a.max()),
            "n_ge_moves_sd": int((a >= rf.MOVES_SD).sum()),
            "reported_n_ge_moves_sd": int((a[rep] >= rf.MOVES_SD).sum()),
            "reported_n": int(a[rep].notna().sum()),
            "moves_sd": rf.MOVES_SD,
        }
        (folder / "refit_control.json").write_text(json.dumps(summary, indent=1))
        print(json.dumps(summary, indent=1))
        return 0
    refits, seconds = {}, {}
    for f in rf.FACTORS:
        t0 = time.perf_counter()
        over = {**user, **rf.scaled_priors(priors, names, f)}
        dt = fit_one(ds, fit, cfg, primary=True, overrides={"priors": over})
        seconds[f] = time.perf_counter() - t0
        print(
            f"refit x{f:g}: {seconds[f]:.0f} s, divergences "
            f"{int(dt['sample_stats']['diverging'].sum())}"
        )
        refits[f] = draws(dt)
    shifts = rf.refit_shifts(base_draws, refits)
    shifts.to_csv(folder / "refit_priors.csv", index=False)
    res = rf.confirm(reported, shifts[shifts["kind"] != "parameter"])
    res["table"].to_csv(folder / "sensitivity_reported.csv", index=False)
    par = shifts[shifts["kind"] == "parameter"].rename(columns={"quantity": "parameter"})
    par = par.merge(sens[["parameter", "verdict"]], on="parameter")
    pflag = par["verdict"] != "-"
    pmoved = par["refit_shift_sd"].abs() >= rf.MOVES_SD
    summary = {
        "fit": fit,
        "run": str(run),
        "flagged_priors": names,
        "factors": list(rf.FACTORS),
        "moves_sd": rf.MOVES_SD,
        "refit_seconds": seconds,
        "reported": {k: v for k, v in res.items() if k != "table"},
        "parameters": {
            "n": len(par),
            "flagged": int(pflag.sum()),
            "confirmed": int((pflag & pmoved).sum()),
            "moved_unflagged": int((~pflag & pmoved).sum()),
        },
        "largest_reported_shift": shifts[shifts["kind"] != "parameter"]
        .assign(a=lambda x: x["refit_shift_sd"].abs())
        .nlargest(5, "a")
        .drop(columns="a")
        .to_dict("records"),
    }
    (folder / "refit_priors.json").write_text(json.dumps(summary, indent=1, default=float))
    print(json.dumps(summary, indent=1, default=float))
    return 0 if np.isfinite(shifts["refit_shift_sd"]).any() else 1


if __name__ == "__main__":
    raise SystemExit(main())
