"""Run the configured stages on one study: the testable core behind the ``delusion-bayes`` CLI.
Each stage gets the config nodes it ``NEEDS`` and writes ``run_dir/<stage>/``; a failing stage is
recorded in ``run.json``, the others still run, then :class:`PipelineError` is raised."""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import shutil
import signal
import threading
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import xarray as xr
from omegaconf import OmegaConf

from .errors import ConfigError, RunInterrupted, UserError
from .provenance import dataset_hash, provenance
from .stages import STAGES

log = logging.getLogger(__name__)

KINDS = ("trajectory", "replay", "replicated")


class PipelineError(RuntimeError):
    """One or more stages failed; ``run.json`` in the run directory says which and why."""


class RunDirError(UserError, RuntimeError):
    """The run folder already holds another run's results and ``overwrite`` was not given."""


#: stages that read or write the shared cache (compiled models, fits, embeddings)
CACHE_STAGES = ("text", "models", "replay", "design")

#: what a run writes at the top of its folder, besides one folder per stage
RUN_FILES = (
    "study.nc",
    "run.json",
    "config.yaml",
    "supplement.html",
    "supplement.md",
    "supplement.pdf",
)


def _is_hydra_entry(p: Path) -> bool:
    """Entries Hydra and its callbacks put in the run folder themselves (not results)."""
    return p.name in (".hydra", "job.json") or (p.is_file() and p.suffix == ".log")


def previous_results(run_dir: Path) -> list[str]:
    """Names in ``run_dir`` that a run (or the user) put there: everything but Hydra's own."""
    if not run_dir.is_dir():
        return []
    return sorted(p.name for p in run_dir.iterdir() if not _is_hydra_entry(p))


def _check_run_dir(run_dir: Path, overwrite: bool) -> list[str]:
    """Refuse a used run folder unless ``overwrite``: a run must never show another's results."""
    found = previous_results(run_dir)
    if found and not overwrite:
        shown = found[:8] + (["..."] if len(found) > 8 else [])
        raise RunDirError(
            f"run folder {run_dir} is not empty (it holds {shown}); a run writes into an empty "
            "folder so that its supplement never shows another run's results. Choose a new "
            "folder (hydra.run.dir=...), or pass overwrite=true to replace the results of the "
            "stages this run reruns (any other stage folder is kept only if it was made from "
            "the same data with the same settings)."
        )
    return found


#: top-level keys that do not change a run's results; ``cache_dir`` is dropped at every depth
_NOT_RESULTS = ("cache_dir", "overwrite", "resume")


def _results_settings(plain: Any, top: bool = True) -> Any:
    """A plain config less :data:`_NOT_RESULTS` (the settings that make a run's results)."""
    if not isinstance(plain, dict):
        return plain
    drop = _NOT_RESULTS if top else ("cache_dir",)
    return {k: _results_settings(v, False) for k, v in plain.items() if k not in drop}


def _settings(cfg: Any) -> dict[str, Any]:
    """The resolved config as ``config.yaml`` holds it, less :data:`_NOT_RESULTS`."""
    plain = OmegaConf.to_container(OmegaConf.create(OmegaConf.to_yaml(cfg, resolve=True)))
    return _results_settings(plain)


def finished_run(run_dir: str | Path, cfg: Any) -> dict[str, Any] | None:
    """``resume=true``: the ``run.json`` record of ``run_dir`` when it holds a run that finished
    (final record written; a killed job never writes it) with every stage ok or skipped, and
    whose ``config.yaml`` equals ``cfg`` (resolved, :data:`_NOT_RESULTS` aside); else None."""
    run_dir = Path(run_dir)
    try:
        record = json.loads((run_dir / "run.json").read_text())
        before = OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml"))
    except Exception:  # noqa: BLE001 - nothing readable there: not finished
        return None
    if not isinstance(record, dict) or "seconds" not in record or record.get("failed"):
        return None
    stages = record.get("stages") or {}
    if any(stages.get(n, {}).get("status") not in ("ok", "skipped") for n in cfg.stages):
        return None
    if _results_settings(before) != _settings(cfg):
        log.info("resume: %s was made with other settings; redoing it", run_dir)
        return None
    return record


def _stage_config(cfg: Any, name: str) -> Any:
    """The part of ``cfg`` stage ``name`` reads (resolved, plain), or None if unknown."""
    try:
        module = _stage_module(name)
        sub = OmegaConf.to_container(sub_config(cfg, tuple(module.NEEDS)), resolve=True)
    except Exception:  # noqa: BLE001 - an old config that no longer composes: not reusable
        return None
    sub.pop("cache_dir", None)  # where caches live does not change a result
    return sub


