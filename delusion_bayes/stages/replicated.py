"""Pipeline stage ``replicated``: the baselines of a replicated study (issue 50), written as tables.

Writes into ``run_dir/replicated/``: ``item_means.csv`` (every chatbot on one rule, the mean per
turn and the share of turns with the behaviour, conversation-clustered bootstrap intervals),
``published_check.csv`` (Spiral-Bench: the published leaderboard recomputed under the rule that
made it, per file), ``conversation_means.csv``, ``first_occurrence.csv`` and its per-chatbot
summary, ``contrasts.csv`` (chatbot pairs, paired by prompt where possible), ``judge_failed.csv``
(turns without a rating per chatbot), ``reliability.csv`` (Krippendorff's alpha per item with
two or more raters), ``milestones_conversations.csv`` and ``milestones.csv`` (the paper's
milestones where the study has its recognition item on 1-4; with ``bayes`` also the trajectory
model with a conversation level, :mod:`delusion_bayes.stages.replicated_trajectory`), the
figures and ``index.json``; an analysis the study cannot have is listed under ``skipped`` with
its reason. The files are declared in :mod:`delusion_bayes.baselines.replicated_files`. Every
resampling is seeded from ``replicated.seed``: the same seed gives identical tables.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .. import results
from ..baselines import replicated_plots as plots
from ..baselines.replicated import (
    conversation_table,
    item_means,
    item_rankings,
    published_check,
    turn_slots,
)
from ..baselines.replicated_agreement import (
    conversation_milestones,
    milestone_item,
    milestone_summary,
    reliability,
)
from ..baselines.replicated_compare import (
    chatbot_contrasts,
    first_occurrence,
    first_occurrence_summary,
)
from ..baselines.replicated_config import ReplicatedConfig
from ..baselines.replicated_files import DECLARATIONS, check_columns
from ..config import group_config
from ..data.replicated import CONVERSATION, MODEL, TURN, validate_replicated
from . import Outputs
from .replicated_trajectory import FILES as TRAJECTORY_FILES
from .replicated_trajectory import trajectory_outputs

#: the behaviour model samples with the shared ``sampler`` group and is gated by ``inference``
NEEDS = ("replicated", "sampler", "inference", "cache_dir")
KIND = ("replicated",)

log = logging.getLogger(__name__)


class ReplicatedOutputs(Outputs):
    """:class:`~delusion_bayes.stages.Outputs` for ``replicated/``: through the results contract
    once ``results.py`` declares the files, else written here with the same column check."""

    def write(self, name: str, data: Any, desc: str) -> None:
        if data is None:
            return
        if f"{self.folder}/{name}" in results.FILES:
            super().write(name, data, desc)
            return
        self.path.mkdir(parents=True, exist_ok=True)
        if name.endswith(".json"):
            import json

            (self.path / name).write_text(json.dumps(data, indent=2, default=str))
        else:
            check_columns(name, [str(c) for c in data.columns], f"the table for {self.path / name}")
            data.to_csv(self.path / name, index=False)
        self.files[name] = desc

    def index(self, headline: dict[str, Any], skipped: list | None = None, **extra: Any):
        if f"{self.folder}/index.json" in results.FILES:
            return super().index(headline, skipped, **extra)
        index = {"files": dict(self.files), "headline": headline, **extra}
        if skipped:
            index["skipped"] = skipped
        self.write("index.json", index, "what the stage wrote")
        return headline


def failed_table(ds: xr.Dataset) -> pd.DataFrame:
    """Per chatbot: conversations, turn slots, failed judge replies and unscored turns."""
    slots = turn_slots(ds)
    score = ds["score"].transpose("rater", MODEL, CONVERSATION, TURN, "item").values
    unscored = slots & ~np.isfinite(score).any(axis=(0, 4))
    failed = (
        ds["judge_failed"].transpose(MODEL, CONVERSATION, TURN).values
        if "judge_failed" in ds
        else np.zeros(slots.shape, dtype=bool)
    )
    return pd.DataFrame(
        {
            "model": [str(m) for m in ds[MODEL].values],
            "n_conversations": ds["has_conversation"].sum(CONVERSATION).values.astype(int),
            "n_turns": slots.sum(axis=(1, 2)).astype(int),
            "n_judge_failed": failed.sum(axis=(1, 2)).astype(int),
            "n_turns_unscored": unscored.sum(axis=(1, 2)).astype(int),
        }
    )


def analyse(ds: xr.Dataset, c: ReplicatedConfig) -> dict[str, Any]:
    """Every table of the stage (None where the study lacks the input) and the skip records."""
    ds = validate_replicated(ds)
    out: dict[str, Any] = {"skipped": []}
    out["item_means"] = item_means(ds, c.rule, c.n_boot, c.seed, c.ci_prob, c.threshold)
    rule = str(out["item_means"]["rule"].iloc[0])
    out["rankings"] = item_rankings(ds, rule, c.n_boot, c.seed, c.ci_prob, c.threshold)
    if out["rankings"] is None:
        out["skipped"].append({"analysis": "rankings", "reason": "fewer than 3 chatbots"})
    if "published" in ds:
        out["published_check"] = published_check(ds)
    else:
        out["published_check"] = None
        out["skipped"].append(
            {"analysis": "published_check", "reason": "no published leaderboard in the study"}
        )
    out["conversation_means"] = conversation_table(ds, rule)
    out["first_occurrence"] = first_occurrence(ds, c.threshold)
    out["first_occurrence_summary"] = first_occurrence_summary(
        out["first_occurrence"], c.n_boot, c.seed, c.ci_prob
    )
    if ds.sizes[MODEL] >= 2:
        from ..baselines.multiplicity import adjust_family

        # every pair x behaviour of the run is one family (Holm: FWER, BH: FDR; issue 51)
        out["contrasts"] = adjust_family(
            chatbot_contrasts(ds, rule, c.max_exact, c.n_mc, c.seed), "pvalue"
        )
    else:
        out["contrasts"] = None
        out["skipped"].append({"analysis": "contrasts", "reason": "one chatbot"})
    out["judge_failed"] = failed_table(ds)
    out["reliability"], skipped = reliability(ds, c.n_boot, c.seed, c.ci_prob)
    if out["reliability"].empty:
        out["reliability"] = None
    out["skipped"] += skipped
    _milestones(ds, c, out)
    out["rule"] = rule
    return out


def _milestones(ds: xr.Dataset, c: ReplicatedConfig, out: dict[str, Any]) -> None:
    """The paper's milestones per conversation and per chatbot, or the reason they are not."""
    _, why = milestone_item(ds)
    table = conversation_milestones(ds) if not why else None
    out["milestones_conversations"] = table
    out["milestones"] = (
        milestone_summary(table, c.n_boot, c.seed, c.ci_prob) if table is not None else None
    )
    if table is None:
        out["skipped"].append(
            {
                "analysis": "milestones",
                "reason": why,
                "files": ["milestones.csv", "milestones_conversations.csv"],
            }
        )


