"""Model specs without sampling: coords, index arrays, missing data, priors, input errors."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

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
    p = resolve_priors("joint", {"sigma_t50": {"beta": 12.0}})
    assert p["sigma_t50"] == {"dist": "Gamma", "alpha": 3.0, "beta": 12.0}
    p = resolve_priors("joint", {"sigma_t50": {"dist": "HalfNormal", "sigma": 0.25}})
    assert p["sigma_t50"] == {"dist": "HalfNormal", "sigma": 0.25}
    assert p["log_L1"] == default_priors("joint")["log_L1"]
    p = resolve_priors("onset", {"mu_t50": {"dist": "StudentT", "nu": 4, "mu": 0.5, "sigma": 0.3}})
    assert p["mu_t50"]["dist"] == "StudentT"
    with pytest.raises(ValueError, match="not a parameter of model 'joint'"):
        resolve_priors("joint", {"sigma_y": {"sigma": 1.0}})
    with pytest.raises(ValueError, match="expected \\['sigma'\\]"):
        resolve_priors("joint", {"sigma_t50": {"dist": "HalfNormal", "mu": 1.0}})
    with pytest.raises(ValueError, match="expected \\['alpha', 'beta'\\]"):
        resolve_priors("joint", {"sigma_t50": {"sigma": 0.25}})  # the Gamma default has none
    with pytest.raises(ValueError, match="must be a number"):
        resolve_priors("joint", {"sigma_t50": {"beta": -1.0}})


def test_prior_table_lists_every_prior(study):
    spec = build_spec(study, "rater")
    table = spec.prior_table()
    assert set(table.index) == set(default_priors("rater"))
    assert table.loc["sigma_theta", "dist"] == "HalfNormal"


def test_each_model_option_composes_to_its_own_model():
    """``model=<name>`` composes to a ModelConfig naming that model, with known variants; only the
    joint model fits the others too (the values themselves: tests/test_config.py)."""
    from delusion_bayes.config import compose, group_config

    for path in sorted((conf_dir() / "model").glob("*.yaml")):
        cfg = group_config(ModelConfig, compose([f"model={path.stem}"]).model)
        assert cfg.name == path.stem
        assert set(cfg.variants) <= set(VARIANTS)
        assert cfg.also_fit == (["onset", "rater", "disengagement"] if cfg.name == "joint" else [])


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

    from delusion_bayes.models.fit import finish_fit

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
    dt = finish_fit(xr.DataTree.from_dict({"posterior": post, "observed_data": obs}), spec)
    stage = dt["posterior"]["stage"]
    assert stage.isel(model=2, day=5).isnull().all()
    assert int(stage.isnull().sum()) == 2 * 3
    assert dt["posterior"]["t50"]["vendor"].values.tolist() == holey["vendor"].values.tolist()
    y = dt["observed_data"]
    assert not ((y["obs_model"] == spec.coords["model"][2]) & (y["obs_day"] == 6)).any()
    assert dt.attrs["spec_hash"] == spec.hash()


def test_never_turner_t50_coordinate_keeps_the_normal_prior(study):
    """Never-turners' t50 is sampled as ``w`` with ``t50 = T + c sinh(w) / k`` and the prior
    ``t50 ~ N(loc, scale)`` added with its Jacobian (``w_t50_prior``). With one model made a
    never-turner and its hyper-parameters fixed, ``exp(t50_w_prior)`` over a fine grid of w is
    a density (integral 1 within 1e-6) whose t50 has mean ``loc`` and SD ``scale`` (1e-4) for
    three values of k. Dropping the Jacobian ``log(c cosh(w) / k)`` fails all three. The wall
    coordinate spans every model (one graph per structure): ``w ~ N(0, 1)``, whose density the
    Potential replaces for the never-turner and leaves alone for the others."""
    from delusion_bayes.models.build import build_model

    spec = build_spec(study, "joint")
    centred = np.ones(len(spec.coords["model"]), bool)
    centred[3] = False
    spec.data["t50_centred"] = centred
    spec.data["log_k_centred"] = centred  # the turners' log k centred: one z_log_k, model 3's
    model = build_model(spec)
    n = len(spec.coords["model"])
    assert model["w_t50"].type.shape == (n,)
    import pytensor

    outs = model.replace_rvs_by_values([model["w_t50_prior"], model["t50"], model["k"]])
    f = pytensor.function(model.value_vars, outs, on_unused_input="ignore")

    def fn(point):
        return f(*[point[v.name] for v in model.value_vars])

    T = float(spec.n_days)
    w = np.linspace(-12.0, 12.0, 200_001)
    for a in (-1.5, 0.0, 1.5):  # log k of the never-turner
        point = model.initial_point()
        point["z_log_k"] = np.full(n, a)
        point["mu_t50"], point["sigma_t50_log__"] = np.array(0.6), np.log(0.4)
        loc, scale = T * 0.6, T * 0.4
        vals = []
        for wi in w[::50]:
            point["w_t50"] = np.zeros(n)
            point["w_t50"][3] = wi
            pot, t50, k = fn(point)
            vals.append((pot - 0.5 * wi**2, t50[3]))  # with w's own N(0, 1), sans constant
        # another model's entry is left to its N(0, 1)
        point["w_t50"] = np.zeros(n)
        base = fn(point)[0]
        point["w_t50"][0] = 1.7
        assert fn(point)[0] == base
        pot, t50 = (np.array(v) for v in zip(*vals, strict=True))
        dens = np.exp(pot - 0.5 * np.log(2 * np.pi))  # the potential omits the constant
        dw = w[50] - w[0]
        mass = np.sum(dens) * dw
        mean = np.sum(dens * t50) * dw / mass
        sd = np.sqrt(np.sum(dens * (t50 - mean) ** 2) * dw / mass)
        assert abs(mass - 1.0) < 1e-6, (a, mass)
        assert abs(mean - loc) < 1e-4 * T and abs(sd - scale) < 1e-4 * T, (a, mean, sd)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"draws": -5}, r"sampler\.draws=-5"),
        ({"chains": 0}, r"sampler\.chains=0"),
        ({"tune": -1}, r"sampler\.tune=-1"),
        ({"draws": 10.5}, r"sampler\.draws=10\.5"),
        ({"target_accept": 1.0}, r"sampler\.target_accept=1\.0.*strictly between 0 and 1"),
        ({"target_accept": 0}, r"sampler\.target_accept=0"),
    ],
)
def test_bad_sampler_settings_fail_before_compiling(study, kwargs, match, monkeypatch):
    """``draws=-5`` gave an OverflowError and ``chains=0`` a ``KeyError: 'mu_L'``, both after
    ~45 s of compiling; now a ValueError naming the setting before any graph is built (the
    builder is replaced by one that fails the test if reached)."""
    from delusion_bayes.models import build, fit

    def never(*_a, **_k):
        raise AssertionError("the model was built before the settings were checked")

    monkeypatch.setattr(build, "build_model", never)
    with pytest.raises(ValueError, match=match):
        fit(study, "joint", **kwargs)


def test_target_accept_is_the_models_own_unless_the_config_names_one():
    """``sampler.target_accept: null`` (the shipped configs) gives each model its own: 0.99 for
    the onset model (2 divergences at 0.95 on paper_like, sampler seed 0), 0.9 for the joint
    model (docs/dev/models.md: half the leapfrog steps of 0.95, no divergence) and the
    disengagement model (0 divergences on paper_like seeds 0-2 and null_effect seed 0 with its
    zero-sum effects; it left 1 at 0.9 before them), 0.95 for the rater model; a number in the
    config applies to every model."""
    from delusion_bayes.inference.config import SamplerConfig
    from delusion_bayes.models.registry import model_def

    assert model_def("onset").target_accept == 0.99
    assert model_def("joint").target_accept == 0.9
    assert model_def("disengagement").target_accept == 0.9
    assert model_def("rater").target_accept == 0.95
    assert SamplerConfig().target_accept is None
    from delusion_bayes.config import compose, group_config

    for name in ("nutpie", "pymc", "numpyro"):
        cfg = group_config(SamplerConfig, compose([f"sampler={name}"]).sampler)
        assert cfg.target_accept is None, name


def test_models_fit_is_the_function_even_after_importing_its_module():
    """``from delusion_bayes.models.fit import ...`` first used to make ``db.models.fit`` the
    submodule ("'module' object is not callable"; seen when tests ran in another order). Run
    in a fresh interpreter, where the import order is the one written here; PyMC stays
    unimported until a fit."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from delusion_bayes.models.fit import finish_fit\n"
        "import delusion_bayes as db\n"
        "from delusion_bayes.models import fit\n"
        "assert callable(db.models.fit) and fit is db.models.fit, db.models.fit\n"
        "assert 'pymc' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_log_k_centred_only_with_enough_turners(study, paper_like):
    """Centred log k needs >= 8 turners (``geometry.MIN_CENTRED_TURNERS``): the small study's 4
    turners are all non-centred, paper_like's 11 turners centred (its 4 never-turners not)."""
    from delusion_bayes.models.geometry import MIN_CENTRED_TURNERS, log_k_centring

    assert MIN_CENTRED_TURNERS == 8
    small = build_spec(study, "joint").data
    assert small["t50_centred"].sum() == 4 and not small["log_k_centred"].any()
    big = build_spec(paper_like, "onset").data
    assert big["log_k_centred"].tolist() == [True] * 11 + [False] * 4
    assert log_k_centring(np.array([True] * 7 + [False])).sum() == 0
    assert log_k_centring(np.array([True] * 8)).all()


