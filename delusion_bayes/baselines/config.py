"""Typed config of the ``baselines`` group (Hydra ConfigStore schema; values in ``conf/baselines/``).

Pure dataclasses, no heavy imports: :mod:`delusion_bayes.config` registers
:class:`BaselinesConfig`. The posterior contrasts read the same ``baselines.contrasts`` list, so
that every permutation p-value has a posterior contrast beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
ALTERNATIVES: tuple[str, ...] = ("two-sided", "less", "greater")
CONSENSUS_RULES: tuple[str, ...] = ("median", "mean", "mode")
HALF_RULES: tuple[str, ...] = ("keep", "down", "up")
MISSING_RULES: tuple[str, ...] = ("skip", "break")
ALPHA_LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")


@dataclass
class ContrastConfig:
    """One pre-specified group contrast (shared by permutation tests and posterior contrasts).

    Attributes
    ----------
    name : str
        Label used in tables (``contrasts.csv``) and in the posterior-contrast tables.
    by : str
        A coordinate on the ``model`` dim (e.g. ``vendor``, ``generation``, ``cohort``) or
        ``"model"`` for explicit lists of model names.
    a : list
        Values of ``by`` forming group A.
    b : list or None
        Values of ``by`` forming group B; ``None`` means every model not in A.
    alternative : {"two-sided", "less", "greater"}
        Alternative for A relative to B (``"less"``: A tends to have smaller values).
    quantities : list of str
        Per-model quantities compared: milestone names (``first_clinical``, ``first_stable``,
        ``first_level_b``, ``days_stage4``, ``days_level_a``, ``days_level_b``) and logistic
        parameters (``L``, ``k``, ``t50``).
    """

    name: str = "contrast"
    by: str = "model"
    a: list[Any] = field(default_factory=list)
    b: list[Any] | None = None
    alternative: str = "two-sided"
    quantities: list[str] = field(
        default_factory=lambda: ["first_clinical", "first_stable", "first_level_b", "t50"]
    )


@dataclass
class BaselinesConfig:
    """Knobs of the frequentist baselines (trajectory paper, Statistical Analysis).

    Attributes
    ----------
    consensus : {"median", "mean", "mode"}
        How raters are reduced to one score per model-day (paper: median of the 4 raters).
    half_rule : {"keep", "down", "up"}
        What a median (or tied mode) that lands between two scale points becomes: ``keep`` the
        x.5 value (a 3.5 then counts as clinical, >= 3, but not as stage 4), round it ``down``
        (conservative) or ``up``.
    min_raters : int
        Minimum number of available raters for a consensus; fewer gives NaN (a missing day).
    stable_run : int
        Consecutive stage-4 days that make a "stable clinical framing" (paper: 3).
    clinical_at, stable_at : float
        Thresholds on the consensus recognition stage for clinical (>= 3) and stable (>= 4) framing.
    missing : {"skip", "break"}
        Missing-day rule for runs: ``skip`` (a missing day neither counts nor breaks a run) or
        ``break`` (a missing day ends a run).
    censor_day : int or None
        Censoring value for milestones never reached; ``None`` means ``n_days + 1`` (31).
    n_boot : int
        Rater-resampling bootstrap replicates for the logistic fits (paper: 1,000).
    alpha_boot : int
        Unit-bootstrap replicates for the CI of Krippendorff's alpha in Table C1 (0 = none).
    ci : float
        Percentile interval mass for bootstrap CIs.
    seed : int
        Seed of every resampling in the stage (same seed -> identical tables).
    alpha_level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement used for Krippendorff's alpha in Table C1.
    logistic_floor : float
        Floor of the logistic curve on the stage scale (paper: 1).
    k_max : float
        Upper bound on the logistic steepness ``k`` (per day); a day-to-day step reaches it.
    max_exact : int
        Largest pooled sample size for the exact rank-sum recursion; above it the permutation test
        is Monte Carlo with ``n_mc`` draws (and says so in its result).
    n_mc : int
        Monte Carlo permutations above ``max_exact``.
    contrasts : list of ContrastConfig
        The pre-specified contrasts (defaults in ``conf/baselines/default.yaml``).
    """

    consensus: str = "median"
    half_rule: str = "keep"
    min_raters: int = 1
    stable_run: int = 3
    clinical_at: float = 3.0
    stable_at: float = 4.0
    missing: str = "skip"
    censor_day: int | None = None
    n_boot: int = 1000
    alpha_boot: int = 1000
    ci: float = 0.95
    seed: int = 0
    alpha_level: str = "interval"
    logistic_floor: float = 1.0
    k_max: float = 20.0
    max_exact: int = 1000
    n_mc: int = 100_000
    contrasts: list[ContrastConfig] = field(default_factory=list)
