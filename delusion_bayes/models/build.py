"""``build_model(spec) -> pm.Model``: the graph of a
:class:`~delusion_bayes.models.spec.ModelSpec`; :func:`model_for`, the graph of its structure
with the spec's data in it (one graph, and so one compiled log-density, per structure)."""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from typing import Any

from .modelspec import CustomGraphSpec, ModelSpec

log = logging.getLogger(__name__)

#: graphs kept per process, most recently used last (a sweep over many structures keeps these)
MODEL_MEMO_SIZE = 8
_MODELS: OrderedDict[str, Any] = OrderedDict()


def build_model(spec: ModelSpec | CustomGraphSpec):
    """Build the ``pymc.Model`` of ``spec`` (from :func:`delusion_bayes.models.build_spec`: its
    definition's builder; or a spec with its own graph such as the replay model's)."""
    if isinstance(spec, CustomGraphSpec):
        return spec.build()
    from .registry import model_def

    defn = spec.definition or model_def(spec.name)
    if defn.build is None:
        raise ValueError(f"model {spec.name!r} has no graph builder (its spec brings its graph)")
    return defn.build(spec)


@contextlib.contextmanager
def start_values_cleared(model):
    """``model`` without its start values for the duration (a graph rebuilt without value
    transforms, as ``pm.compute_log_likelihood`` makes, refuses them); restored after, because
    :func:`model_for` hands the same graph to the next fit of its structure."""
    saved = dict(model.rvs_to_initial_values)
    for rv in saved:
        model.rvs_to_initial_values[rv] = None
    try:
        yield model
    finally:
        model.rvs_to_initial_values.update(saved)


def forget_graphs() -> None:
    """Drop the graphs :func:`model_for` keeps, and the compiled models built from them (the
    next fit of every structure builds and compiles anew: benchmarks and tests)."""
    from ..inference.cache import forget_compiled

    _MODELS.clear()
    forget_compiled()


def model_for(spec: ModelSpec | CustomGraphSpec) -> tuple[Any, str]:
    """``(pm.Model, key)``: the graph of ``spec``'s structure with ``spec``'s data set in it, and
    the key its compiled log-density is memoised under
    (:func:`delusion_bayes.inference.cache.compiled_nutpie`).

    A trajectory model's graph is built once per
    :meth:`~delusion_bayes.models.spec.ModelSpec.structure_key` in a process and its data
    (``pm.Data``) are set for each spec, so that coverage replicates, SBC simulations, design
    cells and sweep jobs of one design compile once. The graph is shared: a caller must finish
    with it (sampling, log-likelihood, log prior) before asking for another spec of the same
    structure. A spec with its own graph is built anew, keyed by its hash (its data).
    """
    if isinstance(spec, CustomGraphSpec):
        return build_model(spec), spec.hash()
    from .blocks import set_spec_data

    key = f"{spec.name}-{spec.structure_key()}"
    model = _MODELS.get(key)
    if model is None:
        model = build_model(spec)
        _MODELS[key] = model
        while len(_MODELS) > MODEL_MEMO_SIZE:
            _MODELS.popitem(last=False)
    else:
        log.info("reusing the graph of %s's structure %s with this study's data", spec.variant, key)
        set_spec_data(model, spec)
        _MODELS.move_to_end(key)
    return model, key
