"""Shared test setup: a non-interactive matplotlib backend, seeded studies shared per session."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def paper_like():
    """The bundled default study (paper_like, seed 0): do not modify in tests (copy first)."""
    from delusion_bayes.data import simulate_study

    return simulate_study(preset="paper_like", seed=0)


@pytest.fixture(scope="session")
def small_study():
    """The small study (3 raters x 5 models x 12 days, seed 0): do not modify (copy first)."""
    from delusion_bayes.data import simulate_study

    return simulate_study(preset="small", seed=0)


@pytest.fixture(scope="session")
def smoke_cli_run(tmp_path_factory):
    """``python -m delusion_bayes experiment=smoke seed=7 report.pdf=never`` run once per session
    through the command line: ``(run_dir, CompletedProcess)``. The CLI test reads its log and
    exit code, the report tests (``tests/report/conftest.py::smoke_run``) its files: one smoke
    run instead of two."""
    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    cache = os.environ.get("DELUSION_BAYES_CACHE", str(tmp_path_factory.mktemp("cache")))
    out = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "experiment=smoke", "seed=7",
         "report.pdf=never", f"hydra.run.dir={run_dir}"],
        capture_output=True, text=True, env={**os.environ, "DELUSION_BAYES_CACHE": cache},
        timeout=900,
    )  # fmt: skip
    return run_dir, out
