"""Parameter recovery and diagnostics of the joint model on the small simulated study, and the
``models`` pipeline stage on the same fit.

One fit per session (``joint_fit``): 2 chains x 300 draws after 300 tuning steps with nutpie,
seed 1, the joint model with each model-day's stage integrated out (``models.joint``). Truth of
``simulate_study("small", seed=0)``: t50 = (3, 6, 9, 25, 8), severity = (0.41, -0.52, 0.11).
Turning models' t50 are covered by their 90% intervals (3 of 4 at least, the issue's "most
models"); the never-turner has P(t50 > 12) > 0.95. On this small study (5 models, 3 raters,
600 draws) the hyper-SDs are weakly identified, so the default gate fails on ESS/R-hat while
the small-run tolerances below pass. Tolerances below are set from these numbers with room
for another machine's floating point.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ._checks import check_t50_coverage, grid_log_integral, log_cat_prob_sum, t50_check

pytestmark = pytest.mark.slow

SAMPLE = ("chain", "draw")


@pytest.fixture(scope="session")
def joint_fit(small_study):
    from delusion_bayes.models import fit

    # default compile cache (~/.cache/delusion_bayes or $DELUSION_BAYES_CACHE): warm on reruns
    return fit(small_study, "joint", draws=300, tune=300, chains=2, seed=1)


def test_fit_returns_the_documented_groups(joint_fit, small_study):
    assert {"posterior", "sample_stats", "log_likelihood", "posterior_predictive",
            "observed_data"} <= set(joint_fit.children)  # fmt: skip
    post = joint_fit["posterior"]
    for v in ("L", "k", "t50"):
        assert post[v].dims == ("chain", "draw", "model")
    assert post["t50"]["vendor"].values.tolist() == small_study["vendor"].values.tolist()
    assert joint_fit["observed_data"]["y"].sizes["obs"] == 180
    assert joint_fit.attrs["variant"] == "joint[logistic,rater]"
    assert post.attrs["target_accept"] == 0.9  # the joint model's own (its definition)


def test_model_day_loglik_of_the_fit_integrates_its_own_posterior(joint_fit):
    """``y_model_day`` of a real fit equals the integral written out from the fit's posterior
    (3 model-days x 2 draws, 40,001-point trapezoid over +-12 SD of the day noise): the
    (model, day) and rater lookup of a real fit's layout, not only of a hand-made one."""
    ll = joint_fit["log_likelihood"]["y_model_day"]
    assert ll.sizes["model_day"] == 60 and np.isfinite(ll.values).all()
    post, od = joint_fit["posterior"], joint_fit["observed_data"]
    for j in (0, 17, 59):
        m = str(ll["model_day_model"].values[j])
        t = ll["model_day_day"].values[j]
        sel = (od["obs_model"].values == m) & (od["obs_day"].values == t)
        y = od["y"].values[sel]
        r = od["obs_rater"].values[sel]
        for c, k in ((0, 5), (1, 123)):
            p = post.isel(chain=c, draw=k)
            mu = float(p["trajectory"].sel(model=m, day=t))
            sig = float(p["sigma_eps"].sel(model=m))
            d = p["discrimination"].sel(rater=r).values
            sev = p["severity"].sel(rater=r).values
            ref = grid_log_integral(
                lambda s, y=y, d=d, sev=sev: log_cat_prob_sum(s, y, d, sev), mu, sig
            )
            np.testing.assert_allclose(ll.values[c, k, j], ref, atol=2e-5)


