"""Sampling (nutpie / PyMC / numpyro), compile caching, the ArviZ diagnostics gate, model
comparison and provenance. Heavy libraries (PyMC, ArviZ) are imported inside the functions."""

from __future__ import annotations

import importlib
from typing import Any

from .config import SAMPLERS, InferenceConfig, SamplerConfig

_LAZY = {
    "sample": ".sampling",
    "resolve_sampler": ".sampling",
    "diagnose": ".diagnostics",
    "gate": ".diagnostics",
    "summary_table": ".diagnostics",
    "compare_fits": ".diagnostics",
    "loo_table": ".diagnostics",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'delusion_bayes.inference' has no attribute {name!r}")


__all__ = ["SAMPLERS", "InferenceConfig", "SamplerConfig", *_LAZY]
