"""``resume=true`` (issue 21): a rerun sweep leaves a job folder that holds a finished, ok run
with the same settings as it is, and redoes any other in place: a job killed before its final
record (cancelled, timed out), a job with a failed stage, a job made with other settings. The
SLURM test (tests/sweep/test_slurm.py) does the same through a real scheduler."""

from __future__ import annotations

import json

import pytest

from delusion_bayes.config import compose
from delusion_bayes.pipeline import RunDirError, finished_run, run

BASE = ["experiment=smoke", "stages=[baselines]", "baselines.n_boot=20"]


@pytest.fixture()
def done(tmp_path):
    run_dir = tmp_path / "job"
    run(compose(BASE), run_dir)
    return run_dir


def _stamps(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.stat().st_mtime_ns for p in run_dir.rglob("*")}


def test_a_finished_ok_run_is_left_as_it_is(done):
    before = _stamps(done)
    record = run(compose([*BASE, "resume=true", "cache_dir=/tmp/elsewhere"]), done)
    assert record == json.loads((done / "run.json").read_text())
    assert _stamps(done) == before  # nothing rewritten, nothing recomputed


def test_without_resume_the_folder_is_still_refused(done):
    with pytest.raises(RunDirError):
        run(compose(BASE), done)


def test_a_killed_run_is_redone(done):
    """What a scancel leaves: run.json without its final record (no ``seconds``)."""
    record = json.loads((done / "run.json").read_text())
    del record["seconds"], record["failed"]
    (done / "run.json").write_text(json.dumps(record))
    assert finished_run(done, compose([*BASE, "resume=true"])) is None
    again = run(compose([*BASE, "resume=true"]), done)
    assert "seconds" in again and again["stages"]["baselines"]["status"] == "ok"
    assert "seconds" in json.loads((done / "run.json").read_text())


def test_a_failed_run_is_redone(done):
    record = json.loads((done / "run.json").read_text())
    record["failed"] = ["baselines"]
    record["stages"]["baselines"]["status"] = "failed"
    (done / "run.json").write_text(json.dumps(record))
    assert finished_run(done, compose([*BASE, "resume=true"])) is None
    assert run(compose([*BASE, "resume=true"]), done)["failed"] == []


def test_other_settings_are_redone_not_kept(done):
    cfg = compose([*BASE, "resume=true", "baselines.stable_run=2"])
    assert finished_run(done, cfg) is None
    run(cfg, done)
    assert "stable_run: 2" in (done / "config.yaml").read_text()


def test_a_stage_not_run_before_is_not_finished(done):
    """The same settings but one more stage: the job is not done yet."""
    cfg = compose([*BASE[:1], "stages=[baselines,report]", "baselines.n_boot=20", "resume=true"])
    assert finished_run(done, cfg) is None
