"""The onset model's likelihood: the consensus censored at the floor of the 1-4 scale
(``delusion_bayes.models.onset``; the helper censors either end), checked against scipy's
normal distribution (no sampling).

Reference values: ``scipy.stats.norm.logpdf`` inside the scale, ``norm.logcdf((1 - mu) /
sigma)`` at the floor and ``norm.logsf((4 - mu) / sigma)`` at the top (the Tobit likelihood);
``scipy.special.log_ndtr`` for log Phi, whose derivative is the inverse Mills ratio
``phi(z) / Phi(z)``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

pt = pytest.importorskip("pytensor.tensor")


def _reference(v, mu, sigma, upper=4.0):
    return np.where(
        v <= 1.0,
        stats.norm.logcdf((1.0 - mu) / sigma),
        np.where(
            v >= upper, stats.norm.logsf((upper - mu) / sigma), stats.norm.logpdf(v, mu, sigma)
        ),
    )


def test_censored_normal_logp_matches_scipy_inside_at_the_floor_and_at_the_top():
    from delusion_bayes.models.onset import censored_normal_logp

    rng = np.random.default_rng(0)
    n = 300
    v = np.concatenate([np.ones(n), np.full(n, 4.0), rng.uniform(1.0, 4.0, n)])
    # latent means far outside the scale and tiny sigmas reach |z| ~ 200: both tails of log Phi
    mu = rng.uniform(-4.0, 9.0, 3 * n)
    sigma = rng.uniform(0.03, 2.0, 3 * n)
    got = censored_normal_logp(pt.as_tensor(v), pt.as_tensor(mu), pt.as_tensor(sigma)).eval()
    ref = _reference(v, mu, sigma)
    assert np.isfinite(got).all()
    # measured worst: 2e-11 relative (the 3-term Mills series just below z = -30)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    # a scalar sigma broadcasts (the model passes one sigma_y for every model-day)
    one = censored_normal_logp(pt.as_tensor(v), pt.as_tensor(mu), 0.5).eval()
    np.testing.assert_allclose(one, _reference(v, mu, 0.5), rtol=1e-9, atol=1e-12)


def test_censored_normal_logp_is_pymc_censored():
    """The same distribution as ``pm.Censored(pm.Normal.dist(mu, sigma), lower=1, upper=4)``
    (PyMC's version, which computes both tails for every value)."""
    import pymc as pm

    from delusion_bayes.models.onset import censored_normal_logp

    rng = np.random.default_rng(1)
    v = np.concatenate([np.ones(40), np.full(40, 4.0), rng.uniform(1.0, 4.0, 40)])
    mu, sigma = rng.uniform(0.0, 5.0, 120), rng.uniform(0.2, 1.5, 120)
    ours = censored_normal_logp(pt.as_tensor(v), pt.as_tensor(mu), pt.as_tensor(sigma)).eval()
    theirs = pm.logp(pm.Censored.dist(pm.Normal.dist(mu, sigma), lower=1.0, upper=4.0), v).eval()
    # PyMC's normal_lcdf is the less exact of the two: 2.6e-7 relative from scipy at z = -15
    # (ours: < 1e-9, the test above)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12)


def test_log_ndtr_and_its_gradient_in_both_tails():
    import pytensor

    from delusion_bayes.models.onset import log_ndtr

    z = np.array(
        [
            -1e4,
            -1e3,
            -200.0,
            -40.0,
            -30.0001,
            -30.0,
            -29.999,
            -20.0,
            -8.0,
            -1.0,
            0.0,
            1.0,
            5.0,
            9.0,
            40.0,
        ]
    )
    zz = pt.dvector("z")
    f = pytensor.function([zz], [log_ndtr(zz), pytensor.grad(log_ndtr(zz).sum(), zz)])
    val, grad = f(z)
    ref = special.log_ndtr(z)
    np.testing.assert_allclose(val, ref, rtol=1e-9, atol=1e-300)
    # d/dz log Phi(z) = phi(z) / Phi(z): finite on both sides of the branch switch at -30
    mills = np.exp(stats.norm.logpdf(z) - special.log_ndtr(z))
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(grad, mills, rtol=1e-7, atol=1e-300)


def test_the_onset_model_scores_the_consensus_censored_at_the_floor(paper_like):
    """The built model's ``y`` log-likelihood at its initial point equals the scipy sum computed
    from the same point's trajectory and sigma_y: censored at the floor (a consensus of 1 is
    ``Phi((1 - mu) / sigma)``), a density elsewhere, the plateau's 4s included (censored there
    too, L drifted above the truth: module docstring). Reading the floor as Gaussian, or
    censoring the top as well, is off by more than 10 nats here."""
    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.spec import build_spec

    spec = build_spec(paper_like, "onset")
    y = spec.data["y"]
    assert (y <= 1.0).sum() > 100 and (y >= 4.0).sum() > 50  # both bounds are exercised
    model = build_model(spec)
    point = model.initial_point()
    import pytensor

    outs = model.replace_rvs_by_values([model["trajectory"], model["sigma_y"]])
    fn = pytensor.function(model.value_vars, outs, on_unused_input="ignore")
    traj, sigma_y = fn(*(point[v.name] for v in model.value_vars))
    mu = traj[spec.data["model_idx"], spec.data["day_idx"]]
    ref = _reference(y, mu, sigma_y, upper=np.inf).sum()
    got = float(model.compile_logp(vars=[model["y"]], jacobian=False)(point))
    assert got == pytest.approx(ref, rel=1e-10)
    gaussian = stats.norm.logpdf(y, mu, sigma_y).sum()
    both_ends = _reference(y, mu, sigma_y, upper=4.0).sum()
    assert abs(gaussian - ref) > 10.0 and abs(both_ends - ref) > 10.0


def test_posterior_predictive_draws_pile_at_the_ends_of_the_scale():
    """Predictive draws are clipped normal draws: inside [1, 4], with the probability mass of
    each bound (Phi((1 - mu) / sigma) = 0.5 for mu = 1; 1 - Phi((4 - 3.5) / 0.5) = 0.159)."""
    import pymc as pm

    from delusion_bayes.models.onset import censored_normal

    with pm.Model():
        censored_normal("y", np.array([1.0, 3.5, 2.5]), 0.5, observed=np.array([1.0, 4.0, 2.0]))
        draws = pm.sample_prior_predictive(draws=20_000, random_seed=3)["prior_predictive"][
            "y"
        ].values[0]
    assert draws.min() >= 1.0 and draws.max() <= 4.0
    # binomial SE of a share over 20,000 draws <= 0.0036: 4 SE tolerance
    assert np.mean(draws[:, 0] == 1.0) == pytest.approx(0.5, abs=0.015)
    assert np.mean(draws[:, 1] == 4.0) == pytest.approx(0.1587, abs=0.015)
    assert np.mean((draws[:, 2] == 1.0) | (draws[:, 2] == 4.0)) == pytest.approx(
        stats.norm.cdf(-3.0) * 2, abs=0.002
    )


def test_onset_fit_with_wall_coordinates_gives_its_log_likelihood(small_study):
    """The small study has a never-turner, whose t50 is sampled on the wall coordinate
    ``w_t50`` with a start value (``blocks._t50``). PyMC's ``compute_log_likelihood`` refuses a
    model with start values, which broke the main job's onset fit (``NotImplementedError:
    Cannot convert models with non-default initial_values``); ``fit`` clears them after
    sampling. The pointwise log-likelihood must cover every consensus day and be finite."""
    from delusion_bayes.models import build_spec, fit

    spec = build_spec(small_study, "onset")
    assert not spec.data["t50_centred"].all()  # the case this test is about
    dt = fit(small_study, "onset", draws=30, tune=30, chains=1, seed=0, posterior_predictive=False)
    ll = dt["log_likelihood"]["y"]
    assert ll.sizes["obs"] == len(spec.data["y"])
    assert np.isfinite(ll.values).all()
