"""Typed config of the ``baselines`` group (Hydra ConfigStore schema; the YAML in
``conf/baselines/`` holds what differs: the paper's contrasts).

Pure dataclasses, no heavy imports: :mod:`delusion_bayes.config` registers
:class:`BaselinesConfig`. The posterior contrasts read the same ``baselines.contrasts`` list, so
that every permutation p-value has a posterior contrast beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..data.schema import K_MAX

#: milestone names (Table 1 of the trajectory paper); shared with the posterior contrasts
MILESTONES: tuple[str, ...] = (
    "first_clinical",
    "first_stable",
    "first_level_b",
    "days_stage4",
    "days_level_a",
    "days_level_b",
)
#: logistic parameters (Table D1)
LOGISTIC_PARAMS: tuple[str, ...] = ("L", "k", "t50")
QUANTITIES: tuple[str, ...] = (*MILESTONES, *LOGISTIC_PARAMS)
#: study variables a quantity needs beyond the recognition ratings (and the file that holds them)
QUANTITY_NEEDS: dict[str, str] = {
    "first_level_b": "level_b",
    "days_level_b": "level_b",
    "days_level_a": "level_a",
}
ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
CONSENSUS_RULES: tuple[str, ...] = ("median", "mean", "mode")
HALF_RULES: tuple[str, ...] = ("keep", "down", "up")
MISSING_RULES: tuple[str, ...] = ("skip", "break")
ALPHA_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
#: families of tests adjusted together (``BaselinesConfig.family``)
FAMILIES: tuple[str, ...] = ("run", "contrast")


@dataclass
class ContrastConfig:
    """One pre-specified group contrast (shared by permutation tests and posterior contrasts)."""

    #: label in ``contrasts.csv`` and the posterior-contrast tables
    name: str = "contrast"
    #: a coordinate on the ``model`` dim (``vendor``, ``generation``, ``cohort``) or ``"model"``
    by: str = "model"
    #: values of ``by`` forming group A
    a: list[Any] = field(default_factory=list)
    #: values of ``by`` forming group B; ``None``: every model not in A
    b: list[Any] | None = None
    #: alternative for A relative to B: two-sided | less (A tends smaller) | greater
    alternative: str = "two-sided"
    #: per-model quantities compared: :data:`QUANTITIES` (milestones, ``L``, ``k``, ``t50``)
    quantities: list[str] = field(
        default_factory=lambda: ["first_clinical", "first_stable", "first_level_b", "t50"]
    )


@dataclass
class BaselinesConfig:
    """Knobs of the frequentist baselines (trajectory paper, Statistical Analysis)."""

    #: median | mean | mode of the available raters per model-day (paper: median of the 4 raters)
    consensus: str = "median"
    #: a median (or tied mode) on x.5: keep (3.5 is clinical, >= 3, not stage 4) | down | up
    half_rule: str = "keep"
    #: fewer available raters than this give a NaN consensus (a missing day)
    min_raters: int = 1
    #: consecutive stage-4 days that make "stable clinical framing" (paper: 3)
    stable_run: int = 3
    #: consensus thresholds of clinical (>= 3) and stable (>= 4) framing
    clinical_at: float = 3.0
    stable_at: float = 4.0
    #: a missing day in a run: skip (neither counts nor breaks it) | break (ends it)
    missing: str = "skip"
    #: value of a milestone never reached; ``None``: ``n_days + 1`` (31)
    censor_day: int | None = None
    #: rater-resampling bootstrap replicates of the logistic fits (paper: 1,000)
    n_boot: int = 1000
    #: unit-bootstrap replicates for the CI of Krippendorff's alpha in Table C1 (0 = none)
    alpha_boot: int = 1000
    #: percentile interval mass of the bootstrap CIs
    ci: float = 0.95
    #: seed of every resampling of the stage (same seed -> identical tables)
    seed: int = 0
    #: Krippendorff's alpha level in Table C1: nominal | ordinal | interval | ratio
    alpha_level: str = "interval"
    #: floor of the logistic curve on the stage scale (paper: 1)
    logistic_floor: float = 1.0
    #: upper bound of the logistic steepness ``k`` per day (a day-to-day step reaches it)
    k_max: float = K_MAX
    #: the family over which the contrasts' p-values are adjusted (Holm, Benjamini-Hochberg):
    #: ``run`` (every contrast x quantity of the run) | ``contrast`` (each contrast's own tests)
    family: str = "run"
    #: largest pooled n of the exact rank-sum recursion; above it the test is Monte Carlo (said so)
    max_exact: int = 1000
    #: Monte Carlo permutations above ``max_exact``
    n_mc: int = 100_000
    #: the pre-specified contrasts (defaults in ``conf/baselines/default.yaml``)
    contrasts: list[ContrastConfig] = field(default_factory=list)
