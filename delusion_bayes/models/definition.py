"""``ModelDef``: what the package knows about one Bayesian model, as one frozen piece of plain
data that sits next to the model's math (``DEFINITION = ModelDef(...)`` in ``models/joint.py`` ...).

The registry (:mod:`delusion_bayes.models.registry`) lists the definitions; the spec builder, the
graph dispatch, the fit, the models stage and its compile prefetch read them instead of tables
keyed by model name. A definition is data, not a base class: a new model is a module with a
builder function and one ``ModelDef`` (``docs/dev/adding_a_model.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..inference.config import DEFAULT_TARGET_ACCEPT

#: the fit inputs of :func:`delusion_bayes.models.fit` a model may take beside its priors
FIT_INPUTS: tuple[str, ...] = ("trajectory", "cutpoints", "group_terms", "consensus")


@dataclass(frozen=True, eq=False)
class ModelDef:
    """One model: its name, math, default priors, graph builder, data needs and sampler default.

    ``build(spec) -> pm.Model`` makes the graph of a spec (``None``: the spec brings its own
    graph, :class:`~delusion_bayes.models.spec.CustomGraphSpec`, as the replay model's);
    ``priors`` is the default prior table (``{parameter: {dist: ..., <argument>: value}}``;
    ``conf/model/*.yaml`` override entries); ``math`` the model written out (its module's
    docstring). ``study`` is the study kind it fits (``trajectory`` or ``replay``).

    ``marginal``: the likelihood integrates each model-day's latent stage out of every rater's
    rating (the stage is drawn after sampling, :mod:`delusion_bayes.models.latent`); otherwise
    the model sees one consensus per rated model-day. ``day_noise``: its trajectory has per-model
    day noise; ``levels``: it also models the adjudicated Level A/B; ``rating_patterns``: its
    likelihood runs over the distinct rating patterns (:func:`~.spec.rating_patterns`).
    ``needs``: ``(variable, CSV file)`` the study must hold beyond ``recognition``, else the
    models stage skips the model with a note. ``inputs``: which of :data:`FIT_INPUTS` it takes.

    ``target_accept``: NUTS target acceptance when ``sampler.target_accept`` is ``null`` (the
    general default is :data:`~delusion_bayes.inference.config.DEFAULT_TARGET_ACCEPT`;
    docs/dev/models.md says why each model's differs). ``k_min``: soft
    lower bound of the trajectory's steepness (:func:`~.blocks.onset_trajectory`).
    ``predictive(dt, spec, seed)``: the posterior predictive of a model that does not integrate
    the stage out (``None``: none). ``always_predictive``: the models stage draws it even with
    ``inference.ppc=false`` (its derived tables read it). ``fit_rank``: the models stage fits
    the models beside the primary one in increasing rank (the longest first, so each covers
    the compile prefetch's compiles of the next). ``population``: it has a population-contrast
    fit (the grouping on its hyper-means, :mod:`delusion_bayes.models.population`).
    ``compared``: its PSIS-LOO is listed beside the others' (the consensus models' likelihood
    is of another thing).
    """

    name: str
    build: Callable[[Any], Any] | None
    priors: Mapping[str, Mapping[str, Any]]
    math: str = ""
    study: str = "trajectory"
    marginal: bool = True
    day_noise: bool = False
    levels: bool = False
    rating_patterns: bool = False
    needs: tuple[tuple[str, str], ...] = ()
    inputs: frozenset[str] = field(default_factory=lambda: frozenset(FIT_INPUTS))
    target_accept: float = DEFAULT_TARGET_ACCEPT
    k_min: float = 0.0
    predictive: Callable[..., Any] | None = None
    always_predictive: bool = False
    fit_rank: int = 100
    population: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.inputs) - set(FIT_INPUTS)
        if unknown:
            raise ValueError(
                f"model {self.name!r}: unknown fit inputs {sorted(unknown)}; expected some of "
                f"{list(FIT_INPUTS)}"
            )
        if not 0.0 < float(self.target_accept) < 1.0:
            raise ValueError(f"model {self.name!r}: target_accept={self.target_accept!r}")

    @property
    def compared(self) -> bool:
        """Whether its PSIS-LOO is comparable with the rating models' (it sees every rating)."""
        return self.marginal
