"""Power-scaling sensitivity (models.sensitivity) on models whose verdict is known.

The posteriors are conjugate Gaussians, so their draws are exact (2 x 2,000 i.i.d. draws, no
sampler): the verdicts below follow from the algebra, not from MCMC noise.

- conflict: ``y ~ N(mu, 1)``, 20 observations with mean 3, ``mu ~ N(0, 0.3)``: the posterior
  (mean 1.93) sits between prior and data, and scaling either one moves it;
- weak likelihood: ``y ~ N(a + b, 1)`` identifies ``a + b`` only, ``c`` is not in the
  likelihood at all: their marginals are the prior's doing;
- no flag: ``mu ~ N(0, 100)`` with 100 observations: the likelihood decides, the prior does not.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from delusion_bayes.models.sensitivity import (
    THRESHOLD,
    VERDICTS,
    log_prior_dataset,
    power_scale_sense,
    prior_terms,
    sensitivity_table,
)

CHAINS, DRAWS = 2, 2000


def _data(n: int, mean: float, seed: int = 0) -> np.ndarray:
    """``n`` standard-normal draws shifted and scaled to have exactly this mean and SD 1."""
    z = np.random.default_rng(seed).standard_normal(n)
    return mean + (z - z.mean()) / z.std()


def _tree(model, draws: dict[str, np.ndarray], loglik: np.ndarray) -> xr.DataTree:
    """A fit-shaped DataTree: the exact draws, their log likelihood per observation and the
    log prior through :func:`log_prior_dataset` (the function under test)."""
    post = xr.Dataset(
        {
            k: (("chain", "draw", *[f"{k}_dim_{i}" for i in range(v.ndim - 2)]), v)
            for k, v in draws.items()
        },
        coords={"chain": np.arange(CHAINS), "draw": np.arange(DRAWS)},
    )
    ll = xr.Dataset({"y": (("chain", "draw", "obs"), loglik)}, coords=post.coords)
    dt = xr.DataTree.from_dict({"posterior": post, "log_likelihood": ll})
    dt["log_prior"] = xr.DataTree(log_prior_dataset(dt, model))
    return dt


def _normal_mean_tree(y: np.ndarray, prior_sd: float) -> xr.DataTree:
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Normal("y", mu, 1.0, observed=y)
    prec = 1 / prior_sd**2 + y.size
    mean = y.sum() / prec
    rng = np.random.default_rng(1)
    draws = mean + rng.standard_normal((CHAINS, DRAWS)) / np.sqrt(prec)
    ll = stats.norm.logpdf(y[None, None, :], draws[..., None], 1.0)
    return _tree(model, {"mu": draws}, ll)


def _row(df, parameter: str):
    return df.set_index("parameter").loc[parameter]


def test_a_prior_far_from_the_data_is_a_prior_data_conflict():
    df = sensitivity_table(_normal_mean_tree(_data(20, 3.0), prior_sd=0.3))
    row = _row(df, "mu")
    assert row["prior"] >= THRESHOLD and row["likelihood"] >= THRESHOLD, row
    assert row["verdict"] == "prior-data conflict"
    assert row["diagnosis"] == "potential prior-data conflict"  # psense_summary's own words
    assert row["threshold"] == THRESHOLD == 0.05


def test_a_vague_prior_on_a_well_identified_parameter_is_not_flagged():
    df = sensitivity_table(_normal_mean_tree(_data(100, 0.5), prior_sd=100.0))
    row = _row(df, "mu")
    assert row["prior"] < 0.01 and row["likelihood"] > THRESHOLD, row
    assert row["verdict"] == "-"


def test_parameters_the_likelihood_does_not_identify_are_a_weak_likelihood():
    import pymc as pm

    y = _data(50, 0.0)
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("c", 0.0, 1.0)  # not in the likelihood at all
        pm.Normal("y", a + b, 1.0, observed=y)
    # (a, b) | y ~ N(m, S): S = (I + n 11')^-1, m = S n ybar 1; c | y ~ N(0, 1)
    n = y.size
    cov = np.linalg.inv(np.eye(2) + n * np.ones((2, 2)))
    m = cov @ (n * y.mean() * np.ones(2))
    rng = np.random.default_rng(2)
    ab = rng.multivariate_normal(m, cov, size=(CHAINS, DRAWS))
    c = rng.standard_normal((CHAINS, DRAWS))
    ll = stats.norm.logpdf(y[None, None, :], (ab[..., 0] + ab[..., 1])[..., None], 1.0)
    df = sensitivity_table(_tree(model, {"a": ab[..., 0], "b": ab[..., 1], "c": c}, ll))
    for p in ("a", "b", "c"):
        row = _row(df, p)
        assert row["prior"] > THRESHOLD > row["likelihood"], (p, row)
        assert row["verdict"] == "weak likelihood", p
    assert _row(df, "c")["likelihood"] < 0.01
    assert set(df["verdict"]) <= set(VERDICTS.values())


def test_log_prior_is_pymcs_log_prior_summed_per_variable():
    """On the constrained values, without the transform's Jacobian (``pm.compute_log_prior``);
    a start value (``blocks._t50`` sets them on the wall coordinates) does not get in the way,
    and is still there after (the graph is reused by the next fit of its structure)."""
    import pymc as pm

    from delusion_bayes.models.build import start_values_cleared

    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0, initval=0.5)
        pm.Normal("x", 0.0, sigma, shape=3)
    rng = np.random.default_rng(3)
    post = xr.Dataset(
        {
            "sigma": (("chain", "draw"), rng.gamma(2.0, 0.5, (2, 50))),
            "x": (("chain", "draw", "x_dim_0"), rng.standard_normal((2, 50, 3))),
        }
    )
    dt = xr.DataTree.from_dict({"posterior": post})
    mine = log_prior_dataset(dt, model)
    assert model.rvs_to_initial_values[model["sigma"]] == 0.5
    with start_values_cleared(model):
        ref = pm.stats.compute_log_prior(
            dt,
            model=model,
            extend_inferencedata=False,
            progressbar=False,
            compile_kwargs={"mode": "FAST_COMPILE"},
        )
    assert set(mine.data_vars) == {"sigma", "x"}
    np.testing.assert_allclose(mine["sigma"].values, ref["sigma"].values, rtol=1e-12)
    np.testing.assert_allclose(mine["x"].values, ref["x"].sum("x_dim_0").values, rtol=1e-12)
    # only the terms asked for
    assert list(log_prior_dataset(dt, model, ["sigma"]).data_vars) == ["sigma"]
    with pytest.raises(ValueError, match="neither free variables nor Potentials"):
        log_prior_dataset(dt, model, ["nope"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "joint",
            [
                "log_L1",
                "mu_log_k",
                "sigma_log_k",
                "mu_t50",
                "sigma_t50",
                "mu_log_eps",
                "sigma_log_eps",
                "severity",
                "log_disc",
            ],
        ),
        ("onset", ["log_L1", "mu_log_k", "sigma_log_k", "mu_t50", "sigma_t50", "sigma_y"]),
    ],
)
def test_the_prior_scaled_is_the_prior_table_not_the_population(small_study, name, expected):
    """The top-level priors (the prior table), not the hierarchy's population terms
    (``t50_centred``, ``z_log_k``, the never-turners' ``w_t50_prior``)."""
    from delusion_bayes.models import build_spec
    from delusion_bayes.models.build import build_model

    spec = build_spec(small_study, name)
    model = build_model(spec)
    terms = prior_terms(model, spec.priors)
    assert sorted(terms) == sorted(expected)
    free = {rv.name for rv in model.free_RVs} | {p.name for p in model.potentials}
    assert {"t50_centred", "w_t50_prior"} & free  # the population terms exist, left out
    assert not {"t50_centred", "w_t50_prior", "z_log_k", "log_k_centred"} & set(terms)


def test_a_fit_without_log_prior_is_refused_with_the_reason():
    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 10)))})
    with pytest.raises(ValueError, match="needs a log_prior group"):
        sensitivity_table(xr.DataTree.from_dict({"posterior": post}))


