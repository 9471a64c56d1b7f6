"""Population-level contrasts (models.population): calibrated under an exchangeable null, covering
a known shift, wider than the finite-sample contrast. numpy only (no fit), CI-cheap."""

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.data.simulate import simulate_study
from delusion_bayes.models.derived import posterior_contrasts
from delusion_bayes.models.population import population_draws
from delusion_bayes.models.population import two_stage_contrasts as population_contrasts

GROUPS = np.array([True] * 6 + [False] * 9)  # the cohort contrast's 6 vs 9 models


def _study_draws(rng, shift, n_draws=200, noise=1.0):
    """Per-model posterior-like draws: true values N(mu_g, 8), measurement noise N(0, noise)."""
    truth = rng.normal(16.0, 8.0, GROUPS.size) + shift * GROUPS
    return truth[None, :] + rng.normal(0.0, noise, (n_draws, GROUPS.size))


def test_two_stage_formula_holds_under_its_own_assumptions():
    """The two-stage contrast (kept only for the comparison in docs/dev/models.md), checked
    under the model it assumes: 400 studies of two normal groups with one spread, its 95%
    interval excludes 0 in 7-33 of them (3 binomial SEs of 5% either side). Not a calibration
    claim (issue 55: it simulates exactly the formula it tests, so no model bug can fail it;
    unmarked): the main job's population contrast is the grouped fit's, calibrated by
    experiments/bench/population_calibration.py under unequal spread and censoring."""
    from delusion_bayes.intervals import eti

    rng = np.random.default_rng(1)
    reject = 0
    for _ in range(400):
        d = population_draws(_study_draws(rng, 0.0), GROUPS, ~GROUPS, rng, reps=5)
        lo, hi = eti(d, 0.95)
        reject += (lo > 0) or (hi < 0)
    assert 0.05 - 3 * 0.011 <= reject / 400 <= 0.05 + 3 * 0.011


def test_population_contrast_covers_a_known_shift_and_is_wider_than_finite_sample():
    rng = np.random.default_rng(2)
    x = _study_draws(rng, -10.0, n_draws=400)
    ds = xr.Dataset(
        {"t50": (("chain", "draw", "model"), x.reshape(2, 200, -1))},
        coords={
            "model": [f"m{i}" for i in range(15)],
            "cohort": ("model", np.where(GROUPS, "late-2025", "earlier")),
        },
    )
    spec = {
        "name": "c",
        "by": "cohort",
        "a": ["late-2025"],
        "b": ["earlier"],
        "alternative": "two-sided",
        "quantities": ["t50", "first_clinical"],
    }
    pop = population_contrasts(ds, [spec]).set_index("quantity")
    fin = posterior_contrasts(ds, [spec]).set_index("quantity")
    p, f = pop.loc["t50"], fin.loc["t50"]
    # measurement noise 1 -> finite-sample SE ~0.07; between-model SD 8 -> population SE ~4.2
    assert p.ci_low < -10.0 < p.ci_high
    assert (p.ci_high - p.ci_low) > 5 * (f.ci_high - f.ci_low)
    assert p.ci_high - p.ci_low == pytest.approx(2 * 2.16 * 8 * np.sqrt(1 / 6 + 1 / 9), rel=0.35)
    assert np.isnan(pop.loc["first_clinical", "median"])
    assert "not a quantity" in pop.loc["first_clinical", "note"]
    again = population_contrasts(ds, [spec]).set_index("quantity")
    assert again.loc["t50", "ci_low"] == p.ci_low  # seeded


def test_group_shift_moves_only_that_groups_truth():
    base = simulate_study("null", seed=0)
    shifted = simulate_study(
        "null", seed=0, group_shift={"by": "cohort", "level": "late-2025", "t50": -8.0}
    )
    diff = shifted["true_t50"].values - base["true_t50"].values
    late = shifted["cohort"].values == "late-2025"
    np.testing.assert_allclose(diff[late], -8.0)
    np.testing.assert_allclose(diff[~late], 0.0)
    with pytest.raises(ValueError, match="null preset"):
        simulate_study("paper_like", seed=0, group_shift={"by": "cohort", "level": "earlier"})
    with pytest.raises(ValueError, match="not a cohort"):
        simulate_study("null", seed=0, group_shift={"by": "cohort", "level": "2030"})


