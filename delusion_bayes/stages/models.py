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

import json
import logging
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .. import results
from ..baselines.config import BaselinesConfig
from ..config import group_config
from ..inference.config import InferenceConfig, SamplerConfig
from ..models.config import ModelConfig
from . import Outputs
from .fit_outputs import fit_figures, reported_outputs, sensitivity_outputs
from .fit_plan import fit_arguments, fit_names, fit_order, plain, variants

NEEDS = ("model", "sampler", "inference", "baselines")
KIND = ("trajectory",)

log = logging.getLogger(__name__)


def _provenance(cfg: Any, ds: xr.Dataset, run_dir: Path) -> dict[str, Any]:
    """Provenance attrs: the run's ``run.json`` if the pipeline wrote it, else computed here."""
    prov: dict[str, Any] = {}
    rj = Path(run_dir) / "run.json"
    if rj.is_file():
        try:
            prov = dict(json.loads(rj.read_text()).get("provenance", {}))
        except (OSError, json.JSONDecodeError):
            prov = {}
    if not prov:
        try:
            from ..provenance import provenance

            prov = provenance(cfg, ds)
        except Exception as err:  # noqa: BLE001 (provenance must not stop a fit)
            log.warning("provenance could not be computed: %s", err)
    return {
        "package_version": str(prov.get("version", "")),
        "git_sha": str(prov.get("git_sha", "")),
        "config_hash": str(prov.get("config_hash", "")),
        "data_hash": str(prov.get("data_hash", "")),
        "run_seed": int(prov.get("seed", 0) or 0),
        "resolved_config": json.dumps(plain(cfg), sort_keys=True, default=str),
    }


def fit_one(ds, name: str, cfg: Any, *, primary: bool, overrides: dict | None = None):
    """Fit ``name`` as this stage does (:func:`fit_arguments`), refitted by the gate's remedies
    (:func:`fit_with_refits`)."""
    from ..models import fit

    kw = fit_arguments(name, cfg, primary=primary, overrides=overrides)
    inf = group_config(InferenceConfig, cfg.inference)
    return fit_with_refits(lambda **more: fit(ds, name, **{**kw, **more}), inf)


def fit_with_refits(make, inf: Any):
    """``make()``'s fit, refitted by the standard remedies while it fails its gate, at most once
    each (same seed; the compiled model is reused, so a refit costs sampling only):

    1. more divergences than the gate allows: ``make(target_accept=...)`` at
       ``inference.refit_target_accept`` (halfway from the attempt's target to 1 when that was
       as high already);
    2. then, if the latest attempt has no excess divergences but its R-hat or ESS fails the
       gate: ``make(draws=..., tune=...)`` with ``inference.refit_draws_factor`` times the draws
       and tuning steps, at the latest attempt's target. Chains of a few hundred effective
       draws put R-hat above 1.01 for some of ~100 parameters by chance alone; longer chains
       are what Vehtari et al. (2021, Bayesian Analysis 16:667) prescribe, and a real
       multimodality still fails.

    The fit returned carries ``attrs["gate_attempts"]``: JSON, one ``{target_accept, draws,
    divergences, seconds, max_rhat, min_ess}`` per attempt (the stage writes it into
    ``gate.json``)."""
    from ..inference.diagnostics import sampler_stats

    inf = group_config(InferenceConfig, inf)
    allowed = inf.max_divergences
    refit_at = inf.refit_target_accept
    factor = inf.refit_draws_factor
    dt = make()
    attempts = [_attempt(dt, sampler_stats(dt)["divergences"], inf)]
    if refit_at is not None and attempts[-1]["divergences"] > allowed:
        # at or above refit_target_accept already (the onset model's 0.99): halfway to 1
        first = attempts[-1]["target_accept"]
        target = max(float(refit_at), 1.0 - (1.0 - first) / 2.0)
        log.warning(
            "%s: %d divergent transitions at target_accept %.3g; refitting at %.4g "
            "(inference.refit_target_accept)",
            dt.attrs.get("variant", "fit"),
            attempts[-1]["divergences"],
            first,
            target,
        )
        dt = make(target_accept=target)
        attempts.append(_attempt(dt, sampler_stats(dt)["divergences"], inf))
    last = attempts[-1]
    if factor is not None and float(factor) > 1 and last["divergences"] <= allowed:
        if not last["mixed"]:
            draws = int(round(last["draws"] * float(factor)))
            tune = int(round(last["tune"] * float(factor)))
            log.warning(
                "%s: R-hat %.4f or ESS %.0f fails the gate; refitting with %d draws and "
                "%d tuning steps per chain (inference.refit_draws_factor)",
                dt.attrs.get("variant", "fit"),
                last["max_rhat"],
                last["min_ess"],
                draws,
                tune,
            )
            more = {"draws": draws, "tune": tune}
            if len(attempts) > 1:
                more["target_accept"] = last["target_accept"]
            dt = make(**more)
            attempts.append(_attempt(dt, sampler_stats(dt)["divergences"], inf))
    for a in attempts:
        a.pop("mixed")
    dt.attrs["gate_attempts"] = json.dumps(attempts)
    return dt


