"""``delusion-bayes-summarize``: summary.csv, jobs.csv and the multiverse plot of fake sweeps."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.sweep import (
    classify_regime,
    collect_jobs,
    parse_overrides,
    summarize,
    summarize_main,
)


def test_parse_overrides_strips_plus_and_keeps_deletions():
    got = parse_overrides(["a.b=2", "+x.y=[1,2]", "++z=3", "~w", "data=null"])
    assert got == {"a.b": "2", "x.y": "[1,2]", "z": "3", "w": "<deleted>", "data": "null"}


@pytest.mark.parametrize(
    ("fc", "fs", "expected"),
    [
        (3, 6, "early"),  # Claude 4.5: clinical day 3, stable within days 5-10
        (3, 10, "early"),  # boundary: stable on day 10 (= n_days / 3) is early
        (7, 20, "gradual"),  # GPT-5.1 Instant: clinical day 7, stable only in week 3
        (14, 31, "gradual"),  # clinical before day 21, never stable
        (3, 11, "gradual"),
        (21, 23, "late"),  # boundary: "turned only from day 21 onward"
        (22, 31, "late"),
        (31, 31, "never"),  # never left naive engagement (censored at 31)
        (float("nan"), float("nan"), "never"),
    ],
)
def test_classify_regime_follows_the_papers_boundaries(fc, fs, expected):
    """Trajectory paper, Results: regimes by clinical day 3-6/stable 5-10 (early), clinical 7-14
    stable week 3-4 (gradual), from day 21 onward (late), never (censored at 31)."""
    assert classify_regime(fc, fs, n_days=30) == expected


def test_classify_regime_scales_with_study_length():
    # 12-day study: early = stable by day 4, late = clinical from day 8.4 on, censor at 13
    assert classify_regime(2, 4, n_days=12) == "early"
    assert classify_regime(9, 13, n_days=12) == "late"
    assert classify_regime(13, 13, n_days=12) == "never"
    assert classify_regime(40, 40, n_days=30, censor_day=45) == "late"


def test_jobs_status_and_errors(fake_sweep):
    jobs = {j.name: j for j in collect_jobs(fake_sweep)}
    assert [jobs[n].status for n in "0123"] == ["ok", "ok", "failed", "failed"]
    assert jobs["2"].error == "models: ValueError: sampler exploded"
    assert jobs["3"].error == "ValueError: unknown preset 'bogus'"
    assert jobs["0"].overrides["baselines.stable_run"] == "2"
    assert jobs["0"].seconds == 4.2


def test_incomplete_and_missing_jobs(tmp_path, make_job):
    write_job = make_job
    write_job(tmp_path, 0, ["a=1"], final=False)
    write_job(tmp_path, 1, ["a=2"], run_json=False)
    (tmp_path / "1" / "cli.log").write_text("[2026-11-29][HYDRA] ERROR - MemoryError: boom\n")
    write_job(tmp_path, 2, ["a=3"], run_json=False)
    jobs = collect_jobs(tmp_path)
    assert [j.status for j in jobs] == ["incomplete", "missing", "missing"]
    assert "killed or is still running (last stage recorded: text)" in jobs[0].error
    assert "MemoryError: boom" in jobs[1].error
    assert "rerun it alone" in jobs[2].error


def test_summary_rows_tell_jobs_apart_by_override(fake_sweep):
    summary = summarize(fake_sweep, plot=False)
    on_disk = pd.read_csv(fake_sweep / "summary.csv")
    assert list(on_disk.columns[:5]) == ["job", "status", "error", "baselines.stable_run",
                                         "text.config"]  # fmt: skip
    assert "experiment" in on_disk.columns  # constant overrides are columns too
    assert len(on_disk) == len(summary)
    # one status row per job; failed jobs listed with their error
    status = on_disk[on_disk["quantity"] == "status"].set_index("job")
    assert status.loc[3, "status"] == "failed"
    assert status.loc[3, "error"] == "ValueError: unknown preset 'bogus'"
    assert status.loc[2, "error"] == "models: ValueError: sampler exploded"
    assert (on_disk[on_disk["job"] == 3]["quantity"] == "status").all()
    # the same quantity differs between jobs 0 and 1, and stable_run tells them apart
    fs = on_disk[(on_disk["quantity"] == "first_stable") & (on_disk["item"] == "Early")]
    fs = fs.set_index("baselines.stable_run")["value"]
    assert fs.to_dict() == {2: 6.0, 3: 12.0}
    regime = on_disk[(on_disk["quantity"] == "regime") & (on_disk["item"] == "Early")]
    assert regime.set_index("job")["label"].to_dict() == {0: "early", 1: "gradual", 2: "early"}
    ranks = on_disk[(on_disk["quantity"] == "t50_rank") & (on_disk["job"] == 0)]
    assert ranks.set_index("item")["value"].to_dict() == {"Early": 1, "Gradual": 2, "Late": 3,
                                                          "Never": 4}  # fmt: skip
    p = on_disk[on_disk["quantity"] == "perm_p"].set_index("job")
    assert p.loc[1, "value"] == 0.2 and p.loc[1, "item"] == "new vs old:first_clinical"
    prob = on_disk[on_disk["quantity"] == "posterior_prob:onset"].set_index("job")
    assert prob["value"].to_dict() == {
        0: 0.99,
        1: 0.7,
        2: 0.99,
    }  # NaN row (no such quantity) left out
    assert prob.loc[0, "item"] == "new vs old:first_clinical"
    gate = on_disk[on_disk["quantity"] == "gate_passed"].set_index("job")
    assert gate["value"].to_dict() == {0: 1.0, 1: 0.0, 2: 1.0} and set(gate["item"]) == {"onset"}
    post = on_disk[(on_disk["quantity"] == "posterior_t50:onset") & (on_disk["job"] == 0)]
    assert post.set_index("item")["value"].to_dict() == {"Early": 3.4, "Gradual": 12.1,
                                                         "Late": 22.0, "Never": 40.0}  # fmt: skip
    fc = on_disk[(on_disk["quantity"] == "posterior_first_clinical:onset") & (on_disk["job"] == 1)]
    assert fc["value"].tolist() == [3.0, 7.0, 22.0, 31.0]
    rho = on_disk[on_disk["quantity"] == "entrainment_level_b_rho"].set_index("job")["value"]
    assert rho.to_dict() == {0: -0.69, 1: -0.5, 2: -0.69}
    head = on_disk[on_disk["quantity"] == "headline:alpha_recognition"]
    assert np.allclose(head["value"], 0.76)


def test_jobs_csv_and_plot_files(fake_sweep, tmp_path):
    out = tmp_path / "out"
    summarize(fake_sweep, out)
    jobs = pd.read_csv(out / "jobs.csv")
    assert jobs["status"].tolist() == ["ok", "ok", "failed", "failed"]
    assert jobs["baselines.stable_run"].tolist() == [2, 3, 2, 3]
    for ext in ("png", "pdf"):
        assert (out / f"multiverse.{ext}").stat().st_size > 10_000


def test_cli_reports_failed_jobs(fake_sweep, capsys):
    assert summarize_main([str(fake_sweep), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "4 jobs, 2 not ok" in out
    assert "job 3: failed: ValueError: unknown preset 'bogus'" in out
    assert summarize_main([str(fake_sweep), "--no-plot", "--strict"]) == 1


def test_cli_errors_on_a_directory_without_jobs(tmp_path, capsys):
    assert summarize_main([str(tmp_path)]) == 2
    assert "holds no job" in capsys.readouterr().err
    assert summarize_main([str(tmp_path / "nope")]) == 2


def test_headline_is_read_from_index_json_when_run_json_has_none(tmp_path, make_job):
    write_job = make_job
    job = write_job(tmp_path, 0, ["a=1"])
    run = json.loads((job / "run.json").read_text())
    run["stages"]["text"].pop("headline")
    (job / "run.json").write_text(json.dumps(run))
    (job / "text" / "index.json").write_text(
        json.dumps({"files": {}, "headline": {"spearman_rho_level_b": -0.4}})
    )
    summary = summarize(tmp_path, plot=False)
    head = summary[summary["quantity"] == "headline:spearman_rho_level_b"]["value"]
    assert head.tolist() == [-0.4]
    # the quantity itself comes from the text stage's declared table, not a headline key
    rho = summary[summary["quantity"] == "entrainment_level_b_rho"]["value"]
    assert rho.tolist() == [-0.69]
