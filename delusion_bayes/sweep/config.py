"""Typed config of the ``design`` group (Hydra ConfigStore schema; values in ``conf/design/``
and ``experiments/design.yaml``), read through the ``design`` stage."""

from __future__ import annotations

from dataclasses import dataclass

#: Bayesian models the design study can fit (those with t50 and milestone posteriors)
DESIGN_MODELS: tuple[str, ...] = ("onset", "joint")


@dataclass
class DesignConfig:
    """One cell of the study-design experiment: its size (the preset's roster scaled to
    ``n_models``), ``discrimination_mean`` (the typical rater discrimination: 3.5 gives the
    paper's recognition alpha near .76, lower = noisier), ``n_sims`` studies for the (cheap)
    baselines, the first ``n_sims_bayes`` also for ``model`` (``joint``, the main job's model,
    or ``onset``, several times faster: docs/design.md says what each costs)."""

    n_raters: int = 4
    n_models: int = 15
    n_days: int = 30
    discrimination_mean: float = 3.5
    n_sims: int = 100
    n_sims_bayes: int = 10
    model: str = "joint"
    #: a replicated cell (``data.kind = replicated``, experiment=design_replicated;
    #: :mod:`delusion_bayes.sweep.replicated_design`): conversations per chatbot, turns per
    #: conversation, ``n_raters`` of kind ``judge`` or ``human`` (``auto``: one LLM judge, or
    #: human raters when there are several), the first chatbot's planted
    #: shift on the hurdle logit (0: a null, its power the test's type-I error) and the
    #: conversation bootstrap's resamples; its Bayesian model is the behaviour model
    n_conversations: int = 10
    n_turns: int = 19
    rater_kind: str = "auto"
    shift: float = 0.7
    n_boot: int = 500
