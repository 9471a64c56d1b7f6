"""Bayesian models of trajectory studies (PyMC), their specs and derived quantities.

``import delusion_bayes.models`` imports no PyMC: specs (:func:`build_spec`) are plain numpy;
:func:`build_model` and :func:`fit` import PyMC inside.
"""

from __future__ import annotations

from .._lazy import lazy_getattr
from .config import CUTPOINTS, MODEL_NAMES, TRAJECTORIES, ModelConfig, missing_inputs

# bound eagerly: as a lazy name, importing the submodule first made ``db.models.fit`` a module
from .fit import fit
from .priors import DEFAULT_PRIORS, default_priors, prior_table, resolve_priors
from .spec import ModelSpec, build_spec

#: variants of a model fitted for ``az.compare`` (name -> build_spec keyword overrides)
VARIANTS: dict[str, dict[str, str]] = {
    "shared_cutpoints": {"cutpoints": "shared"},
    "linear": {"trajectory": "linear"},
    "step": {"trajectory": "step"},
}

_DERIVED = (
    "posterior_milestones",
    "milestones_table",
    "t50_posterior",
    "posterior_contrasts",
    "consensus_posterior",
    "rater_posterior",
    "reliability_posterior",
    "interval",
)
_LAZY = {
    "build_model": ".build",
    **dict.fromkeys(_DERIVED, ".derived"),
    "population_contrasts": ".population",
    **dict.fromkeys(("run_sbc", "sbc_uniformity", "plot_sbc"), ".sbc"),
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "CUTPOINTS",
    "DEFAULT_PRIORS",
    "MODEL_NAMES",
    "TRAJECTORIES",
    "VARIANTS",
    "ModelConfig",
    "ModelSpec",
    "build_spec",
    "default_priors",
    "fit",
    "missing_inputs",
    "prior_table",
    "resolve_priors",
    *_LAZY,
]
