"""Typed config of the replicated-study analysis (the ``replicated`` group; Hydra ConfigStore
schema, values in ``conf/replicated/``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReplicatedConfig:
    """Settings of :mod:`delusion_bayes.stages.replicated` (also commented in
    ``conf/replicated/default.yaml``)."""

    #: the one scoring rule every chatbot's means use: ``auto`` (Spiral-Bench's current
    #: ``v2_cap5`` for Spiral-Bench files, else ``raw``), ``v2_cap5``, ``v1_len_norm_cap8``, ``raw``
    rule: str = "auto"
    #: cluster-bootstrap resamples (categories -> conversations where categories exist) and seed
    n_boot: int = 10_000
    seed: int = 42
    ci_prob: float = 0.95
    #: a turn "has the behaviour" when its score is above this (``None``: the item's item_min)
    threshold: float | None = None
    #: paired sign-flip tests are exact up to this many prompts, else Monte Carlo with ``n_mc``
    max_exact: int = 16
    n_mc: int = 100_000
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])
    #: fit the behaviour model (:mod:`delusion_bayes.models.behaviour`) with the ``sampler``
    #: group and gate it with ``inference``: each chatbot's posterior for a new conversation
    #: beside the bootstrap, chatbot contrasts and rankings. Refitted by the gate's remedies when
    #: a fit misses it. On Spiral-Bench's two files the first attempt passes (R-hat 1.005, ESS
    #: 783; 212 s for the stage on 2 shared cores); coverage and type-I on simulated studies in
    #: docs/dev/models.md ("Judged behaviours"). ``false``: the bootstrap tables only
    bayes: bool = True
    #: its likelihood: ``ordinal`` (cumulative logit on the capped levels) or ``hurdle``
    bayes_likelihood: str = "ordinal"
    #: prior overrides of the behaviour model (``{parameter: {dist: ..., args}}``, as
    #: ``model.priors`` for the trajectory models), e.g. the conversations' scale
    #: ``sigma_conversation={dist: Gamma, alpha: 2, beta: 1}`` (the default Gamma(2, 2): the real
    #: files' scales are prior-sensitive, docs/dev/models.md); an unknown name is an error
    bayes_priors: dict[str, Any] = field(default_factory=dict)
    #: with ``bayes`` and the recognition item on 1-4: the trajectory model (``joint`` or
    #: ``onset``) fitted with a conversation level (:mod:`delusion_bayes.models.conversations`),
    #: each chatbot's t50, milestones and P(never) for a new conversation
    #: (``bayes_trajectories.csv``); ``null``: not fitted. ``joint`` on one rating per turn is
    #: fitted as ``onset`` (``stages/replicated_trajectory.py``, ``trajectory_model_for``)
    trajectory_model: str | None = "joint"
    #: where the chatbots ran the same prompts (5 or more), learn each prompt's (and category's)
    #: shift of t50 for every chatbot, so a chatbot contrast leaves out which prompts were drawn
    #: (``models.conversations.shared_terms``). Off by default: under a null its contrasts'
    #: type-I is nearer 0.05 (t50 0.013, first clinical 0.027 against 0.000 and 0.008 without),
    #: but 2 of the 5 conversation-level grid designs miss the gate with it (docs/dev/models.md,
    #: "Prompts the chatbots share")
    trajectory_shared_prompts: bool = False


__all__ = ["ReplicatedConfig"]