@pytest.mark.calibration
def test_t50_recovered_for_most_turning_models(joint_fit, small_study):
    """4 turning models: >= 3 covered by the 90% intervals, >= 1 by the 50% ones
    (``_checks.COVERAGE_RULE``: false alarm 0.052 + 0.063 on a correct model, halved intervals
    caught with P 0.54 + 0.29, about 0.67 together); the never-turner P(t50 > 12) > 0.95 as the
    module docstring says; medians within 1 day (a +0.7-SD shift of the turning models' t50,
    whose posterior SDs are ~0.3-1 day, moves them by 0.2-0.7 day: caught by the onset SBC).
    Planted bugs (issue 55, one fit, measured): fails under ``no_day_noise``; passes under
    ``cutpoint_shift``, ``drop_severity`` and ``prior_scale``."""
    c = t50_check(joint_fit, small_study)
    check_t50_coverage(c)
    # the never-turner: mass beyond the last day
    assert np.all(c.p_beyond[~c.turning] > 0.95), c.p_beyond
    # medians of the turning models within 1 day of the truth
    med = joint_fit["posterior"]["t50"].median(SAMPLE).values
    np.testing.assert_allclose(med[c.turning], c.truth[c.turning], atol=1.0)


@pytest.mark.calibration
def test_rater_effects_recovered_in_sign_and_order(joint_fit, small_study):
    """Severity medians in the simulated order, of the right sign where |truth| > 0.2, within
    0.2. Planted bugs (issue 55, one fit, measured): fails under ``drop_severity`` (the
    posterior severity is then its zero-sum prior); passes under ``cutpoint_shift``,
    ``no_day_noise`` and ``prior_scale``. False alarm: one fixed fit (seed 0), not measured
    over seeds."""
    sev = joint_fit["posterior"]["severity"].median(SAMPLE).values
    true = small_study["true_severity"].values
    assert np.argsort(sev).tolist() == np.argsort(true).tolist()
    big = np.abs(true) > 0.2
    assert np.all(np.sign(sev[big]) == np.sign(true[big]))
    np.testing.assert_allclose(sev, true, atol=0.2)


def test_diagnostics_of_the_onset_parameters(joint_fit):
    from delusion_bayes.inference import InferenceConfig
    from delusion_bayes.inference.diagnostics import diagnose, gate

    # explicit small-run tolerances (300 draws x 2 chains): R-hat <= 1.06, ESS >= 40, at most
    # 4 divergences in 600 draws. Seen for this seed: 0-3 (the same seed gives the same draws
    # in a new process, but a kernel loaded from the numba cache and a freshly compiled one
    # differ in the last bits, and a trajectory near a funnel's neck flips); sampler seeds 1-8
    # gave 0-1
    cfg = InferenceConfig(rhat_max=1.06, ess_min_per_chain=20, max_divergences=4)
    table = diagnose(joint_fit, cfg, var_names=["L", "k", "t50", "severity", "discrimination"])
    result = gate(joint_fit, table, cfg)
    assert result["divergences"] <= 4
    assert result["max_rhat"] <= 1.06
    assert result["min_ess"] >= 40
    assert result["passed"], result["reasons"]
    # at the default thresholds the same fit fails, and says why
    strict = gate(joint_fit, cfg=InferenceConfig())
    assert not strict["passed"] and any("R-hat" in r or "ESS" in r for r in strict["reasons"])


