"""Config composition (every group option, every experiment), the pipeline, and a CLI smoke run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from delusion_bayes.config import GROUP_SCHEMAS, compose, conf_dir

ROOT = Path(__file__).resolve().parents[1]
GROUP_OPTIONS = [
    (group, path.stem)
    for group in GROUP_SCHEMAS
    for path in sorted((conf_dir() / group).glob("*.yaml"))
]
EXPERIMENTS = sorted(p.stem for p in (ROOT / "experiments").glob("*.yaml"))


def test_every_group_has_options():
    groups = {g for g, _ in GROUP_OPTIONS}
    assert groups == set(GROUP_SCHEMAS), (
        f"groups without a YAML option: {set(GROUP_SCHEMAS) - groups}"
    )


@pytest.mark.parametrize(
    ("group", "option"), GROUP_OPTIONS, ids=[f"{g}={o}" for g, o in GROUP_OPTIONS]
)
def test_compose_every_group_option(group, option):
    cfg = compose([f"{group}={option}"])
    assert group in cfg
    if group == "data" and option == "file":
        return  # data.path is mandatory (???) until the user sets it
    from omegaconf import OmegaConf

    OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_compose_every_experiment(experiment):
    text = (ROOT / "experiments" / f"{experiment}.yaml").read_text()
    assert text.startswith("# @package _global_"), "experiment overlays are global packages"
    assert re.search(r"delusion[-_]bayes", text.splitlines()[1]), (
        "opens with the command that runs it"
    )
    cfg = compose([f"experiment={experiment}"])
    assert cfg.name != "default" or experiment == "default"


def test_unknown_key_is_rejected():
    """A typo in an override fails at composition, naming the key (the schema is struct)."""
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException, match="baselines.n_bot"):
        compose(["baselines.n_bot=3"])
    with pytest.raises(ConfigCompositionException, match="sampler.draw"):
        compose(["sampler.draw=3"])


def test_defaults_are_the_paper_like_study():
    cfg = compose([])
    assert cfg.data.preset == "paper_like" and cfg.data.source == "simulate"
    assert list(cfg.stages) == ["baselines", "text", "models", "report"]


def test_pipeline_without_stages_writes_study_and_provenance(tmp_path):
    from delusion_bayes.data import load_study
    from delusion_bayes.pipeline import run

    cfg = compose(["data=small", "stages=[]"])
    record = run(cfg, tmp_path)
    ds = load_study(tmp_path / "study.nc")
    assert ds.sizes["model"] == 5
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["provenance"]["data_hash"] == record["provenance"]["data_hash"]
    assert len(saved["provenance"]["data_hash"]) == 64
    assert (tmp_path / "config.yaml").read_text().count("preset: small") == 1


def test_data_hash_is_format_independent(tmp_path, small_study):
    from delusion_bayes.data import load_study, save_study
    from delusion_bayes.pipeline import dataset_hash

    a = load_study(save_study(small_study, tmp_path / "s.nc"))
    b = load_study(save_study(small_study, tmp_path / "s"))
    assert dataset_hash(a) == dataset_hash(b)
    c = a.copy(deep=True)
    c["recognition"][0, 0, 0] = 4 if c["recognition"][0, 0, 0] != 4 else 3
    assert dataset_hash(c) != dataset_hash(a)


def test_failing_stage_is_recorded_and_raised(tmp_path, monkeypatch):
    import delusion_bayes.stages.baselines as stage
    from delusion_bayes.pipeline import PipelineError, run

    def boom(ds, cfg, run_dir):
        raise RuntimeError("synthetic failure for the test")

    monkeypatch.setattr(stage, "run", boom)
    cfg = compose(["data=small", "stages=[baselines]"])
    with pytest.raises(PipelineError, match=r"stage\(s\) \['baselines'\] failed"):
        run(cfg, tmp_path)
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["stages"]["baselines"]["status"] == "failed"
    assert "synthetic failure for the test" in saved["stages"]["baselines"]["error"]


def test_bad_data_path_is_a_clear_error(tmp_path):
    from delusion_bayes.pipeline import run

    cfg = compose(["data=file", f"data.path={tmp_path / 'nope.nc'}", "stages=[]"])
    with pytest.raises(FileNotFoundError, match="nope.nc"):
        run(cfg, tmp_path / "run")


def test_import_is_light():
    code = (
        "import sys, delusion_bayes as db; db.data; db.config; "
        "heavy = [m for m in ('pymc', 'pytensor', 'torch', 'spacy', 'sentence_transformers', "
        "'arviz', 'jax') if m in sys.modules]; print(heavy); sys.exit(bool(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow
def test_cli_smoke_run(smoke_cli_run):
    """`delusion-bayes experiment=smoke` writes a complete run directory (the session's smoke
    run through the command line, which the report tests read too)."""
    run_dir, out = smoke_cli_run
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    for rel in ("study.nc", "config.yaml", "run.json", ".hydra/overrides.yaml", "supplement.html"):
        assert (run_dir / rel).exists(), rel
    record = json.loads((run_dir / "run.json").read_text())
    assert record["failed"] == []
    assert {s for s, v in record["stages"].items() if v["status"] == "ok"} >= {
        "baselines",
        "models",
        "text",
        "report",
    }
    # issue 20: a quiet, informative log. No other library's INFO lines (PyTensor's config
    # parser, g++ flag probing, its C linker, ArviZ's backend discovery, matplotlib) ...
    log = (run_dir / "cli.log").read_text()
    for noise in (
        "[pytensor",
        "g++",
        "Compiling new CVM",
        "lazylinker",
        "[arviz]",
        "available, exposing its functions",
        "[matplotlib",
        "[sentence_transformers",
    ):
        assert noise not in log, (noise, log)
    assert "object mode" not in out.stderr  # a numba warning the user cannot act on
    # ... one line per stage with its time, and sampling progress (start, end)
    for stage in ("baselines", "text", "models", "report"):
        assert len(re.findall(rf"stage {stage}: done in [0-9.]+ s", log)) == 1, (stage, log)
    assert re.search(r"sampling joint\S*: 600 draws over all chains", log), log
    assert re.search(r"sampling joint\S*: done in [0-9.]+ s", log), log
    # the primary fit and stages in at most 25 lines; each contrast's grouped population fit
    # (issue 53) adds its own few (fit, compile, sampling, gate, refit), at most 10 each
    lines = log.splitlines()
    at = [i for i, ln in enumerate(lines) if "population=group" in ln]
    pop = lines[at[0] : at[-1] + 1] if at else []
    assert len(lines) - len(pop) <= 25, log
    assert len(pop) <= 12 * 3, pop


def test_cli_refuses_a_used_run_dir_unless_overwrite(tmp_path):
    """Through Hydra (which writes .hydra/, <job>.log and job.json into the folder itself): a
    first run is accepted, a second into the same folder is refused with a non-zero exit naming
    the folder and the flag, and ``overwrite=true`` replaces it with the new study."""
    run_dir = tmp_path / "run"
    exe = [sys.executable, "-m", "delusion_bayes", "experiment=smoke", "stages=[]",
           f"hydra.run.dir={run_dir}"]  # fmt: skip
    env = {**os.environ, "DELUSION_BAYES_CACHE": str(tmp_path / "cache")}
    first = subprocess.run(exe, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    old = json.loads((run_dir / "run.json").read_text())["provenance"]["data_hash"]
    second = subprocess.run([*exe, "data.seed=5"], capture_output=True, text=True, env=env,
                            cwd=tmp_path)  # fmt: skip
    assert second.returncode == 2  # a user error: one line, no traceback (issue 31)
    assert "Traceback" not in second.stderr and "delusion-bayes: error:" in second.stderr
    assert str(run_dir) in second.stderr
    assert "overwrite=true" in second.stderr
    assert json.loads((run_dir / "run.json").read_text())["provenance"]["data_hash"] == old
    third = subprocess.run([*exe, "data.seed=5", "overwrite=true"], capture_output=True,
                           text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert third.returncode == 0, third.stderr[-2000:]
    assert json.loads((run_dir / "run.json").read_text())["provenance"]["data_hash"] != old
