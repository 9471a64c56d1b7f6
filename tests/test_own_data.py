"""A user's own study, first run, at the default settings (issue 33): every stage ``ok``, the
tables the data allow, one line for each analysis they do not, and every default fit through
its diagnostics gate.

Two studies, each run once through the command line as a user would:

* the minimal study most groups start from: recognition ratings only, three raters named
  Alice, Bob and Chen, 5 chatbots, 12 days, ~7% of the ratings missing, no ``models.csv``, no
  ``adjudication.csv``, no texts (numbers simulated: ``simulate_study("small", seed=0,
  missing_rate=0.07)``);
* the ``init-study`` template, unchanged.

Default settings (4 chains x 1000 draws) on purpose: the gate is what is tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from delusion_bayes import results

pytestmark = pytest.mark.slow


def write_minimal_study(folder: Path) -> Path:
    """``ratings.csv`` only: rater, model, day, item=recognition, score (empty = missing)."""
    from delusion_bayes.data import simulate_study

    ds = simulate_study("small", seed=0, missing_rate=0.07)
    df = ds["recognition"].to_dataframe().reset_index()[["rater", "model", "day", "recognition"]]
    df["rater"] = df["rater"].map(
        dict(zip(sorted(df["rater"].unique()), ["Alice", "Bob", "Chen"], strict=True))
    )
    df.insert(3, "item", "recognition")
    df["score"] = [("" if np.isnan(v) else str(int(v))) for v in df.pop("recognition")]
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(folder / "ratings.csv", index=False)
    return folder


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "delusion_bayes", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=1500,
        env={**os.environ},
    )


@pytest.fixture(scope="module")
def minimal_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("own")
    study = write_minimal_study(root / "mine")
    out = run_cli(
        "data=file",
        f"data.path={study}",
        "report.pdf=never",
        f"hydra.run.dir={root / 'run'}",
        cwd=root,
    )
    return root / "run", out


def _gates(run_dir: Path) -> dict[str, dict]:
    return {
        f: results.read(run_dir, "models/{fit}/gate.json", fit=f) for f in results.fits(run_dir)
    }


def test_minimal_study_every_stage_ok(minimal_run):
    run_dir, out = minimal_run
    assert out.returncode == 0, out.stderr[-3000:]
    stages = json.loads((run_dir / "run.json").read_text())["stages"]
    assert {k: v["status"] for k, v in stages.items()} == dict.fromkeys(
        ["baselines", "text", "models", "report"], "ok"
    )
    ratings = (run_dir.parent / "mine" / "ratings.csv").read_text().splitlines()
    assert ratings[1].startswith("Alice,") and sum(line.endswith(",") for line in ratings) == 13


def test_minimal_study_tables_and_skips(minimal_run):
    run_dir, _ = minimal_run
    for key in (
        "baselines/table1_milestones.csv",
        "baselines/tableC1_reliability.csv",
        "baselines/tableD1_logistic.csv",
    ):
        assert len(results.read(run_dir, key)) >= 1, key
    assert not (run_dir / "baselines" / "contrasts.csv").exists()
    skipped = json.loads((run_dir / "models" / "index.json").read_text())["skipped"]
    assert {
        "analysis": "model 'disengagement'",
        "reason": "needs level_a, level_b (adjudication.csv), which the study does not have",
    } in skipped
    md = (run_dir / "supplement.md").read_text()
    assert "**Analyses skipped.**" in md
    for line in (
        "model 'disengagement': needs level_a, level_b (adjudication.csv)",
        "contrast 'late-2025 vs earlier cohort': the study has no 'cohort' coordinate",
        "Table 2, Figure 2, section F (interventions): needs intervention ratings",
        "text stage (entrainment, modality, Figures 3-4): the study has no prompt",
    ):
        assert line in md, line
    assert "Table 1. Milestones per model" in md and "Table C1" in md and "Table D1" in md
    assert "FAILED" not in md


def test_minimal_study_fits_pass_their_gate(minimal_run):
    run_dir, _ = minimal_run
    gates = _gates(run_dir)
    assert sorted(gates) == ["joint", "onset", "rater"]
    failed = {f: g["reasons"] for f, g in gates.items() if not g["passed"]}
    assert not failed, failed


def test_template_passes_every_gate(tmp_path):
    """The unchanged ``init-study`` template: all four default fits gate-clean."""
    made = run_cli("init-study", str(tmp_path / "tmpl"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    out = run_cli(
        "data=file",
        f"data.path={tmp_path / 'tmpl'}",
        "stages=[models]",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    gates = _gates(tmp_path / "run")
    assert sorted(gates) == ["disengagement", "joint", "onset", "rater"]
    failed = {f: g["reasons"] for f, g in gates.items() if not g["passed"]}
    assert not failed, failed
    for g in gates.values():  # every attempt is on record, the last one with the verdict
        assert g["attempts"] and g["attempts"][-1]["passed"] is True
