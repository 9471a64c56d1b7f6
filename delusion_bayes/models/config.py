"""Typed config of the Bayesian models (Hydra ConfigStore schema; values in ``conf/model/``).
What each model is (its priors, data needs, sampler default) is its definition in the registry
(:mod:`delusion_bayes.models.registry`), not a table here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: trajectory shapes of the onset models (``logistic`` is the paper's; the others are variants)
TRAJECTORIES: tuple[str, ...] = ("logistic", "linear", "step")
#: ``rater``: severity shift and discrimination per rater; ``shared``: one set of cutpoints
CUTPOINTS: tuple[str, ...] = ("rater", "shared")


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
