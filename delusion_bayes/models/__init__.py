"""Bayesian models of trajectory studies (PyMC), their specs and derived quantities.

``import delusion_bayes.models`` imports no PyMC: specs (:func:`build_spec`) are plain numpy;
:func:`build_model` and :func:`fit` import PyMC inside.
"""

from __future__ import annotations

from .._lazy import lazy_getattr
from ..inference.config import SamplerConfig
from .config import CUTPOINTS, TRAJECTORIES, ModelConfig
from .definition import ModelDef

# bound eagerly: as a lazy name, importing the submodule first made ``db.models.fit`` a module
from .fit import fit
from .priors import prior_table
from .registry import MODELS, default_priors, missing_inputs, register, resolve_priors
from .spec import ModelSpec, build_spec

#: the registered models' names: a live view of :data:`~.registry.MODELS` (a model registered
#: later is in it)
MODEL_NAMES = MODELS.keys()

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
    "MODELS",
    "MODEL_NAMES",
    "TRAJECTORIES",
    "VARIANTS",
    "ModelConfig",
    "ModelDef",
    "ModelSpec",
    "SamplerConfig",
    "build_spec",
    "default_priors",
    "fit",
    "missing_inputs",
    "prior_table",
    "register",
    "resolve_priors",
    *_LAZY,
]