def _clear_previous(run_dir: Path, cfg: Any, data_hash: str) -> dict[str, Any]:
    """``overwrite=true``: remove the previous run's files and the folders of the stages this
    run reruns; keep another stage's folder only when the previous ``run.json`` says it ran ok
    on this data hash with the same stage settings. Returns the kept stages' records."""
    old_record: dict[str, Any] = {}
    old_cfg = None
    try:
        old_record = json.loads((run_dir / "run.json").read_text())
        old_cfg = OmegaConf.load(run_dir / "config.yaml")
    except Exception:  # noqa: BLE001 - unreadable run.json/config.yaml: nothing is kept
        pass
    old_hash = (old_record.get("provenance") or {}).get("data_hash")
    kept: dict[str, Any] = {}
    for name in STAGES:
        folder = run_dir / name
        if not folder.exists():
            continue
        status = (old_record.get("stages") or {}).get(name, {})
        reason = None
        if name in cfg.stages or name == "report":
            reason = "rerun by this run"
        elif old_hash != data_hash:
            reason = (
                f"made from another study (data hash {str(old_hash)[:12]}, now {data_hash[:12]})"
            )
        elif status.get("status") != "ok":
            reason = f"its previous status is {status.get('status', 'unknown')!r}"
        else:
            before = None if old_cfg is None else _stage_config(old_cfg, name)
            if before is None or before != _stage_config(cfg, name):
                reason = "made with other settings (or its settings cannot be read)"
        if reason is None:
            kept[name] = {**status, "kept_from": old_record.get("started")}
            log.warning(
                "overwrite: keeping %s/ from the previous run (same data and settings)", name
            )
            continue
        log.warning("overwrite: removing %s/ (%s)", folder, reason)
        shutil.rmtree(folder) if folder.is_dir() else folder.unlink()
    for fname in RUN_FILES:
        (run_dir / fname).unlink(missing_ok=True)
    return kept


def resolve_source(data_cfg: Any) -> None:
    """A study path given to the simulating default means that study: ``data.path=DIR`` without
    ``data=file`` sets ``data.source=file`` (in place, so ``config.yaml`` and the supplement say
    so) instead of quietly analysing the simulated study. A path is an error only where the
    source cannot read one."""
    if OmegaConf.is_missing(data_cfg, "path") or not data_cfg.get("path"):
        return
    if data_cfg.source == "simulate":
        log.warning(
            "data.path=%s given without data=file: reading that study (data.source=file), "
            "not simulating one",
            data_cfg.path,
        )
        data_cfg.source = "file"


def check_names(cfg: Any) -> None:
    """Every name the config refers to, checked before any work: the stages, the models
    (``model.name``, ``model.also_fit``, where a stage fits them) and each contrast's quantities
    and alternative. One :class:`ConfigError` line names the setting, the bad value and the
    known names."""
    if unknown := [n for n in cfg.stages if n not in STAGES]:
        raise ConfigError(
            f"unknown stage(s) {unknown} in `stages`; available stages: {list(STAGES)}."
        )
    if {"models", "design"} & set(cfg.stages) and "model" in cfg:
        from .models import MODEL_NAMES

        for key in ("name", "also_fit"):
            given = cfg.model.get(key)
            names = [given] if isinstance(given, str) else list(given or [])
            if bad := [str(n) for n in names if str(n) not in MODEL_NAMES]:
                raise ConfigError(
                    f"model.{key} names unknown model(s) {bad}; known models: {list(MODEL_NAMES)}."
                )
    if "baselines" not in cfg:
        return
    from .baselines.config import ALTERNATIVES, FAMILIES, QUANTITIES

    if cfg.baselines.get("family", "run") not in FAMILIES:
        raise ConfigError(
            f"baselines.family={cfg.baselines.get('family')!r}; expected one of {list(FAMILIES)} "
            "(the tests whose p-values are adjusted together)."
        )

    for i, c in enumerate(cfg.baselines.get("contrasts") or []):
        label = f"baselines.contrasts[{i}] ({c.get('name')!r})"
        if bad := [str(q) for q in c.get("quantities") or [] if str(q) not in QUANTITIES]:
            raise ConfigError(
                f"{label}: unknown quantities {bad}; known quantities: {list(QUANTITIES)}."
            )
        if c.get("alternative") not in ALTERNATIVES:
            raise ConfigError(
                f"{label}: alternative={c.get('alternative')!r}; expected one of "
                f"{list(ALTERNATIVES)}."
            )