def test_onset_geometry_needs_two_days_at_or_above_2_5():
    """A one-day 2/3 split (median 2.5) is a never-turner, not a model turned from day 1: that
    misreading cost the disengagement model 33 divergences on 4 paper-roster chatbots
    (``simulate_study("paper_like", seed=0, n_models=4)``, "Claude Sonnet 4"); 0 with the rule."""
    from delusion_bayes.models.geometry import onset_geometry

    nan = np.nan
    med = np.array(
        [
            [2.5, 2.0, 1.0, 1.0, 1.0, 1.0],  # day-1 blip, then flat: never turned
            [1.0, 1.0, 2.5, 1.0, 1.5, 1.0],  # mid-study blip: never turned
            [1.0, 1.0, 2.0, 3.0, 3.5, 4.0],  # turned within the study
            [3.0, 3.5, 4.0, 4.0, 4.0, 4.0],  # turned from the start
            [nan, 2.5, 3.0, nan, 4.0, 4.0],  # first rated days high (day 1 missing): from the start
            [1.0, nan, 2.5, nan, 3.0, nan],  # 2.5 and 3.0 are consecutive rated days: turned
            [nan] * 6,  # nobody rated it
        ]
    )
    turned, early = onset_geometry(med)
    assert turned.tolist() == [False, False, True, True, True, True, False]
    assert early.tolist() == [False, False, False, True, True, False, False]


