"""What the stages of one run left on disk, read through the results contract (never refitted).

:class:`RunDir` is the report's one door to a run directory. An absent file reads as ``None``
("not run"); one that breaks its declaration raises
:class:`~delusion_bayes.results.ResultFileError` (an Error note in the report).
"""

from __future__ import annotations

import json
import logging
from functools import cached_property
from pathlib import Path
from typing import Any

from delusion_bayes import results
from delusion_bayes.baselines.results import BaselineResult

log = logging.getLogger(__name__)

#: the stages whose outputs the report reads, in document order
SOURCE_STAGES: tuple[str, ...] = ("baselines", "text", "models", "replay", "replicated")


class StageOutputs:
    """The files one stage wrote into ``run_dir/<name>/`` and its ``index.json``."""

    def __init__(self, run_dir: Path, name: str):
        self.run_dir, self.name, self.path = run_dir, name, run_dir / name

    @property
    def ran(self) -> bool:
        """The stage folder exists and holds any file."""
        return self.path.is_dir() and any(self.path.iterdir())

    @cached_property
    def index(self) -> dict[str, Any]:
        try:
            return results.read(self.run_dir, f"{self.name}/index.json") or {}
        except results.ResultFileError as err:
            log.warning("%s; listing files from disk instead", err)
            return {}

    @property
    def headline(self) -> dict[str, Any]:
        return dict(self.index.get("headline") or {})

    @property
    def notes(self) -> list[str]:
        return [str(n) for n in self.index.get("notes") or []]

    @cached_property
    def files(self) -> dict[str, str]:
        """``{relpath: description}``: the index's entries, plus files on disk it does not list."""
        files = {str(k): str(v) for k, v in (self.index.get("files") or {}).items()}
        for rel in self.glob("**/*"):
            files.setdefault(rel, "")
        files.pop("index.json", None)
        return files

    def describe(self, relpath: str) -> str:
        return self.files.get(relpath, "")

    def has(self, relpath: str) -> bool:
        return (self.path / relpath).is_file()

    def glob(self, pattern: str) -> list[str]:
        """Relative paths of files matching ``pattern`` (``**`` allowed), sorted."""
        if not self.path.is_dir():
            return []
        found = (p for p in self.path.glob(pattern) if p.is_file())
        return sorted(p.relative_to(self.path).as_posix() for p in found)


class RunDir:
    """Everything a finished (or partly finished) run left in ``path``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ValueError(
                f"run directory {str(self.path)!r} does not exist; pass the folder a "
                "`delusion-bayes` run wrote (it holds study.nc and one folder per stage)"
            )
        self.stages = {name: StageOutputs(self.path, name) for name in SOURCE_STAGES}
        self._tables: dict[tuple[str, str | None], Any] = {}

    def stage(self, name: str) -> StageOutputs:
        return self.stages.setdefault(name, StageOutputs(self.path, name))

    def table(self, key: str, fit: str | None = None) -> Any:
        """The declared file ``key`` (``fit`` for a ``models/{fit}/...`` file), None when absent;
        cached."""
        if (key, fit) not in self._tables:
            self._tables[key, fit] = results.read(self.path, key, fit=fit)
        return self._tables[key, fit]

    def result(self, key: str, fit: str | None = None) -> BaselineResult | None:
        """The declared table ``key`` as a result object (its declared columns, headers,
        title and question: :meth:`BaselineResult.from_file`), None when absent."""
        return BaselineResult.from_file(key, self.table(key, fit), fit)

    def source(self, key: str, fit: str | None = None) -> str:
        """The run-relative path of ``key`` (for "source:" links)."""
        return results.spec(key).path(self.path, fit).relative_to(self.path).as_posix()

    @property
    def fits(self) -> list[str]:
        """The fitted models (``models/<fit>/`` folders)."""
        return results.fits(self.path)

    def rel(self, path: Path) -> str:
        """``path`` relative to the run directory (POSIX form)."""
        return Path(path).resolve().relative_to(self.path.resolve()).as_posix()

    # config --------------------------------------------------------------------------------
    @cached_property
    def config_path(self) -> Path | None:
        # the pipeline's config.yaml first: it holds what the run did (a study path given
        # without data=file reads that study, and says data.source=file there; Hydra's own copy
        # in .hydra/ is the config as composed, before that)
        found = (self.path / rel for rel in ("config.yaml", ".hydra/config.yaml"))
        return next((p for p in found if p.is_file()), None)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The resolved config of the run as a plain dict ({} when none was saved)."""
        if self.config_path is None:
            return {}
        from omegaconf import OmegaConf

        try:
            data = OmegaConf.to_container(OmegaConf.load(self.config_path), resolve=False)
        except Exception as err:  # noqa: BLE001 - a broken config must not stop the report
            log.warning("cannot read %s: %s", self.config_path, err)
            return {}
        return data if isinstance(data, dict) else {}

    @cached_property
    def overrides(self) -> list[str]:
        path = self.path / ".hydra" / "overrides.yaml"
        if not path.is_file():
            return []
        from omegaconf import OmegaConf

        return [str(x) for x in OmegaConf.to_container(OmegaConf.load(path))]

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
        try:
            return json.loads(path.read_text()) if path.is_file() else {}
        except json.JSONDecodeError as err:
            log.warning("%s is not valid JSON: %s", path, err)
            return {}

    def stage_status(self, name: str) -> dict[str, Any]:
        """The pipeline's record of stage ``name``.

        ``{"status": "ok"|"failed"|"skipped", ...}``."""
        return dict((self.record.get("stages") or {}).get(name) or {})

    # study -------------------------------------------------------------------------------
    @property
    def study_path(self) -> Path | None:
        path = self.path / "study.nc"
        return path if path.is_file() else None

    @cached_property
    def study(self) -> Any:
        """The study as an ``xarray.Dataset`` (None when the run saved none)."""
        if self.study_path is None:
            return None
        from delusion_bayes.data import load_replay, load_replicated, load_study

        loader = {"replay": load_replay, "replicated": load_replicated}.get(self.kind, load_study)
        return loader(self.study_path)

    @cached_property
    def kind(self) -> str:
        """``trajectory``, ``replay`` or ``replicated``: from the config, else from the stages
        that ran."""
        kind = self.config_value("data.kind")
        if kind in ("trajectory", "replay", "replicated"):
            return str(kind)
        replay_only = self.stage("replay").ran and not self.stage("baselines").ran
        return "replay" if replay_only else "trajectory"

    @cached_property
    def n_days(self) -> int | None:
        """Study length and censoring day as the baselines stage recorded them."""
        return (self.stage("baselines").index.get("config") or {}).get("n_days")

    @cached_property
    def censor_day(self) -> int | None:
        return (self.stage("baselines").index.get("config") or {}).get("censor_day")

    def posterior_fit(self, preferred: list[str]) -> str | None:
        """The fitted model the side-by-side tables use: the run's primary model (``model.name``)
        when it was fitted, else the first of ``preferred`` that was, else None."""
        primary = self.config_value("model.name")
        return next((n for n in [primary, *preferred] if n in self.fits), None)
