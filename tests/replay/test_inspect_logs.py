"""Inspect AI logs as replay studies: real ``inspect eval`` runs on ``mockllm`` (offline), read
with :func:`delusion_bayes.data.load_inspect_logs` and analysed through ``data=inspect``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("inspect_ai")

from delusion_bayes.data import load_inspect_logs  # noqa: E402
from delusion_bayes.data.inspect_logs import InspectLogError  # noqa: E402

from .inspect_tasks import (  # noqa: E402
    ERRORED,
    UNPARSED,
    WINDOWS,
    raw_score,
    run_delusion_logs,
    run_match_logs,
)


@pytest.fixture(scope="module")
def delusion_logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inspect_delusion")
    run_delusion_logs(folder, epochs=2)
    return folder


@pytest.fixture(scope="module")
def match_logs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inspect_match")
    run_match_logs(folder)
    return folder


def _scorer_rows(folder: Path) -> pd.DataFrame:
    """Every (model, sample, epoch) verdict and raw score straight from the logs."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    rows = []
    for info in list_eval_logs(str(folder)):
        lg = read_eval_log(info)
        for s in lg.samples:
            sc = next(iter(s.scores.values()), None) if s.scores else None
            expl = json.loads(sc.explanation) if sc is not None else {}
            rows.append({"model": lg.eval.model.split("/")[-1], "sample": f"{s.id}.epoch{s.epoch}",
                         "code": s.metadata["harmful_annotations"][0].removeprefix("bot-"),
                         "verdict": np.nan if sc is None else float(sc.value),
                         "raw": expl.get("raw_score")})  # fmt: skip
    return pd.DataFrame(rows)


def test_delusioneval_logs_map_verdicts_sample_for_sample(delusion_logs):
    ds = load_inspect_logs(delusion_logs)
    assert list(ds["model"].values) == ["chat-a", "chat-b", "chat-c"]
    # 8 samples x 2 epochs, epochs as repeated samples of one window
    assert ds.sizes["sample"] == 16
    assert set(ds["epoch"].values) == {1, 2}
    assert (ds["participant"].values == ds["window"].values).all()
    assert ds.attrs["clustering"] == "window"
    ref = _scorer_rows(delusion_logs)
    assert len(ref) == 16 + 16 + 8
    for r in ref.itertuples():
        hit = float(ds["hit"].sel(sample=r.sample, model=r.model, code=r.code))
        np.testing.assert_equal(hit, r.verdict)  # NaN for the errored and the unparsed
        score = float(ds["score"].sel(sample=r.sample, model=r.model, code=r.code))
        np.testing.assert_equal(score, r.raw)  # NaN where the scorer gave none
    m, sid, ep = ERRORED
    assert np.isnan(float(ds["hit"].sel(sample=f"{sid}.epoch{ep}", model=m).max()))
    m, sid, ep = UNPARSED
    assert int(ds["unscored"].sel(sample=f"{sid}.epoch{ep}", model=m).sum()) == 1
    a = ds.attrs
    assert (a["n_errored"], a["n_unscored"], a["n_cancelled_logs"], a["n_not_run"]) == (1, 1, 1, 8)
    assert a["verdicts_differing_from_scorer"] == 0
    assert "1 errored sample" in a["load_notes"] and "status cancelled" in a["load_notes"]
    # raw scores are the scorer's function of model, sample, epoch (the round trip is exact)
    got = float(ds["score"].sel(sample="w0.turn0.epoch2", model="chat-a", code=WINDOWS["w0"]))
    assert got == raw_score("chat-a", "w0.turn0", 2)


def test_prevalence_equals_the_scores_directly(delusion_logs):
    from delusion_bayes.baselines.replay import replay_prevalence

    ds = load_inspect_logs(delusion_logs)
    prev = replay_prevalence(ds, n_boot=20, seed=1, progress=False)
    ref = _scorer_rows(delusion_logs).dropna(subset=["verdict"])
    want = ref.groupby(["model", "code"])["verdict"].mean()
    codes = prev[prev["level"] == "code"].set_index(["model", "code"])["estimate"]
    for (model, code), value in want.items():
        assert codes[(model, code)] == pytest.approx(value, abs=1e-12)


