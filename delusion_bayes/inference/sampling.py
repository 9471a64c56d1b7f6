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


@contextlib.contextmanager
def compile_lock():
    """Hold ``<PyTensor's compile dir>/.compile.lock`` (an exclusive ``flock``) while compiling,
    so that processes sharing one compile cache compile one at a time (PyTensor does not lock
    the numba kernels nutpie compiles; docs/design.md). No lock without ``fcntl`` (Windows)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    import pytensor

    path = Path(pytensor.config.base_compiledir) / ".compile.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        t0 = time.perf_counter()
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.perf_counter() - t0
        if waited > 1.0:
            log.info("waited %.0f s for another process compiling into %s", waited, path.parent)
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
) -> Any:
    """Sample ``model`` (a ``pm.Model``) with the sampler of ``cfg`` (default
    :class:`SamplerConfig`); ``key`` (e.g. ``ModelSpec.hash()``) memoises the compiled nutpie
    model, ``label`` names the fit in the progress lines. Returns a DataTree whose posterior
    attrs hold ``sampler``, ``sampling_time`` and ``compile_time`` (seconds)."""
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
        dt, compile_time = _sample_nutpie(model, cfg, run, cache_dir, key)
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


def _sample_nutpie(model: Any, cfg: SamplerConfig, run: _Run, cache_dir, key) -> tuple[Any, float]:
    """nutpie, its compiled model memoised under ``key`` when ``cfg.share_graph`` (else this
    study's graph with its data frozen in); returns the fit and compile time."""
    import nutpie
    from pymc.sampling.mcmc import patch_nutpie_idata

    from .cache import compiled_nutpie

    with compile_lock():  # the time waited for another process is logged there, not counted
        tc = time.perf_counter()
        compiled = compiled_nutpie(
            model,
            cache_dir=cache_dir if cfg.compile_cache else None,
            key=key if cfg.share_graph else None,
            freeze=not cfg.share_graph,
        )
        compile_time = time.perf_counter() - tc
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
