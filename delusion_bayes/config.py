"""The typed root config (Hydra ConfigStore schema); YAML files in ``conf/`` hold values only.

Each config group has its dataclass in the package that reads it (``delusion_bayes/<pkg>/config.py``,
pure dataclasses, no heavy imports); the ``replay`` group spans two packages (the bootstrap in
``baselines``, the prevalence model in ``models``), so :class:`ReplayConfig` lives here; this module puts them together under one root ``Config`` and
registers it as ``base_config``, the first entry of ``conf/config.yaml``'s defaults list. A YAML key
that the schema does not know fails at composition time instead of being silently ignored.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import asdict, dataclass, field, make_dataclass
from pathlib import Path
from typing import Any

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
}

DEFAULT_STAGES = ["baselines", "text", "models", "report"]


def default_cache_dir() -> str:
    """Shared cache root (compiled models, embeddings): ``$DELUSION_BAYES_CACHE`` or ~/.cache."""
    return os.environ.get("DELUSION_BAYES_CACHE", str(Path.home() / ".cache" / "delusion_bayes"))


def setting(node: Any, key: str, default: Any) -> Any:
    """``node.key`` from a config node (DictConfig, dataclass or dict), ``default`` when the node
    or the key is missing or the value is ``None`` (an unset optional key)."""
    if node is None:
        return default
    value = node.get(key, default) if hasattr(node, "get") else getattr(node, key, default)
    return default if value is None else value


def config_values(defaults: Any, node: Any) -> dict[str, Any]:
    """The dataclass instance ``defaults`` as a plain dict, overridden by the values ``node``
    (DictConfig, dataclass, dict or None) sets; unset keys keep their defaults."""
    return {key: setting(node, key, value) for key, value in asdict(defaults).items()}


@dataclass
class _Top:
    #: free label of the run (experiments set it)
    name: str = "default"
    #: global seed (stages have their own seeds in their groups; this one seeds the rest)
    seed: int = 0
    #: stages to run in order: baselines, text, models, replay, design, report
    stages: list[str] = field(default_factory=lambda: list(DEFAULT_STAGES))
    #: shared on-disk cache for compiled models and embeddings (shared across sweep jobs)
    cache_dir: str = field(default_factory=default_cache_dir)
    #: stop at the first failing stage instead of running the rest (the report still runs)
    fail_fast: bool = False
    #: write into a run folder that already holds results: remove the previous run's files and
    #: the folders of the stages this run reruns (others are kept only if made from the same
    #: data with the same settings); without it such a folder is refused
    overwrite: bool = False
    #: rerun a sweep (or a run) into its folders: a folder holding a finished run with every
    #: stage ok and the same settings is left as it is (nothing recomputed); any other folder
    #: (a job killed, cancelled or failed, or made with other settings) is redone as with
    #: ``overwrite=true``. Compiled models and cached fits come from ``cache_dir``.
    resume: bool = False


@dataclass
class ReplayConfig:
    """Replay-study (DelusionEval) analysis settings.

    Attributes
    ----------
    n_boot, seed, ci_prob
        Percentile bootstrap: 10,000 resamples, seed 42, 95% intervals (DelusionEval release).
    cluster
        Headline bootstrap scheme: ``two-stage`` (participants, then conversations within
        participant), ``participant``, ``conversation`` or ``none`` (samples i.i.d., as in the
        public release's plain percentile bootstrap).
    support
        ``unconditional`` (every cluster in every cell) or ``conditional`` (only the clusters
        with rows in the cell, as the DelusionEval release); see ``replay_prevalence``.
    unscored
        ``exclude`` rows without a score (default) or count them as 0 in the point estimate
        (``zero``, the release's rule for its original-transcript rows).
    also_iid
        Also write the sample-level (``none``) bootstrap table for comparison.
    cutoffs, default_cutoff
        Per-code judge-score cutoffs (hit = score >= cutoff) applied to loaded studies whose
        ``cutoff`` should be overridden; empty = keep the study's.
    (windowing is not an analysis setting: a study read from transcripts carries its own in
    ``windows.json``; see :func:`delusion_bayes.data.load_replay`)
    baseline
        Model the deltas are taken against (the original transcript's own replies).
    depth_bins
        Left edges of the context-depth bins of the depth curves (messages before the user turn).
    max_turn
        Turn-position profiles pool user turns >= ``max_turn`` into one bin.
    onset_unit
        Unit of ``onset.csv``'s onset: ``turn`` (1-based user-turn rank) or ``message`` (message
        index in the window, the DelusionEval release's ``turn_index``).
    bayes
        Fit the hierarchical Bayesian prevalence model (:mod:`delusion_bayes.models.replay`).
    bayes_level
        ``code`` (model x code effects) or ``category``.
    depth_bins_bayes, prior_bins_bayes
        Quantile bins of context depth / prior content that form the model's binomial cells.
    (the Bayesian model is sampled with the shared ``sampler`` group and checked by the shared
    ``inference`` gate, like every other model: ``sampler.draws=...``)
    figure_formats
        File formats of the stage's figures.
    """

    n_boot: int = 10_000
    seed: int = 42
    ci_prob: float = 0.95
    cluster: str = "two-stage"
    support: str = "unconditional"
    unscored: str = "exclude"
    also_iid: bool = True
    cutoffs: dict[str, float] = field(default_factory=dict)
    default_cutoff: float = 7.0
    baseline: str = "original"
    depth_bins: list[int] = field(default_factory=lambda: [0, 4, 8, 12, 16, 20])
    max_turn: int = 8
    onset_unit: str = "turn"
    bayes: bool = True
    bayes_level: str = "code"
    depth_bins_bayes: int = 4
    prior_bins_bayes: int = 3
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])


def _schema(group: str) -> type:
    module, name = GROUP_SCHEMAS[group]
    return getattr(importlib.import_module(module), name)


def root_schema() -> type:
    """The root ``Config`` dataclass: one field per group plus the top-level keys."""
    fields = [
        (group, _schema(group), field(default_factory=_schema(group))) for group in GROUP_SCHEMAS
    ]
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
    """Compose the config without running (for notebooks and tests).

    >>> cfg = compose(["experiment=smoke"])  # doctest: +SKIP
    """
    from hydra import compose as _compose
    from hydra import initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return _compose(config_name=config_name, overrides=list(overrides or []))
