"""Small helpers of the models stage, without sampling."""

from __future__ import annotations

import pandas as pd
import pytest

from delusion_bayes.stages import models as stage


def test_table_c1_icc_sits_next_to_the_posterior_reliability(tmp_path):
    from delusion_bayes import results

    spec = results.spec("baselines/tableC1_reliability.csv")
    c1 = pd.DataFrame({c: [float("nan")] * 2 for c, _ in spec.columns})
    c1["variable"] = ["recognition", "confidence"]
    c1["icc2_1"], c1["icc2_k"] = [0.81, 0.4], [0.93, 0.6]
    results.write(tmp_path / "run", spec.key, c1)
    rel = pd.DataFrame({"quantity": ["reliability_single", "reliability_consensus"],
                        "analogue": ["ICC2", "ICC2k"]})  # fmt: skip
    notes: list[str] = []
    stage.attach_icc(rel, tmp_path / "run", notes)
    assert rel["frequentist"].tolist() == [0.81, 0.93] and notes == []
    stage.attach_icc(rel, tmp_path / "missing", notes)
    assert "not found" in notes[0]


def test_stage_contract_names():
    assert stage.NEEDS == ("model", "sampler", "inference", "baselines")
    assert stage.KIND == ("trajectory",)


def test_unknown_model_is_named(small_study, tmp_path):
    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import sub_config

    cfg = sub_config(compose(["experiment=smoke", "model.also_fit=[bogus]"]), stage.NEEDS)
    with pytest.raises(ValueError, match=r"unknown models \['bogus'\]"):
        stage.run(small_study, cfg, tmp_path)
