"""Partial pooling of a family (issue 51 item 2) on the eight schools against posteriordb."""

from __future__ import annotations

import numpy as np
import pytest

from delusion_bayes.models.family_pooling import family_posterior, pool_family

#: Rubin (1981), BDA3 Table 5.2
Y = [28, 8, -3, 7, -1, 1, 18, 12]
SE = [15, 10, 16, 11, 9, 11, 10, 18]
#: posteriordb ``eight_schools-eight_schools_noncentered`` reference posterior means (10,000
#: draws of Stan; mu ~ normal(0, 5), tau ~ half-Cauchy(0, 5)) and their MCSEs:
#: posterior_database/reference_posteriors/summary_statistics/mean/mean/
#: eight_schools-eight_schools_noncentered.json (theta[1..8], mu, tau)
REF_MEAN = [6.1505, 4.9396, 3.9059, 4.7960, 3.6144, 4.0511, 6.3172, 4.8840, 4.4105, 3.6021]
REF_MCSE = [0.0557, 0.0462, 0.0542, 0.0475, 0.0461, 0.0485, 0.0499, 0.0543, 0.0330, 0.0319]


def test_eight_schools_matches_posteriordb_reference():
    """Exact marginalisation with posteriordb's prior: every posterior mean within 4 MCSEs of
    the reference (the largest difference is ~1.1 MCSE, theta[1])."""
    post = family_posterior(Y, SE, mu_prior_sd=5, tau_scale=5)
    ours = [*(post.weight @ post.theta_mean), post.weight @ post.mu_mean, post.weight @ post.tau]
    assert np.all(np.abs(np.array(ours) - REF_MEAN) < 4 * np.array(REF_MCSE))
    df = pool_family(Y, SE, list("ABCDEFGH"), mu_prior_sd=5, tau_scale=5)
    np.testing.assert_allclose(df["pooled_mean"], ours[:8], atol=1e-12)
    # strong pooling: every 95% interval holds 0, no sign declared, shrunk to mu's side
    assert (df["pooled_lower"] < 0).all() and (df["pooled_upper"] > 0).all()
    assert (df["p_sign_error"] > 0.025).all()
    assert df["tau_median"].nunique() == 1 and 0 < df["tau_median"].iloc[0] < 4


def test_grid_is_converged_and_draws_agree_with_the_exact_mixture():
    coarse = family_posterior(Y, SE, mu_prior_sd=5, tau_scale=5)
    fine = family_posterior(Y, SE, mu_prior_sd=5, tau_scale=5, n_grid=20_000)
    np.testing.assert_allclose(coarse.p_positive(), fine.p_positive(), atol=1e-5)
    draws = coarse.sample(40_000, seed=0)
    # MC SE of a mean: sd (< 12) / 200 = 0.06
    np.testing.assert_allclose(draws.mean(axis=0), coarse.weight @ coarse.theta_mean, atol=0.25)
    np.testing.assert_allclose((draws > 0).mean(axis=0), coarse.p_positive(), atol=0.01)


def test_fixed_mu_and_clear_effects():
    """Large, consistent effects: little pooling, signs declared; mu fixed at 0 shrinks a null
    family toward 0."""
    y = np.array([10.0, 12, 9, 11, -10])
    df = pool_family(y, np.ones(5), mu=0.0)
    assert (df["p_sign_error"] < 1e-6).all()
    np.testing.assert_allclose(df["pooled_median"], y, atol=0.3)
    null = pool_family(np.array([0.3, -0.2, 0.1, -0.4]), np.ones(4), mu=0.0)
    assert (null["pooled_median"].abs() < 0.2).all()
    with pytest.raises(ValueError, match="se > 0"):
        pool_family([1.0, 2.0], [1.0, 0.0])


@pytest.mark.slow
def test_exact_route_matches_a_pymc_fit():
    """The same model by NUTS (nutpie, 2 x 1,000 draws): the posterior means of theta within
    0.6 (MC SE ~0.2) and P(theta > 0) within 0.04 of the exact route."""
    exact = pool_family(Y, SE, mu_prior_sd=5, tau_scale=5)
    mcmc = pool_family(Y, SE, mu_prior_sd=5, tau_scale=5, method="pymc", draws=1000, seed=1)
    np.testing.assert_allclose(mcmc["pooled_mean"], exact["pooled_mean"], atol=0.6)
    np.testing.assert_allclose(mcmc["p_positive"], exact["p_positive"], atol=0.04)
    assert mcmc["tau_median"].iloc[0] == pytest.approx(exact["tau_median"].iloc[0], abs=0.6)