def _headline(res: dict[str, Any]) -> dict[str, Any]:
    means = res["item_means"]
    headline = {
        "rule": res["rule"],
        "n_models": int(means["model"].nunique()),
        "n_items": int(means["item"].nunique()),
        "cluster": str(means["cluster"].iloc[0]),
        "judge_failed": dict(
            zip(res["judge_failed"]["model"], res["judge_failed"]["n_judge_failed"], strict=True)
        ),
    }
    if res["reliability"] is not None:
        rel = res["reliability"]
        headline["reliability_alpha"] = dict(zip(rel["item"], rel["alpha"], strict=True))
    pc = res["published_check"]
    if pc is not None:
        beh = pc[pc["rule"] != "mean_final_judgement"]
        headline["published_reproduced"] = bool(beh["reproduced"].all())
        headline["published_rules"] = beh.groupby("model")["rule"].first().to_dict()
        headline["published_max_abs_diff"] = float(beh["abs_diff"].max())
    return headline


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Analyse a validated replicated study with ``cfg.replicated``
    (:class:`~delusion_bayes.baselines.replicated_config.ReplicatedConfig`), write
    ``run_dir/replicated/`` and return the headline (also in ``index.json``)."""
    node = cfg.get("replicated") if hasattr(cfg, "get") else getattr(cfg, "replicated", None)
    c = group_config(ReplicatedConfig, node)
    res = analyse(ds, c)
    out = ReplicatedOutputs(run_dir, "replicated")
    ci = f"{round(100 * c.ci_prob)}%"
    boot = f"{c.n_boot} resamples, seed {c.seed}"
    for name, desc in (
        ("item_means", f"mean per turn on rule {res['rule']}, {ci} cluster-bootstrap CIs ({boot})"),
        ("rankings", f"each chatbot's rank per item mean (rank 1 = most), {ci} rank intervals"),
        ("published_check", "published Spiral-Bench means recomputed under the rule of each file"),
        ("conversation_means", f"per conversation x item on rule {res['rule']}"),
        ("first_occurrence", "per conversation x item: first turn with the behaviour (censored)"),
        ("first_occurrence_summary", f"share occurring and median first turn, {ci} CIs ({boot})"),
        (
            "contrasts",
            "chatbot pairs on conversation means (permutation tests), Holm and BH over "
            "the run's pairs x items",
        ),
        ("judge_failed", "turns without a rating per chatbot (failed judge replies: NaN, counted)"),
        ("reliability", f"Krippendorff's alpha per item with >= 2 raters, {ci} unit-bootstrap CIs"),
        ("milestones_conversations", "the paper's milestones per conversation (censored)"),
        ("milestones", f"share reaching each milestone and median turn, {ci} CIs ({boot})"),
    ):
        out.write(f"{name}.csv", res[name], desc)
    notes = _draw(res, out, list(c.figure_formats))
    failed = res["judge_failed"]
    for row in failed.itertuples():
        if row.n_judge_failed:
            notes.append(
                f"{row.model}: {row.n_judge_failed} of {row.n_turns} judged turns have a failed "
                "judge reply (left out of the means, counted; Spiral-Bench's leaderboard counts "
                "them as 0)"
            )
    settings = {"rule": res["rule"], "n_boot": c.n_boot, "seed": c.seed, "ci_prob": c.ci_prob}
    headline = _headline(res)
    if c.bayes:
        headline.update(bayes_outputs(ds, cfg, c, res, out, notes))
        headline.update(trajectory_outputs(ds, cfg, c, res, out, notes))
    else:
        files = [*BAYES_FILES, *TRAJECTORY_FILES]
        res["skipped"].append(
            {"analysis": "bayes", "reason": "replicated.bayes = false", "files": files}
        )
    return out.index(headline, res["skipped"], notes=notes, settings=settings)


#: the files of the behaviour model's fit
BAYES_FILES = (
    "bayes_item_means.csv",
    "bayes_contrasts.csv",
    "bayes_rankings.csv",
    "gate.json",
    "bayes_diagnostics.csv",
)


def fit_bayes(ds: xr.Dataset, cfg: Any, c: ReplicatedConfig, rule: str) -> xr.DataTree:
    """The behaviour model (:mod:`delusion_bayes.models.behaviour`) of ``ds`` on ``rule`` with
    the run's ``sampler`` group (its ``target_accept`` null: the model's) and the priors of
    ``replicated.bayes_priors``, refitted by the gate's remedies as the models stage's fits are
    (:func:`delusion_bayes.inference.refits.fit_with_refits`: a higher target after
    divergences, then twice the draws when R-hat or ESS fails; ``gate.json`` lists every
    attempt)."""
    from ..inference.config import SamplerConfig
    from ..inference.refits import fit_with_refits
    from ..models.behaviour import fit_behaviour
    from .fit_plan import plain

    node = cfg.get("sampler") if hasattr(cfg, "get") else None
    cache = cfg.get("cache_dir") if hasattr(cfg, "get") else None
    inf = cfg.get("inference") if hasattr(cfg, "get") else None
    sampler = group_config(SamplerConfig, node)

    def make(**more):
        return fit_behaviour(
            ds,
            rule=rule,
            likelihood=c.bayes_likelihood,
            priors=plain(c.bayes_priors) or None,
            sampler=sampler.updated(**more) if more else sampler,
            log_prior=False,
            posterior_predictive=False,
            cache_dir=cache,
        )

    return fit_with_refits(make, inf)


def bayes_outputs(
    ds: xr.Dataset, cfg: Any, c: ReplicatedConfig, res: dict, out: ReplicatedOutputs, notes: list
) -> dict[str, Any]:
    """Fit the behaviour model, write its item means beside the bootstrap, its contrasts, gate
    and diagnostics; the headline entries."""
    from ..inference.diagnostics import diagnose, gate
    from ..models.behaviour_posterior import (
        bayes_contrasts,
        bayes_item_means,
        bayes_rankings,
        reported_vars,
    )

    try:
        tree = fit_bayes(validate_replicated(ds), cfg, c, res["rule"])
    except ValueError as err:  # a rule without integer levels (length-normalised)
        res["skipped"].append({"analysis": "bayes", "reason": str(err), "files": list(BAYES_FILES)})
        return {}
    inf = cfg.get("inference") if hasattr(cfg, "get") else None
    table = diagnose(tree, inf, var_names=reported_vars(tree))
    verdict = gate(tree, table, inf)
    verdict.update(fit_time=float(tree.attrs.get("fit_time", np.nan)), **_fit_attrs(tree))
    verdict["attempts"] = json.loads(tree.attrs.get("gate_attempts", "[]") or "[]")
    boot = res["item_means"][["model", "item", "mean", "ci_low", "ci_high"]].rename(
        columns={"mean": "boot_mean", "ci_low": "boot_ci_low", "ci_high": "boot_ci_high"}
    )
    means = bayes_item_means(tree, c.ci_prob).merge(boot, on=["model", "item"], how="left")
    means = means.assign(rule=res["rule"], likelihood=c.bayes_likelihood)
    ci = f"{round(100 * c.ci_prob)}%"
    out.write(
        "bayes_item_means.csv",
        means,
        f"behaviour model ({c.bayes_likelihood}): posterior median and {ci} interval of the "
        "expected value per judged turn of a new conversation, beside the bootstrap",
    )
    if ds.sizes[MODEL] >= 2:
        out.write(
            "bayes_contrasts.csv",
            bayes_contrasts(tree, c.ci_prob),
            "chatbot pairs, new conversation",
        )
    ranks = bayes_rankings(tree, c.ci_prob)
    if ranks is not None:
        desc = "each chatbot's rank per item mean of a new conversation over the posterior"
        out.write("bayes_rankings.csv", ranks, f"{desc} (rank 1 = most), {ci} rank intervals")
        notes.extend(_draw({"bayes_rankings": ranks}, out, list(c.figure_formats)))
    else:
        res["skipped"].append(
            {
                "analysis": "bayes_rankings",
                "reason": "fewer than 3 chatbots",
                "files": ["bayes_rankings.csv"],
            }
        )
    diag = table.reset_index().rename(columns={"index": "parameter"})
    out.write("bayes_diagnostics.csv", diag, "per-parameter diagnostics of the behaviour model")
    out.write("gate.json", verdict, "the behaviour model's diagnostics gate")
    if not verdict["passed"]:
        notes.append(
            f"behaviour model: gate failed ({'; '.join(verdict['reasons'])}); its posterior "
            "tables are provisional"
        )
    return {"bayes_passed": bool(verdict["passed"]), "bayes_max_rhat": float(verdict["max_rhat"])}


def _fit_attrs(tree: xr.DataTree) -> dict[str, Any]:
    keys = ("likelihood", "rule", "n_obs", "n_conversations", "sampler", "seed")
    return {k: tree.attrs[k] for k in keys if k in tree.attrs}


def _rank_figure(table: pd.DataFrame, stem: Path, formats: list[str]) -> list[Path]:
    from ..baselines.trajectory import save_rank_figure

    return save_rank_figure(table, stem)


def _draw(res: dict[str, Any], out: ReplicatedOutputs, formats: list[str]) -> list[str]:
    """The figures; one that fails is a note, never a failed stage (its tables are written)."""
    notes: list[str] = []
    for plot, key, stem, desc in (
        (plots.plot_item_means, "item_means", "item_means", "chatbot x item means with CIs"),
        (
            plots.plot_first_occurrence,
            "first_occurrence",
            "first_occurrence",
            "share of conversations with the behaviour by turn",
        ),
        (_rank_figure, "rankings", "ranks", "each chatbot's rank per item mean with its interval"),
        (
            _rank_figure,
            "bayes_rankings",
            "ranks_posterior",
            "each chatbot's rank per item mean of a new conversation over the posterior",
        ),
    ):
        if res.get(key) is None:
            continue
        try:
            for path in plot(res[key], out.path / stem, formats):
                out.files[path.name] = desc
        except Exception as err:  # noqa: BLE001 - a figure must not cost the stage its tables
            log.warning("replicated figure %s not drawn: %s: %s", stem, type(err).__name__, err)
            notes.append(f"figure {stem} not drawn: {type(err).__name__}: {err}")
    return notes


__all__ = [
    "BAYES_FILES",
    "DECLARATIONS",
    "KIND",
    "NEEDS",
    "ReplicatedOutputs",
    "analyse",
    "bayes_outputs",
    "failed_table",
    "fit_bayes",
    "run",
]
