"""Typed config of the Bayesian models (Hydra ConfigStore schema; values in ``conf/model/``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..inference.config import DEFAULT_TARGET_ACCEPT

#: the models this package defines (``delusion_bayes.models.build_spec``)
MODEL_NAMES: tuple[str, ...] = ("joint", "onset", "rater", "disengagement")
#: the models whose likelihood integrates each model-day's latent stage out (their spec has the
#: model-day layout, :func:`delusion_bayes.models.blocks.marginal_ratings`); the stage and the
#: other groups are added after sampling (:mod:`delusion_bayes.models.latent`). The one place
#: that says so; ``onset`` fits the consensus per model-day directly
MARGINAL_MODELS: tuple[str, ...] = ("joint", "rater", "disengagement")
#: the models with a trajectory and per-model day noise around it (``rater`` has neither)
DAY_NOISE_MODELS: tuple[str, ...] = ("joint", "disengagement")
#: study variables each model needs beyond ``recognition (rater, model, day)``, and the file of a
#: CSV study that holds them: without them the models stage skips the model (with a note)
MODEL_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "disengagement": (("level_a", "adjudication.csv"), ("level_b", "adjudication.csv")),
}


def missing_inputs(variables: Any, model: str) -> str | None:
    """Why a study with ``variables`` (names, e.g. ``ds.data_vars``) cannot fit ``model``, or
    None when it can."""
    have = set(variables)
    absent = [(v, f) for v, f in MODEL_NEEDS.get(model, ()) if v not in have]
    if not absent:
        return None
    names = ", ".join(v for v, _ in absent)
    files = ", ".join(sorted({f for _, f in absent}))
    return f"needs {names} ({files}), which the study does not have"


#: trajectory shapes of the onset models (``logistic`` is the paper's; the others are variants)
TRAJECTORIES: tuple[str, ...] = ("logistic", "linear", "step")
#: ``rater``: severity shift and discrimination per rater; ``shared``: one set of cutpoints
CUTPOINTS: tuple[str, ...] = ("rater", "shared")
#: NUTS target acceptance per model when the sampler config leaves it ``null`` (docs/models.md)
TARGET_ACCEPT: dict[str, float] = {
    "joint": 0.9,
    "onset": 0.99,
    "rater": DEFAULT_TARGET_ACCEPT,
    "disengagement": 0.9,
    "replay_prevalence": 0.9,
}


def target_accept_for(model: str, value: float | None = None) -> float:
    """``value`` if given, else the model's :data:`TARGET_ACCEPT` (or the general default)."""
    if value is not None:
        return float(value)
    return float(TARGET_ACCEPT.get(model, DEFAULT_TARGET_ACCEPT))


@dataclass
class ModelConfig:
    """What the ``models`` stage fits.

    ``name`` is the primary model, ``priors`` its prior overrides (``{parameter: {dist: Normal,
    mu: 0, sigma: 1}}``), the rest as in :func:`delusion_bayes.models.build_spec`; ``variants``
    (``delusion_bayes.models.VARIANTS``; none passes the gate on paper_like) are fitted for
    ``az.compare``, ``also_fit`` models with their default priors.
    """

    name: str = "joint"
    priors: dict[str, Any] = field(default_factory=dict)
    group_terms: list[str] = field(default_factory=list)
    trajectory: str = "logistic"
    cutpoints: str = "rater"
    variants: list[str] = field(default_factory=list)
    also_fit: list[str] = field(default_factory=lambda: ["onset", "rater", "disengagement"])