#: ``(weak reference to a fit, its diagnostics table)`` of the last attempt
#: :func:`fit_with_refits` diagnosed, so that the stage's gate does not compute the same table
#: again (:func:`diagnostics_of`; a weak reference: never another fit's table)
_DIAGNOSED: list[Any] = [None, None]


def diagnostics_of(dt, inf: Any):
    """The per-parameter diagnostics table of ``dt``
    (:func:`delusion_bayes.inference.diagnostics.diagnose`), computed once per fit."""
    from ..inference.diagnostics import diagnose

    ref, table = _DIAGNOSED
    if ref is not None and ref() is dt:
        return table
    table = diagnose(dt, inf)
    _DIAGNOSED[:] = [weakref.ref(dt), table]
    return table


def _attempt(dt, divergences: int, inf: Any) -> dict[str, Any]:
    """One sampling attempt's settings and diagnostics (``mixed``: R-hat and ESS pass)."""
    post = dt["posterior"]
    table = diagnostics_of(dt, inf)
    gated = table[~table["constant"]]
    ok = (gated["r_hat"] <= table.attrs["rhat_max"]) & (
        gated[["ess_bulk", "ess_tail"]].min(axis=1) >= table.attrs["ess_min"]
    )
    return {
        "target_accept": float(post.attrs.get("target_accept", np.nan)),
        "draws": int(post.sizes["draw"]),
        "tune": int(post.attrs.get("tune", 0) or 0),
        "divergences": int(divergences),
        "seconds": round(float(dt.attrs.get("fit_time", np.nan)), 2),
        "max_rhat": round(float(gated["r_hat"].max()), 4) if len(gated) else float("nan"),
        "min_ess": round(float(gated[["ess_bulk", "ess_tail"]].min().min()), 1)
        if len(gated)
        else float("nan"),
        "mixed": bool(ok.all()),
    }


def fit_attempts(dt, g: dict[str, Any]) -> dict[str, Any]:
    """``{attempts, refitted}`` for ``gate.json``: every sampling attempt of this fit
    (:func:`fit_with_refits`), the last one with the gate's verdict."""
    attempts = json.loads(dt.attrs.get("gate_attempts", "[]") or "[]")
    if attempts:
        attempts[-1].update(passed=bool(g["passed"]), max_rhat=g["max_rhat"], min_ess=g["min_ess"])
    return {"attempts": attempts, "refitted": len(attempts) > 1}


def gate_advice(dt, g: dict[str, Any]) -> list[str]:
    """What to try for a fit that failed its gate, with the study design's likely reason."""
    post = dt["posterior"]
    out = []
    n_raters = post.sizes.get("rater")
    n_models = post.sizes.get("model")
    if n_raters is not None and n_raters <= 2:
        out.append(
            f"{n_raters} raters: rater severity and discrimination are weakly identified; "
            "try model.cutpoints=shared (one discrimination for all raters)"
        )
    if n_models is not None and n_models < 8:
        out.append(
            f"{n_models} chatbots: the between-chatbot scales (sigma_*) rest mostly on "
            "their priors; a divergence there is a funnel, not a coding error"
        )
    if "t50" in post.data_vars and "n_days" in dt.attrs:
        beyond = (post["t50"] > float(dt.attrs["n_days"])).mean(("chain", "draw"))
        if bool((beyond > 0.5).all()):
            out.append("no chatbot turns within the study: t50 and k are set by their priors")
    if g.get("divergences", 0):
        out.append(
            "divergences: raise sampler.target_accept (e.g. 0.995) and sampler.tune (e.g. 2000)"
        )
    if any("R-hat" in r or "ESS" in r for r in g.get("reasons", [])):
        out.append("R-hat or ESS: more draws (sampler.draws=3000) and look at rank.png")
    return out