def test_onset_geometry_unchanged_on_the_bundled_presets():
    """The rule reclassifies no model of paper_like, null or small (seeds 0-2): their graphs
    and draws are those of the one-day rule (a model turned iff some median >= 2.5, early iff
    the first one is)."""
    import delusion_bayes as db
    from delusion_bayes.models.geometry import onset_geometry

    for preset in ("paper_like", "null", "small"):
        for seed in range(3):
            rec = db.data.simulate_study(preset, seed=seed)["recognition"]
            med = np.nanmedian(rec.transpose("rater", "model", "day").values, axis=0)
            turned, early = onset_geometry(med)
            assert turned.tolist() == (np.nanmax(med, axis=1) >= 2.5).tolist(), (preset, seed)
            assert early.tolist() == (med[:, 0] >= 2.5).tolist(), (preset, seed)


def test_t50_scale_is_fixed_without_two_turners(study):
    """With fewer than 2 models whose ratings pin a t50 (``geometry.MIN_T50_SCALE_TURNERS``) the
    population scale ``sigma_t50`` is not a free variable but its prior's root mean square
    (Gamma(3, 6): sqrt(alpha (alpha + 1)) / beta = sqrt(12) / 6 = 0.5774, by 100,000 seeded
    draws to 0.5%): a study where no chatbot turns
    had 66 divergences and R-hat 1.03 on a sampled ``sigma_t50``. With 4 turners (small) it
    is sampled as before."""
    from delusion_bayes.models import build_model
    from delusion_bayes.models.geometry import MIN_T50_SCALE_TURNERS

    assert MIN_T50_SCALE_TURNERS == 2
    flat = study.copy()
    flat["recognition"] = xr.ones_like(flat["recognition"]).where(flat["recognition"].notnull())
    for ds, free in ((study, True), (flat, False)):
        spec = build_spec(ds, "onset")
        assert spec.t50_scale_sampled is free
        m = build_model(spec)
        assert ("sigma_t50" in {v.name for v in m.free_RVs}) is free
    fixed = m.compile_fn(m["sigma_t50"], inputs=[], on_unused_input="ignore")({})
    assert float(fixed) == pytest.approx(np.sqrt(12.0) / 6.0, rel=5e-3)


