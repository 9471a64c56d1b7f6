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

if TYPE_CHECKING:  # pragma: no cover
    from . import baselines, config, data, inference, models, pipeline, report, sweep, text  # noqa: F401


def __getattr__(name: str):
    if name in _SUBMODULES:
        module = importlib.import_module(f".{name}", __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'delusion_bayes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])


__all__ = ["__version__", *_SUBMODULES]
