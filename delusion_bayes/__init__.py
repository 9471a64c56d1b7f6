"""delusion_bayes: trajectory and replay studies of chatbot responses to delusional spirals.
Submodules are imported lazily (PEP 562): no PyMC, torch or spaCy until a stage needs them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__

_SUBMODULES = (
    "data",
    "baselines",
    "text",
    "models",
    "inference",
    "report",
    "pipeline",
    "sweep",
    "config",
)
#: public functions at the top level, and the module that holds each
_FUNCTIONS = {"analyse": "analysis", "Analysis": "analysis"}

if TYPE_CHECKING:  # pragma: no cover
    from . import baselines, config, data, inference, models, pipeline, report, sweep, text  # noqa: F401
    from .analysis import Analysis, analyse  # noqa: F401


def __getattr__(name: str):
    if name in _SUBMODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    if name in _FUNCTIONS:
        value = getattr(importlib.import_module(f".{_FUNCTIONS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'delusion_bayes' has no attribute {name!r}")


__all__ = ["__version__", *_FUNCTIONS, *_SUBMODULES]


def __dir__() -> list[str]:
    """The public API only (not ``importlib``, ``annotations``, ``TYPE_CHECKING``)."""
    return sorted(__all__)