def test_spec_data_is_typed_fields_with_item_access_writing_through():
    """Issue 32: the spec's arrays are typed fields read by attribute, no ``get(key, fallback)``;
    item access (old callers, tests) reads and writes the same fields, an unknown key is an
    error, and a field a model does not have is None and not a key."""
    from delusion_bayes.data import simulate_study
    from delusion_bayes.models.spec import SpecData

    ds = simulate_study("small", 0)
    joint, onset = build_spec(ds, "joint"), build_spec(ds, "onset")
    assert isinstance(joint.data, SpecData)
    assert joint.data["y"] is joint.data.y and joint.data.eps_centred is not None
    assert onset.data.rater_idx is None and "rater_idx" not in onset.data
    assert onset.data.md_lo is None and "eps_centred" not in onset.data
    before = joint.hash()
    joint.data["t50_centred"] = np.ones(len(joint.coords["model"]), bool)
    assert joint.data.t50_centred.all() and joint.hash() != before
    with pytest.raises(KeyError, match="not a field"):
        joint.data["t50_centered"] = np.ones(3, bool)
    with pytest.raises(KeyError):
        joint.data["level"]  # a disengagement field: None on the joint spec


def test_group_indices_are_typed_and_keyed_by_term():
    from delusion_bayes.data import simulate_study

    ds = simulate_study("small", 0)
    ds = ds.assign_coords(vendor=("model", [f"v{i % 2}" for i in range(ds.sizes["model"])]))
    spec = build_spec(ds, "joint", group_terms=["vendor"])
    assert list(spec.data.group_idx) == ["vendor"]
    assert spec.data["group_vendor_idx"] is spec.data.group_idx["vendor"]
    assert "group_vendor_idx" in list(spec.data)


def test_the_replay_spec_meets_the_custom_graph_protocol():
    """Issue 32: the replay model is recognised by a Protocol, not ``hasattr``; a trajectory
    spec does not meet it. One place says which models integrate the stage out."""
    from delusion_bayes.data import simulate_replay, simulate_study
    from delusion_bayes.models.registry import marginal_models
    from delusion_bayes.models.replay import replay_model_spec
    from delusion_bayes.models.spec import CustomGraphSpec

    assert isinstance(replay_model_spec(simulate_replay(seed=0)), CustomGraphSpec)
    ds = simulate_study("small", 0)
    spec = build_spec(ds, "rater")
    assert not isinstance(spec, CustomGraphSpec)
    assert spec.integrates_stage and not build_spec(ds, "onset").integrates_stage
    assert marginal_models() == ("joint", "rater", "disengagement")


def test_rating_patterns_are_the_distinct_model_day_rows_with_their_counts(holey):
    """The rater model integrates once per distinct rating pattern (``spec.rating_patterns``):
    every model-day's row (missing ratings included) is exactly one pattern's, the counts are
    the number of model-days with it, and only the rater model has them."""
    spec = build_spec(holey, "rater")
    d = spec.data
    md = np.concatenate([d.md_lo, d.md_hi, d.md_rating, d.md_end], axis=1)
    pat = np.concatenate([d.pat_lo, d.pat_hi, d.pat_rating, d.pat_end], axis=1)
    assert len(np.unique(pat, axis=0)) == len(pat) < len(md)
    match = (md[:, None, :] == pat[None, :, :]).all(axis=2)  # (U, P)
    assert (match.sum(axis=1) == 1).all()
    np.testing.assert_array_equal(match.sum(axis=0), d.pat_count)
    assert d.pat_count.sum() == len(md)
    # the holey model-day keeps its three ratings and its missing one in its pattern
    assert (d.pat_lo == -1e4).any() and (d.pat_hi == 1e4).any()
    assert build_spec(holey, "joint").data.pat_lo is None
