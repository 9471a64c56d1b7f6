"""The typed root config (Hydra ConfigStore schema ``base_config``: an unknown YAML key fails at
once). Each group's dataclass lives in the package that reads it; :class:`ReplayConfig` is here
because two packages read it."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, make_dataclass, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError

#: config group -> (module, dataclass) of its schema
GROUP_SCHEMAS: dict[str, tuple[str, str]] = {
    "data": ("delusion_bayes.data.config", "DataConfig"),
    "baselines": ("delusion_bayes.baselines.config", "BaselinesConfig"),
    "model": ("delusion_bayes.models.config", "ModelConfig"),
    "sampler": ("delusion_bayes.inference.config", "SamplerConfig"),
    "inference": ("delusion_bayes.inference.config", "InferenceConfig"),
    "text": ("delusion_bayes.text.config", "TextConfig"),
    "report": ("delusion_bayes.report.config", "ReportConfig"),
    "replay": ("delusion_bayes.config", "ReplayConfig"),
    "design": ("delusion_bayes.sweep.config", "DesignConfig"),
    "replicated": ("delusion_bayes.baselines.replicated_config", "ReplicatedConfig"),
}

DEFAULT_STAGES = ["baselines", "text", "models", "report"]


def default_cache_dir() -> str:
    """Shared cache root (compiled models, embeddings): ``$DELUSION_BAYES_CACHE`` or ~/.cache."""
    return os.environ.get("DELUSION_BAYES_CACHE", str(Path.home() / ".cache" / "delusion_bayes"))


def group_config[T](schema: type[T], node: Any = None) -> T:
    """The config group ``schema`` (a dataclass) with every value ``node`` sets: the one way
    the package reads a group, so a default lives only in its dataclass.

    ``node`` may be ``None`` (every default), an instance of ``schema`` (returned as it is), a
    composed ``DictConfig`` or a plain mapping (the Python API). A key the node sets to ``None``
    stays ``None`` (``refit_target_accept: null`` turns the refit off); a key ``schema`` does not
    have raises :class:`~delusion_bayes.errors.ConfigError` naming it and the keys allowed.
    """
    if node is None:
        return schema()
    if isinstance(node, schema):
        return node
    if hasattr(node, "_metadata"):  # a DictConfig: plain containers, interpolations resolved
        from omegaconf import OmegaConf

        node = OmegaConf.to_container(node, resolve=True)
    elif is_dataclass(node):
        node = asdict(node)
    if not isinstance(node, Mapping):
        raise ConfigError(
            f"config group {schema.__name__}: expected a mapping of settings, got "
            f"{type(node).__name__} {node!r}"
        )
    allowed = {f.name for f in fields(schema)}
    if unknown := sorted(str(k) for k in node if k not in allowed):
        raise ConfigError(
            f"config group {schema.__name__}: unknown key(s) {unknown}; expected some of "
            f"{sorted(allowed)}"
        )
    return replace(schema(), **dict(node))


@dataclass
class _Top:
    name: str = "default"  #: free label of the run (experiments set it)
    seed: int = 0  #: global seed (stages have their own in their groups; this one seeds the rest)
    #: stages to run in order: baselines, text, models, replay, design, report
    stages: list[str] = field(default_factory=lambda: list(DEFAULT_STAGES))
    #: shared on-disk cache for compiled models and embeddings (shared across sweep jobs)
    cache_dir: str = field(default_factory=default_cache_dir)
    fail_fast: bool = False  #: stop at the first failing stage (the report still runs)
    #: replace the results in a used run folder (refused without it; same-settings stages kept)
    overwrite: bool = False
    #: leave a folder holding a finished, ok run with the same settings; redo any other in place
    resume: bool = False


@dataclass
class ReplayConfig:
    """Replay-study (DelusionEval) analysis settings (also commented in ``conf/replay/``); the
    bootstrap's are the release's. Windowing is the study's own (``windows.json``)."""

    n_boot: int = 10_000
    seed: int = 42
    ci_prob: float = 0.95
    #: headline bootstrap: ``two-stage`` (participants, then their conversations),
    #: ``participant``, ``conversation`` or ``none`` (samples i.i.d., the release's)
    cluster: str = "two-stage"
    #: ``unconditional`` (every cluster in every cell) or ``conditional`` (only the clusters with
    #: rows in the cell, the release's)
    support: str = "unconditional"
    unscored: str = "exclude"  #: or ``zero``: rows without a score count 0 (the release's rule)
    also_iid: bool = True  #: also write the i.i.d. (``none``) bootstrap table
    #: per-code judge-score cutoffs (hit = score >= cutoff) overriding a study's; empty: keep
    cutoffs: dict[str, float] = field(default_factory=dict)
    default_cutoff: float = 7.0
    baseline: str = "original"  #: the model the deltas are taken against
    #: the deltas' multiplicity family (Holm, BH, max-T, pooling): ``level`` (categories apart
    #: from codes) or ``run`` (every delta of the run)
    family: str = "level"
    #: left edges of the context-depth bins (messages before the user turn)
    depth_bins: list[int] = field(default_factory=lambda: [0, 4, 8, 12, 16, 20])
    max_turn: int = 8  #: turn profiles pool user turns >= max_turn
    onset_unit: str = "turn"  #: 1-based user-turn rank, or ``message`` (index in the window)
    #: fit :mod:`delusion_bayes.models.replay` (with the shared sampler and inference groups)
    bayes: bool = True
    bayes_level: str = "code"  #: or ``category``
    depth_bins_bayes: int = 4  #: quantile bins of context depth forming the model's cells
    prior_bins_bayes: int = 3  #: quantile bins of prior content forming the model's cells
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])


def root_schema() -> type:
    """The root ``Config`` dataclass: one field per group plus the top-level keys."""
    schemas = {g: getattr(importlib.import_module(m), n) for g, (m, n) in GROUP_SCHEMAS.items()}
    fields = [(group, schema, field(default_factory=schema)) for group, schema in schemas.items()]
    return make_dataclass("Config", fields, bases=(_Top,))


def register_configs() -> None:
    """Register the root schema as ``base_config`` in Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="base_config", node=root_schema())


def conf_dir() -> Path:
    """The ``conf/`` directory: inside an installed wheel, else the repository's."""
    packaged = Path(__file__).parent / "_conf"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[1] / "conf"


def compose(overrides: list[str] | None = None, config_name: str = "config") -> Any:
    """Compose the config without running (notebooks, tests): ``compose(["experiment=smoke"])``."""
    from hydra import compose as _compose
    from hydra import initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return _compose(config_name=config_name, overrides=list(overrides or []))
