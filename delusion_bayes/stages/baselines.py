"""Pipeline stage ``baselines``: the trajectory paper's own analysis, written as tables.

Writes into ``run_dir/baselines/``: Tables 1, 2, C1, D1, the contrast tests, Figure-2 data (and a
plot), the section-F naive profiles, the consensus per model-day (``consensus.nc``) and
``index.json``. Every resampling is seeded from ``baselines.seed``: the same seed gives identical
tables. A study that carries a second coder's re-coding of the adjudicated codes as extra
variables ``level_a_recoded`` / ``level_b_recoded`` (model x day, NaN outside the re-coded
subsample) gets the adjudication-agreement rows (kappa, % agreement) in Table C1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..plotting import save_figure
from . import setting as _get

NEEDS = ("baselines",)
KIND = ("trajectory",)


#: suffix of a second coder's re-coding of an adjudicated variable, e.g. ``level_b_recoded``
#: (model x day, 0/1, NaN outside the re-coded subsample); optional user variables
RECODED_SUFFIX = "_recoded"


def recoded_codes(ds: xr.Dataset) -> xr.Dataset | None:
    """A second coder's ``level_a``/``level_b`` from ``<name>_recoded`` variables, if any.

    The paper re-coded a random 20% subsample (two coders) and reports agreement (Level B 95.3%,
    kappa .90); a study carrying ``level_a_recoded`` / ``level_b_recoded`` gets those rows in
    Table C1. ``None`` when the study has none.
    """
    from ..data.schema import ADJUDICATED_VARIABLES

    found = {v: ds[v + RECODED_SUFFIX] for v in ADJUDICATED_VARIABLES if v + RECODED_SUFFIX in ds}
    return xr.Dataset(found) if found else None


def t50_for_ranking(table: Any, first_clinical: np.ndarray, censor: int) -> np.ndarray:
    """t50 as it enters rank tests: a model that never turned ranks last, like its milestone.

    A model whose consensus never reached clinical framing (first clinical framing censored)
    enters as ``+inf`` (tied last, like a censored latency) whatever its fit says: a curve fitted
    inside the naive range (e.g. a small step at a bump, ``k`` on its bound) has a midpoint, but
    it is not a turn to clinical framing. A model that did turn but whose fit has no located
    transition (``flat`` or ``unidentified`` with NaN t50) enters as ``-inf``; otherwise the
    fitted value (possibly a bound) is kept.
    """
    t50 = table["t50"].to_numpy(dtype=float).copy()
    weak = table["status"].isin(["flat", "unidentified", "no_turn"]).to_numpy()
    never = np.asarray(first_clinical, dtype=float) >= censor
    t50[never] = np.inf
    t50[weak & ~never & np.isnan(t50)] = -np.inf
    return t50


def _figure2(table: Any, path: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for t, g in table.groupby("intervention_type", sort=False):
        rho = g["rho"].iloc[0]
        ax.plot(g["stage"], g["mean"], marker="o", label=f"{t} (rho = {rho:.2f})")
    ax.set_xlabel("consensus recognition stage")
    ax.set_ylabel("mean intensity (1 absent - 3 frequent)")
    ax.set_xticks([1, 2, 3, 4])
    ax.set_ylim(1, 3)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title("Intervention intensity by recognition stage (descriptive)")
    fig.tight_layout()
    return save_figure(fig, path.with_suffix(""))


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Run the baselines on a trajectory study and write the tables.

    Parameters
    ----------
    ds : xarray.Dataset
        A validated trajectory study.
    cfg : DictConfig
        Holds ``cfg.baselines`` (:class:`~delusion_bayes.baselines.config.BaselinesConfig`).
    run_dir : pathlib.Path
        The run directory; output goes to ``run_dir/baselines/``.

    Returns
    -------
    dict
        Headline numbers (also in ``index.json``).
    """
    from ..baselines import (
        consensus,
        intensity_by_stage,
        intervention_profiles,
        logistic_bootstrap,
        milestones,
        naive_profiles,
        permutation_contrasts,
        reliability_table,
    )
    from ..data.schema import DAY, MODEL, RATED_VARIABLES, censor_day

    b = cfg.baselines if "baselines" in cfg else cfg
    out = Path(run_dir) / "baselines"
    out.mkdir(parents=True, exist_ok=True)
    seed = int(_get(b, "seed", 0))
    rule, half = str(_get(b, "consensus", "median")), str(_get(b, "half_rule", "keep"))
    min_raters = int(_get(b, "min_raters", 1))
    n_days = int(ds[DAY].max())
    cens = _get(b, "censor_day", None)
    cens = censor_day(n_days) if cens is None else int(cens)
    files: dict[str, str] = {}
    notes: list[str] = []

    def _write(result: Any, name: str, desc: str) -> None:
        result.to_csv(out / name)
        files[name] = desc

    # consensus per model-day ---------------------------------------------------------------
    rated = [v for v in RATED_VARIABLES if v in ds.data_vars]
    cons = consensus(ds[rated], rule, half, min_raters=min_raters)
    model_coords = {k: ds.coords[k] for k in ds.coords if ds.coords[k].dims == (MODEL,)}
    cons = cons.assign_coords(model_coords)
    cons.attrs.update(consensus=rule, half_rule=half, min_raters=min_raters)
    cons.to_netcdf(out / "consensus.nc", engine="h5netcdf")
    files["consensus.nc"] = f"consensus ({rule}, half rule {half}) per model-day, rated variables"

    # Table C1 ------------------------------------------------------------------------------
    rel = reliability_table(
        ds,
        level=str(_get(b, "alpha_level", "interval")),
        n_boot=int(_get(b, "alpha_boot", 0)),
        ci=float(_get(b, "ci", 0.95)),
        seed=seed,
        recoded=recoded_codes(ds),
    )
    _write(rel, "tableC1_reliability.csv", rel.title)

    # Table 1 -------------------------------------------------------------------------------
    level_a = ds["level_a"] if "level_a" in ds.data_vars else None
    level_b = ds["level_b"] if "level_b" in ds.data_vars else None
    if level_b is None:
        notes.append("no level_b in the study: first_level_b / days_level_b not computed")
    ms = milestones(
        cons["recognition"],
        level_b,
        level_a=level_a,
        stable_run=int(_get(b, "stable_run", 3)),
        censor_day=cens,
        clinical_at=float(_get(b, "clinical_at", 3.0)),
        stable_at=float(_get(b, "stable_at", 4.0)),
        missing=str(_get(b, "missing", "skip")),
    )
    ms = ms.assign_coords(model_coords)
    table1 = ms.to_dataframe()
    table1.to_csv(out / "table1_milestones.csv")
    files["table1_milestones.csv"] = (
        f"Table 1: milestone latencies (censored at {cens}) and day counts per model"
    )

    # Table D1 ------------------------------------------------------------------------------
    scale_top = float(RATED_VARIABLES["recognition"].scale.high)
    d1 = logistic_bootstrap(
        ds["recognition"],
        n_boot=int(_get(b, "n_boot", 1000)),
        seed=seed,
        rule=rule,
        half_rule=half,
        min_raters=min_raters,
        floor=float(_get(b, "logistic_floor", 1.0)),
        upper=scale_top,
        k_max=float(_get(b, "k_max", 20.0)),
        ci=float(_get(b, "ci", 0.95)),
        turn_at=float(_get(b, "clinical_at", 3.0)),
    )
    _write(d1, "tableD1_logistic.csv", d1.title)
    d1.extra["replicates"].to_netcdf(out / "logistic_bootstrap.nc", engine="h5netcdf")
    files["logistic_bootstrap.nc"] = "rater-bootstrap replicates of L, k, t50 (resample x model)"

    # contrasts -----------------------------------------------------------------------------
    quantities = ms.copy()
    for p in ("L", "k"):
        quantities[p] = (MODEL, d1.summary[p].reindex(ms[MODEL].values).to_numpy(dtype=float))
    quantities["t50"] = (
        MODEL,
        t50_for_ranking(d1.summary.reindex(ms[MODEL].values), ms["first_clinical"].values, cens),
    )
    contrasts = list(_get(b, "contrasts", []) or [])
    if contrasts:
        con = permutation_contrasts(
            quantities,
            contrasts,
            max_exact=int(_get(b, "max_exact", 1000)),
            n_mc=int(_get(b, "n_mc", 100_000)),
            seed=seed,
        )
        con.notes.append(t50_for_ranking.__doc__.split("\n\n")[0].strip())
        _write(con, "contrasts.csv", con.title)
    else:
        con = None
        notes.append("no contrasts configured (baselines.contrasts is empty)")

    # Table 2, Figure 2, section F -----------------------------------------------------------
    if "intervention" in cons.data_vars:
        t2 = intervention_profiles(
            cons["recognition"],
            cons["intervention"],
            stable_at=float(_get(b, "stable_at", 4.0)),
            level_b=level_b,
        )
        _write(t2, "table2_interventions.csv", t2.title)
        f2 = intensity_by_stage(cons["recognition"], cons["intervention"])
        _write(f2, "figure2_intensity_by_stage.csv", f2.title)
        for p in _figure2(f2.summary, out / "figure2_intensity_by_stage"):
            files[p.name] = "Figure 2: mean intervention intensity by consensus stage"
        nf = naive_profiles(
            cons["recognition"],
            cons["intervention"],
            clinical_at=float(_get(b, "clinical_at", 3.0)),
        )
        _write(nf, "sectionF_naive_profiles.csv", nf.title)
    else:
        notes.append("no intervention ratings in the study: Table 2, Figure 2, section F skipped")

    # headline and index --------------------------------------------------------------------
    rec = rel.summary.loc["recognition"]
    headline: dict[str, Any] = {
        "alpha_recognition": float(rec["alpha"]),
        "icc2k_recognition": float(rec["icc2_k"]),
        "n_models": int(ds.sizes[MODEL]),
        "n_never_clinical": int((ms["first_clinical"] >= cens).sum()),
        "median_first_clinical": float(ms["first_clinical"].median()),
        "n_fits_ok": int((d1.summary["status"] == "ok").sum()),
    }
    if con is not None and len(con.summary):
        best = con.summary.loc[con.summary["pvalue"].idxmin()]
        headline["min_contrast_p"] = float(best["pvalue"])
        headline["min_contrast"] = f"{best['contrast']}: {best['quantity']}"
    index = {
        "files": files,
        "headline": headline,
        "notes": notes + rel.notes + d1.notes + (con.notes if con is not None else []),
        "config": {
            "consensus": rule,
            "half_rule": half,
            "censor_day": cens,
            "seed": seed,
            "n_boot": int(_get(b, "n_boot", 1000)),
        },
    }
    (out / "index.json").write_text(json.dumps(index, indent=2, default=str))
    return headline
