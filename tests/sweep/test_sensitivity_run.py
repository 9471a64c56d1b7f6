"""``experiment=sensitivity`` actually run (issue 34), at tiny size: two jobs of the multiverse
(``baselines.stable_run`` 2 and 3, every other axis fixed; baselines and the onset model at 2
chains x 100 draws) and ``delusion-bayes-summarize`` over them. The two jobs differ only in a
choice made after the fit, so the second reuses the first's onset fit (``sampler.reuse_fits``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)  # fmt: skip


def test_sensitivity_multiverse_runs_two_jobs_and_summarizes(tmp_path):
    sweep = tmp_path / "sweep"
    proc = _run(["-m", "delusion_bayes", "-m", "experiment=sensitivity", "hydra/launcher=basic",
                 "stages=[baselines,models]", "baselines.consensus=median",
                 "baselines.stable_run=2,3", "baselines.censor_day=null", "text.config=1",
                 "++model.priors={}", "sampler=nutpie", "sampler.draws=100", "sampler.tune=100",
                 "baselines.n_boot=10", "report.pdf=never", f"cache_dir={tmp_path / 'cache'}",
                 f"hydra.sweep.dir={sweep}"], tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(["-m", "delusion_bayes.sweep", str(sweep)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 jobs, 0 not ok" in proc.stdout, proc.stdout
    for name in ("summary.csv", "jobs.csv", "multiverse.png"):
        assert (sweep / name).is_file(), name
    jobs = pd.read_csv(sweep / "jobs.csv")
    assert jobs["status"].tolist() == ["ok", "ok"]
    assert jobs["baselines.stable_run"].tolist() == [2, 3]
    df = pd.read_csv(sweep / "summary.csv")
    t50 = df[df["quantity"] == "posterior_t50:onset"].pivot(index="item", columns="job",
                                                            values="value")  # fmt: skip
    assert t50.shape == (15, 2) and t50.notna().all().all()
    # the second job reused the first's fit: the same posterior to the last bit
    pd.testing.assert_series_equal(t50[0], t50[1], check_names=False)
    # first_stable needs a run of stable_run days at stage 4: a longer run is never earlier
    fs = df[(df["stage"] == "baselines") & (df["quantity"] == "first_stable")].pivot(
        index="item", columns="job", values="value"
    )
    assert len(fs) == 15 and (fs[0] <= fs[1]).all(), fs
