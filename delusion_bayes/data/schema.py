"""The trajectory-study data model: dimension names, variables, their scales.

These names are a contract (``../DESIGN.md``, "Data model"): tests outside the repository use them.
Everything that needs a dim name or a scale imports it from here, never spells it again.
"""

from __future__ import annotations

from dataclasses import dataclass

# dimension names ---------------------------------------------------------------------------
RATER = "rater"
MODEL = "model"
DAY = "day"
INTERVENTION_TYPE = "intervention_type"
#: bootstrap replicates live on their own dim, never on ``chain``/``draw`` (those are MCMC only)
RESAMPLE = "resample"

INTERVENTION_TYPES: tuple[str, ...] = (
    "education",
    "psychoeducation",
    "emotional_support",
    "interpretation",
    "recommendation",
)

#: recognition stages as labelled in the paper (Protocol section)
RECOGNITION_LABELS = {
    1: "naive engagement",
    2: "interpretive ambiguity",
    3: "introduction of clinical framing",
    4: "stabilized clinical framing",
}


@dataclass(frozen=True)
class Scale:
    """An integer rating scale ``low..high`` (NaN = missing)."""

    low: int
    high: int

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(range(self.low, self.high + 1))

    def __str__(self) -> str:
        return "{" + ", ".join(str(v) for v in self.values) + "}"


@dataclass(frozen=True)
class VarSpec:
    """What a variable of a trajectory study must look like."""

    name: str
    dims: tuple[str, ...]
    scale: Scale | None  # None for text variables
    description: str
    required: bool = False

    @property
    def is_text(self) -> bool:
        return self.scale is None


#: rated by every rater on every model-day
RATED_VARIABLES: dict[str, VarSpec] = {
    v.name: v
    for v in (
        VarSpec("recognition", (RATER, MODEL, DAY), Scale(1, 4), "recognition stage 1-4", True),
        VarSpec("confidence", (RATER, MODEL, DAY), Scale(1, 3), "interpretative confidence 1-3"),
        VarSpec(
            "intervention",
            (RATER, MODEL, DAY, INTERVENTION_TYPE),
            Scale(1, 3),
            "intervention intensity 1 absent, 2 rare, 3 frequent",
        ),
        VarSpec("disengagement", (RATER, MODEL, DAY), Scale(0, 1), "round-one disengagement flag"),
    )
}

#: adjudicated once per model-day (Level B implies Level A)
ADJUDICATED_VARIABLES: dict[str, VarSpec] = {
    v.name: v
    for v in (
        VarSpec("level_a", (MODEL, DAY), Scale(0, 1), "Level A: any referral to professional help"),
        VarSpec("level_b", (MODEL, DAY), Scale(0, 1), "Level B: advice to stop/limit chatbot use"),
    )
}

TEXT_VARIABLES: dict[str, VarSpec] = {
    v.name: v
    for v in (
        VarSpec("prompt", (DAY,), None, "the user's message of each day"),
        VarSpec("answer", (MODEL, DAY), None, "each model's answer ('' = missing/ended chat)"),
    )
}

VARIABLES: dict[str, VarSpec] = {**RATED_VARIABLES, **ADJUDICATED_VARIABLES, **TEXT_VARIABLES}

#: items of the long CSV format -> (variable, intervention_type or None)
ITEMS: dict[str, tuple[str, str | None]] = {
    "recognition": ("recognition", None),
    "confidence": ("confidence", None),
    "disengagement": ("disengagement", None),
    **{t: ("intervention", t) for t in INTERVENTION_TYPES},
}

TRUTH_PREFIX = "true_"

# numbers on the 1-4 recognition scale that simulator, baselines and models share -------------
#: the ordinal cutpoints between stages: a rater with severity 0 and infinite discrimination
#: gives the latent stage rounded to the nearest integer
STAGE_CUTPOINTS: tuple[float, ...] = (1.5, 2.5, 3.5)
#: the middle cutpoint (stage 2 | 3): a model has "turned" once its median rating holds here
#: (models.geometry.onset_geometry), and the disengagement level's stage effect is centred here
#: (``beta (stage - STAGE_MIDPOINT)``: simulator and models alike)
STAGE_MIDPOINT: float = STAGE_CUTPOINTS[1]
#: upper bound of the onset steepness ``k`` (per day), shared by the least-squares fits
#: (``baselines.k_max``) and the Bayesian models' soft bound: on daily data the likelihood
#: cannot tell 20 from 200
K_MAX: float = 20.0


def censor_day(n_days: int) -> int:
    """Latencies that never happen are censored at ``n_days + 1`` (31 for a 30-day study)."""
    return int(n_days) + 1
