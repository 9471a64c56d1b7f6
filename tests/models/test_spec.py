"""Model specs without sampling: coords, index arrays, missing data, priors, input errors."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from delusion_bayes.config import conf_dir
from delusion_bayes.models import VARIANTS, build_spec, default_priors, resolve_priors
from delusion_bayes.models.config import ModelConfig


@pytest.fixture(scope="module")
def study(small_study):
    return small_study


@pytest.fixture(scope="module")
def holey(study):
    """The small study with one rating missing and one model-day nobody rated."""
    ds = study.copy(deep=True)
    rec = ds["recognition"].values
    rec[0, 1, 2] = np.nan  # rater R1, model 1, day 3: one missing rating
    rec[:, 2, 5] = np.nan  # model 2, day 6: no rater
    ds["recognition"].values = rec
    return ds


def test_joint_coords_and_indices_match_the_ratings(study):
    spec = build_spec(study, "joint")
    rec = study["recognition"].transpose("rater", "model", "day").values
    assert spec.coords["rater"] == [str(r) for r in study["rater"].values]
    assert spec.coords["model"] == [str(m) for m in study["model"].values]
    assert spec.coords["day"] == list(range(1, 13))
    n = int(np.sum(~np.isnan(rec)))
    assert len(spec.coords["obs"]) == n == len(spec.data["y"])
    r, m, t, y = (spec.data[k] for k in ("rater_idx", "model_idx", "day_idx", "y"))
    # every observation indexes back to its rating (categories 0..3 = stages 1..4)
    np.testing.assert_array_equal(rec[r, m, t], y + 1)
    assert y.min() >= 0 and y.max() <= 3
    assert spec.variant == "joint[logistic,rater]"
    assert spec.n_days == 12
    assert set(spec.model_coords) == {"vendor", "generation", "cohort"}


def test_missing_ratings_are_left_out_and_missing_model_days_recorded(study, holey):
    full, spec = build_spec(study, "joint"), build_spec(holey, "joint")
    # 1 rating + 3 raters on the empty model-day = 4 observations fewer, none imputed
    assert len(spec.data["y"]) == len(full.data["y"]) - 4
    obs = set(
        zip(spec.data["rater_idx"], spec.data["model_idx"], spec.data["day_idx"], strict=True)
    )
    assert (0, 1, 2) not in obs
    assert not any(m == 2 and t == 5 for _, m, t in obs)
    assert spec.missing.shape == (5, 12)
    assert spec.missing.sum() == 1 and spec.missing[2, 5]
    # the onset model's consensus skips the empty model-day too
    onset = build_spec(holey, "onset")
    assert len(onset.data["y"]) == 5 * 12 - 1
    assert not np.any((onset.data["model_idx"] == 2) & (onset.data["day_idx"] == 5))
    # and the spec hash changes with the data
    assert spec.hash() != full.hash()
    assert build_spec(holey, "joint").hash() == spec.hash()


def test_onset_spec_is_the_median_consensus(study):
    from delusion_bayes.baselines import consensus

    spec = build_spec(study, "onset")
    cons = consensus(study["recognition"], rule="median").transpose("model", "day").values
    np.testing.assert_array_equal(
        spec.data["y"], cons[spec.data["model_idx"], spec.data["day_idx"]]
    )


def test_disengagement_levels_are_one_ordinal_outcome(study):
    spec = build_spec(study, "disengagement")
    a = study["level_a"].transpose("model", "day").values
    b = study["level_b"].transpose("model", "day").values
    m, t = spec.data["level_model_idx"], spec.data["level_day_idx"]
    np.testing.assert_array_equal(spec.data["level"], a[m, t] + b[m, t])
    assert set(np.unique(spec.data["level"])) <= {0, 1, 2}


def test_disengagement_rejects_b_without_a(study):
    ds = study.copy(deep=True)
    la, lb = ds["level_a"].values, ds["level_b"].values
    la[0, 0], lb[0, 0] = 0.0, 1.0
    ds["level_a"].values, ds["level_b"].values = la, lb
    with pytest.raises(ValueError, match="Level B implies Level A"):
        build_spec(ds, "disengagement")


def test_group_terms_index_model_coords(study):
    spec = build_spec(study, "joint", group_terms=["vendor"])
    levels = spec.coords["group_vendor"]
    vendors = [str(v) for v in study["vendor"].values]
    assert [levels[i] for i in spec.data["group_vendor_idx"]] == vendors
    with pytest.raises(ValueError, match="not a coordinate on 'model'"):
        build_spec(study, "joint", group_terms=["colour"])
    with pytest.raises(ValueError, match="not rater"):
        build_spec(study, "rater", group_terms=["vendor"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "nope"}, "unknown model 'nope'"),
        ({"trajectory": "cubic"}, "trajectory='cubic'"),
        ({"cutpoints": "free"}, "cutpoints='free'"),
    ],
)
def test_bad_arguments_name_the_value(study, kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_spec(study, **kwargs)


def test_off_scale_rating_is_named(study):
    ds = study.copy(deep=True)
    v = ds["recognition"].values
    v[1, 0, 3] = 7.0
    ds["recognition"].values = v
    with pytest.raises(ValueError, match=r"value 7\.0 at rater='R2', model='Early', day=4"):
        build_spec(ds, "joint")


def test_prior_overrides_are_validated():
    p = resolve_priors("joint", {"sigma_t50": {"sigma": 0.25}})
    assert p["sigma_t50"] == {"dist": "HalfNormal", "sigma": 0.25}
    assert p["mu_L"] == default_priors("joint")["mu_L"]
    p = resolve_priors("onset", {"mu_t50": {"dist": "StudentT", "nu": 4, "mu": 0.5, "sigma": 0.3}})
    assert p["mu_t50"]["dist"] == "StudentT"
    with pytest.raises(ValueError, match="not a parameter of model 'joint'"):
        resolve_priors("joint", {"sigma_y": {"sigma": 1.0}})
    with pytest.raises(ValueError, match="expected \\['sigma'\\]"):
        resolve_priors("joint", {"sigma_t50": {"dist": "HalfNormal", "mu": 1.0}})
    with pytest.raises(ValueError, match="must be a number"):
        resolve_priors("joint", {"sigma_t50": {"sigma": -1.0}})


def test_prior_table_lists_every_prior(study):
    spec = build_spec(study, "rater")
    table = spec.prior_table()
    assert set(table.index) == set(default_priors("rater"))
    assert table.loc["sigma_theta", "dist"] == "HalfNormal"


def test_model_yaml_matches_the_dataclass():
    """Every conf/model/*.yaml has exactly the ModelConfig keys and names its own model."""
    keys = set(ModelConfig.__dataclass_fields__)
    for path in sorted((conf_dir() / "model").glob("*.yaml")):
        values = yaml.safe_load(path.read_text())
        assert set(values) == keys, path.name
        assert values["name"] == path.stem
        assert set(values["variants"]) <= set(VARIANTS)


def test_models_import_is_light():
    import subprocess
    import sys

    code = (
        "import sys, delusion_bayes.models as m, delusion_bayes.inference as i;"
        "m.build_spec; print('pymc' in sys.modules, 'arviz' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_fit_bookkeeping_masks_a_missing_model_day(holey):
    """``fit``'s last step (no sampling): the latent stage of a model-day nobody rated is NaN in
    every draw, observations carry their rater/model/day labels."""
    import xarray as xr

    from delusion_bayes.models.fit import _finish

    spec = build_spec(holey, "joint")
    rng = np.random.default_rng(0)
    post = xr.Dataset(
        {
            "stage": (("chain", "draw", "model", "day"), rng.normal(2, 1, (2, 3, 5, 12))),
            "t50": (("chain", "draw", "model"), rng.normal(6, 1, (2, 3, 5))),
        },
        coords={"model": spec.coords["model"], "day": spec.coords["day"]},
    )
    obs = xr.Dataset({"y": ("obs", spec.data["y"])}, coords={"obs": spec.coords["obs"]})
    dt = _finish(xr.DataTree.from_dict({"posterior": post, "observed_data": obs}), spec)
    stage = dt["posterior"]["stage"]
    assert stage.isel(model=2, day=5).isnull().all()
    assert int(stage.isnull().sum()) == 2 * 3
    assert dt["posterior"]["t50"]["vendor"].values.tolist() == holey["vendor"].values.tolist()
    y = dt["observed_data"]
    assert not ((y["obs_model"] == spec.coords["model"][2]) & (y["obs_day"] == 6)).any()
    assert dt.attrs["spec_hash"] == spec.hash()


def test_day_noise_centred_only_for_the_oscillating_model(paper_like, study):
    """``noise_centring``: the day-noise weight is large only where the day noise dominates the
    raters' measurement error (paper_like's oscillating Claude Opus 3, true day noise 0.70 vs
    <= 0.20 for the others); 0 elsewhere, and 0 on the small study (12 days, 3 raters)."""
    from delusion_bayes.models.spec import noise_centring

    lam = noise_centring(paper_like["recognition"])
    names = paper_like["model"].values.tolist()
    opus3 = names.index("Claude Opus 3")
    assert 0.6 <= lam[opus3] <= 0.9, lam
    assert np.all(np.delete(lam, opus3) == 0.0), lam
    assert build_spec(paper_like, "joint").data["eps_lambda"][opus3] == lam[opus3]
    assert np.all(build_spec(study, "joint").data["eps_lambda"] == 0.0)
    assert "eps_lambda" not in build_spec(paper_like, "onset").data


def test_partially_centred_day_noise_is_the_same_model(study):
    """Any centring weight gives the same prior for the latent stage: with the onset parameters
    drawn from the prior, stage - trajectory ~ Normal(0, sigma_eps) whether the day noise is
    non-centred (lambda 0), partially (0.6) or fully centred (1). Checked by a two-sample KS
    test on 4,000 prior draws of the standardised residual at one model-day (each must be
    N(0, 1): KS p > 0.001 against the standard normal)."""
    import pymc as pm
    from scipy import stats

    from delusion_bayes.models.build import build_model

    for lam in (0.0, 0.6, 1.0):
        spec = build_spec(study, "joint")
        spec.data["eps_lambda"] = np.full(len(spec.coords["model"]), lam)
        model = build_model(spec)
        draws = pm.draw(
            [model["stage"], model["L"], model["k"], model["t50"], model["sigma_eps"]],
            draws=4000,
            random_seed=7,
        )
        stage, L, k, t50, sig = (np.asarray(d) for d in draws)
        day = float(spec.data["day_values"][5])
        traj = 1.0 + (L[:, 2] - 1.0) / (1.0 + np.exp(-k[:, 2] * (day - t50[:, 2])))
        z = (stage[:, 2, 5] - traj) / sig[:, 2]
        assert stats.kstest(z, "norm").pvalue > 0.001, (lam, z.mean(), z.std())


def test_cumulative_logit_matches_pymc_ordered_logistic_and_is_exact_in_the_tails():
    """``blocks.cumulative_logit`` (hand-written log-probability) against PyMC's
    ``OrderedLogistic(eta=s x, cutpoints=s c)``: equal to 1e-9 where P(y) > e^-15 (2,000
    random ratings); in the far tail PyMC loses precision (difference of two sigmoids near 1)
    and ours matches the closed form log sigmoid(a) - ... e.g. x = -50, s = 3, y = 3 (top
    category): log sigmoid(3 (-50 - 3.5)) = -160.5 exactly, where PyMC returns -inf."""
    import pymc as pm
    import pytensor.tensor as pt

    from delusion_bayes.models.blocks import _cumlogit_logp

    rng = np.random.default_rng(0)
    n = 2000
    x = rng.normal(2.5, 1.5, n)
    s = np.exp(rng.normal(1.0, 0.5, n))
    y = rng.integers(0, 4, n)
    c = np.array([1.5, 2.5, 3.5])
    ref = pm.logp(
        pm.OrderedLogistic.dist(eta=s * x, cutpoints=s[:, None] * c[None, :], compute_p=False), y
    ).eval()
    ours = _cumlogit_logp(pt.as_tensor(y), pt.as_tensor(x), pt.as_tensor(s), c).eval()
    ok = ref > -15
    assert ok.sum() > 1900
    np.testing.assert_allclose(ours[ok], ref[ok], atol=1e-9)
    assert np.all(np.isfinite(ours))
    tail = _cumlogit_logp(
        pt.as_tensor(np.array([3, 0])), pt.as_tensor(np.array([-50.0, 50.0])),
        pt.as_tensor(np.array([3.0, 3.0])), c,
    ).eval()  # fmt: skip
    np.testing.assert_allclose(tail, [-160.5, -145.5], rtol=1e-12)


def test_cumulative_logit_draws_follow_its_probabilities():
    """Posterior-predictive draws of ``cumulative_logit``: category frequencies of 40,000 draws
    at x = 2.2, s = 2 within 0.01 of P(y) = sigmoid(s (x - c_{y-1})) - sigmoid(s (x - c_y))."""
    import pymc as pm

    from delusion_bayes.models.blocks import cumulative_logit

    x, s = 2.2, 2.0
    with pm.Model():
        y = cumulative_logit("y", np.full(40_000, x), np.full(40_000, s), np.zeros(40_000, int))
    draws = pm.draw(y, random_seed=3)
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    gt = sig(s * (x - np.array([1.5, 2.5, 3.5])))
    p = np.array([1 - gt[0], gt[0] - gt[1], gt[1] - gt[2], gt[2]])
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, p, atol=0.01)


@pytest.mark.parametrize("shear", [0.0, 2.0, 8.0])
def test_sheared_never_turner_t50_is_the_same_model(study, monkeypatch, shear):
    """The non-centred t50 coordinate sheared along 1/k (``t50 = loc + scale z + c/k`` with
    ``z ~ N(-c/(k scale), 1)``, :data:`delusion_bayes.models.spec.T50_SHEAR`) leaves
    ``t50 ~ N(T mu_t50, T sigma_t50)`` for every shear ``c``: 4,000 forward draws of the
    standardised t50 of every model (all made non-centred) are N(0, 1) by a KS test
    (p > 0.001). Dropping the prior mean ``-c/(k scale)`` of ``z`` shifts t50 by ``c/k``
    (days) and fails this for c = 2 and 8."""
    import pymc as pm
    from scipy import stats

    from delusion_bayes.models import blocks
    from delusion_bayes.models.build import build_model

    monkeypatch.setattr(blocks, "T50_SHEAR", shear)
    spec = build_spec(study, "joint")
    spec.data["t50_centred"] = np.zeros(len(spec.coords["model"]), bool)
    model = build_model(spec)
    assert "z_t50" in model.named_vars and "t50_centred" not in model.named_vars
    t50, mu, sd = (
        np.asarray(d)
        for d in pm.draw([model["t50"], model["mu_t50"], model["sigma_t50"]], 4000, random_seed=3)
    )
    T = float(spec.n_days)
    z = (t50 - T * mu[:, None]) / (T * sd[:, None])
    for m in range(z.shape[1]):
        assert stats.kstest(z[:, m], "norm").pvalue > 0.001, (shear, m, z[:, m].mean())


def test_target_accept_is_the_models_own_unless_the_config_names_one():
    """``sampler.target_accept: null`` (the shipped configs) gives each model its own: 0.99 for
    the onset model (2 divergences at 0.95 on paper_like, sampler seed 0), 0.95 otherwise; a
    number in the config applies to every model."""
    from delusion_bayes.inference.config import SamplerConfig
    from delusion_bayes.models.config import target_accept_for

    assert target_accept_for("onset") == 0.99
    assert target_accept_for("joint") == target_accept_for("rater") == 0.95
    assert target_accept_for("onset", 0.8) == 0.8
    assert SamplerConfig().target_accept is None
    for name in ("nutpie", "pymc", "numpyro"):
        cfg = yaml.safe_load((conf_dir() / "sampler" / f"{name}.yaml").read_text())
        assert cfg["target_accept"] is None, name


def test_models_fit_is_the_function_even_after_importing_its_module():
    """``from delusion_bayes.models.fit import ...`` first used to make ``db.models.fit`` the
    submodule ("'module' object is not callable"; seen when tests ran in another order). Run
    in a fresh interpreter, where the import order is the one written here; PyMC stays
    unimported until a fit."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from delusion_bayes.models.fit import _finish\n"
        "import delusion_bayes as db\n"
        "from delusion_bayes.models import fit\n"
        "assert callable(db.models.fit) and fit is db.models.fit, db.models.fit\n"
        "assert 'pymc' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
