"""A run never shows another run's results as its own (issue 18, item 1), and ``cache_dir``
reaches every stage (item 5).

The issue's case: a finished run folder copied, then ``stages=[baselines,report]`` run into the
copy with another study gave a supplement whose baseline tables described the new study and
whose text and model tables the old one. Now a used folder is refused; ``overwrite=true``
clears what this run reruns and keeps another stage's folder only when it was made from the
same data with the same settings.
"""

from __future__ import annotations

import json
import shutil

import pytest

from delusion_bayes.config import compose
from delusion_bayes.pipeline import RunDirError, previous_results, run

BASE = ["experiment=smoke", "report.pdf=never", "report.figure_formats=[png]"]


def _fake_text_stage(run_dir):
    """An old run's text/ folder, recorded as ok in its run.json (as the text stage leaves it)."""
    (run_dir / "text").mkdir()
    (run_dir / "text" / "model_means.csv").write_text("model,entrainment\nOLD-STUDY-MODEL,0.5\n")
    record = json.loads((run_dir / "run.json").read_text())
    record["stages"]["text"] = {"status": "ok", "headline": {"marker": "old"}, "seconds": 1.0}
    (run_dir / "run.json").write_text(json.dumps(record))


@pytest.fixture()
def old_run(tmp_path):
    """A finished run (baselines on the small study, seed 0) plus a text/ folder."""
    run_dir = tmp_path / "old"
    run(compose([*BASE, "stages=[baselines]"]), run_dir)
    _fake_text_stage(run_dir)
    return run_dir


def test_used_folder_is_refused_and_left_untouched(old_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(old_run, copy)
    before = {p.name: p.stat().st_mtime_ns for p in copy.rglob("*")}
    cfg = compose([*BASE, "data.seed=1", "stages=[baselines,report]"])
    with pytest.raises(RunDirError) as err:
        run(cfg, copy)
    msg = str(err.value)
    assert str(copy) in msg and "overwrite=true" in msg and "baselines" in msg
    assert {p.name: p.stat().st_mtime_ns for p in copy.rglob("*")} == before


def test_hydra_files_alone_do_not_count_as_results(tmp_path):
    d = tmp_path / "hydra_job"
    (d / ".hydra").mkdir(parents=True)
    (d / ".hydra" / "config.yaml").write_text("x: 1\n")
    (d / "cli.log").write_text("log\n")
    (d / "job.json").write_text("{}")
    assert previous_results(d) == []
    run(compose([*BASE, "stages=[]"]), d)  # not refused
    assert (d / "run.json").is_file()


def test_overwrite_with_another_study_cannot_mix_studies(old_run, tmp_path):
    """The issue's reproduction, with overwrite: nothing of the old study survives."""
    copy = tmp_path / "copy"
    shutil.copytree(old_run, copy)
    old_hash = json.loads((old_run / "run.json").read_text())["provenance"]["data_hash"]
    cfg = compose([*BASE, "data.seed=1", "stages=[baselines,report]", "overwrite=true"])
    record = run(cfg, copy)
    assert not (copy / "text").exists()  # the old study's text tables are gone
    new_hash = record["provenance"]["data_hash"]
    assert new_hash != old_hash
    assert set(record["stages"]) == {"baselines", "report"}
    html = (copy / "supplement.html").read_text()
    assert "OLD-STUDY-MODEL" not in html and "model_means.csv" not in html
    assert old_hash not in html and old_hash not in (copy / "run.json").read_text()
    # every stage folder left is this run's
    assert sorted(p.name for p in copy.iterdir() if p.is_dir() and p.name != ".hydra") == [
        "baselines",
        "report",
    ]


def test_overwrite_keeps_a_stage_made_from_the_same_data_and_settings(old_run):
    old = json.loads((old_run / "run.json").read_text())
    record = run(compose([*BASE, "stages=[baselines]", "overwrite=true"]), old_run)
    assert (old_run / "text" / "model_means.csv").is_file()
    assert record["stages"]["text"]["kept_from"] == old["started"]
    assert record["stages"]["text"]["headline"] == {"marker": "old"}
    assert record["provenance"]["data_hash"] == old["provenance"]["data_hash"]


def test_overwrite_drops_a_stage_made_with_other_settings(old_run):
    """Same data, but the text stage's settings changed: its old tables are not this run's."""
    cfg = compose([*BASE, "stages=[baselines]", "overwrite=true", "text.config=1"])
    record = run(cfg, old_run)
    assert not (old_run / "text").exists()
    assert "text" not in record["stages"]


def test_overwrite_drops_a_stage_that_failed_before(old_run):
    record = json.loads((old_run / "run.json").read_text())
    record["stages"]["text"]["status"] = "failed"
    (old_run / "run.json").write_text(json.dumps(record))
    run(compose([*BASE, "stages=[baselines]", "overwrite=true"]), old_run)
    assert not (old_run / "text").exists()


def test_overwrite_leaves_files_the_pipeline_did_not_write(old_run):
    (old_run / "notes.txt").write_text("mine")
    (old_run / "supplement.pdf").write_bytes(b"%PDF old study")  # the old run's PDF
    run(compose([*BASE, "data.seed=2", "stages=[]", "overwrite=true"]), old_run)
    assert (old_run / "notes.txt").read_text() == "mine"
    assert not (old_run / "supplement.pdf").exists()
    assert not (old_run / "baselines").exists() and not (old_run / "text").exists()


def test_cache_dir_reaches_every_stage(tmp_path, monkeypatch):
    """``cache_dir=...`` is in every stage's config and is the process's cache root while the
    run lasts (the compile cache, fits and embeddings all read it), then restored."""
    import os

    import delusion_bayes.stages.baselines as stage
    from delusion_bayes.inference.cache import CACHE_ENV, cache_root

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env_cache"))
    seen = {}

    def spy(ds, cfg, run_dir):
        seen["cfg"] = cfg.get("cache_dir")
        seen["root"] = cache_root()
        return {}

    monkeypatch.setattr(stage, "run", spy)
    target = tmp_path / "B"
    run(compose([*BASE, "stages=[baselines]", f"cache_dir={target}"]), tmp_path / "run")
    assert seen == {"cfg": str(target), "root": target}
    assert os.environ[CACHE_ENV] == str(tmp_path / "env_cache")


def test_models_stage_passes_cache_dir_to_fit(monkeypatch, tmp_path, small_study):
    import delusion_bayes.models as models_pkg
    from delusion_bayes.pipeline import sub_config
    from delusion_bayes.stages import models as stage

    calls = {}

    def fake_fit(ds, name, **kw):
        calls.update(kw)
        raise RuntimeError("stop after the call")

    monkeypatch.setattr(models_pkg, "fit", fake_fit)
    cfg = compose([*BASE, f"cache_dir={tmp_path / 'B'}"])
    sub = sub_config(cfg, tuple(stage.NEEDS))
    with pytest.raises(RuntimeError, match="stop after the call"):
        stage.fit_one(small_study, "joint", sub, primary=True)
    assert calls["cache_dir"] == str(tmp_path / "B")


def test_a_cache_others_can_write_is_refused_before_any_work(tmp_path):
    from delusion_bayes.inference.cache import CacheDirError

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(CacheDirError, match="others can write to it"):
        run(compose([*BASE, "stages=[text]", f"cache_dir={shared}"]), tmp_path / "run")
    assert not (tmp_path / "run" / "study.nc").exists()
    # a run that uses no cache is not concerned
    run(compose([*BASE, "stages=[]", f"cache_dir={shared}"]), tmp_path / "run2")
