"""``--help`` prints the common commands; ``init-study`` writes a template study that runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from delusion_bayes.cli import init_study, template_dir

ROOT = Path(__file__).resolve().parents[1]
#: what a newcomer must find in ``--help``
COMMON = (
    "init-study",
    "data.path=",
    "experiment=smoke",
    "report.from_run=",
    "delusion-bayes-summarize",
    "delusion-bayes-coverage",
    "Config groups",
    "sampler ",
)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),  # this checkout, also for the installed console script
        "DELUSION_BAYES_CACHE": os.environ.get("DELUSION_BAYES_CACHE", str(tmp_path / "cache")),
    }


def _check_help(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 0, out.stderr[-2000:]
    for text in COMMON:
        assert text in out.stdout, (text, out.stdout)
    assert "== Config ==" not in out.stdout  # not Hydra's 150-line config dump


def test_python_m_help(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "--help"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    _check_help(out)
    short = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "-h"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert short.stdout == out.stdout


def test_console_script_help(tmp_path):
    """``delusion-bayes`` is ``delusion_bayes.cli:main`` (pyproject); run the installed script
    when there is one, else the entry point exactly as the script calls it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["delusion-bayes"] == "delusion_bayes.cli:main"
    script = Path(sys.executable).parent / "delusion-bayes"
    if script.is_file():
        cmd = [str(script), "--help"]
    else:
        cmd = [
            sys.executable,
            "-c",
            "import sys; sys.argv[0] = 'delusion-bayes'; "
            "from delusion_bayes.cli import main; sys.exit(main())",
            "--help",
        ]
    _check_help(
        subprocess.run(cmd, capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    )


def test_hydra_help_still_available(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "--hydra-help"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert out.returncode == 0 and "--multirun" in out.stdout


def test_init_study_writes_a_loadable_template(tmp_path):
    from delusion_bayes.data import load_study

    out = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "init-study", str(tmp_path / "mine")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"data.path={tmp_path / 'mine'}" in out.stdout
    names = sorted(p.name for p in (tmp_path / "mine").iterdir())
    assert names == ["README.md", "adjudication.csv", "models.csv", "ratings.csv"]
    assert "simulated" in (tmp_path / "mine" / "README.md").read_text().lower()
    ds = load_study(tmp_path / "mine")
    assert dict(ds.sizes) == {"rater": 3, "model": 5, "day": 12, "intervention_type": 5}
    assert int(ds["recognition"].isnull().sum()) == 1  # the README's example of a missing score
    # a second time into the same folder is refused (nothing overwritten silently) ...
    again = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "init-study", str(tmp_path / "mine")],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert again.returncode == 1 and "--force" in again.stderr
    # ... unless forced
    assert init_study(tmp_path / "mine", force=True) == tmp_path / "mine"


def test_template_is_the_small_simulated_study():
    """The template's ratings are the small preset's (seed 0) under new model names, so the
    README's 'simulated' label stays true."""
    from delusion_bayes.data import load_study, simulate_study

    tpl = load_study(template_dir())
    sim = simulate_study(preset="small", seed=0)
    rec = tpl["recognition"].values.copy()
    ref = sim["recognition"].values.copy()
    rec[2, 2, 6] = ref[2, 2, 6]  # the one rating blanked in the template
    assert (rec == ref).all()
    assert list(tpl["generation"].values) == list(sim["generation"].values)


@pytest.mark.slow
def test_template_runs_through_data_file(tmp_path):
    """`delusion-bayes data=file data.path=<template>` at small size: every stage ok (text
    skips: the template has no texts), a supplement."""
    study = init_study(tmp_path / "study")
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "delusion_bayes",
        "data=file",
        f"data.path={study}",
        f"hydra.run.dir={run_dir}",
        "sampler.draws=100",
        "sampler.tune=100",
        "sampler.chains=2",
        "model.also_fit=[]",
        "inference.compare=false",
        "baselines.n_boot=50",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_env(tmp_path), timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    record = json.loads((run_dir / "run.json").read_text())
    assert record["failed"] == []
    assert {s for s, v in record["stages"].items() if v["status"] == "ok"} >= {
        "baselines",
        "models",
        "report",
    }
    assert (run_dir / "supplement.html").is_file()
    assert (run_dir / "baselines" / "tableD1_logistic.csv").is_file()
