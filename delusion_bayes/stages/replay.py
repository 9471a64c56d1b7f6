"""Pipeline stage ``replay``: the DelusionEval analysis of a replay study, written as tables.

Writes into ``run_dir/replay/`` (team contract, "Replay outputs"): prevalence per model x
category and code with cluster-bootstrap CIs (``prevalence.csv``), deltas vs the original
transcript, the CIs under every resampling scheme, leave-one-participant-out, model family,
context depth (and its linear probability model), onset and turn profiles; with ``replay.bayes``
the hierarchical Bayesian prevalence beside the bootstrap, its diagnostics and its power-scaling
sensitivity; the figures; and ``index.json``. Every resampling is seeded from ``replay.seed``
(DelusionEval: 42): the same seed gives identical tables.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..baselines import replay_plots as plots
from ..baselines.replay_study import analyse_replay, apply_cutoffs
from ..config import ReplayConfig, group_config
from ..inference.config import SamplerConfig
from . import Outputs
from .fit_outputs import reported_outputs, sensitivity_outputs

#: the replay model samples with the shared ``sampler`` group and is gated by ``inference``
NEEDS = ("replay", "sampler", "inference", "cache_dir")
KIND = ("replay",)

log = logging.getLogger(__name__)

__all__ = ["KIND", "NEEDS", "apply_cutoffs", "bayes_table", "fit_replay", "run"]


def pooled_sign_errors(deltas: pd.DataFrame | None) -> pd.DataFrame | None:
    """``deltas`` with ``p_sign_error``: per family, the deltas partially pooled as exchangeable
    effects with a learned spread (:func:`delusion_bayes.models.family_pooling.pool_family`
    on the estimates and their bootstrap SEs; Gelman, Hill & Yajima 2012), the posterior
    probability that the sign one would declare is wrong. Deltas without a bootstrap SE (a cell
    no resample varies) are left NaN."""
    from ..models.family_pooling import pool_family

    if deltas is None or "se_boot" not in deltas:
        return deltas
    out = deltas.assign(p_sign_error=np.nan)
    for _, idx in out.groupby("family", sort=False).groups.items():
        part = out.loc[idx]
        ok = part["se_boot"].gt(0) & part["estimate"].notna()
        if ok.sum() >= 2:
            pooled = pool_family(part.loc[ok, "estimate"], part.loc[ok, "se_boot"])
            out.loc[part.index[ok], "p_sign_error"] = pooled["p_sign_error"].to_numpy()
    return out


def bayes_table(post: pd.DataFrame, boot: pd.DataFrame) -> pd.DataFrame:
    """The posterior prevalence rows beside the bootstrap estimate and CI of the same cell
    (``boot_*`` columns), then the posterior deltas."""
    boot = boot.assign(label=np.where(boot["level"] == "category", boot["category"], boot["code"]))
    keep = ["model", "level", "label", "estimate", "ci_low", "ci_high"] + (
        ["truth"] if "truth" in boot else []
    )
    renamed = boot[keep].rename(
        columns={"estimate": "boot_estimate", "ci_low": "boot_ci_low", "ci_high": "boot_ci_high"}
    )
    prev = post[post["quantity"] == "prevalence"].merge(
        renamed, on=["model", "level", "label"], how="left"
    )
    return pd.concat([prev, post[post["quantity"] == "delta"]], ignore_index=True)


def fit_replay(
    ds: xr.Dataset, cfg: Any, priors: dict | None = None, seed: int | None = None
) -> xr.DataTree:
    """The stage's Bayesian prevalence fit of the (cutoff-applied, validated) study ``ds`` with
    the run's ``replay`` and ``sampler`` settings; ``priors`` overrides entries of
    :data:`~delusion_bayes.models.replay.REPLAY_PRIORS` and ``seed`` the sampler's seed (the
    prior refits, ``experiments/bench/refit_priors.py --fit replay``)."""
    from ..models.replay import fit_replay_model

    r = group_config(ReplayConfig, cfg.replay)
    sampler = group_config(SamplerConfig, cfg.sampler)
    return fit_replay_model(
        ds,
        level=r.bayes_level,
        sampler=sampler,
        seed=None if seed is None else int(seed),
        depth_bins=r.depth_bins_bayes,
        prior_bins=r.prior_bins_bayes,
        baseline=r.baseline,
        priors=priors,
        cache_dir=cfg.get("cache_dir"),
    )


def _bayes(ds: xr.Dataset, cfg: Any, boot: pd.DataFrame) -> tuple[pd.DataFrame, dict, Any]:
    """Fit the replay prevalence model with the shared sampler settings; its table beside the
    bootstrap, the gate (shared thresholds, on the prevalences) and the tree."""
    from ..inference.diagnostics import diagnose, gate
    from ..models.replay import replay_posterior_contrasts

    r = group_config(ReplayConfig, cfg.replay)
    baseline = r.baseline
    tree = fit_replay(ds, cfg)
    ci_prob = r.ci_prob
    post = replay_posterior_contrasts(tree, baseline=baseline, ci_prob=ci_prob)
    # the gate is on what is reported (the prevalences); the max R-hat over all parameters is
    # recorded too (noise alone lifts it above: docs/dev/design-notes.md#modelsreplay_posteriorpy)
    inf = cfg.get("inference") if hasattr(cfg, "get") else None
    prev_vars = [v for v in ("category_prevalence", "prevalence") if v in tree["posterior"]]
    verdict = gate(tree, diagnose(tree, inf, var_names=prev_vars), inf)
    diag = {
        k: tree.attrs[k]
        for k in (
            "sampler",
            "level",
            "n_cells",
            "n_rows",
            "max_rhat",
            "min_ess_bulk",
            "min_ess_tail",
            "max_rhat_prevalence",
            "min_ess_bulk_prevalence",
            "min_ess_tail_prevalence",
            "divergences",
            "seed",
        )
    }
    diag["clustering_levels"] = str(tree.attrs.get("clustering_levels", ""))
    diag["passed"] = bool(verdict["passed"])
    diag["reasons"] = verdict["reasons"]
    diag["thresholds"] = verdict["thresholds"]
    return bayes_table(post, boot), diag, tree


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Analyse a validated replay study (``hit (sample, model, code)``) with ``cfg.replay``
    (:class:`~delusion_bayes.config.ReplayConfig`; the Bayesian model uses ``cfg.sampler`` and
    ``cfg.inference``), write ``run_dir/replay/`` and return the headline (also in index.json)."""
    r = cfg.replay if "replay" in cfg else cfg
    res = analyse_replay(ds, r)
    out = Outputs(run_dir, "replay")
    notes = list(res.notes)
    for n in notes:
        if n.startswith("CLUSTERS ARE WINDOWS"):
            log.warning("replay: %s", n)
    _write_tables(res, out)
    figures = _bootstrap_figures(res)
    headline = dict(res.headline)
    if bool(res.settings["bayes"]):
        figures.append(_bayes_outputs(res, cfg, out, notes, headline))
    else:
        notes.append("Bayesian prevalence model not run (replay.bayes = false)")
    _draw_figures(figures, out, list(res.settings["figure_formats"]), notes)
    return out.index(headline, notes=notes)


