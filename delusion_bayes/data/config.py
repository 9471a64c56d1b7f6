"""Typed config of the data stage (Hydra ConfigStore schema; YAML in ``conf/data/`` holds values)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class DataConfig:
    #: ``trajectory`` (rater x model x day) or ``replay`` (sample x model x code)
    kind: str = "trajectory"
    #: ``simulate`` (a preset of the generative model) or ``file`` (``path`` to netCDF/CSV dir)
    source: str = "simulate"
    preset: str = "paper_like"
    seed: int = 0
    path: str | None = None
    #: keyword overrides passed to the simulator (e.g. ``{n_raters: 6}``)
    overrides: dict[str, Any] = field(default_factory=dict)
