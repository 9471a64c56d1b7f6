"""Typed config of sampling and the diagnostics gate (values in ``conf/sampler/``,
``conf/inference/``). Pure dataclasses, no heavy imports."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from ..errors import ConfigError

SAMPLERS: tuple[str, ...] = ("nutpie", "pymc", "numpyro")
#: NUTS target acceptance of a model whose definition names none (``ModelDef.target_accept``),
#: and of a bare ``pm.Model`` sampled with ``target_accept=None``
DEFAULT_TARGET_ACCEPT: float = 0.95


@dataclass
class SamplerConfig:
    """NUTS settings. ``name`` falls back to ``pymc`` (with a warning) when not importable.

    The one object that carries them from ``conf/sampler/`` to the sampler: the stages read the
    group into it (:func:`delusion_bayes.config.group_config`), :func:`delusion_bayes.models.fit`
    takes it (``sampler=``) and hands it to :func:`delusion_bayes.inference.sampling.sample`.
    Impossible values are refused when it is made (:func:`check_sampler_settings`).
    """

    name: str = "nutpie"
    draws: int = 1000
    tune: int = 500
    chains: int = 4
    cores: int = 2
    #: ``None``: each model's own (its definition's, ``ModelDef.target_accept``); a number:
    #: every model's
    target_accept: float | None = None
    seed: int = 0
    #: nutpie's mass matrix: ``diag`` or ``low_rank`` (docs/dev/models.md "Speed");
    #: pymc, numpyro: diag
    adaptation: str = "diag"
    compile_cache: bool = True  #: cache compiled models under <cache_dir>/models and /pytensor
    #: nutpie only. ``False``: compile this study's graph with its data as constants (a one-off
    #: fit, as the main job's: compiles about twice as fast). ``True``: compile the graph of the
    #: model's structure once per process and swap each study's data in (coverage, SBC, design,
    #: sweeps: many same-shaped studies). Either is reproducible from ``seed``, but the two
    #: evaluate the density in another floating-point order and so give other draws
    #: (docs/dev/models.md, "Speed").
    share_graph: bool = False
    #: reuse a fit of the same data, settings and code from ``<cache_dir>/fits`` (``fit(reuse=)``)
    reuse_fits: bool = False
    #: nutpie only: compile the models stage's fits in a background process while the stages
    #: before it run (``stages/prefetch.py``); changes when compiling happens, not a result
    prefetch: bool = True
    #: a bar with the time left when stderr is a terminal (numpyro: its own); log lines anyway
    progressbar: bool = True

    def __post_init__(self) -> None:
        check_sampler_settings(
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            target_accept=self.target_accept,
            cores=self.cores,
            adaptation=self.adaptation,
        )

    def updated(self, **settings: Any) -> SamplerConfig:
        """A copy with the ``settings`` that are not ``None`` replaced (``reuse`` is
        ``reuse_fits``, ``sampler`` is ``name``), checked; ``self`` when none is given."""
        aliases = {"reuse": "reuse_fits", "sampler": "name"}
        given = {aliases.get(k, k): v for k, v in settings.items() if v is not None}
        unknown = set(given) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"unknown sampler settings {sorted(unknown)}")
        return replace(self, **given) if given else self


def sampler_config(sampler: SamplerConfig | str | None = None, **settings: Any) -> SamplerConfig:
    """The :class:`SamplerConfig` of ``sampler`` (a config; a sampler name; ``None``: the
    defaults) with the ``settings`` that are not ``None`` replaced (:meth:`SamplerConfig.updated`):
    how :func:`delusion_bayes.models.fit`'s keywords (``draws=``, ``seed=`` ...) become one
    config."""
    if isinstance(sampler, SamplerConfig):
        base = sampler
    elif sampler is None:
        base = SamplerConfig()
    else:
        base = SamplerConfig(name=str(sampler))
    return base.updated(**settings)


ADAPTATIONS: tuple[str, ...] = ("diag", "low_rank")  #: nutpie's mass-matrix adaptations


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
        raise ConfigError(
            f"sampler.adaptation={adaptation!r}: expected one of {list(ADAPTATIONS)} "
            "(nutpie's mass-matrix adaptation)"
        )
    for name, value, low in (
        ("draws", draws, 1),
        ("tune", tune, 0),
        ("chains", chains, 1),
        ("cores", cores, 1),
    ):
        ok = isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= low
        if not ok:
            raise ConfigError(
                f"sampler.{name}={value!r}: expected a whole number >= {low} "
                f"(e.g. sampler.{name}={max(low, 1000 if name in ('draws', 'tune') else 2)})"
            )
    if target_accept is not None:
        number = isinstance(target_accept, int | float | np.floating)
        if not number or isinstance(target_accept, bool) or not 0.0 < float(target_accept) < 1.0:
            raise ConfigError(
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
    ci_probs: list[float] = field(default_factory=lambda: [0.95, 0.9])  #: the first: headline
    ci_kind: str = "eti"
    compare: bool = True  #: fit the variants, write ``comparison.csv`` (az.compare on PSIS-LOO)
    #: unit left out by PSIS-LOO (the other is written too): ``model_day`` (its latent integrated
    #: out, :mod:`delusion_bayes.models.marginal`) or ``rating`` (given the model-day's latent)
    loo_unit: str = "model_day"
    ppc: bool = True  #: draw the posterior predictive and plot the ordinal PPC
    plot_vars: list[str] = field(default_factory=lambda: ["L", "k", "t50"])  #: rank/trace plots
    fail_on_bad_fit: bool = False  #: raise on a failed gate (else it is flagged, loudly)
    #: a fit with divergences is refitted once at this target acceptance (same seed; both
    #: attempts in ``gate.json``); ``None``: no refit
    refit_target_accept: float | None = 0.99
    #: then, a fit whose R-hat or ESS fails the gate (no divergences left) is refitted once with
    #: this many times the draws and tuning steps; ``None``: no refit
    refit_draws_factor: float | None = 2.0