def _loo_units(dt, inf) -> dict[str, str]:
    """``{unit: log-likelihood variable}`` of a fit, the configured ``inference.loo_unit`` first;
    a unit whose variable is the configured one's (the onset model's ``y`` serves both) is
    dropped, so nothing is written twice."""
    from ..inference.diagnostics import LOO_UNITS, loo_var

    unit = group_config(InferenceConfig, inf).loo_unit
    out: dict[str, str] = {}
    for u in [unit, *(x for x in LOO_UNITS if x != unit)]:
        var = loo_var(dt, u)
        if var is not None and var not in out.values():
            out[u] = var
    return out


def t50_scale_note(dt) -> str | None:
    """The overview's note for a fit whose t50 population scale was fixed, not estimated
    (``ModelSpec.t50_scale_sampled``); None otherwise."""
    if "sigma_t50" in dt["posterior"] and not int(dt.attrs.get("t50_scale_sampled", 1)):
        return (
            "fewer than 2 chatbots turned: the t50 population scale sigma_t50 is fixed at its "
            "prior's root mean square, not estimated, and the t50 intervals rest on it "
            "(docs/models.md, SBC of the joint model)"
        )
    return None


def _write_model(dt, cfg, run_dir: Path, fit: str, prov: dict, contrasts: list) -> dict[str, Any]:
    """All files of one fitted model in ``models/<fit>/``: its gate, the derived tables, the
    contrasts, PSIS-LOO and figures, the sensitivity checks and the posterior; returns the
    headline, the configured unit's elpd, the files and the notes."""
    inf = group_config(InferenceConfig, cfg.inference)
    b = group_config(BaselinesConfig, cfg.baselines)
    out = Outputs(run_dir, "models/{fit}", fit=fit)
    out.path.mkdir(parents=True, exist_ok=True)
    notes: list[str] = list(filter(None, [t50_scale_note(dt)]))
    table, g = _gate_outputs(dt, out, inf)
    ms = _trajectory_outputs(dt, out, inf, b)
    if contrasts:
        _contrast_outputs(dt, out, inf, ms, contrasts, b.seed, notes)
    _latent_outputs(dt, out, inf, run_dir, notes)
    elpd = _loo_outputs(dt, out, inf, notes)
    fit_figures(dt, elpd, out, list(inf.plot_vars), notes, table)
    sens_seconds = sensitivity_outputs(dt, out, notes)
    reported_outputs(dt, out, notes, ms=ms, contrasts=contrasts, seed=b.seed)
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


def _gate_outputs(dt, out: Outputs, inf: InferenceConfig):
    """``diagnostics.csv``, ``gate.json`` (with every fit attempt and, on a failure, advice)
    and ``summary.csv``; returns the diagnostics table and the gate."""
    from ..inference.diagnostics import gate, summary_table

    prob, kind = float(inf.ci_probs[0]), inf.ci_kind
    table = diagnostics_of(dt, inf)
    g = gate(dt, table, inf)  # raises BadFitError with fail_on_bad_fit
    g.update(fit_attempts(dt, g))
    if not g["passed"]:
        g["advice"] = gate_advice(dt, g)
    desc = f"per-parameter R-hat, ESS bulk/tail, {kind.upper()} {prob:.0%} interval, pass"
    out.write("diagnostics.csv", table.reset_index(), desc)
    out.write("gate.json", g, "diagnostics gate verdict and reasons")
    desc = f"az.summary ({kind.upper()} {prob:.0%})"
    out.write("summary.csv", summary_table(dt, inf, table=table).reset_index(), desc)
    return table, g


def _trajectory_outputs(dt, out: Outputs, inf: InferenceConfig, b):
    """``t50_posterior.csv`` and ``milestones_posterior.csv``; returns the posterior
    milestones (None for a fit without a trajectory or a latent stage)."""
    from ..models import derived as d

    prob, kind = float(inf.ci_probs[0]), inf.ci_kind
    post = dt["posterior"]
    if "t50" in post.data_vars:
        desc = "L, k, t50 and P(t50 > last day)"
        out.write("t50_posterior.csv", d.t50_posterior(dt, prob, kind), desc)
    if "stage" not in post.data_vars and "t50" not in post.data_vars:
        return None
    ms = d.posterior_milestones(dt, stable_run=b.stable_run, missing=b.missing, censor=b.censor_day)
    desc = "posterior milestone latencies with P(censored)"
    out.write("milestones_posterior.csv", d.milestones_table(ms, prob, kind), desc)
    return ms