def _write_tables(res: Any, out: Outputs) -> None:
    """The bootstrap tables of :func:`~delusion_bayes.baselines.replay_study.analyse_replay`."""
    write, st = out.write, res.settings
    ci, cluster, seed = f"{round(100 * st['ci_prob'])}%", st["cluster"], st["seed"]
    windows = " (clusters = windows)" if res.headline["clustering"] == "window" else ""

    write(
        "prevalence.csv",
        res.prevalence,
        f"prevalence per model x category (pooled over the category's codes) and per model x "
        f"code; {ci} percentile CIs, {cluster} bootstrap ({st['support']}), {st['n_boot']} "
        f"resamples, seed {seed}{windows}",
    )
    write(
        "cluster_bootstrap.csv",
        res.cluster_bootstrap,
        "category CIs under each resampling scheme: samples i.i.d. (the public release), "
        "conversations, participants, two-stage (participants then conversations); "
        "width_vs_iid = CI width / i.i.d. width",
    )
    if res.rankings is not None:
        write(
            "rankings.csv",
            res.rankings,
            f"each chatbot's rank per category prevalence over the {cluster} bootstrap's "
            "resamples (rank 1 = least of a harm, most of 'discourages harm')",
        )
    write(
        "deltas.csv",
        pooled_sign_errors(res.deltas),
        f"prevalence minus the {st['baseline']} transcript's, paired {cluster} resamples, {ci} CIs;"
        f" Holm, BH, max-T and the pooled P(sign error) per family ({st['family']})",
    )
    write("lopo.csv", res.lopo, "category prevalence (and delta) leaving out each participant")
    write("family.csv", res.family, f"category prevalence pooled per model family, {ci} CIs")
    write(
        "context_depth.csv",
        res.context_depth,
        "category prevalence per context-depth bin "
        f"(left edges {list(st['depth_bins'])}), {ci} CIs",
    )
    write(
        "context_depth_lpm.csv",
        res.context_depth_lpm,
        "linear probability model hit ~ depth/10 + prior assistant content, per model x "
        f"category; {ci} CIs from the {cluster} bootstrap of the moment sums",
    )
    unit = "1-based user-turn rank" if st["onset_unit"] == "turn" else "message index in the window"
    write(
        "onset.csv",
        res.onset,
        f"per window, per category and per code: share with a hit, "
        f"onset (unit: {unit}), persistence P(hit at t+1 | hit at t), emergence "
        "P(hit at t+1 | no hit at t)",
    )
    write(
        "turn_profile.csv",
        res.turn_profile,
        "category prevalence by user-turn position in the window",
    )


