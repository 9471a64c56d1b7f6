"""Compile the models stage's log-densities in a second process while the stages before it run.

On a fresh machine a third of the main job was compiling: numba's type inference and LLVM for
the PyTensor kernels of each fit's log-density (nutpie) and for the package's latent-pass kernel.
Compiling runs on one core, and the stages before ``models`` (baselines, text) and every compile
left the second core of a 2-core machine idle. So the pipeline starts this module as a child
process right after it has written ``study.nc`` and ``config.yaml``
(:func:`delusion_bayes.stages.models.prepare`). The child builds each planned fit's graph from
the stage's own :func:`~.fit_plan.fit_arguments` and compiles it into the shared compile cache, in
the stage's order (a graph compiled already is skipped), and compiles the latent pass's kernel
after the first model that needs it; the stage then loads each from the cache. The child changes
no result, only when compiling happens (``experiments/bench/bench_main_job.py`` compares the
draws: equal). What a fit compiles after sampling (log-likelihood, log prior, predictive draws:
a few seconds) is left to the stage. Nothing pending (every planned fit ran here before,
:func:`delusion_bayes.models.fit.compile_marker`): no child.

The child runs at a lower CPU priority (``nice`` 10) with one thread for numba and BLAS, so a
stage that samples on every core keeps them. Cold compiles stay one at a time across processes
(:func:`delusion_bayes.inference.sampling.compile_lock`), but a graph the child has compiled
loads without the lock (``sampling._compile_once``), so the stage never waits while the child
compiles the next graph. Its log is ``prefetch.log`` in the run folder. A child that fails
costs nothing but the time: the stage compiles what it needs itself (the log says why).

Hand-written: Hydra's launchers run whole jobs, not a side task of one job, and
``concurrent.futures``' process pool would import the package's models into a pool we then
could not renice or stop at the end of the stage.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: the child's log, in the run folder (``*.log``: not a result, pipeline._is_hydra_entry)
LOG_NAME = "prefetch.log"
#: the child's CPU priority increment (``os.nice``). Measured on the main job from cold
#: (bench_main_job.py): 10 and 0 finish in the same time (217 s); 10 leaves the stage's
#: sampling its cores, 0 made the stage wait less but slowed its text stage and sampling
NICE = 10


class Prefetch:
    """A running child (:func:`start`); :meth:`close` ends it."""

    def __init__(self, proc: subprocess.Popen, log_path: Path, fits: list[str]):
        self.proc, self.log_path, self.fits = proc, log_path, fits

    def close(self) -> int | None:
        """Stop the child if it still runs (its remaining compiles are no longer needed), log a
        failure; returns its exit code (negative: stopped by a signal)."""
        if self.proc.poll() is None:
            log.info("compile prefetch: stopping the child (%s)", self.log_path)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            return self.proc.returncode
        rc = self.proc.returncode
        if rc:
            log.warning(
                "compile prefetch: the child failed (exit %s; see %s); the models stage "
                "compiled its fits itself",
                rc,
                self.log_path,
            )
        return rc


def pending_fits(ds: Any, cfg: Any) -> list[tuple[str, bool, dict, bool]]:
    """The models stage's planned fits (:func:`~.fit_plan.planned_fits`), in its order, each with
    whether it still needs compiling here (no :func:`~delusion_bayes.models.fit.compile_marker`
    for its spec and settings): ``(model, primary, overrides, pending)``."""
    from ..models.fit import compile_marker, fit_spec
    from .fit_plan import fit_arguments, planned_fits

    out = []
    for name, primary, over in planned_fits(ds, cfg):
        kw = fit_arguments(name, cfg, primary=primary, overrides=over)
        out.append(
            (name, primary, over, not compile_marker(fit_spec(ds, name, **kw), **kw).exists())
        )
    return out


def start(ds: Any, cfg: Any, run_dir: Path, *, skip_first: bool) -> Prefetch | None:
    """Start the child for the pending fits of this run (``run_dir`` holds ``study.nc`` and
    ``config.yaml``), or return None: ``sampler.prefetch`` off, another sampler than nutpie, one
    core, or nothing pending. ``skip_first``: leave the first fit to the stage (no stage runs
    before it, so the child would only make the stage wait for the same compile)."""
    from ..config import group_config
    from ..inference.config import SamplerConfig
    from ..inference.sampling import resolve_sampler

    s = group_config(SamplerConfig, cfg.sampler)
    if not s.prefetch or (os.cpu_count() or 1) < 2:
        return None
    if s.name != "nutpie" or resolve_sampler(s.name) != "nutpie":
        return None
    plan = pending_fits(ds, cfg)
    fits = [(n, p, o) for n, p, o, pending in plan[1 if skip_first else 0 :] if pending]
    if not fits:
        log.debug("compile prefetch: nothing to compile")
        return None
    log_path = Path(run_dir) / LOG_NAME
    todo = json.dumps([[n, p, o] for n, p, o in fits])
    cmd, env = child_command(str(run_dir), todo)
    with open(log_path, "a") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    names = [n for n, _, _ in fits]
    log.info(
        "compile prefetch: compiling %s in a background process (pid %d, %s)",
        ", ".join(names),
        proc.pid,
        log_path,
    )
    return Prefetch(proc, log_path, names)


def child_command(*args: str) -> tuple[list[str], dict[str, str]]:
    """The child's command line and environment: this interpreter, one thread for numba and
    BLAS (a background compiler; the stage's sampler needs the cores), and this process's own
    ``delusion_bayes`` first on the path, with ``-P`` so that the working folder is not. Else
    ``python -m`` imports a ``delusion_bayes`` folder in the working folder first (a checkout of
    another version, say): its graphs hash apart from the stage's (the code is part of the
    hash), so the stage waited for every compile the child made and used none of them (seen in
    a benchmark run from another checkout: 55 s of waiting)."""
    env = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    root = str(Path(__file__).resolve().parents[2])  # the folder holding this delusion_bayes
    env[PARENT_ENV] = str(os.getpid())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-P", "-m", __name__, *args], env


#: the environment variable that hands the child its parent's pid (:func:`die_with_parent`)
PARENT_ENV = "DELUSION_BAYES_PREFETCH_PARENT"
#: ``prctl`` option: a signal the kernel sends this process when its parent ends (Linux)
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None) -> bool:
    """Have the kernel end this child when its parent ends, however the parent ends (SIGKILL
    and a crash included, where no ``finally`` of the parent runs): ``prctl(PR_SET_PDEATHSIG,
    SIGTERM)``, Linux only. Returns False when the parent is gone already (it ended before the
    call), True otherwise. By hand through ``ctypes``: the standard library has no ``prctl``,
    and a ``preexec_fn`` that calls it is unsafe in a parent with threads (``subprocess``'s
    docs)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):  # pragma: no cover - not Linux: the parent's close() only
        pass
    return parent is None or os.getppid() == parent


