"""Pipeline stage ``models``: fit the Bayesian models, gate them, and write their posteriors.

For ``model.name`` and every model in ``model.also_fit`` it writes ``run_dir/models/<name>/``:
``posterior.nc`` (attrs: resolved config, config hash, version, git SHA, seeds, data hash),
``diagnostics.csv`` and ``gate.json``, ``summary.csv``, the derived ``*_posterior.csv`` tables,
``sensitivity.csv``/``.png`` (:mod:`delusion_bayes.models.sensitivity`), ``loo.csv`` (leaving
out a model-day, its latent integrated out, and a rating) and ``rank.png``, ``ppc.png``,
``loo_khat.png``. With ``inference.compare`` the ``model.variants`` of the primary model are fitted
too and ``models/comparison.csv`` holds ``az.compare`` per ``inference.loo_unit``
(:mod:`delusion_bayes.models.marginal`; ``comparison_by_<unit>.csv`` for the other unit);
otherwise it lists the PSIS-LOO of each fit. A fit that fails the diagnostics gate is marked in
``gate.json`` and the headline; with ``inference.fail_on_bad_fit`` the stage fails.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..baselines.config import BaselinesConfig
from ..config import group_config
from ..inference.comparison import loo_units
from ..inference.config import InferenceConfig, SamplerConfig
from ..models.config import ModelConfig
from . import Outputs
from .fit_outputs import fit_figures, reported_outputs, sensitivity_outputs
from .fit_plan import (
    fit_names,
    fit_one,
    fit_order,
    latent_kernel_while_waiting,
    population_fits,
    study_contrasts,
    variants,
)
from .fit_tables import (
    contrast_outputs,
    gate_outputs,
    latent_outputs,
    loo_outputs,
    provenance_attrs,
    t50_scale_note,
    trajectory_outputs,
)

NEEDS = ("model", "sampler", "inference", "baselines")
KIND = ("trajectory",)

log = logging.getLogger(__name__)


def _write_model(
    dt, cfg, run_dir: Path, fit: str, prov: dict, contrasts: list, pop_fits: dict | None = None
) -> dict[str, Any]:
    """All files of one fitted model in ``models/<fit>/``: its gate, the derived tables, the
    contrasts (``pop_fits``: the population-contrast fits per contrast name, primary model
    only), PSIS-LOO and figures, the sensitivity checks and the posterior; returns the
    headline, the configured unit's elpd, the files and the notes."""
    inf = group_config(InferenceConfig, cfg.inference)
    b = group_config(BaselinesConfig, cfg.baselines)
    out = Outputs(run_dir, "models/{fit}", fit=fit)
    out.path.mkdir(parents=True, exist_ok=True)
    notes: list[str] = list(filter(None, [t50_scale_note(dt)]))
    table, g = gate_outputs(dt, out, inf)
    ms = trajectory_outputs(dt, out, inf, b)
    if contrasts:
        contrast_outputs(dt, out, inf, ms, contrasts, b, notes, pop_fits or {})
    latent_outputs(dt, out, inf, run_dir, notes)
    elpd = loo_outputs(dt, out, inf, notes)
    fit_figures(dt, elpd, out, list(inf.plot_vars), notes, table)
    sens_seconds = sensitivity_outputs(dt, out, notes)
    rule = dict(stable_run=b.stable_run, censor_day=b.censor_day)
    reported_outputs(
        dt, out, notes, ms=ms, contrasts=contrasts, seed=b.seed, pop_fits=pop_fits, rule=rule
    )
    dt.attrs.update(
        prov, seed=group_config(SamplerConfig, cfg.sampler).seed, gate_passed=int(g["passed"])
    )
    out.write("posterior.nc", dt, "posterior DataTree (provenance in attrs)")
    head = {
        "passed": bool(g["passed"]),
        "divergences": g["divergences"],
        "max_rhat": g["max_rhat"],
        "min_ess": g["min_ess"],
        "fit_seconds": float(dt.attrs.get("fit_time", np.nan)),
        "sampler": str(dt.attrs.get("sampler", "")),
    }
    if sens_seconds is not None:
        head["sensitivity_seconds"] = sens_seconds
    if elpd is not None:
        head["elpd_loo"] = float(elpd.elpd)
        head["loo_unit"] = inf.loo_unit
    out.index(head, gate=g, notes=notes)
    return {
        "headline": head,
        "elpd": elpd,
        "loo_unit": inf.loo_unit,
        "files": out.files,
        "notes": notes,
    }


