"""Sweeps through a real SLURM scheduler (issue 21): ``hydra/launcher=slurm`` (submitit) on the
single-node SLURM that ``scripts/slurm-local.sh up`` stands up (CI's ``.ci/run`` does).

Three sweeps of two jobs each, sharing one ``cache_dir`` (~3 min on 2 idle cores):

1. the README's command (small study, baselines + the rater model): both jobs ok, the second
   finds the first one's compiled model in ``cache_dir`` (it writes no kernel);
2. a job that fails by construction (``data.preset=bogus``): listed with its error, the other
   job's results stand;
3. the onset model with ``sampler.reuse_fits=true``: the first job is cancelled with ``scancel``
   while it compiles, and shows as incomplete with its last finished stage; the second job
   finishes. Rerunning the same command with ``resume=true`` leaves the finished job as it is
   and redoes only the cancelled one, which takes the second job's fit from ``cache_dir``.

submitit polls job states with ``sacct``: the local SLURM has accounting (slurmdbd), so no run
may print submitit's ``Bypassing sacct error`` warning.

Which code the jobs run: submitit pickles Hydra's job callable and starts it on the node with
the launching interpreter (``sys.executable``, here the console scripts' own); the job imports
``delusion_bayes`` afresh. The README's console scripts are launched with
``PYTHONPATH=<this checkout>`` in their environment (ahead of any installed copy, so that a
worktree using another checkout's venv runs its own code), and ``sbatch`` hands that
environment to every job (its default ``--export=ALL``); the failing job's traceback proves it
(its file paths lie in this checkout).

Skipped, with the reason, where no SLURM answers; with ``DELUSION_BAYES_REQUIRE_SLURM=1`` (CI)
it fails instead, so that CI cannot pass without running it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SETUP = "sudo scripts/slurm-local.sh up"
QUIET = "Bypassing sacct error"

#: the README's command, minus the folders (the test's own)
LAUNCHER = [
    "hydra/launcher=slurm",
    "hydra.launcher.partition=debug",
    "hydra.launcher.mem_gb=4",
    "hydra.launcher.array_parallelism=1",
]
#: the small study, the baselines and one Bayesian model: two jobs that differ in stable_run
MODELS = ("stages=[baselines,models]", "baselines.stable_run=2,3")


def _slurm_problem() -> str | None:
    for exe in ("sbatch", "squeue", "scancel", "sacct", "sinfo"):
        if shutil.which(exe) is None:
            return f"no `{exe}` on PATH: no SLURM here (start a local one: `{SETUP}`)"
    try:
        import hydra_plugins.hydra_submitit_launcher  # noqa: F401
    except ImportError:
        return "hydra-submitit-launcher is not installed (pip install -e '.[cluster]')"
    try:
        node = subprocess.run(
            ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20
        )
        acct = subprocess.run(
            ["sacct", "-n", "-X", "--starttime", "now"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"SLURM does not answer ({err}); start it: `{SETUP}`"
    if node.returncode != 0 or not node.stdout.strip():
        return f"slurmctld does not answer ({node.stderr.strip()}); start it: `{SETUP}`"
    if not {"idle", "mix", "alloc"} & set(node.stdout.split()):
        return f"no SLURM node can take jobs (states: {node.stdout.split()})"
    if acct.returncode != 0:
        return f"sacct does not answer ({acct.stderr.strip()}): no job accounting; `{SETUP}`"
    return None


@pytest.fixture(scope="module")
def slurm() -> None:
    problem = _slurm_problem()
    if problem is None:
        return
    if os.environ.get("DELUSION_BAYES_REQUIRE_SLURM") == "1":
        pytest.fail(f"DELUSION_BAYES_REQUIRE_SLURM=1 but {problem}")
    pytest.skip(problem)


def _env() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _launch_cmd(sweep_dir: Path, cache: Path, *overrides: str) -> list[str]:
    return [
        str(BIN / "delusion-bayes"),
        "-m",
        "experiment=smoke",
        *overrides,
        *LAUNCHER,
        f"cache_dir={cache}",
        f"hydra.sweep.dir={sweep_dir}",
    ]


def _launch(sweep_dir: Path, cache: Path, *overrides: str) -> subprocess.CompletedProcess:
    cmd = _launch_cmd(sweep_dir, cache, *overrides)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=600, env=_env(), cwd=sweep_dir.parent
    )
    assert QUIET not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc


def _summarize(sweep_dir: Path, *, plot: bool = False) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "delusion-bayes-summarize"), str(sweep_dir), *([] if plot else ["--no-plot"])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _array_id(sweep_dir: Path) -> str:
    """The SLURM array job id of a sweep (submitit's folder ``.submitit/<array id>_<task>``)."""
    found = [p.name.split("_") for p in (sweep_dir / ".submitit").iterdir()]
    ids = {parts[0] for parts in found if len(parts) == 2 and all(x.isdigit() for x in parts)}
    assert len(ids) == 1, ids
    return ids.pop()


def _states(array_id: str) -> dict[str, str]:
    """``{"<id>_<task>": state}`` from sacct (job accounting), the steps left out."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", array_id],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)


def _wait_finished(array_id: str, timeout: float = 300) -> dict[str, str]:
    """Wait until no task of the array is pending or running; its states then."""
    deadline = time.monotonic() + timeout
    while True:
        states = _states(array_id)
        if states and not any(s in ("PENDING", "RUNNING") for s in states.values()):
            return states
        assert time.monotonic() < deadline, f"array {array_id} still running: {states}"
        time.sleep(1)


def _attrs(job_dir: Path, model: str) -> dict:
    import xarray as xr

    with xr.open_datatree(job_dir / "models" / model / "posterior.nc") as dt:
        return dict(dt.attrs)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One cache_dir for every sweep of this module, as on a cluster's shared scratch."""
    return tmp_path_factory.mktemp("slurm") / "cache"


def test_two_job_sweep_and_the_shared_compile_cache(slurm, cache):
    sweep = cache.parent / "ok"
    proc = _launch(sweep, cache, *MODELS, "model=rater")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = _summarize(sweep, plot=True)  # the README's summarize command, as it stands
    assert "2 jobs, 0 not ok" in out.stdout, out.stdout
    assert (sweep / "multiverse.png").is_file()
    array = _array_id(sweep)
    assert _states(array) == {f"{array}_0": "COMPLETED", f"{array}_1": "COMPLETED"}
    jobs = pd.read_csv(sweep / "jobs.csv")
    assert jobs["status"].tolist() == ["ok", "ok"]
    assert jobs["baselines.stable_run"].tolist() == [2, 3]
    first, second = _attrs(sweep / "0", "rater"), _attrs(sweep / "1", "rater")
    assert first["compile_cache_written"] > 0  # a cold cache: the first job compiled the model
    # the second job found every kernel of the model in cache_dir and compiled nothing
    assert second["compile_cache_found"] >= first["compile_cache_written"]
    assert second["compile_cache_written"] == 0


def test_a_failing_job_is_listed_and_the_other_stands(slurm, cache):
    sweep = cache.parent / "fail"
    proc = _launch(
        sweep, cache, "stages=[baselines]", "data.preset=small,bogus", "baselines.stable_run=2"
    )
    assert proc.returncode != 0  # Hydra re-raises the failure after the whole batch
    out = _summarize(sweep)
    assert "2 jobs, 1 not ok" in out.stdout, out.stdout
    assert "job 1: failed: ValueError: unknown preset 'bogus'" in out.stdout
    jobs = pd.read_csv(sweep / "jobs.csv", keep_default_na=False)
    assert jobs["status"].tolist() == ["ok", "failed"]
    summary = pd.read_csv(sweep / "summary.csv")
    assert (summary["job"] == 0).sum() > 20  # the ok job's results are all there
    assert set(summary.loc[summary["job"] == 1, "quantity"]) == {"status"}
    # the job ran this checkout's code (PYTHONPATH reached it through sbatch)
    trace = json.loads((sweep / "1" / "job.json").read_text())["traceback"]
    assert str(ROOT / "delusion_bayes") in trace, trace


def test_cancelled_job_is_incomplete_and_resume_redoes_only_it(slurm, cache):
    sweep = cache.parent / "cancel"
    sweep.mkdir()
    extra = (*MODELS, "model=onset", "sampler.reuse_fits=true")
    proc = subprocess.Popen(
        _launch_cmd(sweep, cache, *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
        cwd=sweep.parent,
    )
    record = sweep / "0" / "run.json"
    try:
        deadline = time.monotonic() + 240
        while True:  # cancel job 0 once its first stage is recorded: it is compiling the model
            stages = json.loads(record.read_text()).get("stages", {}) if record.is_file() else {}
            if "baselines" in stages:
                break
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "job 0 did not finish its baselines in 240 s"
            time.sleep(0.2)
        array = _array_id(sweep)
        subprocess.run(["scancel", f"{array}_0"], check=True, timeout=30)
        output, _ = proc.communicate(timeout=480)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the cancelled job has no result: the launching command fails as soon as it sees that,
    # while the other job goes on running on the cluster; wait for it
    assert proc.returncode != 0, output[-3000:]
    assert f"{array}_0" in output and "CANCELLED" in output, output[-3000:]
    assert QUIET not in output
    states = _wait_finished(array)
    assert states[f"{array}_0"].startswith("CANCELLED"), states
    assert states[f"{array}_1"] == "COMPLETED", states
    out = _summarize(sweep)
    assert "2 jobs, 1 not ok" in out.stdout, out.stdout
    assert "job 0: incomplete:" in out.stdout and "(last stage recorded: baselines)" in out.stdout
    assert "models" not in json.loads(record.read_text())["stages"]
    assert _attrs(sweep / "1", "onset")["fit_reused"] == 0  # job 1 fitted (job 0 never did)
    kept = {
        p: p.stat().st_mtime_ns
        for p in (sweep / "1").rglob("*")
        if p.is_file() and ".hydra" not in p.parts and p.suffix != ".log" and p.name != "job.json"
    }

    again = _launch(sweep, cache, *extra, "resume=true")
    assert again.returncode == 0, again.stderr[-3000:]
    # the finished job was left as it is; only the cancelled one ran again
    assert {p: p.stat().st_mtime_ns for p in kept} == kept
    assert "nothing to do" in (sweep / "1" / "cli.log").read_text()
    assert "seconds" in json.loads(record.read_text())
    # ... and took job 1's fit of the same model, data and sampler settings from cache_dir
    resumed = _attrs(sweep / "0", "onset")
    assert resumed["fit_reused"] == 1 and resumed["compile_cache_written"] == 0
    out = _summarize(sweep)
    assert "2 jobs, 0 not ok" in out.stdout, out.stdout
