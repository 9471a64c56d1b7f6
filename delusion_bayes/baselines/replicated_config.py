"""Typed config of the replicated-study analysis (the ``replicated`` group; Hydra ConfigStore
schema, values in ``conf/replicated/``)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    #: beside the bootstrap. The stage refits it by the gate's remedies: on Spiral-Bench's two
    #: files the first attempt (4 x 1000 draws) missed the gate on one sigma_conversation
    #: (R-hat 1.011), the refit with twice the draws passed (R-hat 1.004, ESS 1,933; 565 s for
    #: the run on 2 shared cores). Off by default until its intervals are calibrated by
    #: simulation (coverage of a new conversation's mean; issue 54)
    bayes: bool = False
    #: its likelihood: ``ordinal`` (cumulative logit on the capped levels) or ``hurdle``
    bayes_likelihood: str = "ordinal"


__all__ = ["ReplicatedConfig"]