def test_models_stage_writes_the_contract_files(joint_fit, small_study, tmp_path, monkeypatch):
    import pandas as pd

    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import sub_config
    from delusion_bayes.stages import models as stage

    monkeypatch.setattr(stage, "fit_one", lambda *a, **k: joint_fit.copy())
    cfg = sub_config(compose(["experiment=smoke"]), stage.NEEDS)
    head = stage.run(small_study, cfg, tmp_path)
    out = tmp_path / "models" / "joint"
    for f in ("posterior.nc", "diagnostics.csv", "gate.json", "summary.csv",
              "milestones_posterior.csv", "t50_posterior.csv", "contrasts_posterior.csv",
              "consensus_posterior.csv", "reliability_posterior.csv", "raters_posterior.csv",
              "rank.png", "ppc.png", "loo_khat.png", "sensitivity.csv", "sensitivity.png",
              "index.json"):  # fmt: skip
        assert (out / f).is_file(), f
    # smoke: inference.compare is false, so comparison.csv lists the primary's own PSIS-LOO
    cmp = pd.read_csv(tmp_path / "models" / "comparison.csv")
    assert cmp["unit"].tolist() == ["model_day"]
    loo = pd.read_csv(out / "loo.csv").set_index("unit")
    assert loo.loc["model_day", "n_data_points"] == 60  # 5 models x 12 days, all rated
    assert loo.loc["rating", "n_data_points"] == 180
    gate = json.loads((out / "gate.json").read_text())
    assert set(gate) >= {"passed", "divergences", "max_rhat", "min_ess", "ebfmi_min", "reasons"}
    assert head["joint"]["passed"] == gate["passed"]
    import xarray as xr

    diag = pd.read_csv(out / "diagnostics.csv")
    assert {"mean", "sd", "ci_low", "ci_high", "r_hat", "ess_bulk", "ess_tail", "pass"} <= set(
        diag.columns
    )
    ms = pd.read_csv(out / "milestones_posterior.csv")
    assert list(ms.columns[:6]) == ["model", "milestone", "median", "ci_low", "ci_high",
                                    "p_censored"]  # fmt: skip
    cons = pd.read_csv(out / "consensus_posterior.csv")
    assert {"model", "day", "modal_stage", "p_ge3", "mean"} <= set(cons.columns)
    dt = xr.open_datatree(out / "posterior.nc")
    assert {"config_hash", "git_sha", "data_hash", "package_version", "seed"} <= set(dt.attrs)
    assert json.loads(dt.attrs["resolved_config"])["sampler"]["draws"] == 150


def test_models_stage_compares_variants_per_model_day_and_per_rating(
    joint_fit, small_study, tmp_path, monkeypatch
):
    """``inference.compare`` with one variant: ``comparison.csv`` (az.compare per left-out
    model-day) and ``comparison_by_rating.csv``. The variant is a real second fit, the joint
    model with a linear trajectory (2 chains x 150 draws, seed 1), which differs from the
    primary: each row carries its own fit's PSIS-LOO, the best first, and ``elpd_diff`` is the
    row's elpd minus the best (measured on this small study: the linear variant ranks
    first per model-day, by 0.54; which one wins is not asserted).
    Before issue 34 the 'variant' was the primary relabelled and ``elpd_diff == 0`` held by
    construction."""
    import pandas as pd

    from delusion_bayes.config import compose
    from delusion_bayes.inference.diagnostics import loo
    from delusion_bayes.models import fit
    from delusion_bayes.pipeline import sub_config
    from delusion_bayes.stages import models as stage

    linear = fit(small_study, "joint", trajectory="linear", draws=150, tune=150, chains=2,
                 seed=1, posterior_predictive=False)  # fmt: skip
    assert linear.attrs["variant"] == "joint[linear,rater]"

    def fake_fit(ds, name, cfg, primary=False, overrides=None):
        if overrides:
            assert overrides == {"trajectory": "linear"}, overrides
            return linear.copy()
        return joint_fit.copy()

    monkeypatch.setattr(stage, "fit_one", fake_fit)
    cfg = sub_config(
        compose(
            [
                "experiment=smoke",
                "inference.compare=true",
                "model.variants=[linear]",
                "model.also_fit=[]",
            ]
        ),  # fmt: skip
        stage.NEEDS,
    )
    head = stage.run(small_study, cfg, tmp_path)
    assert head["loo_unit"] == "model_day"
    for fname, unit, var in (("comparison.csv", "model_day", "y_model_day"),
                             ("comparison_by_rating.csv", "rating", "y")):  # fmt: skip
        table = pd.read_csv(tmp_path / "models" / fname, index_col=0)
        assert table["unit"].tolist() == [unit, unit]
        elpd = {"joint[logistic,rater]": loo(joint_fit, var_name=var).elpd,
                "joint[linear,rater]": loo(linear, var_name=var).elpd}  # fmt: skip
        # a real second fit: its elpd differs from the primary's (measured per model-day
        # -110.11 logistic, -109.57 linear; the relabelled primary gave a difference of 0)
        assert abs(elpd["joint[logistic,rater]"] - elpd["joint[linear,rater]"]) > 0.05, elpd
        assert set(table.index) == set(elpd)
        np.testing.assert_allclose(table["elpd"], [elpd[i] for i in table.index], rtol=1e-9)
        best = max(elpd.values())
        assert table.index[0] == max(elpd, key=elpd.get)  # az.compare ranks the best first
        # elpd_diff as ArviZ 1.x writes it: the row's elpd minus the best (<= 0)
        np.testing.assert_allclose(table["elpd_diff"], [elpd[i] - best for i in table.index],
                                   rtol=1e-9, atol=1e-9)  # fmt: skip