def prepare(ds: xr.Dataset, cfg: Any, run_dir: Path, *, first: bool):
    """Before any stage runs: start compiling this stage's fits in a background process
    (:mod:`.prefetch`); ``first``: no stage runs before this one. Returns the process's handle
    (the pipeline closes it when this stage ends) or None."""
    from .prefetch import start

    return start(ds, cfg, run_dir, skip_first=first)


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Fit, gate and write the configured Bayesian models of a validated trajectory study into
    ``run_dir/models/``; ``cfg.baselines`` gives the contrasts and milestone rules. Returns per
    fitted model: passed, divergences, max R-hat, min ESS, seconds; and ``all_passed``."""
    t0 = time.perf_counter()
    out = Outputs(run_dir, "models")
    out.path.mkdir(parents=True, exist_ok=True)
    m = group_config(ModelConfig, cfg.model)
    names, contrasts, skipped = _what_to_fit(ds, m, cfg)
    prov = provenance_attrs(cfg, ds, Path(run_dir))
    headline: dict[str, Any] = {}
    notes: list[str] = []
    fits, written = {}, {}
    with latent_kernel_while_waiting(names):
        for name in fit_order(names):  # the order that overlaps the prefetch's compiles best
            fits[name] = fit_one(ds, name, cfg, primary=name == m.name)
            t_pop = time.perf_counter()
            pop = population_fits(ds, name, cfg, contrasts) if name == m.name else {}
            if pop:
                headline["population_fit_seconds"] = time.perf_counter() - t_pop
            t_write = time.perf_counter()
            written[name] = _write_model(fits[name], cfg, run_dir, name, prov, contrasts, pop)
            _log_after_sampling(name, fits[name], time.perf_counter() - t_write)
    written = {name: written[name] for name in names}  # the results in the configured order
    for name in names:
        headline[name] = written[name]["headline"]
        out.files.update({f"{name}/{k}": v for k, v in written[name]["files"].items()})
        notes += [f"{name}: {n}" for n in written[name]["notes"]]
    inf = group_config(InferenceConfig, cfg.inference)
    if inf.compare and m.variants:
        _compare_variants(ds, cfg, run_dir, prov, fits[m.name], out, headline, notes)
    else:
        _loo_per_model(written, out)
    failing = [k for k, v in headline.items() if isinstance(v, dict) and not v.get("passed", True)]
    headline["all_passed"] = not failing
    if failing:
        notes.insert(0, f"DIAGNOSTICS GATE FAILED for {failing}: see <name>/gate.json")
    headline["seconds"] = time.perf_counter() - t0
    return out.index(headline, skipped=skipped, notes=notes)


def _log_after_sampling(name: str, dt, write_seconds: float) -> None:
    """One INFO line per fit: the seconds after its sampler returned (in the fit: latent pass,
    log-likelihood, PPC, log prior; here: gate, tables, LOO, figures, sensitivity,
    ``posterior.nc``). ``experiments/bench/bench_main_job.py`` reads it."""
    in_fit = float(dt.attrs.get("after_sampling_time", 0.0))
    log.info(
        "%s after sampling: %.1f s (in the fit %.1f s, outputs %.1f s)",
        name,
        in_fit + write_seconds,
        in_fit,
        write_seconds,
    )


def _what_to_fit(ds: xr.Dataset, m: ModelConfig, cfg: Any) -> tuple[list, list, list]:
    """The models to fit (:func:`.fit_plan.fit_names`), the contrasts the study supports, and
    ``{analysis, reason}`` of everything skipped."""
    names, skipped = fit_names(ds, m)
    contrasts, more = study_contrasts(ds, group_config(BaselinesConfig, cfg.baselines).contrasts)
    return names, contrasts, more + skipped


def _compare_variants(ds, cfg, run_dir: Path, prov: dict, primary_fit, out, headline, notes):
    """Fit the primary model's ``model.variants`` and write ``comparison.csv`` (``az.compare``
    per ``inference.loo_unit``; ``comparison_by_<unit>.csv`` for the other unit:
    :func:`delusion_bayes.inference.comparison.compare_variants`)."""
    from ..inference.comparison import compare_variants

    m = group_config(ModelConfig, cfg.model)
    inf = group_config(InferenceConfig, cfg.inference)
    # the fit's own label, group terms included, as the variants' labels are built
    cmp = {str(primary_fit.attrs["variant"]): primary_fit}
    for v, over, why in variants(m):
        if why is not None:
            notes.append(why)
            continue
        dt_v = fit_one(ds, m.name, cfg, primary=True, overrides=over)
        label = str(dt_v.attrs.get("variant", v))
        res = _write_model(dt_v, cfg, run_dir, f"{m.name}_{v}", prov, [])
        headline[f"{m.name}_{v}"] = res["headline"]
        cmp[label] = dt_v
    units = [loo_units(f, inf.loo_unit) for f in cmp.values()]
    tables, failed = compare_variants(cmp, units, inf.loo_unit)
    notes += failed
    for u, fname, table in tables:
        desc = f"az.compare (PSIS-LOO per {u}, stacking) of the primary's variants"
        out.write(fname, table.reset_index(), desc)
        if u == inf.loo_unit:
            headline["best_variant"] = str(table.index[0])
            headline["loo_unit"] = u


def _loo_per_model(written: dict, out: Outputs) -> None:
    """Without a comparison: ``comparison.csv`` lists each fit's PSIS-LOO, of the models whose
    likelihood is comparable (a consensus model's is of another thing, so it is left out)."""
    from ..inference.comparison import loo_per_model
    from ..models.registry import model_def

    compared = {n: (r["elpd"], r["loo_unit"]) for n, r in written.items() if model_def(n).compared}
    desc = "PSIS-LOO per fitted model (comparison disabled)"
    out.write("comparison.csv", loo_per_model(compared), desc)
