"""Shared test setup: a non-interactive matplotlib backend, seeded studies shared per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "required_resource(reason): set by tests.resources.needs under CI=true for a missing "
        "resource; the test fails naming it instead of skipping",
    )


def pytest_runtest_setup(item):
    mark = item.get_closest_marker("required_resource")
    if mark is not None:
        pytest.fail(f"CI=true but {mark.kwargs['reason']}", pytrace=False)


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
    run instead of two, and one for all pytest-xdist workers (the CI runs two)."""

    def smoke(root: Path) -> dict:
        cache = os.environ.get("DELUSION_BAYES_CACHE", str(root / "cache"))
        out = subprocess.run(
            [sys.executable, "-m", "delusion_bayes", "experiment=smoke", "seed=7",
             "report.pdf=never", f"hydra.run.dir={root / 'run'}"],
            capture_output=True, text=True, env={**os.environ, "DELUSION_BAYES_CACHE": cache},
            timeout=900,
        )  # fmt: skip
        return {"args": out.args, "returncode": out.returncode, "stdout": out.stdout,
                "stderr": out.stderr}  # fmt: skip

    root, res = once_per_session(tmp_path_factory, "smoke", smoke)
    return root / "run", subprocess.CompletedProcess(**res)


def once_per_session(tmp_path_factory, name: str, make):
    """``(folder, make(folder))`` computed once per test session, across pytest-xdist workers
    too: under xdist the first worker to take the lock in the workers' shared temp folder runs
    ``make`` (its result must be JSON), the others read its result (the pattern of
    pytest-xdist's docs, with ``fcntl`` for the lock). Without xdist: a fresh folder."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        root = tmp_path_factory.mktemp(name)
        return root, make(root)
    import fcntl

    root = tmp_path_factory.getbasetemp().parent / name
    root.mkdir(exist_ok=True)
    with open(root.parent / f"{name}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        done = root.parent / f"{name}.json"
        if not done.exists():
            done.write_text(json.dumps(make(root)))
        return root, json.loads(done.read_text())
