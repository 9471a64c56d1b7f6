"""What a run does before its first stage and when it is stopped (issue 52, item 1): a study path
is never quietly replaced by the simulated study, config names are checked at start with one
line, ``--version`` is the package's, and SIGTERM/SIGINT/SIGKILL leave no compile process behind
while ``run.json`` says the run was interrupted and where."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from delusion_bayes import __version__
from delusion_bayes.cli import init_study, main
from delusion_bayes.config import compose
from delusion_bayes.data import load_study
from delusion_bayes.errors import ConfigError, RunInterrupted
from delusion_bayes.pipeline import interruptible, run
from delusion_bayes.provenance import dataset_hash


@pytest.fixture(scope="module")
def template_study(tmp_path_factory) -> Path:
    return init_study(tmp_path_factory.mktemp("study") / "study")


def test_study_path_without_data_file_reads_that_study(template_study, tmp_path):
    """``data.path=DIR`` on the simulating default reads DIR (source set to ``file`` in the
    saved config), never the simulated ``paper_like`` study: the run's data hash is the study's."""
    cfg = compose([f"data.path={template_study}", "stages=[baselines,report]",
                   "baselines.n_boot=10", "baselines.alpha_boot=10",
                   "report.pdf=never"])  # fmt: skip
    record = run(cfg, tmp_path / "run")
    data_hash = dataset_hash(load_study(template_study))
    assert record["provenance"]["data_hash"] == data_hash
    assert record["data"]["sizes"]["model"] == load_study(template_study).sizes["model"]
    saved = (tmp_path / "run" / "config.yaml").read_text()
    assert "source: file" in saved and "source: simulate" not in saved
    first = (tmp_path / "run" / "supplement.md").read_text().splitlines()[2]
    assert first.startswith(f"Data: {template_study} (data hash {data_hash[:12]}).")
    assert "SIMULATED" not in (tmp_path / "run" / "supplement.md").read_text().split("##")[2]


def test_a_simulated_run_says_so_on_its_first_line(tmp_path):
    cfg = compose(["data=small", "stages=[baselines,report]", "baselines.n_boot=10",
                   "baselines.alpha_boot=10", "report.pdf=never"])  # fmt: skip
    run(cfg, tmp_path / "run")
    first = (tmp_path / "run" / "supplement.md").read_text().splitlines()[2]
    assert first.startswith("SIMULATED data (preset `small`): not real chatbots.")


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("model.also_fit=[onset,bogus]", ["model.also_fit", "'bogus'", "joint"]),
        ("model.name=jiont", ["model.name", "'jiont'", "known models"]),
        ("stages=[baselines,modles]", ["'modles'", "available stages"]),
        ("baselines.contrasts=[{name: c, by: vendor, a: [x], quantities: [t5O]}]",
         ["baselines.contrasts[0]", "'t5O'", "first_clinical"]),
        ("baselines.contrasts=[{name: c, by: vendor, a: [x], alternative: bigger}]",
         ["alternative='bigger'", "two-sided"]),
    ],
    ids=["also_fit", "name", "stage", "quantity", "alternative"],
)  # fmt: skip
def test_bad_names_stop_the_run_before_any_work(tmp_path, override, words):
    """A typo'd model, stage, contrast quantity or alternative is a :class:`ConfigError` raised
    before the study is loaded: the run folder stays empty (no ``run.json``)."""
    cfg = compose([override])
    with pytest.raises(ConfigError) as err:
        run(cfg, tmp_path / "run")
    for w in words:
        assert w in str(err.value)
    assert not (tmp_path / "run" / "run.json").exists()


def test_bad_name_is_one_line_on_the_command_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:  # the job's user error exits with status 2
        main(["model.also_fit=[bogus]", f"hydra.run.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert len(err) == 1 and err[0].startswith("delusion-bayes: error: model.also_fit")


def test_version_is_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"delusion-bayes {__version__}"


def test_interruptible_turns_a_signal_into_run_interrupted():
    """Inside :func:`interruptible` SIGINT raises :class:`RunInterrupted` (not the
    ``KeyboardInterrupt`` nutpie would catch to return partial draws); the handlers return
    afterwards."""
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with pytest.raises(RunInterrupted) as stop, interruptible():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)  # the handler runs at the next bytecode: well before this ends
    assert stop.value.signal == "SIGINT" and stop.value.signum == signal.SIGINT
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def _children_of_run(run_dir: Path) -> list[int]:
    """Processes whose command line names ``run_dir``: the compile prefetch's child."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"delusion_bayes.stages.prefetch" in cmd and str(run_dir).encode() in cmd:
                found.append(int(proc.name))
    return found


def _wait(predicate, seconds: float, what: str):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def _models_running(run_dir: Path) -> bool:
    try:
        record = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return False
    return record.get("stages", {}).get("models", {}).get("status") == "running"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find the child")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_compile_process(tmp_path, sig):
    """A run stopped mid-fit, while its compile prefetch child compiles the next model, leaves no
    process behind: SIGTERM (a cluster's time limit) ends the child with the run and exits 143
    with ``run.json`` saying ``interrupted`` during ``models``; SIGKILL (no clean-up possible in
    the run) ends the child through the kernel (``PR_SET_PDEATHSIG``), and ``run.json`` still
    shows which stage was running. A fresh compile cache gives the child work: it compiles
    ``onset`` while the stage compiles ``joint``."""
    pytest.importorskip("nutpie")
    run_dir = tmp_path / "run"
    env = {**os.environ, "DELUSION_BAYES_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "delusion_bayes", "data=small", "stages=[models]",
           "model.also_fit=[onset]", "inference.compare=false", "sampler.draws=100",
           "sampler.tune=100", f"hydra.run.dir={run_dir}"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _models_running(run_dir), 120, "the models stage to start")
        child = _wait(lambda: _children_of_run(run_dir), 60, "the prefetch child")
        time.sleep(1.0)  # mid-compile of both
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait(lambda: not _children_of_run(run_dir), 10, f"the child {child} to end")
    record = json.loads((run_dir / "run.json").read_text())
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM, out.decode()[-2000:]
        assert record["interrupted"]["signal"] == "SIGTERM"
        assert record["interrupted"]["stage"] == "models"
        assert record["stages"]["models"]["status"] == "interrupted"
        assert b"interrupted by SIGTERM" in out
    else:
        assert proc.returncode == -signal.SIGKILL
        assert record["stages"]["models"]["status"] == "running"
        assert "seconds" not in record  # a killed run never wrote its final record
