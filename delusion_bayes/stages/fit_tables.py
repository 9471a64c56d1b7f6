"""The tables of one fit of the models stage, each written through the results contract into
``models/<fit>/``: the gate (with every refit attempt and, on a failure, advice), the trajectory
and milestone tables, the latent stage's tables, the contrasts and PSIS-LOO; and the provenance
attrs every posterior carries. The analyses are library functions (``models.derived``,
``models.population``, ``inference.refits``, ``inference.comparison``); this module only calls
and writes them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .. import results
from ..baselines.trajectory import MIN_RANKED, milestone_rankings, save_rank_figure
from ..inference.config import InferenceConfig
from ..inference.refits import diagnostics_of, fit_attempts, gate_advice
from ..models.geometry import MIN_T50_SCALE_TURNERS
from . import Outputs
from .fit_plan import plain

log = logging.getLogger(__name__)


def provenance_attrs(cfg: Any, ds: xr.Dataset, run_dir: Path) -> dict[str, Any]:
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


def t50_scale_note(dt) -> str | None:
    """The overview's note for a fit whose t50 population scale was fixed, not estimated
    (``ModelSpec.t50_scale_sampled``); None otherwise."""
    if "sigma_t50" in dt["posterior"] and not int(dt.attrs.get("t50_scale_sampled", 1)):
        return (
            f"fewer than {MIN_T50_SCALE_TURNERS} units (chatbots, or conversations in a "
            "replicated study) turned: the t50 population scale sigma_t50 is fixed at its "
            "prior's root mean square, not estimated, and the t50 intervals rest on it "
            "(docs/dev/models.md, SBC of the joint model)"
        )
    return None


def gate_outputs(dt, out: Outputs, inf: InferenceConfig):
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


def trajectory_outputs(dt, out: Outputs, inf: InferenceConfig, b):
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
    ranks = None  # issue 51: ranks with their uncertainty, for >= 3 models
    if ms.sizes["model"] >= MIN_RANKED:
        ranks = milestone_rankings(ms, prob, "the posterior draws")
    if ranks is not None:
        out.write("rankings_posterior.csv", ranks.table, ranks.title)
        for p in save_rank_figure(ranks.summary, out.path / "ranks"):
            out.files[p.name] = "ranks on the milestones with their intervals (posterior)"
    return ms


def latent_outputs(dt, out: Outputs, inf: InferenceConfig, run_dir: Path, notes: list) -> None:
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


def unless_failed(rows, pop_fit, notes: list):
    """A contrast's population rows, or the same rows with NaN estimates and a note when its
    grouped fit failed its diagnostics gate (never a number from a failed fit)."""
    if pop_fit is None or pop_fit.attrs.get("gate_passed", True):
        return rows
    why = f"the grouped fit failed its diagnostics gate ({pop_fit.attrs.get('gate_reasons', '')})"
    notes.append(f"population contrast {pop_fit.attrs.get('contrast')!r} not reported: {why}")
    rows = rows.copy()
    for col in ("median", "ci_low", "ci_high", "p_gt_0", "mean", "sd"):
        if col in rows:
            rows[col] = float("nan")
    rows["note"] = why
    return rows


def contrast_outputs(dt, out: Outputs, inf, ms, contrasts: list, b, notes: list, pop_fits: dict):
    """``contrasts_posterior.csv`` (these models) and, from the population-contrast fits
    ``pop_fits`` (per contrast name; none: no file), ``contrasts_population.csv`` (the
    difference of the groups' population means); ``b``: the baselines' config (seed, milestone
    rules); a contrast the fit cannot form is a note."""
    import pandas as pd

    from ..models import derived as d
    from ..models.population import population_contrasts

    prob, kind = float(inf.ci_probs[0]), inf.ci_kind
    q = d.contrast_quantities(dt, ms)
    rows, pop = [], []
    for c in contrasts:
        try:
            rows.append(d.posterior_contrasts(q, [c], prob, kind))
            if pop_fits:
                rule = dict(stable_run=b.stable_run, censor_day=b.censor_day)
                rows_c = population_contrasts(pop_fits, [c], prob, kind, seed=b.seed, **rule)
                pop.append(unless_failed(rows_c, pop_fits.get(str(dict(c).get("name"))), notes))
        except ValueError as err:
            notes.append(f"contrast {dict(c).get('name')!r} skipped: {err}")
    if rows:
        desc = f"posterior group contrasts of these {q.sizes['model']} models (mean A - mean B)"
        out.write("contrasts_posterior.csv", pd.concat(rows, ignore_index=True), desc)
    if pop:
        desc = (
            "population group contrasts: difference of population means (mu_A - mu_B), with "
            "the family's pooled P(sign error)"
        )
        out.write("contrasts_population.csv", pooled_signs(pd.concat(pop, ignore_index=True)), desc)


def pooled_signs(pop):
    """``pop`` with ``p_sign_error``: the run's population contrasts as one family, each as its
    z-score ``mean / sd`` (one scale for days and counts), partially pooled with a learned
    spread (:func:`delusion_bayes.models.family_pooling.pool_family`; Gelman, Hill & Yajima
    2012): the posterior probability that the sign one would declare is wrong. NaN rows (not
    formed, or from a failed fit) stay NaN; fewer than 2 formed: NaN."""
    import numpy as np

    from ..models.family_pooling import pool_family

    pop = pop.assign(p_sign_error=np.nan)
    ok = pop["mean"].notna() & pop["sd"].gt(0)
    if ok.sum() >= 2:
        z = (pop.loc[ok, "mean"] / pop.loc[ok, "sd"]).to_numpy()
        pooled = pool_family(z, np.ones_like(z))
        pop.loc[ok, "p_sign_error"] = pooled["p_sign_error"].to_numpy()
    return pop


def loo_outputs(dt, out: Outputs, inf: InferenceConfig, notes: list):
    """``loo.csv``: PSIS-LOO per left-out model-day and per left-out rating, when the fit has
    them (:func:`delusion_bayes.inference.comparison.loo_results`); returns the configured
    unit's result (the headline and the k plot) or None."""
    from ..inference.comparison import loo_results, loo_units

    units = loo_units(dt, inf.loo_unit)
    elpd, table, failed = loo_results(dt, units, inf.loo_unit)
    notes += failed
    desc = "PSIS-LOO with Pareto k, per left-out model-day and per left-out rating"
    out.write("loo.csv", table, desc)
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