def load_data(data_cfg: Any) -> xr.Dataset:
    """Load or simulate the study described by the ``data`` config node, validated."""
    kind, source = data_cfg.kind, data_cfg.source
    if kind not in KINDS:
        raise ConfigError(f"data.kind = {kind!r}; expected one of {list(KINDS)}.")
    overrides = dict(data_cfg.get("overrides") or {})
    if source == "simulate" and kind == "replicated":
        from .data.replicated_simulate import PRESETS, simulate_replicated

        if data_cfg.preset not in PRESETS:
            raise ConfigError(
                f"data.preset = {data_cfg.preset!r} is not a replicated preset; expected one of "
                f"{list(PRESETS)} (data=replicated simulates one), or read a study: "
                "data=spiral_bench data.path=DIR, or data.path=DIR (a replicated CSV folder or "
                ".nc file)"
            )
        return simulate_replicated(preset=data_cfg.preset, seed=int(data_cfg.seed), **overrides)
    if source == "simulate" and kind == "trajectory":
        from .data import simulate_study

        return simulate_study(preset=data_cfg.preset, seed=int(data_cfg.seed), **overrides)
    if source == "simulate":
        from .data.replay import simulate_replay

        return simulate_replay(seed=int(data_cfg.seed), **overrides)
    if source not in ("file", "delusioneval", "inspect", "spiral_bench"):
        raise ConfigError(
            f"data.source = {source!r}; expected 'simulate', 'file', 'delusioneval', 'inspect' "
            "or 'spiral_bench'."
        )
    if source == "spiral_bench" and kind != "replicated":
        raise ConfigError(
            "data.source = 'spiral_bench' reads a replicated study; set data.kind=replicated "
            "(experiment=replicated does)"
        )
    if source in ("delusioneval", "inspect") and kind != "replay":
        raise ConfigError(
            f"data.source = {source!r} reads a replay study; set data.kind=replay "
            "(experiment=replay does)"
        )
    if not data_cfg.path:
        wanted = {
            "file": "a .nc file or a CSV dir",
            "delusioneval": "eval_rows.parquet",
            "inspect": "Inspect .eval/.json logs or their folder",
            "spiral_bench": "a Spiral-Bench result .json or a folder of them",
        }[source]
        raise ConfigError(f"data.source = {source!r} needs data.path ({wanted}).")
    path = Path(str(data_cfg.path)).expanduser()
    if source == "delusioneval":  # the release's evaluation rows; overrides name optional CSVs
        from .data.delusioneval import load_delusioneval

        return load_delusioneval(
            path, cutoffs=overrides.get("cutoffs"), participants=overrides.get("participants")
        )
    if source == "inspect":
        from .data.inspect_logs import load_inspect_logs

        return load_inspect_logs(
            path,
            score=data_cfg.get("score"),
            code_key=data_cfg.get("code_key"),
            cluster_keys=list(data_cfg.get("cluster_keys") or []),
            cutoff=data_cfg.get("cutoff"),
            cutoffs=overrides.get("cutoffs"),
            turn_key=data_cfg.get("turn_key"),
        )
    if source == "spiral_bench":
        from .data.spiral_bench import load_spiral_bench

        return load_spiral_bench(path)
    if kind == "trajectory":
        from .data import load_study as load
    elif kind == "replicated":
        from .data.replicated_io import load_replicated as load
    else:
        from .data import load_replay as load
    return load(path)


def _stage_module(name: str):
    if name not in STAGES:
        raise ConfigError(f"unknown stage {name!r} in `stages`; available stages: {list(STAGES)}.")
    return importlib.import_module(f".stages.{name}", __package__)


def sub_config(cfg: Any, needs: tuple[str, ...]) -> Any:
    if missing := [n for n in needs if n not in cfg]:
        raise ConfigError(f"config has no node(s) {missing} that the stage needs.")
    # the shared cache root reaches every stage (compiled models, fits, embeddings)
    keys = list(needs) + (["cache_dir"] if "cache_dir" in cfg and "cache_dir" not in needs else [])
    return OmegaConf.masked_copy(cfg, keys)


def _default_run_dir() -> Path:
    try:
        from hydra.core.hydra_config import HydraConfig

        return Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return Path.cwd()


