"""The registry of the Bayesian models of trajectory studies: one line per model module.

Each model module holds its math, builder and :class:`~delusion_bayes.models.definition.ModelDef`
(``DEFINITION``); :data:`MODELS` lists them. The spec builder, the graph dispatch, the fit and the
models stage look a model up here (:func:`model_def`), so adding a model is one module, one line
below and one ``conf/model/<name>.yaml`` (``docs/dev/adding_a_model.md``); :func:`register` adds
one from outside the package (a test's toy model, a plugin).

The replay prevalence model (:mod:`delusion_bayes.models.replay`) has a definition too, carried
by its spec (it brings its own graph and is fitted from a replay study, never by name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import disengagement, joint, onset, rater
from .definition import ModelDef
from .priors import resolve_prior_table

#: the models, by name, in the order the docs list them
MODELS: dict[str, ModelDef] = {
    d.name: d
    for d in (
        joint.DEFINITION,
        onset.DEFINITION,
        rater.DEFINITION,
        disengagement.DEFINITION,
    )
}


def register(defn: ModelDef, *, replace: bool = False) -> ModelDef:
    """Add ``defn`` to :data:`MODELS` (``model=<name>`` then fits it); ValueError if the name is
    taken, unless ``replace``. Returns ``defn``."""
    if not isinstance(defn, ModelDef):
        raise TypeError(f"register() takes a ModelDef, got {type(defn).__name__}")
    if defn.name in MODELS and not replace and MODELS[defn.name] is not defn:
        raise ValueError(f"model {defn.name!r} is registered already; pass replace=True")
    MODELS[defn.name] = defn
    return defn


def unregister(name: str) -> None:
    """Remove model ``name`` from :data:`MODELS` (a test's toy model, after the test)."""
    MODELS.pop(name, None)


def model_names() -> tuple[str, ...]:
    """The registered models' names."""
    return tuple(MODELS)


def model_def(name: str, *, study: str | None = None) -> ModelDef:
    """The definition of model ``name`` (of study kind ``study`` if given); ValueError names
    the registered models."""
    defn = MODELS.get(str(name))
    if defn is None or (study is not None and defn.study != study):
        raise ValueError(f"unknown model {name!r}; expected one of {list(model_names())}")
    return defn


def marginal_models() -> tuple[str, ...]:
    """The models whose likelihood integrates each model-day's latent stage out."""
    return tuple(n for n, d in MODELS.items() if d.marginal)


def default_priors(model: str) -> dict[str, dict[str, Any]]:
    """A deep copy of the default prior table of ``model``."""
    return resolve_prior_table(model, model_def(model).priors, None)


def resolve_priors(model: str, overrides: Mapping[str, Any] | None = None) -> dict[str, dict]:
    """The defaults of ``model`` updated by ``overrides`` (entry-wise); ValueError for an unknown
    parameter, distribution or distribution argument
    (:func:`delusion_bayes.models.priors.resolve_prior_table`)."""
    return resolve_prior_table(model, model_def(model).priors, overrides)


def missing_inputs(variables: Any, model: str) -> str | None:
    """Why a study with ``variables`` (names, e.g. ``ds.data_vars``) cannot fit ``model``
    (its definition's ``needs``), or None when it can."""
    have = set(variables)
    absent = [(v, f) for v, f in model_def(model).needs if v not in have]
    if not absent:
        return None
    names = ", ".join(v for v, _ in absent)
    files = ", ".join(sorted({f for _, f in absent}))
    return f"needs {names} ({files}), which the study does not have"
