"""Typed config of the data stage (Hydra ConfigStore schema; the YAML in ``conf/data/`` holds
values)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DataConfig:
    #: ``trajectory`` (rater x model x day) or ``replay`` (sample x model x code)
    kind: str = "trajectory"
    #: ``simulate`` (a preset of the generative model), ``file`` (``path`` to netCDF/CSV dir),
    #: ``delusioneval`` (the release's rows) or ``inspect`` (Inspect AI logs: ``data=inspect``)
    source: str = "simulate"
    preset: str = "paper_like"
    seed: int = 0
    path: str | None = None
    #: keyword overrides passed to the simulator (e.g. ``{n_raters: 6}``)
    overrides: dict[str, Any] = field(default_factory=dict)
    # source=inspect (conf/data/inspect.yaml; data.inspect_logs.load_inspect_logs):
    #: the scorer to read (``None``: the logs' only scorer)
    score: str | None = None
    #: metadata key holding the code; ``harmful_annotations`` = DelusionEval's mapping (raw score
    #: from Score.explanation JSON); ``None``: one code, the scorer's name
    code_key: str | None = "harmful_annotations"
    #: metadata keys ``[participant, conversation]`` (empty: windows / Inspect samples)
    cluster_keys: list[str] = field(default_factory=list)
    #: hit = score >= cutoff for every code (``None``: the scorer's / codebook's, generic 1)
    cutoff: float | None = None
    #: metadata key of the turn index in a window (generic scores; ``None``: 0)
    turn_key: str | None = None