def _group_fit(mu_t50_a, mu_t50_b, sigma_t50=0.2, n=400, sigma_k=0.5):
    """A posterior of a population-contrast fit (``joint``, 30 days) without sampling: the
    hyper-parameters per group A, B, neither, constant over draws but mu_t50 (N(., 0.02))."""
    rng = np.random.default_rng(3)
    g = ["A", "B", "neither"]

    def per_group(vals):
        return (("chain", "draw", "population_group"), np.broadcast_to(vals, (1, n, 3)).copy())

    mu = np.stack([mu_t50_a, mu_t50_b, 0.5] * np.ones((n, 3)), 0)
    mu = mu + rng.normal(0, 0.02, (1, n, 3))
    post = xr.Dataset(
        {
            "mu_t50": (("chain", "draw", "population_group"), mu),
            "sigma_t50": per_group(np.array([sigma_t50] * 3)),
            "mu_log_k": per_group(np.zeros(3)),
            "sigma_log_k": per_group(np.full(3, sigma_k)),
            "mu_log_L1": per_group(np.full(3, np.log(3.0))),
            "sigma_log_L1": per_group(np.full(3, 0.1)),
        },
        coords={"population_group": g, "day": np.arange(1, 31)},
    )
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs.update(model="joint", variant="joint[logistic,rater]", population="group")
    dt.attrs["pop_group"] = [0] * 6 + [1] * 9
    return dt


SPEC = {"name": "cohort", "by": "cohort", "a": ["x"], "b": ["y"], "alternative": "two-sided"}


def test_population_contrast_is_the_difference_of_population_means():
    """t50: T (mu_A - mu_B) exactly (30 * (0.3 - 0.6) = -9 days, draw noise 30 * 0.02 * sqrt 2
    = 0.85 SD, so the median within 0.2 of -9); a milestone of two equal populations but for t50
    shifts by about the t50 shift (logistic new chatbots with k ~ 1: the first day at stage >= 3
    moves with t50, up to censoring and the integer days: within 1.5 days of -9); the columns
    the outside checks read and the estimand's name."""
    from delusion_bayes.models.population import ESTIMAND, population_contrasts

    dt = _group_fit(0.3, 0.6)
    spec = {**SPEC, "quantities": ["t50", "first_clinical", "first_level_b"]}
    df = population_contrasts({"cohort": dt}, [spec], seed=1).set_index("quantity")
    assert abs(df.loc["t50", "median"] + 9.0) < 0.2
    assert df.loc["t50", "p_gt_0"] == 0.0
    assert abs(df.loc["first_clinical", "median"] + 9.0) < 1.5
    assert (df["estimand"] == ESTIMAND).all() and ESTIMAND == "difference of population means"
    assert df.loc["t50", ["n_a", "n_b"]].tolist() == [6, 9]
    assert np.isnan(df.loc["first_level_b", "median"]) and df.loc["first_level_b", "note"]


def test_population_delta_draws_are_the_draws_the_table_summarises():
    """The per-draw Delta the sensitivity check scales is the table's: the same median and P(>0)
    for t50 (exact) and a Monte Carlo milestone (same seed, same new chatbots); a degenerate
    quantity is left out rather than scaled."""
    from delusion_bayes.models.population import population_contrasts, population_delta_draws

    dt = _group_fit(0.3, 0.6)
    dt.attrs["contrast_spec"] = "{}"
    spec = {**SPEC, "quantities": ["t50", "first_clinical", "first_level_b"]}
    table = population_contrasts({"cohort": dt}, [spec], seed=4).set_index("quantity")
    draws = population_delta_draws(dt, spec, seed=4)
    assert set(draws) == {
        ("t50", "contrast, population", "cohort"),
        ("first_clinical", "contrast, population", "cohort"),
    }
    for q in ("t50", "first_clinical"):
        d = draws[(q, "contrast, population", "cohort")]
        assert d.dims == ("chain", "draw") and d.shape == (1, 400)
        assert float(d.median()) == pytest.approx(table.loc[q, "median"], abs=1e-12)
        assert float((d > 0).mean()) == table.loc[q, "p_gt_0"]
    flat = _group_fit(5.0, 5.0, sigma_t50=0.01, sigma_k=0.01)
    assert population_delta_draws(flat, {**SPEC, "quantities": ["first_clinical"]}) == {}


def test_degenerate_population_contrast_is_nan_with_a_note():
    """Both populations never turn within the window (t50 at 5 windows, spread 0.01 window):
    every new chatbot's first_clinical is censored at 31 in every draw, Delta = 0 in every
    draw: NaN with a note, never [0, 0]."""
    from delusion_bayes.models.population import population_contrasts

    dt = _group_fit(5.0, 5.0, sigma_t50=0.01, sigma_k=0.01)
    spec = {**SPEC, "quantities": ["first_clinical"]}
    row = population_contrasts({"cohort": dt}, [spec]).iloc[0]
    assert np.isnan(row["median"]) and np.isnan(row["ci_low"]) and np.isnan(row["p_gt_0"])
    assert "degenerate" in row["note"]


