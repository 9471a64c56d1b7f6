"""How often do the default fits pass their diagnostics gate on studies of the size labs run?

    .venv/bin/python experiments/bench/gate_grid.py [--designs all] [--out /tmp/gate_grid.csv]

Every design is simulated (``simulate_study``; the numbers describe the simulation, not real
chatbots) and fitted exactly as the main job fits it: the default config's models
(``model.name`` + ``model.also_fit``, a model whose input the study lacks is skipped as the
stage skips it), sampler settings, target acceptance and the automatic refit
(``inference.refit_target_accept``), through ``delusion_bayes.stages.fit_plan.fit_one`` and the
same gate. One row per design and fit goes to ``--out`` as it finishes; the end prints the pass
rate per model and per design axis (docs/dev/models.md, "Gate at realistic sizes").

The grid (``DESIGNS``): 4-15 chatbots, 8-30 days, 2-4 raters, 0-15% missing ratings, one rater
who rated only half the days, all chatbots turning, none turning, the ``init-study`` template
and the minimal recognition-only study (3 raters named Alice, Bob and Chen, 5 chatbots, 12
days, ~7% missing, no models.csv, no adjudication), and five sparse recognition-only studies
(8-20 chatbots x 8-12 days x 2-3 raters, 20-40% missing; ``--designs sparse``).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

#: the sparse designs: (chatbots, days, raters, share of ratings missing)
SPARSE = ((20, 8, 2, 0.3), (15, 12, 3, 0.3), (8, 10, 2, 0.2), (12, 8, 3, 0.4), (10, 12, 2, 0.25))
#: name -> (preset, simulate_study overrides, post-processing); axes: what the design varies
DESIGNS: dict[str, dict[str, Any]] = {
    "template": {"axis": "template"},
    "minimal": {
        "axis": "minimal",
        "preset": "small",
        "over": {"missing_rate": 0.07},
        "shape": "recognition_only",
    },
    **{f"small_s{s}": {"axis": "small preset", "preset": "small", "seed": s} for s in range(4)},
    "m4_d30_r4": {"axis": "chatbots", "over": {"n_models": 4}},
    "m8_d30_r4": {"axis": "chatbots", "over": {"n_models": 8}},
    "m15_d30_r4": {"axis": "chatbots", "over": {}},
    "m10_d8_r3": {"axis": "days", "over": {"n_models": 10, "n_days": 8, "n_raters": 3}},
    "m10_d15_r3": {"axis": "days", "over": {"n_models": 10, "n_days": 15, "n_raters": 3}},
    "m6_d20_r2": {"axis": "raters", "over": {"n_models": 6, "n_days": 20, "n_raters": 2}},
    "m12_d20_r2": {"axis": "raters", "over": {"n_models": 12, "n_days": 20, "n_raters": 2}},
    "m8_d20_r3_miss15": {
        "axis": "missing",
        "over": {"n_models": 8, "n_days": 20, "n_raters": 3, "missing_rate": 0.15},
    },
    "m8_d20_r3_halfrater": {
        "axis": "half rater",
        "over": {"n_models": 8, "n_days": 20, "n_raters": 3},
        "shape": "half_rater",
    },
    "all_turning": {"axis": "all turning", "over": {}, "shape": "all_turning"},
    "none_turning": {"axis": "none turning", "over": {"n_days": 12}, "shape": "none_turning"},
    # sparse recognition-only studies as a user tried them (issue 54, item 5): 8-20 chatbots x
    # 8-12 days x 2-3 raters with 20-40% of ratings missing
    **{
        f"sparse_m{m}_d{d}_r{r}_miss{int(100 * p)}": {
            "axis": "sparse",
            "over": {"n_models": m, "n_days": d, "n_raters": r, "missing_rate": p},
            "shape": "recognition_only",
        }
        for m, d, r, p in SPARSE
    },
}


def recognition_only(ds: xr.Dataset) -> xr.Dataset:
    """Ratings of recognition only, raters Alice, Bob, Chen..., no model metadata, no
    adjudication, no texts: the study most groups start from."""
    names = ["Alice", "Bob", "Chen", "Dana", "Eli"][: ds.sizes["rater"]]
    rec = ds["recognition"].assign_coords(rater=names)
    keep = {c for c in rec.coords if c in ("rater", "model", "day")}
    return xr.Dataset(
        {"recognition": rec.reset_coords([c for c in rec.coords if c not in keep], drop=True)}
    )


def half_rater(ds: xr.Dataset) -> xr.Dataset:
    """The last rater rated only the first half of the days."""
    out = ds.copy()
    last = out["day"] > int(out["day"].max()) // 2
    for v in ("recognition", "confidence", "intervention", "disengagement"):
        if v in out:
            r = out[v].isel(rater=-1).where(~last)
            out[v].loc[{"rater": out["rater"].values[-1]}] = r
    return out


def build(name: str) -> xr.Dataset:
    """The simulated study of design ``name``."""
    import delusion_bayes as db

    d = DESIGNS[name]
    if d["axis"] == "template":
        from delusion_bayes.cli import template_dir

        return db.data.load_study(template_dir())
    ds = db.data.simulate_study(
        d.get("preset", "paper_like"), seed=d.get("seed", 0), **d.get("over", {})
    )
    shape = d.get("shape")
    if shape == "recognition_only":
        return recognition_only(ds)
    if shape == "half_rater":
        return half_rater(ds)
    if shape in ("all_turning", "none_turning"):
        t50, n_days = ds["true_t50"].values, int(ds["day"].max())
        keep = t50 < n_days - 2 if shape == "all_turning" else t50 > n_days + 3
        return ds.isel(model=np.flatnonzero(keep))
    return ds


def fit_design(
    name: str, ds: xr.Dataset, cfg: Any, models: list[str] | None, emit=lambda row: None
) -> list[dict]:
    """Every default fit of one design, gated; ``emit(row)`` as each one finishes."""
    from delusion_bayes.inference.diagnostics import gate
    from delusion_bayes.inference.refits import diagnostics_of, fit_attempts
    from delusion_bayes.models import missing_inputs
    from delusion_bayes.stages.fit_plan import fit_one

    primary = str(cfg.model.name)
    names = list(dict.fromkeys([primary, *cfg.model.also_fit]))
    rows = []
    for m in names:
        if models and m not in models:
            continue
        base = {
            "design": name,
            "axis": DESIGNS[name]["axis"],
            "model": m,
            "n_models": ds.sizes["model"],
            "n_days": ds.sizes["day"],
            "n_raters": ds.sizes["rater"],
            "missing": round(float(ds["recognition"].isnull().mean()), 3),
        }
        if why := missing_inputs(ds.data_vars, m):
            rows.append({**base, "status": "skipped", "note": why})
            emit(rows[-1])
            continue
        t0 = time.perf_counter()
        dt = fit_one(ds, m, cfg, primary=m == primary)
        g = gate(dt, diagnostics_of(dt, cfg.inference), cfg.inference)
        g.update(fit_attempts(dt, g))
        first = g["attempts"][0]
        rows.append(
            {
                **base,
                "status": "passed" if g["passed"] else "failed",
                "divergences_first": first["divergences"],
                "divergences": g["divergences"],
                "refitted": g["refitted"],
                "max_rhat": round(g["max_rhat"], 4),
                "min_ess": round(g["min_ess"]),
                "seconds": round(time.perf_counter() - t0, 1),
                "note": "; ".join(g["reasons"]),
            }
        )
        emit(rows[-1])
    return rows


def table(rows: list[dict]) -> str:
    """Markdown: pass rate per model, then per axis (skipped fits not counted)."""
    import pandas as pd

    df = pd.DataFrame([r for r in rows if r["status"] != "skipped"])
    if df.empty:
        return "no fits"
    df["pass"] = df["status"] == "passed"
    out = [
        f"Default fits gate-clean: {int(df['pass'].sum())} of {len(df)} "
        f"({df['pass'].mean():.0%}); refitted automatically: {int(df['refitted'].sum())}",
        "",
    ]
    for by in ("model", "axis"):
        g = df.groupby(by, sort=False)
        t = pd.DataFrame(
            {
                "fits": g.size(),
                "passed": g["pass"].sum(),
                "refitted": g["refitted"].sum(),
                "max divergences after refit": g["divergences"].max(),
            }
        )
        t["pass rate"] = (t["passed"] / t["fits"]).map("{:.0%}".format)
        t = t.reset_index()
        out += ["| " + " | ".join(map(str, t.columns)) + " |", "|" + "---|" * len(t.columns)]
        out += ["| " + " | ".join(map(str, r)) + " |" for r in t.itertuples(index=False)] + [""]
    return "\n".join(out)


def main() -> None:
    from delusion_bayes.config import compose

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", default="all", help=f"comma list of {list(DESIGNS)} or all")
    ap.add_argument("--models", default="", help="only these fits (default: every default fit)")
    ap.add_argument("--out", default="/tmp/gate_grid.csv")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. sampler.draws=200")
    args = ap.parse_args()
    names = list(DESIGNS) if args.designs == "all" else args.designs.split(",")
    if names == ["sparse"]:
        names = [n for n, d in DESIGNS.items() if d["axis"] == "sparse"]
    cfg = compose(list(args.overrides))
    out = Path(args.out)
    done: list[dict] = []
    fields = [
        "design",
        "axis",
        "model",
        "n_models",
        "n_days",
        "n_raters",
        "missing",
        "status",
        "divergences_first",
        "divergences",
        "refitted",
        "max_rhat",
        "min_ess",
        "seconds",
        "note",
    ]
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for i, name in enumerate(names, 1):

            def emit(row, i=i):
                w.writerow(row)
                fh.flush()
                print(f"[{i}/{len(names)}] " + json.dumps(row), flush=True)

            models = args.models.split(",") if args.models else None
            done += fit_design(name, build(name), cfg, models, emit)
    print("\nSIMULATED studies; " + table(done))


if __name__ == "__main__":
    main()
