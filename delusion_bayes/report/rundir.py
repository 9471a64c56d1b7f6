"""Read what the stages of one run left on disk (the report never refits anything).

A run directory holds ``study.nc``, the resolved config (``.hydra/config.yaml`` and/or
``config.yaml``) and one folder per stage, each with ``index.json`` =
``{"files": {relpath: description}, "headline": {...}}`` (team contract, "Pipeline stage
contract"). :class:`RunDir` gives the report uniform, failure-tolerant access to them: a stage
that did not run is reported as such, never raised.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

#: the stages whose outputs the report reads, in document order
SOURCE_STAGES: tuple[str, ...] = ("baselines", "text", "models", "replay")


@dataclass
class StageOutputs:
    """The files one stage wrote into ``run_dir/<name>/``."""

    run_dir: Path
    name: str
    _csv_cache: dict[str, pd.DataFrame | None] = field(default_factory=dict, repr=False)

    @property
    def path(self) -> Path:
        return self.run_dir / self.name

    @property
    def ran(self) -> bool:
        """True when the stage folder exists and holds an ``index.json`` or any file."""
        return self.path.is_dir() and (
            (self.path / "index.json").is_file() or any(self.path.iterdir())
        )

    @cached_property
    def index(self) -> dict[str, Any]:
        path = self.path / "index.json"
        if not path.is_file():
            return {}
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            log.warning("%s is not valid JSON (%s); listing files from disk instead", path, err)
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def headline(self) -> dict[str, Any]:
        head = self.index.get("headline", {})
        return head if isinstance(head, dict) else {}

    @cached_property
    def files(self) -> dict[str, str]:
        """``{relpath: description}``: the index's entries, plus files on disk it does not list."""
        listed = self.index.get("files", {})
        files = {str(k): str(v) for k, v in listed.items()} if isinstance(listed, dict) else {}
        if self.path.is_dir():
            for p in sorted(self.path.rglob("*")):
                rel = p.relative_to(self.path).as_posix()
                if p.is_file() and rel != "index.json" and rel not in files:
                    files[rel] = ""
        return files

    @property
    def notes(self) -> list[str]:
        """The stage's ``index.json`` ``notes`` (rules applied, skipped parts), if any."""
        notes = self.index.get("notes", [])
        return [str(n) for n in notes] if isinstance(notes, list) else []

    def describe(self, relpath: str) -> str:
        return self.files.get(relpath, "")

    def has(self, relpath: str) -> bool:
        return (self.path / relpath).is_file()

    def glob(self, pattern: str) -> list[str]:
        """Relative paths of files matching ``pattern`` (``fnmatch`` style, ``**`` allowed)."""
        if not self.path.is_dir():
            return []
        return sorted(
            p.relative_to(self.path).as_posix() for p in self.path.glob(pattern) if p.is_file()
        )

    def csv(self, relpath: str) -> pd.DataFrame | None:
        """The CSV at ``relpath`` (None when missing or unreadable; unreadable is logged)."""
        if relpath not in self._csv_cache:
            path = self.path / relpath
            frame = None
            if path.is_file():
                try:
                    frame = pd.read_csv(path)
                except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
                    log.warning("cannot read %s: %s", path, e)
            self._csv_cache[relpath] = frame
        return self._csv_cache[relpath]


class RunDir:
    """Everything a finished (or partly finished) run left in ``path``.

    Parameters
    ----------
    path : the run directory (Hydra's ``outputs/<date>/<time>`` or ``hydra.run.dir``).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(
                f"run directory {str(self.path)!r} does not exist; pass the folder a "
                "`delusion-bayes` run wrote (it holds study.nc and one folder per stage)"
            )
        self.stages = {name: StageOutputs(self.path, name) for name in SOURCE_STAGES}

    def stage(self, name: str) -> StageOutputs:
        if name not in self.stages:
            self.stages[name] = StageOutputs(self.path, name)
        return self.stages[name]

    def rel(self, path: Path) -> str:
        """``path`` relative to the run directory (POSIX form, for links in the document)."""
        return Path(path).resolve().relative_to(self.path.resolve()).as_posix()

    # config ------------------------------------------------------------------------------
    @cached_property
    def config_path(self) -> Path | None:
        for rel in (".hydra/config.yaml", "config.yaml"):
            if (self.path / rel).is_file():
                return self.path / rel
        return None

    @cached_property
    def config(self) -> dict[str, Any]:
        """The resolved config of the run as a plain dict ({} when none was saved)."""
        if self.config_path is None:
            return {}
        from omegaconf import OmegaConf

        try:
            conf = OmegaConf.load(self.config_path)
            data = OmegaConf.to_container(conf, resolve=False)
        except Exception as err:  # a broken config must not stop the report
            log.warning("cannot read %s: %s", self.config_path, err)
            return {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def overrides(self) -> list[str]:
        path = self.path / ".hydra" / "overrides.yaml"
        if not path.is_file():
            return []
        from omegaconf import OmegaConf

        try:
            return [str(x) for x in OmegaConf.to_container(OmegaConf.load(path))]
        except Exception:
            return []

    def config_value(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.config
        for key in dotted.split("."):
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    @cached_property
    def record(self) -> dict[str, Any]:
        """``run.json`` written by the pipeline (provenance, stage status), {} when absent."""
        path = self.path / "run.json"
        if not path.is_file():
            return {}
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            log.warning("%s is not valid JSON: %s", path, err)
            return {}
        return data if isinstance(data, dict) else {}

    def stage_status(self, name: str) -> dict[str, Any]:
        """The pipeline's record of stage ``name`` (``{"status": "ok"|"failed"|"skipped", ...}``)."""
        stages = self.record.get("stages", {})
        entry = stages.get(name) if isinstance(stages, dict) else None
        return entry if isinstance(entry, dict) else {}

    # study -------------------------------------------------------------------------------
    @property
    def study_path(self) -> Path | None:
        path = self.path / "study.nc"
        return path if path.is_file() else None

    @cached_property
    def study(self) -> Any:
        """The study as an ``xarray.Dataset`` (None when the run saved none or it is unreadable)."""
        if self.study_path is None:
            return None
        try:
            if self.config_value("data.kind") == "replay":
                from delusion_bayes.data import load_replay

                return load_replay(self.study_path)
            from delusion_bayes.data import load_study

            return load_study(self.study_path)
        except ImportError:
            import xarray as xr

            return xr.load_dataset(self.study_path)
        except Exception as err:
            log.warning("cannot load %s: %s", self.study_path, err)
            return None

    @cached_property
    def kind(self) -> str:
        """``trajectory`` or ``replay``: from the config, else from the study's variables."""
        kind = self.config_value("data.kind")
        if kind in ("trajectory", "replay"):
            return str(kind)
        ds = self.study
        if ds is not None and "recognition" not in ds and "score" in ds:
            return "replay"
        if self.stage("replay").ran and not self.stage("baselines").ran:
            return "replay"
        return "trajectory"
