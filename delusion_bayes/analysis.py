"""One call from Python: ``res = db.analyse(study)`` runs the same stages with the same config as
``delusion-bayes`` and returns an :class:`Analysis` to read (tables as DataFrames, posteriors as
DataTrees, gates, skipped analyses), the way pingouin and bambi return results, instead of a
folder of CSV files to read back by hand.

The run still writes its folder (a temporary one unless ``run_dir`` is given): the folder is the
record of what was done (``run.json``, ``config.yaml``, provenance), and the command line and
Python therefore give the same files, byte for byte where the seed fixes them.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from .errors import ConfigError


def overrides_from(options: Mapping[str, Any]) -> list[str]:
    """Hydra override strings from keyword options: ``experiment="smoke"`` →
    ``experiment=smoke``; a mapping is a group's keys (``sampler={"draws": 200}`` →
    ``sampler.draws=200``); a list is written as Hydra's list (``stages=["baselines"]`` →
    ``stages=[baselines]``)."""
    out: list[str] = []

    def value(v: Any) -> str:
        if isinstance(v, list | tuple):
            return "[" + ",".join(value(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return "null" if v is None else str(v)

    for key, v in options.items():
        if isinstance(v, Mapping):
            out += [f"{key}.{o}" for o in overrides_from(v)]
        else:
            out.append(f"{key}={value(v)}")
    return out


def study_kind(ds: xr.Dataset) -> str:
    """``trajectory``, ``replay`` or ``replicated``, from the study's own dims and attrs."""
    kind = ds.attrs.get("kind")
    if kind in ("trajectory", "replay", "replicated"):
        return str(kind)
    if "conversation" in ds.dims:
        return "replicated"
    if "sample" in ds.dims and "code" in ds.dims:
        return "replay"
    if "recognition" in ds:
        return "trajectory"
    raise ConfigError(
        f"cannot tell what kind of study this Dataset is (dims {dict(ds.sizes)}, variables "
        f"{list(ds.data_vars)[:8]}): expected 'recognition' (rater, model, day) for a trajectory "
        "study, 'score' (sample, model, code) for a replay study or a 'conversation' dim for a "
        "replicated one; or set attrs['kind']."
    )


def analyse(
    study: xr.Dataset | str | Path,
    *,
    run_dir: str | Path | None = None,
    overrides: list[str] | None = None,
    **options: Any,
) -> Analysis:
    """Run the configured stages on ``study`` and return the :class:`Analysis`.

    Parameters
    ----------
    study
        A study ``Dataset`` (trajectory, replay or replicated; its kind is read from it) or the
        path of a study (netCDF file or CSV folder; ``data.kind`` from ``options`` if not a
        trajectory study).
    run_dir
        Where the run writes its files; default a new temporary folder (kept: the result reads
        it lazily).
    overrides
        Hydra overrides as on the command line (``["sampler.draws=200"]``).
    **options
        The same as keywords: ``experiment="smoke"``, ``stages=["baselines"]``,
        ``sampler={"draws": 200}``.

    Examples
    --------
    >>> import delusion_bayes as db  # doctest: +SKIP
    >>> res = db.analyse(db.data.simulate_study("small"), stages=["baselines"])  # doctest: +SKIP
    >>> res.tables["baselines/table1_milestones"].head()  # doctest: +SKIP
    """
    from .config import compose
    from .pipeline import run

    given = [*overrides_from(options), *(overrides or [])]
    dataset = None
    if isinstance(study, xr.Dataset):
        dataset = study
        given = [*given, f"data.kind={study_kind(study)}"]
    else:
        path = Path(study).expanduser()
        given = [*given, f"data.path={path}"]
    cfg = compose(given)
    folder = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="db-run-"))
    run(cfg, folder, dataset=dataset)
    return Analysis(folder)


@dataclass
class Analysis:
    """What one run found, read from its folder: ``tables`` (``"stage/name"`` → DataFrame),
    ``posteriors`` (fit → DataTree), ``gates`` (fit → the gate record), ``skipped`` (the analyses
    the study could not support, with the reason), ``record`` (``run.json``).
    :meth:`write_supplement` writes the paper supplement."""

    run_dir: Path

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)

    @cached_property
    def record(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "run.json").read_text())

    @property
    def stages(self) -> dict[str, str]:
        """Each configured stage's status (``ok``, ``skipped``, ``failed``, ``interrupted``)."""
        return {n: r.get("status", "") for n, r in (self.record.get("stages") or {}).items()}

    @cached_property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every CSV the stages wrote, as ``"stage/name"`` (``"models/joint/t50_posterior"``)."""
        out = {}
        for p in sorted(self.run_dir.glob("*/**/*.csv")):
            if p.relative_to(self.run_dir).parts[0] == "report":  # the supplement's copies
                continue
            out[p.relative_to(self.run_dir).with_suffix("").as_posix()] = pd.read_csv(p)
        return out

    @cached_property
    def posteriors(self) -> dict[str, xr.DataTree]:
        """Each Bayesian fit's saved posterior (``models/<fit>/posterior.nc`` and the replay
        stage's), opened as a DataTree."""
        out = {}
        for p in sorted(self.run_dir.glob("*/**/posterior.nc")):
            key = p.parent.relative_to(self.run_dir).as_posix()
            out[key.removeprefix("models/")] = xr.open_datatree(p)
        return out

    @cached_property
    def gates(self) -> dict[str, dict[str, Any]]:
        """Each fit's diagnostics gate (``passed``, ``reasons``, the attempts)."""
        return {
            p.parent.relative_to(self.run_dir).as_posix().removeprefix("models/"): json.loads(
                p.read_text()
            )
            for p in sorted(self.run_dir.glob("*/**/gate.json"))
        }

    @cached_property
    def skipped(self) -> list[dict[str, Any]]:
        """The analyses the study could not support: ``{stage, analysis, reason}``."""
        out = []
        for p in sorted(self.run_dir.glob("*/index.json")):
            for s in json.loads(p.read_text()).get("skipped") or []:
                out.append({"stage": p.parent.name, **s})
        return out

    @property
    def failed(self) -> list[str]:
        return list(self.record.get("failed") or [])

    def write_supplement(self, target: str | Path | None = None, report: Any = None) -> Path:
        """Build the supplement (``supplement.html``/``.md``) from this run's files (nothing is
        refitted) and return its HTML path; with ``target``, the run folder is first copied
        there (the supplement links its tables and figures by relative path)."""
        from .report import build_supplement

        folder = self.run_dir
        if target is not None:
            folder = Path(target)
            shutil.copytree(self.run_dir, folder, dirs_exist_ok=True)
        return Path(build_supplement(folder, report).html)

    def __repr__(self) -> str:
        sizes = (self.record.get("data") or {}).get("sizes", {})
        gates = ", ".join(
            f"{k} {'passed' if g.get('passed') else 'FAILED'}" for k, g in self.gates.items()
        )
        return (
            f"Analysis({self.run_dir}: {(self.record.get('data') or {}).get('kind')} study "
            f"{sizes}; stages {self.stages}; gates: {gates or 'none'}; "
            f"{len(self.skipped)} analyses skipped)"
        )
