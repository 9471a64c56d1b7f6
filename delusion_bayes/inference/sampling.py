"""Run NUTS with the configured sampler (nutpie, PyMC or numpyro; one not importable falls back
to PyMC's) and return a DataTree. numpyro shows its own bar and writes no progress lines."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import DEFAULT_TARGET_ACCEPT, SAMPLERS, SamplerConfig
from .progress import SamplingProgress

log = logging.getLogger(__name__)


def resolve_sampler(name: str) -> str:
    """``name`` if it is usable here, else ``"pymc"`` (logged as a warning); ``ValueError``
    for a name not in :data:`~.config.SAMPLERS`."""
    if name not in SAMPLERS:
        raise ValueError(f"sampler {name!r} is unknown; expected one of {list(SAMPLERS)}")
    needs = {"nutpie": ("nutpie",), "numpyro": ("numpyro", "jax"), "pymc": ()}[name]
    if missing := [m for m in needs if importlib.util.find_spec(m) is None]:
        log.warning(
            "sampler %r is not importable here (missing %s); falling back to PyMC's NUTS. "
            "Install it with `pip install %s` to use it.",
            name,
            ", ".join(missing),
            " ".join(missing),
        )
        return "pymc"
    return name


def compile_dir() -> Path:
    """PyTensor's compile folder (``base_compiledir``; :func:`~.cache.configure_pytensor_cache`
    sets it before PyTensor's first import)."""
    import pytensor

    return Path(pytensor.config.base_compiledir)


#: one-shot tasks this process runs instead of idling while another process holds the compile
#: lock (:func:`while_waiting`)
_IDLE_TASKS: list[Any] = []


@contextlib.contextmanager
def while_waiting(task):
    """Within the block, run ``task()`` (once, at most) the first time this process would wait
    for another process's log-density compile (:func:`compile_lock` without a name), instead of
    leaving its core idle. For work the process needs later that shares no kernel with the
    log-densities: the models stage compiles the latent pass's kernel while the compile
    prefetch (``stages/prefetch.py``) compiles the first fit's log-density. A task not run by
    the end of the block is dropped; one that fails is logged and the wait goes on (it only
    saves time: its caller does the work again when it needs it)."""
    _IDLE_TASKS.append(task)
    try:
        yield
    finally:
        if task in _IDLE_TASKS:
            _IDLE_TASKS.remove(task)


def _run_idle_tasks() -> float:
    """Run the pending :func:`while_waiting` tasks; returns the seconds they took."""
    t_all = time.perf_counter()
    while _IDLE_TASKS:
        task = _IDLE_TASKS.pop(0)
        t0 = time.perf_counter()
        try:
            task()
        except Exception as err:  # noqa: BLE001 - an idle task only saves time
            log.info("while waiting: %s failed (%s: %s)", task, type(err).__name__, err)
            continue
        log.info(
            "while waiting for another process's compile: %s in %.1f s",
            getattr(task, "__name__", task),
            time.perf_counter() - t0,
        )
    return time.perf_counter() - t_all


