"""Sampling (nutpie / PyMC / numpyro), compile caching, the ArviZ diagnostics gate, model
comparison and provenance. Heavy libraries (PyMC, ArviZ) are imported inside the functions."""

from __future__ import annotations

from .._lazy import lazy_getattr
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

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = ["SAMPLERS", "InferenceConfig", "SamplerConfig", *_LAZY]