def run(
    cfg: Any, run_dir: str | Path | None = None, *, dataset: xr.Dataset | None = None
) -> dict[str, Any]:
    """Run the configured stages on the configured study into ``run_dir`` (default Hydra's output
    directory, else the working directory); returns ``run.json``'s content. :class:`RunDirError`
    when ``run_dir`` holds results (not Hydra's own files) and neither ``cfg.overwrite``
    (:func:`_clear_previous`) nor ``cfg.resume`` (:func:`finished_run`) is set. ``dataset``: a
    study in memory instead of the ``data`` node's (``db.analyse``; validated like a loaded one,
    ``data.source`` recorded as ``dataset``)."""
    run_dir = Path(run_dir) if run_dir is not None else _default_run_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    from_run = cfg.get("report", {}).get("from_run") if "report" in cfg else None
    if from_run:
        from .report import build_supplement

        log.info("rebuilding the supplement of %s without refitting", from_run)
        return {"supplement": str(build_supplement(Path(str(from_run)), cfg.report))}
    check_names(cfg)  # a typo'd name is one line now, not a failed stage after the others ran
    if {"models", "design"} & set(cfg.stages) and "sampler" in cfg:  # bad NUTS settings: first
        from .inference.config import check_sampler_settings

        s = cfg.sampler
        check_sampler_settings(
            **{k: s.get(k) for k in ("draws", "tune", "chains", "target_accept")},
            cores=s.get("cores", 1),
        )
    if dataset is not None:
        cfg.data.source = "dataset"  # config.yaml says where the study came from
    resolve_source(cfg.data)
    overwrite = bool(cfg.get("overwrite", False))
    if cfg.get("resume", False):
        done = finished_run(run_dir, cfg)
        if done is not None:
            log.info("resume: %s already holds this run, finished ok; nothing to do", run_dir)
            return done
        overwrite = True  # killed, cancelled, failed or other settings: redo it in place
    found = _check_run_dir(run_dir, overwrite)
    cache_dir = cfg.get("cache_dir")
    if cache_dir and set(cfg.stages) & set(CACHE_STAGES):
        from .inference.cache import private_dir

        private_dir(str(cache_dir))  # before any work: a cache others can write is refused
    with interruptible():
        if cache_dir:
            return _with_cache_env(str(cache_dir), _run, cfg, run_dir, found, dataset)
        return _run(cfg, run_dir, found, dataset)


#: the signals that end a run cleanly: a cluster's time limit (SIGTERM), Ctrl-C (SIGINT)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def interruptible():
    """While a run is in progress, SIGTERM and SIGINT raise :class:`RunInterrupted` in the main
    thread, so the run closes its background processes and records the interruption on the way
    out (Python's default for SIGTERM ends the process at once: no ``finally`` runs, and the
    compile prefetch's child was left running). A second signal during that clean-up is
    ignored; the previous handlers return afterwards. Outside the main thread (a signal handler
    can only be set there) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        raise RunInterrupted(signum)

    before = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _with_cache_env(cache_dir: str, fn, *args):
    """Run ``fn`` with ``$DELUSION_BAYES_CACHE`` = ``cache_dir`` (restored afterwards), so that
    every cache, wherever it is opened, lives under the configured ``cache_dir``."""
    from .inference.cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = cache_dir
    try:
        return fn(*args)
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def _failure(err: Exception) -> dict[str, Any]:
    """A failed stage's ``run.json`` record (called in the ``except`` block)."""
    tb = traceback.format_exc()
    return {"status": "failed", "error": f"{type(err).__name__}: {err}", "traceback": tb}


def validated(ds: xr.Dataset, kind: str) -> xr.Dataset:
    """A study given in memory, checked as a loaded one of its ``kind`` is."""
    if kind not in KINDS:
        raise ConfigError(f"data.kind = {kind!r}; expected one of {list(KINDS)}.")
    if kind == "trajectory":
        from .data.validate import validate as check
    elif kind == "replay":
        from .data.replay_schema import validate_replay as check
    else:
        from .data.replicated import validate_replicated as check
    return check(ds)