def test_noise_floor_shuffles_away_the_sensitivity():
    """With the log prior and likelihood shuffled against the draws the conflict of the first
    test is gone: what remains is Monte Carlo noise, far below the real sensitivity."""
    from delusion_bayes.models.sensitivity import noise_floor

    dt = _normal_mean_tree(_data(20, 3.0), prior_sd=0.3)
    real = _row(sensitivity_table(dt), "mu")
    noise = _row(noise_floor(dt, seed=0), "mu")
    assert noise["prior"] < 0.05 and noise["likelihood"] < 0.05, noise
    assert noise["verdict"] == "-"
    assert real["prior"] > 5 * noise["prior"] and real["likelihood"] > 5 * noise["likelihood"]


def test_power_scale_sense_is_arviz_psense_for_every_row_at_once():
    """:func:`power_scale_sense` against ``arviz_stats.psense`` (the reference: its CJS per row,
    one row at a time) on rows of every kind a fit reports: continuous draws, integer days with
    many ties (a milestone), a row that is constant (NaN in both), a row tied to the scaled
    component. Within 1e-8 relative or 1e-9 absolute: both sum ~3,000 terms to a small
    difference before the square root, in different orders."""
    from arviz_stats import psense
    from arviz_stats.psense import _get_power_scale_weights

    rng = np.random.default_rng(3)
    n_chain, n_draw = 2, 1500
    lp = rng.normal(0, 1, (n_chain, n_draw))
    x = np.stack(
        [
            rng.normal(0, 1, (n_chain, n_draw)),
            np.round(rng.gamma(3, 4, (n_chain, n_draw))),  # integer days: ties
            np.full((n_chain, n_draw), 31.0),  # constant
            lp + rng.normal(0, 0.3, (n_chain, n_draw)),  # moves with the prior
            rng.standard_t(3, (n_chain, n_draw)),
        ],
        -1,
    )
    coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    tree = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"x": (("chain", "draw", "row"), x)}, coords=coords),
            "log_prior": xr.Dataset({"p": (("chain", "draw"), lp)}, coords=coords),
            "log_likelihood": xr.Dataset(
                {"y": (("chain", "draw"), rng.normal(0, 2, (n_chain, n_draw)))}, coords=coords
            ),
        }
    )
    alphas = (0.99, 1.01)
    for group in ("prior", "likelihood"):
        w = _get_power_scale_weights(
            tree, alphas=alphas, group=group, sample_dims=["chain", "draw"]
        )
        w = [np.asarray(v.transpose("chain", "draw").values).ravel() for v in w]
        with np.errstate(invalid="ignore", divide="ignore"):
            ours = power_scale_sense(x.reshape(-1, x.shape[-1]), *w, alphas, chunk=2)
            ref = psense(tree, var_names=["x"], group=group, alphas=alphas)["x"].values
        assert np.isnan(ours[2]) and np.isnan(ref[2])  # the constant row
        keep = [0, 1, 3, 4]
        np.testing.assert_allclose(ours[keep], ref[keep], rtol=1e-8, atol=1e-9)
        assert ref[3] > (0.05 if group == "prior" else 0)  # the prior-tied row is sensitive
