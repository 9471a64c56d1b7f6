"""One call from Python (issue 52, item 3): ``db.analyse`` runs what the command line runs and
gives the same tables; ``db.data.from_frames`` reads DataFrames as the CSV reader reads files;
the top-level namespace shows the public API only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import delusion_bayes as db
from delusion_bayes.analysis import overrides_from, study_kind
from delusion_bayes.cli import init_study
from delusion_bayes.data import StudyFormatError, load_study


def test_namespace_is_the_public_api():
    names = dir(db)
    assert {"analyse", "Analysis", "data", "models", "baselines", "__version__"} <= set(names)
    assert not {"importlib", "annotations", "TYPE_CHECKING"} & set(names)


def test_keyword_options_become_hydra_overrides():
    assert overrides_from(
        {"experiment": "smoke", "stages": ["baselines", "report"], "sampler": {"draws": 200},
         "inference": {"compare": False}, "baselines": {"censor_day": None}}
    ) == ["experiment=smoke", "stages=[baselines,report]", "sampler.draws=200",
          "inference.compare=false", "baselines.censor_day=null"]  # fmt: skip


def test_study_kind_is_read_from_the_dataset(small_study):
    assert study_kind(small_study) == "trajectory"
    assert study_kind(db.data.simulate_replay(seed=0)) == "replay"


def test_analyse_a_path_and_read_the_result(tmp_path):
    """A study folder in, an :class:`Analysis` out: tables as DataFrames named
    ``stage/file``, the run's stage statuses, the supplement written on request."""
    study = init_study(tmp_path / "study")
    res = db.analyse(study, run_dir=tmp_path / "run", stages=["baselines", "report"],
                     baselines={"n_boot": 20, "alpha_boot": 20},
                     report={"pdf": "never"})  # fmt: skip
    assert res.stages == {"baselines": "ok", "report": "ok"}
    t1 = res.tables["baselines/table1_milestones"]
    assert isinstance(t1, pd.DataFrame) and len(t1) == load_study(study).sizes["model"]
    html = res.write_supplement(tmp_path / "copy")
    assert html.name == "supplement.html" and html.is_file()
    assert "analyses skipped" in repr(res)


@pytest.mark.slow
def test_analyse_gives_the_command_lines_tables(smoke_cli_run):
    """``db.analyse(study, experiment="smoke", seed=7)`` on the smoke run's own study writes the
    same CSV tables as ``python -m delusion_bayes experiment=smoke seed=7`` (every CSV of the
    baselines, text and models stages, value for value), and the same gate verdicts."""
    run_dir, proc = smoke_cli_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = db.analyse(load_study(run_dir / "study.nc"), experiment="smoke", seed=7,
                     report={"pdf": "never"})  # fmt: skip
    cli_tables = {
        p.relative_to(run_dir).with_suffix("").as_posix(): pd.read_csv(p)
        for p in sorted(run_dir.glob("*/**/*.csv"))
        if p.relative_to(run_dir).parts[0] != "report"
    }
    assert set(res.tables) == set(cli_tables)
    for name, frame in cli_tables.items():
        pd.testing.assert_frame_equal(res.tables[name], frame, obj=name)
    assert {k: g["passed"] for k, g in res.gates.items()} == {
        p.parent.name: __import__("json").loads(p.read_text())["passed"]
        for p in (run_dir / "models").glob("*/gate.json")
    }


def test_from_frames_equals_the_csv_study(tmp_path):
    """The template's CSV files read as DataFrames give the same study as the folder."""
    study = init_study(tmp_path / "study")
    # as text, the way the reader sees the files (pandas would read generation "4" as 4.0)
    frames = {p.stem: pd.read_csv(p, dtype=str, keep_default_na=False)
              for p in Path(study).glob("*.csv")}  # fmt: skip
    ratings = frames.pop("ratings")
    ds = db.data.from_frames(ratings, **frames)
    expected = load_study(study)
    assert ds.identical(expected)
    assert list(ds["model"].values) == list(expected["model"].values)


def test_from_frames_error_names_the_frame():
    ratings = pd.DataFrame({"rater": ["r1", "r2"], "model": ["m", "m"], "day": [1, 1],
                            "item": ["recognition"] * 2, "score": [1, "x"]})  # fmt: skip
    with pytest.raises(StudyFormatError, match=r"ratings_df, row 1 \(0-based\), column 'score'"):
        db.data.from_frames(ratings)


@pytest.mark.slow
def test_fit_with_check_warns_or_raises_on_a_failed_gate(small_study):
    """``db.models.fit(..., check=True)``: 30 draws cannot pass the gate's ESS threshold, so the
    fit warns naming the reasons (and says so in ``attrs``); ``check="raise"`` raises."""
    from delusion_bayes.inference.diagnostics import BadFitError
    from delusion_bayes.models.fit import FitGateWarning

    kw = dict(model="onset", draws=30, tune=30, chains=2, seed=3, share_graph=True)
    with pytest.warns(FitGateWarning, match="failed its diagnostics gate: .*ESS"):
        dt = db.models.fit(small_study, check=True, **kw)
    assert dt.attrs["gate_passed"] is False
    with pytest.raises(BadFitError, match="failed its diagnostics gate"):
        db.models.fit(small_study, check="raise", **kw)
