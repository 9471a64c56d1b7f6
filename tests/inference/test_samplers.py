"""``sampler=pymc`` and ``sampler=numpyro`` actually sampled (issue 34): one small fit of the
onset model on the small study each, matching nutpie's posterior within Monte-Carlo error,
and the same seed giving the same draws."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

VARS = ["L", "k", "t50", "mu_log_k", "mu_t50", "sigma_t50", "sigma_y"]
#: 2 chains x 300 draws after 300 tuning steps (ESS of a few hundred per parameter)
SETTINGS = dict(
    draws=300,
    tune=300,
    chains=2,
    seed=3,
    log_likelihood=False,
    log_prior=False,
    posterior_predictive=False,
)
#: |mean difference| <= Z x the two fits' combined MCSE; over 19 scalars x 2 samplers the
#: normal tail gives P(false alarm) <= 38 x 2 x (1 - Phi(4)) = 0.0024; a sampler whose
#: posterior is off by 0.7 SD (MCSE ~ SD / sqrt(300) a fit) is 0.7 / 0.082 = 8.5 MCSEs off
Z = 4.0


@pytest.fixture(scope="module")
def fits(small_study):
    from delusion_bayes.models import fit

    out = {}
    for sampler in ("nutpie", "pymc", "numpyro"):
        out[sampler] = fit(small_study, "onset", sampler=sampler, **SETTINGS)
    return out


def _flat(dt):
    post = dt["posterior"]
    return {
        f"{v}[{i}]": post[v].values.reshape(*post[v].shape[:2], -1)[:, :, i]
        for v in VARS
        for i in range(int(np.prod(post[v].shape[2:])))
    }


def _mcse(x: np.ndarray) -> float:
    import arviz as az

    return float(az.mcse(x[None] if x.ndim == 1 else x, method="mean"))


@pytest.mark.parametrize("sampler", ["pymc", "numpyro"])
def test_sampler_matches_nutpie_within_monte_carlo_error(fits, sampler):
    dt, ref = fits[sampler], fits["nutpie"]
    assert dt["posterior"].attrs["sampler"] == sampler  # not the fallback
    got, want = _flat(dt), _flat(ref)
    assert len(got) == 19
    bad = {}
    for name, x in got.items():
        y = want[name]
        tol = Z * np.hypot(_mcse(x), _mcse(y))
        if not abs(x.mean() - y.mean()) <= tol:
            bad[name] = (round(float(x.mean()), 4), round(float(y.mean()), 4), round(tol, 4))
    assert not bad, f"{sampler} vs nutpie posterior means (got, nutpie, tolerance): {bad}"


@pytest.mark.parametrize("sampler", ["pymc", "numpyro"])
def test_sampler_seed_reproduces_the_draws(fits, small_study, sampler):
    from delusion_bayes.models import fit

    again = fit(small_study, "onset", sampler=sampler, **SETTINGS)
    for v in VARS:
        np.testing.assert_array_equal(
            again["posterior"][v].values, fits[sampler]["posterior"][v].values
        )