def test_group_scale_fit_gives_each_group_the_calibrated_t50_spread_prior():
    """``scale = "group"``: each group's ``sigma_t50`` has ``GROUP_T50_SCALE_PRIOR``
    (LogNormal, median 8 days of a 30-day window), chosen by the censored two-group check
    (experiments/bench/scale_prior_check.py) because the model's HalfNormal(0.5) over-covered
    there; ``scale = "shared"`` keeps the model's prior (Gamma(3, 6)), and a user's
    ``sigma_t50`` wins."""
    from delusion_bayes.models.population import GROUP_T50_SCALE_PRIOR, population_spec
    from delusion_bayes.models.priors import prior_rms

    ds = simulate_study("null", 0, n_raters=3, n_days=30)
    c = {"name": "c", "by": "cohort", "a": ["late-2025"], "b": ["earlier"]}
    group = population_spec(ds, "joint", c)
    assert group.priors["sigma_t50"] == GROUP_T50_SCALE_PRIOR
    assert np.exp(GROUP_T50_SCALE_PRIOR["mu"]) * 30 == pytest.approx(8.0)
    # its root mean square, exp(mu + sigma^2), where a fit fixes the scale: 8 / 30 e^0.5625
    assert prior_rms(GROUP_T50_SCALE_PRIOR) == pytest.approx(8 / 30 * np.exp(0.5625), rel=0.02)
    shared = population_spec(ds, "joint", c, scale="shared")
    assert shared.priors["sigma_t50"] == {"dist": "Gamma", "alpha": 3.0, "beta": 6.0}
    mine = {"sigma_t50": {"dist": "HalfNormal", "sigma": 0.3}}
    assert population_spec(ds, "joint", c, priors=mine).priors["sigma_t50"] == mine["sigma_t50"]


@pytest.mark.slow
def test_population_fit_has_group_hyperparameters_in_one_graph_and_log_prior():
    """An onset population-contrast fit (small sampler): per-group hyper-means in the posterior
    and their priors in ``log_prior`` (so the power-scaling screen sees them); a fit without a
    population is the same spec as before (same hash as ``build_spec``'s)."""
    from delusion_bayes.models.population import fit_population, population_spec
    from delusion_bayes.models.spec import build_spec

    ds = simulate_study("null", 0, n_raters=3)
    c = {
        "name": "c",
        "by": "cohort",
        "a": ["late-2025"],
        "b": ["earlier"],
        "quantities": ["t50", "first_clinical"],
    }
    spec = population_spec(ds, "onset", c)
    assert spec.data.pop_group.tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1]
    assert build_spec(ds, "onset").hash() != spec.hash()
    plain = build_spec(ds, "onset")
    assert "population" not in plain._meta() and plain.data.pop_group is None
    kw = dict(sampler="nutpie", draws=100, tune=100, chains=1, progressbar=False, seed=1)
    dt = fit_population(ds, "onset", c, posterior_predictive=False, **kw)
    post = dt["posterior"]
    assert post["mu_t50"].sizes["population_group"] == 3
    assert {"mu_t50", "sigma_t50", "mu_log_L1"} <= set(dt["log_prior"].data_vars)
    # the plateau's spread is fixed at its prior's root mean square (not identified at stage 4)
    assert "sigma_log_L1" not in dt["log_prior"].data_vars
    np.testing.assert_allclose(post["sigma_log_L1"].values, 0.2, rtol=0.01)
    # the contrasts' power-scaling rows come from this fit, with its own prior (issue 53.4)
    from delusion_bayes.stages.fit_outputs import population_sensitivity

    notes: list[str] = []
    (tab,) = population_sensitivity({"c": dt}, 0, {"stable_run": 3}, notes)
    assert notes == [] and set(tab["kind"]) == {"contrast, population"}
    assert set(tab["quantity"]) == {"t50", "first_clinical"} and (tab["item"] == "c").all()
    assert np.isfinite(tab["prior"]).all() and (tab["prior"] > 0).all()
    assert np.isfinite(tab["pareto_k_prior"]).all()


