"""Real multiruns through Hydra's launchers (joblib, submitit's local executor), then
``delusion-bayes-summarize`` on what they left on disk. Baselines only, 20 bootstrap replicates,
on the small study: a few seconds of work per job; the rest is process start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
TINY = ["experiment=smoke", "stages=[baselines]", "baselines.n_boot=20", "baselines.alpha_boot=0"]


def _multirun(sweep_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "delusion-bayes"), "-m", *TINY, *overrides, f"hydra.sweep.dir={sweep_dir}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def _summarize(sweep_dir: Path) -> subprocess.CompletedProcess:
    cmd = [str(BIN / "delusion-bayes-summarize"), str(sweep_dir)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def joblib_sweep(tmp_path_factory) -> Path:
    """The issue's acceptance command: joblib launcher, ``baselines.stable_run=2,3``."""
    root = tmp_path_factory.mktemp("joblib") / "sweep"
    proc = _multirun(
        root, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "baselines.stable_run=2,3"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _summarize(root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_joblib_summary_tells_jobs_apart_by_stable_run(joblib_sweep):
    summary = pd.read_csv(joblib_sweep / "summary.csv")
    assert summary.columns[3] == "baselines.stable_run"  # the varying override comes first
    status = summary[summary["quantity"] == "status"]
    assert status["status"].tolist() == ["ok", "ok"]
    assert status["baselines.stable_run"].tolist() == [2, 3]
    fs = summary[summary["quantity"] == "first_stable"].pivot(
        index="item", columns="baselines.stable_run", values="value"
    )
    assert len(fs) == 5 and fs.notna().all().all()
    # requiring a longer run at stage 4 can only make stable framing later (or never)
    assert (fs[3] >= fs[2]).all()
    # and the job folders agree with the rows: each job really ran with its stable_run
    for job, run in zip(status["job"], status["baselines.stable_run"], strict=True):
        assert f"stable_run: {run}" in (joblib_sweep / str(job) / "config.yaml").read_text()
    assert {"regime", "t50_rank", "perm_p", "L", "t50"} <= set(summary["quantity"])
    assert (joblib_sweep / "multiverse.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def submitit_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """submitit's local executor (the CI stand-in for SLURM): the first job fails before the
    pipeline starts (unknown preset), the second must still run."""
    root = tmp_path_factory.mktemp("submitit") / "sweep"
    proc = _multirun(root, "hydra/launcher=local_submitit", "data.preset=bogus,small")
    return root, proc


def test_submitit_local_failing_job_does_not_end_the_sweep(submitit_sweep):
    root, proc = submitit_sweep
    # Hydra re-raises the failure only after the whole batch: non-zero exit, both jobs ran
    assert proc.returncode != 0
    assert "unknown preset 'bogus'" in proc.stderr
    assert (root / ".submitit").is_dir()
    assert (root / "1" / "run.json").is_file()
    out = _summarize(root)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "2 jobs, 1 not ok" in out.stdout
    assert "job 0: failed: ValueError: unknown preset 'bogus'" in out.stdout
    jobs = pd.read_csv(root / "jobs.csv", keep_default_na=False)
    assert jobs["status"].tolist() == ["failed", "ok"]
    assert jobs["data.preset"].tolist() == ["bogus", "small"]
    assert jobs.loc[1, "error"] == ""
    summary = pd.read_csv(root / "summary.csv")
    assert set(summary.loc[summary["job"] == 0, "quantity"]) == {"status"}
    assert (summary["job"] == 1).sum() > 20


def test_coverage_entry_point_resumes(tmp_path):
    """``python -m delusion_bayes.sweep.coverage -m``, baselines only: one replicate file per
    job; a rerun skips both replicates and the summary aggregates them."""
    cmd = [
        sys.executable,
        "-m",
        "delusion_bayes.sweep.coverage",
        "-m",
        "experiment=coverage",
        "data.preset=small",
        "data.seed=0,1",
        "model=rater",
        "model.also_fit=[]",
        "baselines.n_boot=20",
        "hydra/launcher=basic",
        f"hydra.sweep.dir={tmp_path}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = sorted((tmp_path / "replicates").glob("*.csv"))
    assert [f.name for f in files] == ["small-0000.csv", "small-0001.csv"]
    stamps = [f.stat().st_mtime_ns for f in files]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [f.stat().st_mtime_ns for f in files] == stamps
    assert "already done" in proc.stdout + proc.stderr
    assert _summarize(tmp_path).returncode == 0
    table = pd.read_csv(tmp_path / "coverage_table.csv")
    assert set(table["quantity"]) == {"t50", "L", "k", "first_clinical", "first_stable"}
    assert "baselines coverage 95%" in table.columns
