"""Find the jobs of a Hydra multirun directory and say, for each, what happened.

A job folder holds Hydra's ``.hydra/overrides.yaml`` and, when the pipeline got that far,
``run.json`` (:func:`delusion_bayes.pipeline.run`) and ``job.json`` (:mod:`.callbacks`, written
whatever happened). A job's status is ``ok`` (``run.json`` complete, no stage failed), ``failed``
(a stage failed, or the job raised before ``run.json`` existed: error from ``job.json``, else the
log), ``incomplete`` (``run.json`` without its final record: killed or still running) or
``missing`` (neither file: the job died before the pipeline started).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: job statuses, from best to worst
STATUSES: tuple[str, ...] = ("ok", "failed", "incomplete", "missing")


@dataclass
class Job:
    """One job of a multirun: its directory, ``name`` relative to the multirun directory
    (``"0"``, ...), ``overrides`` (``{key: value}`` strings from ``.hydra/overrides.yaml``,
    leading ``+``/``++`` stripped), ``status`` (one of :data:`STATUSES`), ``error`` (empty when
    ok), ``seconds`` (of the pipeline, else of the job) and ``run`` (``run.json``, or ``{}``)."""

    path: Path
    name: str
    overrides: dict[str, str] = field(default_factory=dict)
    status: str = "missing"
    error: str = ""
    seconds: float | None = None
    run: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def parse_overrides(lines: list[str]) -> dict[str, str]:
    """``["baselines.stable_run=2", "+x.y=1", "~z"]`` -> ``{"baselines.stable_run": "2", ...}``;
    a deletion ``~key`` maps to ``"<deleted>"``, a line without ``=`` to an empty value."""
    out: dict[str, str] = {}
    for line in lines:
        text = str(line).strip()
        if not text:
            continue
        key, _, value = text.removeprefix("~").partition("=")
        if text.startswith("~"):
            out[key] = "<deleted>" if not value else f"<deleted {value}>"
        else:
            out[key.lstrip("+")] = value
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        log.warning("cannot read %s (%s); treating it as absent", path, err)
        return None
    return data if isinstance(data, dict) else None


def _read_overrides(job_dir: Path) -> dict[str, str]:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return {}
    from omegaconf import OmegaConf

    try:
        lines = OmegaConf.to_container(OmegaConf.load(path))
    except Exception as err:  # a damaged file must not stop a summary of many jobs
        log.warning("cannot read %s: %s", path, err)
        return {}
    return parse_overrides([str(x) for x in (lines or [])])


def _log_error(job_dir: Path, max_lines: int = 3) -> str:
    """The last ERROR/exception lines of the job's Hydra log file(s), or ''."""
    lines: list[str] = []
    for path in sorted(job_dir.glob("*.log")):
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        lines += [ln.strip() for ln in text if "ERROR" in ln or "Error" in ln or "Exception" in ln]
    return " | ".join(lines[-max_lines:])


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


def read_job(job_dir: str | Path, root: str | Path | None = None) -> Job:
    """Read one job directory (see the module docstring for the status rules)."""
    job_dir = Path(job_dir)
    name = job_dir.relative_to(root).as_posix() if root is not None else job_dir.name
    job = Job(path=job_dir, name=name, overrides=_read_overrides(job_dir))
    run = _read_json(job_dir / "run.json")
    status = _read_json(job_dir / "job.json")
    if run is not None:
        job.run = run
        stages = run.get("stages", {}) if isinstance(run.get("stages"), dict) else {}
        bad = (s for s, r in stages.items() if isinstance(r, dict) and r.get("status") == "failed")
        failed = list(dict.fromkeys([*run.get("failed", []), *bad]))
        if failed:
            job.status = "failed"
            job.error = "; ".join(
                f"{s}: {_first_line(stages.get(s, {}).get('error', 'failed (no message)'))}"
                for s in failed
            )
        elif "seconds" not in run:
            job.status = "incomplete"
            done = [s for s, rec in stages.items() if isinstance(rec, dict)]
            job.error = "run.json has no final record: the job was killed or is still running" + (
                f" (last stage recorded: {done[-1]})" if done else " (no stage finished)"
            )
        else:
            job.status = "ok"
        job.seconds = run.get("seconds")
    if status is not None:
        job.seconds = status.get("seconds") if job.seconds is None else job.seconds
        if status.get("status") == "failed" and job.status in ("ok", "missing", "incomplete"):
            # the pipeline raised outside a stage (config, data loading) or the job died after it
            job.status = "failed"
            job.error = job.error or _first_line(status.get("error", "")) or "failed (no message)"
        elif status.get("status") == "ok" and job.status == "missing":
            job.status = "ok"
    if job.status == "missing":
        found = _log_error(job_dir)
        job.error = "no run.json and no job.json: the job died before the pipeline started" + (
            f"; its log says: {found}" if found else "; rerun it alone to see the traceback"
        )
    return job


def find_job_dirs(sweep_dir: str | Path) -> list[Path]:
    """Job directories under a multirun dir: every folder holding ``.hydra/overrides.yaml`` (or a
    ``run.json``), sorted numerically where the names are job numbers; ValueError when
    ``sweep_dir`` is not a directory or holds no job."""
    root = Path(sweep_dir)
    if not root.is_dir():
        raise ValueError(
            f"multirun directory {str(root)!r} does not exist; pass the `hydra.sweep.dir` of a "
            "`delusion-bayes -m ...` sweep (it holds multirun.yaml and one folder per job)"
        )
    dirs = {p.parent.parent for p in root.rglob(".hydra/overrides.yaml")}
    dirs |= {p.parent for p in root.rglob("run.json")}
    if not dirs:
        raise ValueError(
            f"{str(root)!r} holds no job (no */.hydra/overrides.yaml or */run.json): is it the "
            "sweep directory of a multirun (`hydra.sweep.dir`)?"
        )

    def key(p: Path) -> tuple:
        rel = p.relative_to(root).parts
        return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in rel)

    return sorted(dirs, key=key)


def collect_jobs(sweep_dir: str | Path) -> list[Job]:
    """Every job of a multirun directory with its overrides, status and error."""
    root = Path(sweep_dir)
    return [read_job(p, root) for p in find_job_dirs(root)]


def sweep_keys(jobs: list[Job]) -> list[str]:
    """Override keys that vary between jobs, in first-seen order (the sweep's choices)."""
    keys = dict.fromkeys(k for job in jobs for k in job.overrides)
    return [k for k in keys if len({job.overrides.get(k) for job in jobs}) > 1]