def test_a_failed_grouped_fit_reports_no_contrast():
    """A population contrast from a grouped fit that failed its diagnostics gate is never a
    number: NaN estimates, the gate's reasons in the row's note and in the stage's notes."""
    import pandas as pd
    import xarray as xr

    from delusion_bayes.stages.fit_tables import unless_failed

    rows = pd.DataFrame({"name": ["c"], "quantity": ["t50"], "median": [-3.0], "ci_low": [-5.0],
                         "ci_high": [-1.0], "p_gt_0": [0.01], "mean": [-3.1],
                         "note": [""]})  # fmt: skip
    ok = xr.DataTree()
    ok.attrs.update(gate_passed=True, contrast="c")
    assert unless_failed(rows, ok, []) is rows
    bad = xr.DataTree()
    bad.attrs.update(gate_passed=False, gate_reasons="R-hat > 1.01 for 2 parameters", contrast="c")
    notes: list[str] = []
    out = unless_failed(rows, bad, notes)
    assert out[["median", "ci_low", "ci_high", "p_gt_0", "mean"]].isna().all(axis=None)
    assert "failed its diagnostics gate (R-hat > 1.01" in out["note"].iloc[0]
    assert notes == [
        "population contrast 'c' not reported: the grouped fit failed its diagnostics gate "
        "(R-hat > 1.01 for 2 parameters)"
    ]
    assert rows["median"].iloc[0] == -3.0  # the input is not changed


def test_population_contrasts_get_the_familys_pooled_sign_error():
    """Section E's Bayesian multiplicity column (issue 51): the run's formed population
    contrasts as z-scores mean / sd, partially pooled; a NaN row (failed fit) stays NaN."""
    import pandas as pd

    from delusion_bayes.models.family_pooling import pool_family
    from delusion_bayes.stages.fit_tables import pooled_signs

    pop = pd.DataFrame({"mean": [-6.0, 0.5, 2.0, np.nan], "sd": [2.0, 2.5, 4.0, np.nan]})
    out = pooled_signs(pop)
    ref = pool_family(np.array([-3.0, 0.2, 0.5]), np.ones(3))
    np.testing.assert_allclose(out["p_sign_error"].iloc[:3], ref["p_sign_error"])
    assert np.isnan(out["p_sign_error"].iloc[3])
    assert out["p_sign_error"].iloc[0] < 0.025 < out["p_sign_error"].iloc[1]
    assert pooled_signs(pop.iloc[[0, 3]])["p_sign_error"].isna().all()  # one formed: no family


def test_population_means_p_never_is_the_censored_share_of_new_chatbots():
    """P(never) of a new chatbot: with L = 4 and no day noise its rating reaches 3 on the first
    day after t50 (stage 1 + 3 sigmoid(k (t - t50)) > 2.5 iff t > t50), so P(never) = P(t50 >
    30) = Phi((T mu - 30) / (T sigma)): group A (mu 1.5, sigma 0.2) 1 - Phi(-2.5) = 0.9938,
    group B (mu 0.3) Phi(-3.5) = 0.0002; Monte Carlo over 100 new chatbots x 400 draws."""
    from scipy.stats import norm

    from delusion_bayes.models.population import population_means

    means = population_means(_group_fit(1.5, 0.3), ["p_never"], seed=2)
    p = means["p_never"].mean("sample")
    assert p.sel(population_group="A") == pytest.approx(norm.cdf(2.5), abs=0.01)
    assert p.sel(population_group="B") == pytest.approx(norm.cdf(-3.5), abs=0.002)


def test_grouped_fit_has_t50_spread_per_group_and_every_log_k_non_centred():
    """``scale="group"``: only ``sigma_t50`` per group (``blocks.GROUP_SCALES``), log k's and
    the day noise's spreads one for all models, every log k non-centred (paper_like: 11 turners,
    centred in the study's own fit by ``geometry.log_k_centring``'s >= 8; with per-group log-k
    spreads an early turner's flat-line mode kept one chain in four on unequal seed 360);
    ``scale="shared"``: one ``sigma_t50`` too, and the study's centring rule."""
    import pymc as pm

    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.population import population_spec
    from delusion_bayes.models.spec import build_spec

    ds = simulate_study("paper_like", seed=0)
    c = {"name": "cohort", "by": "cohort", "a": ["late-2025"], "b": ["earlier"]}
    plain = np.asarray(build_spec(ds, "joint").data.log_k_centred, bool)
    assert plain.sum() == 11
    grouped = population_spec(ds, "joint", c, scale="group")
    assert not np.asarray(grouped.data.log_k_centred, bool).any()
    model = build_model(grouped)
    point = model.initial_point()
    shapes = {v.name: point[model.rvs_to_values[v].name].shape for v in model.free_RVs}
    assert shapes["sigma_t50"] == (3,) and shapes["mu_t50"] == (3,) and shapes["mu_log_k"] == (3,)
    assert shapes["sigma_log_k"] == () and shapes["sigma_log_eps"] == ()
    assert isinstance(model, pm.Model)
    shared = population_spec(ds, "joint", c, scale="shared")
    np.testing.assert_array_equal(np.asarray(shared.data.log_k_centred, bool), plain)
