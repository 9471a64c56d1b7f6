"""The trajectory model with a conversation level in the ``replicated`` stage (issue 54.1).

When a replicated study has the trajectory paper's recognition item (stage 1-4 per turn), the
stage fits ``replicated.trajectory_model`` (``joint`` by default) with each conversation's
trajectory drawn around its chatbot's (:mod:`delusion_bayes.models.conversations`) and writes
``bayes_trajectories.csv``: per chatbot, a NEW conversation's expected t50, its censored
milestones and P(never) and the between-conversation SD of t50, beside ``milestones.csv``'s
bootstrap over the observed conversations; with its gate (``trajectory_gate.json``) and
per-parameter diagnostics. The fit is refitted by the gate's remedies like every other fit;
a study without the item lists the files under ``skipped`` with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..baselines._validate import check_option
from ..baselines.replicated_agreement import milestone_item
from ..baselines.replicated_config import ReplicatedConfig
from ..config import group_config

#: the models with a conversation level (:mod:`delusion_bayes.models.conversations`)
MODELS = ("joint", "onset")
#: the files this part of the stage writes
FILES = (
    "bayes_trajectories.csv",
    "bayes_trajectory_contrasts.csv",
    "trajectory_gate.json",
    "trajectory_diagnostics.csv",
)


def _node(cfg: Any, key: str) -> Any:
    return cfg.get(key) if hasattr(cfg, "get") else getattr(cfg, key, None)


def trajectory_model_for(ds: xr.Dataset, requested: str) -> tuple[str, str]:
    """The model the stage fits for ``replicated.trajectory_model = requested`` and why it is
    another ('' when it is not). ``joint`` on a study with at most one rating per turn (one
    judge, or one human rater) is fitted as ``onset``: with one rating of a turn, the turn's
    noise on the latent stage and the rater's own noise are told apart only by the shape of
    the logistic link, so the joint model's per-conversation day-noise scales are not
    identified (2 chatbots x 1 conversation x 8 turns, one judge: 8 divergences at 0.99 and
    0.995; ``onset``: none, R-hat 1.004; docs/dev/models.md)."""
    from ..models.conversations import ITEM_NAME

    if requested != "joint":
        return requested, ""
    rated = ds["score"].sel({"item": ITEM_NAME}).notnull().sum("rater")
    if int(rated.max()) > 1:
        return requested, ""
    return "onset", (
        "one rating per turn: the turn's noise and the rater's cannot be told apart, so the "
        "joint model's day noise is not identified; fitted as onset"
    )


def fit_trajectory(ds: xr.Dataset, cfg: Any, c: ReplicatedConfig) -> xr.DataTree:
    """``c.trajectory_model`` (:func:`trajectory_model_for`; the model fitted and why in
    ``attrs``) with a conversation level on ``ds``, with the run's ``sampler``
    group (started at ``inference.refit_target_accept`` unless it sets a target), refitted by
    the gate's remedies (a higher target after divergences, then twice the draws;
    ``gate_attempts``). The ``model`` group's ``priors`` override the fitted model's (an unknown
    parameter name is an error, not dropped)."""
    from ..inference.config import InferenceConfig, SamplerConfig
    from ..inference.refits import fit_with_refits
    from ..models.config import ModelConfig
    from ..models.conversations import fit_conversations
    from .fit_plan import gated, plain

    sampler = group_config(SamplerConfig, _node(cfg, "sampler"))
    inf = group_config(InferenceConfig, _node(cfg, "inference"))
    # started at the refit target, as the population-contrast fits (stages/fit_plan.py): the
    # replicated preset had 3 divergences at 0.9, none at 0.99 (docs/dev/models.md)
    sampler = sampler.updated(target_accept=sampler.target_accept or inf.refit_target_accept)

    model, why = trajectory_model_for(ds, c.trajectory_model)
    model_node = _node(cfg, "model")
    priors = plain(group_config(ModelConfig, model_node).priors) if model_node else None

    def make(**more):
        return fit_conversations(
            ds,
            model,
            shared=c.trajectory_shared_prompts,
            priors=priors,
            sampler=sampler.updated(**more) if more else sampler,
            log_prior=False,
            log_likelihood=False,
            posterior_predictive=False,
            cache_dir=_node(cfg, "cache_dir"),
        )

    tree = gated(fit_with_refits(make, inf), inf)
    tree.attrs.update(trajectory_model=model, trajectory_model_why=why)
    return tree


def trajectory_tables(
    tree: xr.DataTree, c: ReplicatedConfig, stable_run: int = 3
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``bayes_trajectories.csv`` (:func:`~delusion_bayes.models.conversations.
    chatbot_trajectories` with the model, the scale and whether a conversation level was
    fitted) and ``bayes_trajectory_contrasts.csv`` (:func:`~delusion_bayes.models.
    conversations.chatbot_contrasts`), from one set of draws; ``note`` carries what simulation
    found of a quantity's intervals (:data:`~delusion_bayes.models.conversations.CAVEATS`)."""
    from ..models.conversations import (
        CAVEATS,
        chatbot_contrasts,
        chatbot_draws,
        chatbot_trajectories,
    )

    draws = chatbot_draws(tree, stable_run=stable_run, seed=c.seed)
    tab = chatbot_trajectories(draws, c.ci_prob).rename(columns={"chatbot": "model"})
    about = {
        "trajectory_model": tree.attrs.get("trajectory_model", c.trajectory_model),
        "conversation_level": bool(tree.attrs.get("conversation_level")),
        # the prompts / categories the chatbots shared, whose t50 shifts the model learnt
        # (models.conversations.shared_terms): a contrast is free of them
        "shared_effects": str(tree.attrs.get("group_terms", "")),
    }
    tab = tab.assign(**about, scale=str(tree.attrs.get("population", "")))
    caveats = CAVEATS if about["conversation_level"] else {}
    tab["note"] = tab["quantity"].map(lambda q: caveats.get(q, ""))
    contrasts = chatbot_contrasts(draws, c.ci_prob).assign(**about)
    contrasts["note"] = contrasts["quantity"].map(lambda q: caveats.get(q, ""))
    return tab, contrasts


