"""PEP 562 lazy attributes: ``import delusion_bayes.<pkg>`` imports no PyMC, ArviZ or torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` resolving ``names[name]`` (a relative module) on first access and
    caching the value in the package's namespace."""

    def __getattr__(name: str) -> Any:
        if name in names:
            module = importlib.import_module(package)
            value = getattr(importlib.import_module(names[name], package), name)
            setattr(module, name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
