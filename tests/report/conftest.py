"""Real runs for the report tests: the pipeline at small size, once per session.

``smoke_run`` is ``experiment=smoke`` (baselines, text, the joint model, the report) and
``replay_run`` is ``experiment=replay`` on the small simulated study with few resamples and
draws. Tests that change a run (remove a stage, corrupt a file) work on a copy
(:func:`copy_run`), so every test reads what the stages really wrote.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FAST = {"pdf": "never", "dpi": 50, "figure_formats": ["png"]}


def _run(root: Path, overrides: list[str]) -> Path:
    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import PipelineError, run

    cfg = compose([*overrides, "report.pdf=never"])
    try:
        run(cfg, root)
    except PipelineError:  # a failed stage is recorded in run.json; the tests say which
        pass
    return root


@pytest.fixture(scope="session")
def smoke_run(smoke_cli_run) -> Path:
    """``delusion-bayes experiment=smoke seed=7`` (2 x 150 draws of the joint model), the run
    the CLI test checks too (``tests/conftest.py::smoke_cli_run``)."""
    run_dir, out = smoke_cli_run
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return run_dir


@pytest.fixture(scope="session")
def smoke_supplement(smoke_run):
    """The supplement the smoke run's report stage wrote, rebuilt as a :class:`Supplement`."""
    from delusion_bayes.report import build_supplement

    return build_supplement(smoke_run, {"pdf": "never"})


@pytest.fixture(scope="session")
def replay_run(tmp_path_factory) -> Path:
    """``delusion-bayes experiment=replay`` at small size (200 resamples, 2 x 200 draws)."""
    over = ["experiment=replay", "replay.n_boot=200", "sampler.draws=200", "sampler.tune=200"]
    return _run(tmp_path_factory.mktemp("replay") / "run", over)


def copy_run(src: Path, dst: Path, drop: tuple[str, ...] = ()) -> Path:
    """A copy of a run without its report and without the stage folders in ``drop`` (their
    run.json entries removed too, as if they had not been run)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("report", "supplement.*", *drop))
    record = json.loads((dst / "run.json").read_text())
    for stage in drop:
        record["stages"].pop(stage, None)
    (dst / "run.json").write_text(json.dumps(record))
    return dst