def _latent_outputs(dt, out: Outputs, inf: InferenceConfig, run_dir: Path, notes: list) -> None:
    """The latent stage's tables: the Bayesian consensus, the raters and the reliability (beside
    Table C1's ICC), and P(Level B | stage 4)."""
    from ..models import derived as d

    prob, kind, write = float(inf.ci_probs[0]), inf.ci_kind, out.write
    post = dt["posterior"]
    if "stage" in post.data_vars:
        desc = "Bayesian consensus per model-day: modal stage, P(stage >= 3), mean"
        write("consensus_posterior.csv", d.consensus_posterior(dt), desc)
    if "severity" in post.data_vars and "stage" in post.data_vars:
        desc = "rater severity and discrimination"
        write("raters_posterior.csv", d.rater_posterior(dt, prob, kind), desc)
        rel = d.reliability_posterior(dt, prob, kind)
        attach_icc(rel, run_dir, notes)
        write("reliability_posterior.csv", rel, "posterior reliability next to ICC(2,1)/ICC(2,k)")
    desc = "P(Level B | stage 4) and model effects"
    write("level_b_posterior.csv", d.p_level_b_table(dt, prob, kind), desc)


def _contrast_outputs(dt, out: Outputs, inf, ms, contrasts: list, seed: int, notes: list):
    """``contrasts_posterior.csv`` (these models) and ``contrasts_population.csv`` (a new
    chatbot of each group); a contrast the fit cannot form is a note."""
    import pandas as pd

    from ..models import derived as d
    from ..models.population import population_contrasts

    prob, kind = float(inf.ci_probs[0]), inf.ci_kind
    q = d.contrast_quantities(dt, ms)
    rows, pop = [], []
    for c in contrasts:
        try:
            rows.append(d.posterior_contrasts(q, [c], prob, kind))
            pop.append(population_contrasts(q, [c], prob, kind, seed=seed))
        except ValueError as err:
            notes.append(f"contrast {dict(c).get('name')!r} skipped: {err}")
    if rows:
        desc = f"posterior group contrasts of these {q.sizes['model']} models (mean A - mean B)"
        out.write("contrasts_posterior.csv", pd.concat(rows, ignore_index=True), desc)
        desc = "population group contrasts: a new chatbot of group A minus one of group B"
        out.write("contrasts_population.csv", pd.concat(pop, ignore_index=True), desc)


def _loo_outputs(dt, out: Outputs, inf: InferenceConfig, notes: list):
    """``loo.csv``: PSIS-LOO per left-out model-day and per left-out rating, when the fit has
    them; returns the configured unit's result (the headline and the k plot) or None."""
    import pandas as pd

    from ..inference.diagnostics import loo, loo_table
    from ..inference.psis import relative_eff

    elpd, rows = None, []
    units = _loo_units(dt, inf)
    r_eff = relative_eff(dt["posterior"]) if units else None  # one per fit, as ArviZ
    for u, var in units.items():
        try:
            res = loo(dt, var_name=var, r_eff=r_eff)
        except Exception as err:  # noqa: BLE001
            notes.append(f"LOO ({u}) failed: {type(err).__name__}: {err}")
            continue
        rows.append(loo_table(res, str(dt.attrs.get("model")), unit=u))
        if u == inf.loo_unit:
            elpd = res
    if rows:
        desc = "PSIS-LOO with Pareto k, per left-out model-day and per left-out rating"
        out.write("loo.csv", pd.concat(rows, ignore_index=True), desc)
    return elpd


def attach_icc(rel, run_dir: Path, notes: list) -> None:
    """Put the frequentist ICC of recognition (Table C1) next to the posterior reliability."""
    rel["frequentist"] = np.nan
    c1 = results.read(run_dir, "baselines/tableC1_reliability.csv")
    if c1 is None:
        notes.append("baselines/tableC1_reliability.csv not found: no ICC beside the posterior")
        return
    row = c1[c1["variable"] == "recognition"]
    if row.empty:
        return
    column = {"ICC2": "icc2_1", "ICC2k": "icc2_k"}
    rel["frequentist"] = [float(row[column[a]].iloc[0]) for a in rel["analogue"]]