def compile_fits(ds: Any, cfg: Any, plan: list) -> None:
    """Compile the log-density of each ``(model, primary, overrides)`` of ``plan`` as the
    models stage's :func:`~.fit_plan.fit_arguments` will fit it, in the stage's order, skipping a
    graph compiled already; and the latent pass's kernels after the first model that needs them.
    These are the cold compiles the stage would otherwise wait for. What a fit compiles after
    sampling (log-likelihood, log prior, predictive draws) is left to the stage: a few seconds,
    and the child could not finish it before the stage needs it."""
    from ..inference.sampling import compile_nutpie, graph_marker
    from ..models.build import model_for
    from ..models.fit import fit_spec
    from ..models.latent import compile_kernels
    from ..models.registry import model_def
    from .fit_plan import fit_arguments

    kernel_done = False
    for name, primary, over in plan:
        kw = fit_arguments(name, cfg, primary=primary, overrides=over)
        spec = fit_spec(ds, name, **kw)
        pm_model, key = model_for(spec)
        share = bool(kw["sampler"].share_graph)
        graph = key if share else spec.hash()
        if graph_marker(graph, share_graph=share).exists():
            log.info("the log-density of %s is compiled already", name)
        else:
            t0 = time.perf_counter()
            compile_nutpie(pm_model, share_graph=share, key=key, graph=graph)
            log.info("compiled the log-density of %s in %.1f s", name, time.perf_counter() - t0)
        if model_def(name).marginal and not kernel_done:
            t0 = time.perf_counter()
            compile_kernels()
            kernel_done = True
            log.info("compiled the latent pass's kernels in %.1f s", time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    """``python -m delusion_bayes.stages.prefetch RUN_DIR PLAN``: the child (``PLAN``: JSON list
    of ``[model, primary, overrides]``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("plan")
    args = ap.parse_args(argv)
    parent = os.environ.get(PARENT_ENV)
    if not die_with_parent(int(parent) if parent else None):
        return 0  # the run that wanted these compiles has ended already
    try:
        os.nice(NICE)
    except OSError:  # pragma: no cover - not permitted: run at the same priority
        pass
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from omegaconf import OmegaConf

    from ..data import load_study

    cfg = OmegaConf.load(args.run_dir / "config.yaml")
    if cfg.get("cache_dir"):
        from ..inference.cache import CACHE_ENV

        os.environ[CACHE_ENV] = str(cfg.cache_dir)
    ds = load_study(args.run_dir / "study.nc")
    t0 = time.perf_counter()
    compile_fits(ds, cfg, json.loads(args.plan))
    log.info("compile prefetch done in %.1f s", time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