def _bootstrap_figures(res: Any) -> list[tuple]:
    """``(plot function, table, file stem, description)`` of the bootstrap figures."""
    figures = [
        (
            plots.plot_prevalence,
            res.prevalence,
            "prevalence",
            "prevalence per model x category with bootstrap CIs",
        ),
        (
            plots.plot_heatmap,
            res.prevalence,
            "prevalence_heatmap",
            "prevalence heatmap, model x category",
        ),
        (
            _rank_figure,
            res.rankings,
            "ranks",
            "each chatbot's rank per category prevalence with its interval (cluster bootstrap)",
        ),
        (
            plots.plot_deltas,
            res.deltas,
            "deltas_forest",
            "forest plot of category deltas vs the original transcript",
        ),
        (
            plots.plot_depth,
            res.context_depth,
            "context_depth",
            "prevalence vs context depth per category, bootstrap bands",
        ),
    ]
    return figures


def _bayes_outputs(res: Any, cfg: Any, out: Outputs, notes: list, headline: dict) -> tuple:
    """Fit the Bayesian prevalence model, write its table, diagnostics and sensitivity, add its
    verdict to ``headline``; return its figure (posterior beside the bootstrap)."""
    from ..models.replay import reported_replay_vars

    write = out.write
    table, diag, tree = _bayes(res.study, cfg, res.prevalence)
    write("bayes_prevalence.csv", table, _bayes_description(res.settings, diag))
    params, prevalences = reported_replay_vars(tree)  # what the sensitivity check scales
    sensitivity_outputs(tree, out, notes, var_names=params + prevalences)
    reported_outputs(tree, out, notes, replay=True)
    write("bayes_diagnostics.json", diag, "sampler diagnostics of the Bayesian prevalence model")
    ranks = posterior_rankings(tree, str(res.settings["baseline"]), float(res.settings["ci_prob"]))
    if ranks is not None and diag["passed"]:  # never ranks from a fit that failed its gate
        write(
            "rankings_posterior.csv",
            ranks,
            "each chatbot's rank per category prevalence over the posterior draws",
        )
    if not diag["passed"]:
        notes.append(
            "Bayesian prevalence model: diagnostics did not pass on the "
            f"prevalences ({'; '.join(diag['reasons'])}); treat it as provisional"
        )
    cat = table[(table["level"] == "category") & (table["quantity"] == "prevalence")]
    both = cat.rename(
        columns={
            "mean": "post_mean",
            "ci_low": "post_ci_low",
            "ci_high": "post_ci_high",
            "boot_estimate": "estimate",
            "boot_ci_low": "ci_low",
            "boot_ci_high": "ci_high",
        }
    )
    headline["bayes_max_rhat"] = float(diag["max_rhat"])
    headline["bayes_passed"] = bool(diag["passed"])
    desc = "category prevalence: posterior vs bootstrap"
    return plots.plot_bayes, both, "bayes_vs_bootstrap", desc


def posterior_rankings(tree: Any, baseline: str, prob: float) -> pd.DataFrame | None:
    """Each chatbot's rank per category prevalence over the Bayesian model's draws
    (``category_prevalence``), the baseline transcript left out, directions as the bootstrap's
    (:func:`delusion_bayes.baselines.replay.replay_rankings`); None below 3 chatbots."""
    from ..baselines.rankings import quantity_rankings
    from ..baselines.replay import PROTECTIVE_CATEGORIES

    post = tree["posterior"].to_dataset()
    if "category_prevalence" not in post:
        return None
    da = post["category_prevalence"]
    models = [str(m) for m in da["model"].values if str(m) != baseline]
    if len(models) < 3:
        return None
    draws = {}
    for cat in da["category"].values:
        x = da.sel(model=models, category=cat).stack(s=("chain", "draw")).transpose("s", "model")
        higher = "better" if str(cat) in PROTECTIVE_CATEGORIES else "worse"
        draws[str(cat)] = (x.values, models, higher)
    out = quantity_rankings(draws, prob)
    return None if out is None else out.rename(columns={"item": "model"})


def _rank_figure(table: pd.DataFrame, stem: Path, formats: list[str]) -> list[Path]:
    """The rank figure of a rankings table (one panel per quantity, chatbots sorted)."""
    from ..baselines.trajectory import save_rank_figure

    return save_rank_figure(table, stem)


def _draw_figures(figures: list[tuple], out: Outputs, formats: list[str], notes: list) -> None:
    """Draw each figure with a table to plot; a figure that fails is a note, as in the models
    stage, never a failed stage (its tables are written already)."""
    for plot, table, stem, desc in figures:
        if table is None or not len(table):
            continue
        try:
            paths = plot(table, out.path / stem, formats)
        except Exception as err:  # noqa: BLE001 - a figure must not cost the stage its tables
            log.warning("replay figure %s not drawn: %s: %s", stem, type(err).__name__, err)
            notes.append(f"figure {stem} not drawn: {type(err).__name__}: {err}")
            continue
        for path in paths:
            out.files[path.name] = desc


def _bayes_description(st: dict, diag: dict) -> str:
    one_level = diag.get("clustering_levels") == "cluster"
    intercepts = (
        "one cluster intercept (participant and conversation are the same units)"
        if one_level
        else "participant and conversation intercepts"
    )
    return (
        f"hierarchical Bayesian prevalence ({st['bayes_level']} effects; {intercepts}, depth and "
        "prior-content terms): posterior mean and equal-tailed interval per model x "
        "category/code, deltas vs the original, beside the bootstrap estimate and CI"
    )
