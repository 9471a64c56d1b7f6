"""Typed config of sampling and the diagnostics gate (values in ``conf/sampler/``,
``conf/inference/``). Pure dataclasses, no heavy imports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SAMPLERS: tuple[str, ...] = ("nutpie", "pymc", "numpyro")
#: NUTS target acceptance when neither the config nor the model names one
DEFAULT_TARGET_ACCEPT: float = 0.95


@dataclass
class SamplerConfig:
    """NUTS settings. ``name`` falls back to ``pymc`` (with a warning) when not importable."""

    name: str = "nutpie"
    draws: int = 1000
    tune: int = 500
    chains: int = 4
    cores: int = 2
    #: ``None``: each model's own (``delusion_bayes.models.config.TARGET_ACCEPT``); a number
    #: applies to every model
    target_accept: float | None = None
    seed: int = 0
    #: nutpie's mass-matrix adaptation: ``diag`` or ``low_rank`` (docs/models.md "Speed"); the
    #: pymc and numpyro samplers adapt a diagonal only and ignore it
    adaptation: str = "diag"
    #: cache compiled models under ``<cache_dir>/models`` (nutpie) and ``<cache_dir>/pytensor``
    compile_cache: bool = True
    #: reuse a fit from ``<cache_dir>/fits`` made with the same data, settings and code
    #: (:func:`delusion_bayes.models.fit`'s ``reuse``); the sensitivity sweep turns it on
    reuse_fits: bool = False
    #: a progress bar with the time left, drawn only when stderr is a terminal (nutpie, pymc;
    #: numpyro prints its own everywhere); the log gets progress lines either way
    progressbar: bool = True


#: nutpie's mass-matrix adaptations that :func:`check_sampler_settings` accepts
ADAPTATIONS: tuple[str, ...] = ("diag", "low_rank")


def check_sampler_settings(
    *,
    draws: Any,
    tune: Any,
    chains: Any,
    target_accept: Any = None,
    cores: Any = 1,
    adaptation: Any = "diag",
) -> None:
    """Reject impossible NUTS settings before anything compiles: a ``ValueError`` names the
    setting (``sampler.draws`` ...), its value and what is allowed."""
    if adaptation not in ADAPTATIONS:
        raise ValueError(
            f"sampler.adaptation={adaptation!r}: expected one of {list(ADAPTATIONS)} "
            "(nutpie's mass-matrix adaptation)"
        )
    for name, value, low in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1),
                             ("cores", cores, 1)):  # fmt: skip
        ok = isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= low
        if not ok:
            raise ValueError(
                f"sampler.{name}={value!r}: expected a whole number >= {low} "
                f"(e.g. sampler.{name}={max(low, 1000 if name in ('draws', 'tune') else 2)})"
            )
    if target_accept is not None:
        number = isinstance(target_accept, int | float | np.floating)
        if not number or isinstance(target_accept, bool) or not 0.0 < float(target_accept) < 1.0:
            raise ValueError(
                f"sampler.target_accept={target_accept!r}: expected null (each model's own) or "
                "a number strictly between 0 and 1 (e.g. 0.9)"
            )


@dataclass
class InferenceConfig:
    """Diagnostics thresholds, interval conventions and which extra outputs to compute."""

    rhat_max: float = 1.01
    ess_min_per_chain: float = 100.0
    max_divergences: int = 0
    ebfmi_min: float = 0.3
    #: interval probabilities reported (first one is the headline interval)
    ci_probs: list[float] = field(default_factory=lambda: [0.95, 0.9])
    ci_kind: str = "eti"
    #: fit the model variants and write ``comparison.csv`` (``az.compare`` on PSIS-LOO)
    compare: bool = True
    #: unit left out by PSIS-LOO: ``model_day`` (all ratings of a model-day, its latent
    #: integrated out: :mod:`delusion_bayes.models.marginal`) or ``rating`` (one rating given
    #: the model-day's latent); the other unit is written too
    loo_unit: str = "model_day"
    #: draw the posterior predictive and plot the ordinal PPC
    ppc: bool = True
    #: rank/trace plots of these parameters
    plot_vars: list[str] = field(default_factory=lambda: ["L", "k", "t50"])
    #: a fit failing the gate raises instead of only being flagged (loudly) in the outputs
    fail_on_bad_fit: bool = False
