"""Fake multirun directories (the layout Hydra and ``pipeline.run`` leave on disk), so the
summarizer is tested without running any stage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from delusion_bayes import results

MODELS = ["Early", "Gradual", "Late", "Never"]


def write_table(run_dir: Path, key: str, fit: str | None = None, **columns) -> None:
    """A results file with the given columns, every other declared column empty, written
    through the results contract (as a stage writes it)."""
    spec = results.spec(key)
    n = len(next(iter(columns.values())))
    df = pd.DataFrame({c: [np.nan] * n for c, _ in spec.columns})
    for c, v in columns.items():
        df[c] = v
    results.write(run_dir, key, df, fit=fit)


def write_job(
    root: Path,
    num: int,
    overrides: list[str],
    *,
    first_clinical: list[float] | None = None,
    first_stable: list[float] | None = None,
    t50: list[float] | None = None,
    pvalue: float = 0.01,
    prob: float = 0.99,
    rho: float = -0.69,
    failed_stage: str | None = None,
    run_json: bool = True,
    job_json: dict | None = None,
    final: bool = True,
) -> Path:
    """One job folder as ``delusion-bayes -m`` writes it (30-day study, censoring day 31)."""
    job = root / str(num)
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    if job_json is not None:
        (job / "job.json").write_text(json.dumps(job_json))
    if not run_json:
        return job
    fc = first_clinical or [3, 7, 22, 31]
    fs = first_stable or [6, 20, 25, 31]
    t = t50 or [3.5, 12.0, 22.5, float("nan")]
    write_table(
        job,
        "baselines/table1_milestones.csv",
        model=MODELS,
        first_clinical=fc,
        first_stable=fs,
        first_level_b=[3, 31, 31, 31],
    )
    write_table(
        job,
        "baselines/tableD1_logistic.csv",
        model=MODELS,
        L=[4, 4, 4, 1],
        k=[1.5, 0.3, 2.0, float("nan")],
        t50=t,
    )
    write_table(
        job,
        "baselines/contrasts.csv",
        contrast=["new vs old"],
        quantity=["first_clinical"],
        pvalue=[pvalue],
    )
    results.write(job, "baselines/index.json", {"config": {"n_days": 30, "censor_day": 31}})
    write_table(
        job,
        "text/correlations.csv",
        metric=["entrainment", "entrainment"],
        against=["days_level_b", "mean_consensus"],
        rho=[rho, 0.1],
    )
    # the models-output contract: models/<model name>/
    write_table(
        job,
        "models/{fit}/contrasts_posterior.csv",
        "onset",
        name=["new vs old", "new vs old"],
        quantity=["first_clinical", "first_level_b"],
        median=[-5.0, np.nan],
        p_gt_0=[prob, np.nan],
        note=["", "'first_level_b' is not a quantity of this model"],
    )
    write_table(
        job,
        "models/{fit}/milestones_posterior.csv",
        "onset",
        model=MODELS,
        milestone="first_clinical",
        median=[3.0, 7.0, 22.0, 31.0],
        ci_low=[3, 6, 20, 31],
        ci_high=[4, 9, 25, 31],
        p_censored=[0, 0, 0, 0.9],
    )
    write_table(
        job,
        "models/{fit}/t50_posterior.csv",
        "onset",
        model=MODELS,
        L_median=[3.9, 3.8, 3.7, 1.2],
        k_median=[1.5, 0.3, 2.0, 0.1],
        t50_median=[3.4, 12.1, 22.0, 40.0],
        p_beyond_last_day=[0, 0, 0, 0.8],
    )
    results.write(job, "models/{fit}/gate.json", {"passed": prob > 0.9, "max_rhat": 1.004}, "onset")
    stages = {
        "baselines": {"status": "ok", "seconds": 1.5, "headline": {"alpha_recognition": 0.76}},
        "text": {
            "status": "ok",
            "seconds": 2.0,
            "headline": {"rho_entrainment_level_b": rho, "p_entrainment_level_b": 0.005},
        },
    }
    failed = []
    if failed_stage:
        stages[failed_stage] = {
            "status": "failed",
            "error": "ValueError: sampler exploded\nmore",
            "traceback": "Traceback ...",
            "seconds": 0.1,
        }
        failed = [failed_stage]
    run = {
        "data": {"kind": "trajectory", "sizes": {"rater": 4, "model": 4, "day": 30}},
        "stages": stages,
    }
    if final:
        run.update(seconds=4.2, failed=failed)
    (job / "run.json").write_text(json.dumps(run))
    return job


@pytest.fixture
def make_job():
    """The job-folder writer (:func:`write_job`), for tests that build their own sweeps."""
    return write_job


@pytest.fixture
def fake_sweep(tmp_path: Path) -> Path:
    """Four jobs over ``baselines.stable_run`` 2/3 x ``text.config`` 1/3: one ok with other
    numbers, one whose models stage failed, one that raised before run.json (job.json only)."""
    root = tmp_path / "multirun"
    root.mkdir()
    (root / "multirun.yaml").write_text("hydra: {}\n")
    base = ["experiment=smoke"]
    write_job(root, 0, [*base, "baselines.stable_run=2", "text.config=1"])
    write_job(
        root,
        1,
        [*base, "baselines.stable_run=3", "text.config=1"],
        first_clinical=[3, 8, 23, 31],
        first_stable=[12, 21, 26, 31],
        pvalue=0.2,
        prob=0.7,
        rho=-0.5,
    )
    write_job(root, 2, [*base, "baselines.stable_run=2", "text.config=3"], failed_stage="models")
    write_job(
        root,
        3,
        [*base, "baselines.stable_run=3", "text.config=3"],
        run_json=False,
        job_json={"status": "failed", "error": "ValueError: unknown preset 'bogus'"},
    )
    return root