def trajectory_outputs(
    ds: xr.Dataset, cfg: Any, c: ReplicatedConfig, res: dict, out: Any, notes: list
) -> dict[str, Any]:
    """Fit and write (module docstring); the headline entries, or ``{}`` with a ``skipped``
    entry when the study has no recognition item or the model is off."""
    from ..inference.diagnostics import diagnose
    from ..models.conversations import CAVEATS

    _, why = milestone_item(ds)
    if not c.trajectory_model or why:
        reason = why or "replicated.trajectory_model is null"
        res["skipped"].append(
            {"analysis": "bayes_trajectories", "reason": reason, "files": list(FILES)}
        )
        return {}
    check_option("replicated.trajectory_model", c.trajectory_model, MODELS)
    tree = fit_trajectory(ds, cfg, c)
    used = tree.attrs["trajectory_model"]
    # the verdict fit_trajectory recorded (``gated``: every parameter, as the models stage's
    # fits), written with its table, so the file and the attrs cannot disagree
    table = diagnose(tree, _node(cfg, "inference"))
    verdict = json.loads(tree.attrs["gate_verdict"])
    verdict.update(
        fit_time=float(tree.attrs.get("fit_time", np.nan)),
        attempts=json.loads(tree.attrs.get("gate_attempts", "[]") or "[]"),
        model=used,
        requested_model=c.trajectory_model,
        conversation_level=bool(tree.attrs.get("conversation_level")),
    )
    if tree.attrs.get("trajectory_model_why"):
        notes.append(f"trajectory model: {tree.attrs['trajectory_model_why']}")
    ci = f"{round(100 * c.ci_prob)}%"
    chatbots, contrasts = trajectory_tables(tree, c)
    out.write(
        "bayes_trajectories.csv",
        chatbots,
        f"{used} with a conversation level: per chatbot, a new conversation's "
        f"t50, milestones, P(never) and the between-conversation SD of t50, {ci} intervals",
    )
    out.write(
        "bayes_trajectory_contrasts.csv",
        contrasts,
        f"chatbot pairs, a new conversation of each: differences of t50, milestones and "
        f"P(never), {ci} intervals, P(A lower), P(A higher)",
    )
    diag = table.reset_index().rename(columns={"index": "parameter"})
    out.write("trajectory_diagnostics.csv", diag, "per-parameter diagnostics of that fit")
    out.write("trajectory_gate.json", verdict, "that fit's diagnostics gate")
    if verdict["conversation_level"]:
        notes.extend(f"bayes_trajectories.csv, {q}: {t}" for q, t in CAVEATS.items())
    if not verdict["passed"]:
        notes.append(
            f"trajectory model ({used}, conversation level): gate failed "
            f"({'; '.join(verdict['reasons'])}); bayes_trajectories.csv is provisional"
        )
    return {"trajectory_passed": bool(verdict["passed"])}


__all__ = [
    "FILES",
    "fit_trajectory",
    "trajectory_model_for",
    "trajectory_outputs",
    "trajectory_tables",
]