def study_contrasts(ds: xr.Dataset, contrasts: Any) -> tuple[list[dict], list[dict]]:
    """The configured contrasts this study's metadata and variables support (as plain dicts),
    and ``{analysis, reason}`` for each one (or quantity) it cannot
    (:func:`delusion_bayes.baselines.applicable_contrasts`)."""
    from dataclasses import asdict

    from ..baselines import applicable_contrasts
    from ..baselines.config import QUANTITIES, QUANTITY_NEEDS

    available = [q for q in QUANTITIES if QUANTITY_NEEDS.get(q, "recognition") in ds]
    usable, cannot = applicable_contrasts(ds, [plain(c) for c in contrasts or []], available)
    skipped = [{"analysis": f"posterior {c.analysis}", "reason": c.reason} for c in cannot]
    return [asdict(c) for c in usable], skipped


def prepare(ds: xr.Dataset, cfg: Any, run_dir: Path, *, first: bool):
    """Before any stage runs: start compiling this stage's fits in a background process
    (:mod:`.prefetch`); ``first``: no stage runs before this one. Returns the process's handle
    (the pipeline closes it when this stage ends) or None."""
    from .prefetch import start

    return start(ds, cfg, run_dir, skip_first=first)


def _latent_kernel_while_waiting(names: list[str]):
    """If a fit of ``names`` draws the latent stage after sampling, compile the latent pass's
    kernel while the stage would wait for the compile prefetch's compile of a log-density (the
    kernel shares no numba code with them; ``sampling.while_waiting``). Measured on the main job
    from cold: the stage waited ~15 s for the joint model's log-density with a core idle, and
    the child then spent ~10 s on this kernel before it went on to the next fits."""
    import contextlib

    from ..inference.sampling import while_waiting
    from ..models.latent import compile_kernels
    from ..models.registry import model_def

    if not any(model_def(n).marginal for n in names):
        return contextlib.nullcontext()
    return while_waiting(compile_kernels)


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Fit, gate and write the configured Bayesian models of a validated trajectory study into
    ``run_dir/models/``; ``cfg.baselines`` gives the contrasts and milestone rules. Returns per
    fitted model: passed, divergences, max R-hat, min ESS, seconds; and ``all_passed``."""
    t0 = time.perf_counter()
    out = Outputs(run_dir, "models")
    out.path.mkdir(parents=True, exist_ok=True)
    m = group_config(ModelConfig, cfg.model)
    names, contrasts, skipped = _what_to_fit(ds, m, cfg)
    prov = _provenance(cfg, ds, Path(run_dir))
    headline: dict[str, Any] = {}
    notes: list[str] = []
    fits, written = {}, {}
    with _latent_kernel_while_waiting(names):
        for name in fit_order(names):  # the order that overlaps the prefetch's compiles best
            fits[name] = fit_one(ds, name, cfg, primary=name == m.name)
            t_write = time.perf_counter()
            written[name] = _write_model(fits[name], cfg, run_dir, name, prov, contrasts)
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
    per ``inference.loo_unit``; ``comparison_by_<unit>.csv`` for the other unit)."""
    from ..inference.diagnostics import compare_fits

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
    per_fit = [_loo_units(f, inf) for f in cmp.values()]
    for u in dict.fromkeys(u for units in per_fit for u in units):
        var = {units.get(u) for units in per_fit}
        if None in var or len(var) > 1:
            notes.append(f"no comparison per {u}: log-likelihood {sorted(map(str, var))}")
            continue
        fname = "comparison.csv" if u == inf.loo_unit else f"comparison_by_{u}.csv"
        table = compare_fits(cmp, var_name=var.pop())
        table.insert(0, "unit", u)
        desc = f"az.compare (PSIS-LOO per {u}, stacking) of the primary's variants"
        out.write(fname, table.reset_index(), desc)
        if u == inf.loo_unit:
            headline["best_variant"] = str(table.index[0])
            headline["loo_unit"] = u


def _loo_per_model(written: dict, out: Outputs) -> None:
    """Without a comparison: ``comparison.csv`` lists each fit's PSIS-LOO (the onset model's
    likelihood is of another thing, the consensus, so it is left out)."""
    import pandas as pd

    from ..inference.diagnostics import loo_table
    from ..models.registry import model_def

    rows = [
        loo_table(r["elpd"], n, unit=r["loo_unit"]).rename(columns={"elpd_loo": "elpd"})
        for n, r in written.items()
        if r["elpd"] is not None and model_def(n).compared
    ]
    if rows:
        table = pd.concat(rows, ignore_index=True)
        table["note"] = "inference.compare is false: PSIS-LOO per model, no az.compare"
        out.write("comparison.csv", table, "PSIS-LOO per fitted model (comparison disabled)")
