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
    rel = pd.DataFrame(
        {"quantity": ["reliability_single", "reliability_consensus"], "analogue": ["ICC2", "ICC2k"]}
    )
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


def test_rank_plot_panels_are_the_worst_mixing_parameters():
    """``stages.models.worst_mixing`` picks the parameters of ``plot_vars`` with the highest
    R-hat from the diagnostics table (constants never), each as its own variable holding that
    element's draws."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    from delusion_bayes.stages.models import worst_mixing

    rng = np.random.default_rng(0)
    models = ["A", "B", "C"]
    post = xr.Dataset(
        {
            "k": (("chain", "draw", "model"), rng.normal(size=(2, 5, 3))),
            "mu": (("chain", "draw"), rng.normal(size=(2, 5))),
        },
        coords={"model": models},
    )
    dt = xr.DataTree.from_dict({"posterior": post})
    table = pd.DataFrame(
        {
            "variable": ["k", "k", "k", "mu"],
            "r_hat": [1.02, 1.30, 1.05, 1.50],
            "constant": [False, True, False, False],
        },
        index=pd.Index(["k[A]", "k[B]", "k[C]", "mu"], name="parameter"),
    )
    out = worst_mixing(dt, table, ["k"], n=2)
    assert list(out.data_vars) == ["k[C]", "k[A]"]  # B is constant, mu is not in plot_vars
    np.testing.assert_array_equal(out["k[C]"].values, post["k"].sel(model="C").values)
    assert out["k[C]"].dims == ("chain", "draw")