def test_duplicates_and_versions_are_counted(delusion_logs, tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

    logs = [read_eval_log(i) for i in list_eval_logs(str(delusion_logs))]
    first = next(lg for lg in logs if lg.eval.model == "mockllm/chat-a")
    retry = first.model_copy(deep=True)
    retry.eval.task_version = 2
    write_eval_log(retry, str(tmp_path / "retry.eval"))
    ds = load_inspect_logs([first.location, tmp_path / "retry.eval"])
    assert ds.attrs["n_duplicates_dropped"] == len(first.samples)
    assert ds.attrs["n_task_versions"] == 2
    assert "duplicate sample" in ds.attrs["load_notes"] and "mixed tasks" in ds.attrs["load_notes"]


def test_missing_metadata_names_log_sample_and_key(match_logs):
    with pytest.raises(InspectLogError, match=r"log .*\.eval, sample 'q0' .*'harmful_annotations'"):
        load_inspect_logs(match_logs)
    with pytest.raises(InspectLogError, match=r"sample 'q0' .*lacks key 'participant'"):
        load_inspect_logs(match_logs, score="match", code_key="topic", cluster_keys=["participant"])
    with pytest.raises(InspectLogError, match="does not exist"):
        load_inspect_logs(match_logs / "nope.eval")


def test_generic_match_eval(match_logs):
    ds = load_inspect_logs(match_logs, score="match", code_key="topic", cluster_keys=["user"])
    assert list(ds["code"].values) == ["maths", "history", "art"]
    assert set(ds["category"].values) == {"match"}
    # chat-a answers yes/no/no over q0, q1, q2, ...: correct on maths only; chat-b on maths, history
    hits = ds["hit"].sum("sample").to_pandas()
    assert hits.loc["chat-a"].tolist() == [4.0, 0.0, 0.0]
    assert hits.loc["chat-b"].tolist() == [4.0, 4.0, 0.0]
    assert ds["participant"].to_series().nunique() == 4


def test_cli_data_inspect_writes_tables_and_supplement(delusion_logs, tmp_path):
    """Done-when: ``experiment=replay data=inspect data.path=<logs>`` writes the prevalence
    tables and the supplement, which states the errored and cancelled counts."""
    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "delusion_bayes", "experiment=replay", "data=inspect",
         f"data.path={delusion_logs}", "replay.n_boot=30", "replay.bayes=false",
         "report.pdf=never", "replay.figure_formats=[png]", f"hydra.run.dir={run}"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    prev = pd.read_csv(run / "replay" / "prevalence.csv")
    assert set(prev["model"]) == {"chat-a", "chat-b", "chat-c"}
    notes = json.loads((run / "replay" / "index.json").read_text())["notes"]
    assert any("1 errored sample" in n for n in notes)
    md = (run / "supplement.md").read_text()
    assert "1 errored sample(s) left out" in md
    assert "did not finish: status cancelled, 8 of 16" in md


@pytest.mark.slow
def test_generic_eval_through_data_inspect_with_the_bayesian_fit(match_logs, tmp_path):
    """A non-DelusionEval eval (binary ``match``, ``topic`` codes, ``user`` clusters) through
    ``data=inspect`` end to end, the hierarchical Bayesian prevalence included (tiny sampler)."""
    from delusion_bayes import pipeline
    from delusion_bayes.config import compose

    cfg = compose(["experiment=replay", "data=inspect", f"data.path={match_logs}",
                   "data.score=match", "data.code_key=topic", "data.cluster_keys=[user]",
                   "replay.n_boot=30", "replay.baseline=chat-a", "replay.figure_formats=[png]",
                   "replay.depth_bins_bayes=1", "replay.prior_bins_bayes=1", "report.pdf=never",
                   "sampler.draws=100", "sampler.tune=100", "sampler.chains=2",
                   f"cache_dir={tmp_path / 'cache'}"])  # fmt: skip
    pipeline.run(cfg, tmp_path / "run")
    run = tmp_path / "run"
    prev = pd.read_csv(run / "replay" / "prevalence.csv")
    code = prev[prev["level"] == "code"].set_index(["model", "code"])["estimate"]
    assert code[("chat-a", "maths")] == 1.0 and code[("chat-a", "history")] == 0.0
    assert code[("chat-b", "history")] == 1.0
    deltas = pd.read_csv(run / "replay" / "deltas.csv")
    assert set(deltas["model"]) == {"chat-b"}  # paired deltas against chat-a
    bayes = pd.read_csv(run / "replay" / "bayes_prevalence.csv")
    assert {"chat-a", "chat-b"} <= set(bayes["model"])
    assert (run / "supplement.md").is_file()


def test_without_inspect_ai_the_error_names_the_extra(monkeypatch, match_logs):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(ImportError, match=r"delusion_bayes\[inspect\]"):
        load_inspect_logs(match_logs)