def test_fit_stores_the_log_prior_psense_scales(joint_fit):
    """``log_prior``: one (chain, draw) sum per top-level prior term, the prior table's."""
    lp = joint_fit["log_prior"]
    assert set(lp.data_vars) == {"log_L1", "mu_log_k", "sigma_log_k", "mu_t50", "sigma_t50",
                                 "mu_log_eps", "sigma_log_eps", "severity", "log_disc"}  # fmt: skip
    for v in lp.data_vars:
        assert lp[v].dims == ("chain", "draw") and np.isfinite(lp[v].values).all(), v
    # mu_t50 ~ N(0.6, 0.4) at the draws, as written
    from scipy import stats

    mu = joint_fit["posterior"]["mu_t50"].values
    np.testing.assert_allclose(lp["mu_t50"].values, stats.norm.logpdf(mu, 0.6, 0.4), rtol=1e-10)


def test_models_stage_writes_sensitivity_csv_into_every_fit_folder(
    joint_fit, small_study, tmp_path, monkeypatch
):
    """Two fit folders (the joint fit, and the same draws standing in for the rater model):
    each gets ``sensitivity.csv`` (through the contract) and ``sensitivity.png``, with a
    verdict for every reported parameter and the seconds it took in the headline."""
    from delusion_bayes import results
    from delusion_bayes.config import compose
    from delusion_bayes.models.sensitivity import VERDICTS
    from delusion_bayes.pipeline import sub_config
    from delusion_bayes.stages import models as stage

    monkeypatch.setattr(stage, "fit_one", lambda *a, **k: joint_fit.copy())
    cfg = sub_config(compose(["experiment=smoke", "model.also_fit=[rater]"]), stage.NEEDS)
    head = stage.run(small_study, cfg, tmp_path)
    models = [str(m) for m in small_study["model"].values]
    for fit in ("joint", "rater"):
        df = results.read(tmp_path, "models/{fit}/sensitivity.csv", fit=fit)
        assert df is not None, fit
        assert (tmp_path / "models" / fit / "sensitivity.png").is_file()
        for var in ("L", "k", "t50"):
            assert df.loc[df["variable"] == var, "parameter"].tolist() == [
                f"{var}[{m}]" for m in models
            ]
        assert {"mu_log_k", "sigma_t50", "severity", "discrimination"} <= set(df["variable"])
        # sampling coordinates of reported parameters are not rows of their own
        assert not df["variable"].str.startswith(("z_", "w_")).any()
        assert not df["variable"].str.endswith("_centred").any()
        assert set(df["verdict"]) <= set(VERDICTS.values())
        assert (df["threshold"] == 0.05).all()
        assert (df[["prior", "likelihood"]] >= 0).all().all()
        # the verdict follows priorsense's rule from the two columns
        both = (df["prior"] >= 0.05) & (df["likelihood"] >= 0.05)
        assert (df.loc[both, "verdict"] == "prior-data conflict").all()
        assert (df.loc[~both & (df["prior"] > 0.05), "verdict"] == "weak likelihood").all()
        assert (df.loc[df["prior"] < 0.05, "verdict"] == "-").all()
        assert 0 < head[fit]["sensitivity_seconds"] < 60