@contextlib.contextmanager
def compile_lock(name: str | None = None):
    """Hold an exclusive ``flock`` on ``<compile dir>/locks/<name>.lock`` while compiling, so
    that processes sharing one compile cache do not compile at the same time: the second waits,
    then loads the first's kernels from the cache (PyTensor does not lock the numba kernels
    nutpie compiles; docs/design.md). ``name`` None: the lock of every log-density compile
    (:func:`_compile_once`), and a process that finds it held runs its :func:`while_waiting`
    tasks before it waits; a name: a lock of its own, for code that shares no kernel with
    the log-densities (the latent pass's kernel, ``models.marginal``). No lock without
    ``fcntl`` (Windows)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path = compile_dir() / "locks" / f"{name or 'compile'}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        t0, busy = time.perf_counter(), 0.0
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held by another process: use the wait, then wait
            if name is None:
                busy = _run_idle_tasks()
            fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.perf_counter() - t0 - busy
        if waited > 1.0:
            log.info("waited %.0f s for another process compiling %s", waited, name or "")
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def sample(
    model: Any,
    cfg: SamplerConfig | None = None,
    *,
    cache_dir: str | Path | None = None,
    key: str | None = None,
    label: str | None = None,
    graph: str | None = None,
) -> Any:
    """Sample ``model`` (a ``pm.Model``) with the sampler of ``cfg`` (default
    :class:`SamplerConfig`); ``key`` (e.g. ``ModelSpec.hash()``) memoises the compiled nutpie
    model, ``label`` names the fit in the progress lines, ``graph`` (nutpie) identifies the
    graph compiled (:func:`_compile_once`; e.g. ``ModelSpec.hash()`` for a frozen graph).
    Returns a DataTree whose posterior attrs hold ``sampler``, ``sampling_time`` and
    ``compile_time`` (seconds)."""
    cfg = cfg or SamplerConfig()
    name = resolve_sampler(cfg.name)
    chains, cores = int(cfg.chains), max(1, min(int(cfg.cores), int(cfg.chains)))
    target_accept = float(DEFAULT_TARGET_ACCEPT if cfg.target_accept is None else cfg.target_accept)
    t0 = time.perf_counter()
    compile_time = None
    run = _Run(
        label=label or str(getattr(model, "name", "") or "model"),
        total=chains * (int(cfg.tune) + int(cfg.draws)),
        common={"draws": int(cfg.draws), "tune": int(cfg.tune), "chains": chains},
        cores=cores,
        target_accept=target_accept,
    )
    if name == "nutpie":
        dt, compile_time = _sample_nutpie(model, cfg, run, cache_dir, key, graph)
    elif name == "numpyro":
        dt = _sample_numpyro(model, cfg, run)
    else:
        dt = _sample_pymc(model, cfg, run)
    dt.posterior.attrs.update(
        sampler=name,
        sampler_requested=cfg.name,
        target_accept=target_accept,
        tune=int(cfg.tune),
        total_time=time.perf_counter() - t0,
    )
    if compile_time is not None:
        dt.posterior.attrs["compile_time"] = compile_time
    return dt


@dataclass(frozen=True)
class _Run:
    """What every sampler gets: ``common`` (draws, tune, chains) and the settings resolved by
    :func:`sample`; ``label`` and ``total`` (steps) for the progress lines."""

    label: str
    total: int
    common: dict[str, int]
    cores: int
    target_accept: float


def _sample_nutpie(model: Any, cfg: SamplerConfig, run: _Run, cache_dir, key, graph) -> tuple:
    """nutpie, its compiled model memoised under ``key`` when ``cfg.share_graph`` (else this
    study's graph with its data frozen in); returns the fit and the compile time (without the
    time waited for another process's compile)."""
    import nutpie
    from pymc.sampling.mcmc import patch_nutpie_idata

    compiled, compile_time = compile_nutpie(
        model,
        share_graph=bool(cfg.share_graph),
        key=key,
        graph=graph,
        cache_dir=cache_dir if cfg.compile_cache else None,
    )
    log.info("compiled %s in %.1f s", run.label, compile_time)
    ts = time.perf_counter()
    # our own bar and log lines: nutpie's writes no log lines and floods a non-terminal stderr
    with SamplingProgress(run.label, run.total, bar=bool(cfg.progressbar)) as progress:
        dt = nutpie.sample(
            compiled,
            **run.common,
            cores=run.cores,
            seed=int(cfg.seed),
            save_warmup=False,
            progress_bar=False,
            progress_callback=progress.nutpie_callback,
            progress_rate=500,
            target_accept=run.target_accept,
            adaptation=str(cfg.adaptation),
        )
    patch_nutpie_idata(dt, model, sampling_time=time.perf_counter() - ts)
    return dt, compile_time


def compile_nutpie(
    model: Any,
    *,
    share_graph: bool,
    key: str | None = None,
    graph: str | None = None,
    cache_dir: str | Path | None = None,
) -> tuple[Any, float]:
    """nutpie's compiled ``model`` and the seconds spent compiling it (not waiting for another
    process): memoised under ``key`` with ``share_graph``
    (:func:`~.cache.compiled_nutpie`), else this study's graph with its data frozen in;
    ``graph`` identifies what is compiled for :func:`_compile_once`."""
    from .cache import compiled_nutpie, memoised_models

    spent = [0.0]

    def compile_():
        tc = time.perf_counter()
        out = compiled_nutpie(
            model, cache_dir=cache_dir, key=key if share_graph else None, freeze=not share_graph
        )
        spent[0] += time.perf_counter() - tc
        return out

    if share_graph and key is not None and key in memoised_models():
        compiled = compile_()  # compiled in this process already: no compile, no lock
    else:
        compiled = _compile_once(compile_, graph, share_graph=share_graph)
    return compiled, spent[0]


def graph_marker(graph: str, *, share_graph: bool) -> Path:
    """The file that says graph ``graph`` is compiled into the cache (:func:`_compile_once`)."""
    from .cache import compiled_marker

    return compiled_marker(compile_dir(), graph, {"graph": "nutpie", "share": share_graph})


def _compile_once(compile_, graph: str | None, *, share_graph: bool):
    """``compile_()`` so that processes sharing the compile cache compile a graph once and never
    two graphs at a time (two cold compiles side by side once broke a design sweep,
    docs/design.md): under :func:`compile_lock`, after which the graph's marker
    (:func:`~.cache.compiled_marker` in the compile folder) says it is in the cache. A graph
    with a marker is loaded without the lock: loading reads the cache and writes nothing, so it
    need not wait for another process's compile of another graph (the compile prefetch,
    ``stages/prefetch.py``, compiles the next fits' graphs meanwhile)."""
    if graph is None:
        with compile_lock():
            return compile_()
    marker = graph_marker(graph, share_graph=share_graph)
    if marker.exists():
        return compile_()
    with compile_lock():
        if not marker.exists():
            compiled = compile_()
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
            return compiled
    return compile_()  # another process compiled it while this one waited


def _sample_numpyro(model: Any, cfg: SamplerConfig, run: _Run) -> Any:
    import pymc as pm

    chain_method = "parallel" if run.cores > 1 else "sequential"
    return pm.sample(
        **run.common,
        random_seed=int(cfg.seed),
        nuts_sampler="numpyro",
        nuts_sampler_kwargs={"chain_method": chain_method, "target_accept": run.target_accept},
        progressbar=bool(cfg.progressbar),
        model=model,
    )


def _sample_pymc(model: Any, cfg: SamplerConfig, run: _Run) -> Any:
    import pymc as pm

    with SamplingProgress(run.label, run.total, bar=bool(cfg.progressbar)) as progress:
        return pm.sample(
            **run.common,
            cores=run.cores,
            random_seed=int(cfg.seed),
            nuts_sampler="pymc",
            target_accept=run.target_accept,
            progressbar=False,
            callback=progress.pymc_callback,
            compute_convergence_checks=False,
            model=model,
        )