def _run(cfg: Any, run_dir: Path, found: list[str], dataset=None) -> dict[str, Any]:
    started = time.perf_counter()
    log.info("loading the study (%s, %s)", cfg.data.kind, cfg.data.source)
    ds = load_data(cfg.data) if dataset is None else validated(dataset, cfg.data.kind)
    kept: dict[str, Any] = _clear_previous(run_dir, cfg, dataset_hash(ds)) if found else {}
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))
    if cfg.data.kind == "trajectory":
        from .data import save_study as save
    elif cfg.data.kind == "replicated":
        from .data.replicated_io import save_replicated as save
    else:
        from .data.replay import save_replay as save
    save(ds, run_dir / "study.nc")
    record: dict[str, Any] = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "provenance": provenance(cfg, ds),
        "data": {"kind": cfg.data.kind, "sizes": {str(k): int(v) for k, v in ds.sizes.items()}},
        "stages": dict(kept),
    }

    def write_record() -> None:
        (run_dir / "run.json").write_text(json.dumps(record, indent=2, default=str))

    write_record()
    prepared: dict[str, Any] = {}
    try:
        prepared.update(_prepare_stages(ds, cfg, run_dir))
        failed = _run_stages(ds, cfg, run_dir, record, write_record, prepared)
    except RunInterrupted as stop:
        _close(prepared)  # first: a background compile must not outlive the run
        running = [n for n, r in record["stages"].items() if r.get("status") == "running"]
        record["interrupted"] = {
            "signal": stop.signal,
            "stage": running[0] if running else None,
            "after_seconds": round(time.perf_counter() - started, 3),
        }
        for n in running:
            record["stages"][n] = {**record["stages"][n], "status": "interrupted"}
        write_record()
        log.error(
            "run interrupted by %s%s; run.json records it",
            stop.signal,
            f" during stage {running[0]}" if running else "",
        )
        raise
    finally:
        _close(prepared)
    record.update(seconds=round(time.perf_counter() - started, 3), failed=failed)
    write_record()
    if failed:
        raise PipelineError(
            f"stage(s) {failed} failed; see {run_dir / 'run.json'} and the log for tracebacks."
        )
    log.info("run finished in %.1f s: %s", record["seconds"], run_dir)
    return record


def _close(prepared: dict[str, Any]) -> None:
    """Close (and forget) every ``prepare`` handle still open: the compile prefetch's child ends
    here on every way out of a run, a failure or an interruption included."""
    while prepared:
        prepared.popitem()[1].close()


def _prepare_stages(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Call each configured stage's optional ``prepare(ds, cfg, run_dir, first=...)`` before any
    stage runs (the models stage starts compiling in the background: ``stages/prefetch.py``);
    returns ``{stage: handle}`` of those that returned one (each has ``close()``). A failing
    ``prepare`` is logged and ignored: it may only save time, never cost a result."""
    handles: dict[str, Any] = {}
    running = []
    for name in cfg.stages:
        try:
            module = _stage_module(name)
        except ImportError:  # reported when the stage runs
            continue
        if cfg.data.kind not in tuple(getattr(module, "KIND", KINDS)):
            continue
        running.append(name)
        if not hasattr(module, "prepare"):
            continue
        try:
            sub = sub_config(cfg, tuple(module.NEEDS))
            handle = module.prepare(ds, sub, run_dir, first=len(running) == 1)
        except Exception as err:  # noqa: BLE001 - the stage itself reports real problems
            log.info("stage %s: not prepared ahead (%s: %s)", name, type(err).__name__, err)
            continue
        if handle is not None:
            handles[name] = handle
    return handles


def _run_stages(ds, cfg, run_dir: Path, record: dict, write_record, prepared: dict) -> list[str]:
    """Run the configured stages in order into ``record``; returns the failed ones. A stage's
    ``prepare`` handle (:func:`_prepare_stages`) is closed when the stage ends."""
    failed: list[str] = []
    for name in list(cfg.stages):
        try:
            module = _stage_module(name)
        except ImportError as err:  # e.g. an optional extra not installed: the stage fails
            failed.append(name)
            record["stages"][name] = _failure(err)
            log.error("stage %s FAILED to import: %s", name, err)
            write_record()
            continue
        kinds = tuple(getattr(module, "KIND", KINDS))
        if cfg.data.kind not in kinds:
            log.info(
                "stage %s: skipped (runs on %s studies, this is %s)", name, kinds, cfg.data.kind
            )
            record["stages"][name] = {"status": "skipped", "reason": f"not for {cfg.data.kind}"}
            continue
        if failed and cfg.get("fail_fast", False) and name != "report":
            record["stages"][name] = {"status": "not run", "reason": f"after failure of {failed}"}
            continue
        log.debug("stage %s: running", name)  # one INFO line per stage: the one with its time
        t0 = time.perf_counter()
        record["stages"][name] = {"status": "running"}  # what a killed run was doing
        write_record()
        try:
            headline = module.run(ds, sub_config(cfg, tuple(module.NEEDS)), run_dir)
            status = {"status": "ok", "headline": headline or {}}
            log.info("stage %s: done in %.1f s", name, time.perf_counter() - t0)
        except Exception as err:  # noqa: BLE001 - recorded, shown in the report, re-raised below
            failed.append(name)
            status = _failure(err)
            log.error("stage %s FAILED: %s\n%s", name, err, status["traceback"])
        if name in prepared:
            prepared.pop(name).close()
        status["seconds"] = round(time.perf_counter() - t0, 3)
        record["stages"][name] = status
        write_record()
    return failed
