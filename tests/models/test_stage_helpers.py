"""Small helpers of the models stage, without sampling."""

from __future__ import annotations

import pandas as pd
import pytest

from delusion_bayes.stages import fit_tables
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
    fit_tables.attach_icc(rel, tmp_path / "run", notes)
    assert rel["frequentist"].tolist() == [0.81, 0.93] and notes == []
    fit_tables.attach_icc(rel, tmp_path / "missing", notes)
    assert "not found" in notes[0]


def test_a_fixed_t50_scale_is_noted_for_the_overview():
    """A fit that fixed sigma_t50 (fewer than 2 turners: ``ModelSpec.t50_scale_sampled``, set in
    the fit's attrs by ``finish_fit``) gets one note; a fit that sampled it, or the rater model
    (no sigma_t50), none."""
    import numpy as np
    import xarray as xr

    post = xr.Dataset({"sigma_t50": (("chain", "draw"), np.full((1, 3), 0.498))})
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs["t50_scale_sampled"] = 0
    assert "sigma_t50 is fixed at its prior's root mean square" in stage.t50_scale_note(dt)
    dt.attrs["t50_scale_sampled"] = 1
    assert stage.t50_scale_note(dt) is None
    rater = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu_theta": post["sigma_t50"]})})
    rater.attrs["t50_scale_sampled"] = 0
    assert stage.t50_scale_note(rater) is None


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
    """``stages.fit_outputs.worst_mixing`` picks the parameters of ``plot_vars`` with the highest
    R-hat from the diagnostics table (constants never), each as its own variable holding that
    element's draws."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    from delusion_bayes.stages.fit_outputs import worst_mixing

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


def test_comparison_labels_the_primary_fit_with_its_group_terms(small_study, tmp_path, monkeypatch):
    """Issue 32: with ``model.group_terms`` set, comparison.csv labelled the primary fit by hand
    (``joint[logistic,rater]``, without its group terms) while each variant carried its own
    label. Now both come from the fit's ``variant`` attr. Fits are stubbed: only labels count."""
    import xarray as xr

    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import sub_config

    def fake_fit(ds, name, cfg, *, primary, overrides=None):
        terms = ",".join(cfg.model.group_terms)
        label = f"{name}[{(overrides or {}).get('trajectory', 'logistic')},rater;{terms}]"
        tree = xr.DataTree(name="fit")
        tree.attrs["variant"] = label
        return tree

    seen = []

    def fake_compare(cmp, var_name):
        seen.extend(cmp)
        table = pd.DataFrame({"elpd": 0.0, "se": 0.0}, index=pd.Index(list(cmp), name="model"))
        return table

    written = {"headline": {}, "files": {}, "notes": [], "elpd": None, "loo_unit": "model_day"}
    monkeypatch.setattr(stage, "fit_one", fake_fit)
    monkeypatch.setattr(stage, "_write_model", lambda *a, **k: written)
    monkeypatch.setattr(stage, "loo_units", lambda dt, inf: {"model_day": "y_model_day"})
    monkeypatch.setattr("delusion_bayes.inference.diagnostics.compare_fits", fake_compare)
    cfg = compose(["model.group_terms=[vendor]", "model.variants=[linear]", "model.also_fit=[]"])
    stage.run(small_study, sub_config(cfg, stage.NEEDS), tmp_path)
    assert seen == ["joint[logistic,rater;vendor]", "joint[linear,rater;vendor]"]
