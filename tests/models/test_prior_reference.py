"""The fitted graph's prior is the documented prior (issue 55): every hyper-parameter and per-
model / per-rater prior of the joint model, drawn from the graph the fit samples
(``pm.sample_prior_predictive`` on ``build_model(build_spec(...))``), against the same number
of draws from ``models.sbc_reference.REFERENCE_PRIORS`` (written out once more in NumPy, not
read from the prior table), two-sample Kolmogorov-Smirnov per entry at Bonferroni 0.01 / 9.

Why beside the reference SBC: a prior bug moves the posterior only as far as the data leave the
prior alone, so SBC at S = 40 sees a halved day-noise prior only faintly (p 0.0055 against
4.2e-4); the prior itself shows it at once. Measured (8,000 draws each, seed 0; threshold
1.1e-3): the tree passes (smallest p 0.0062, mu_t50); CATCHES ``prior_scale`` (sigma_t50,
p 0), ``day_noise_prior`` (mu_log_eps, p 9e-102) and a 2x wider sigma_t50 prior
(``HalfNormal(1.0)``, p 1e-323); passes under ``cutpoint_shift`` and ``drop_severity`` (not
prior bugs). False alarms: the draws are exact prior draws on both sides, so the rate is at
most 1% (Bonferroni); 0 of seeds 0-9 (smallest p over them 0.0062).
It cannot see a bug in the likelihood (cutpoints, severity, day noise, censoring): the SBC
tests do.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from delusion_bayes.models.sbc_reference import REFERENCE_PRIORS, draw_reference

pytestmark = [
    pytest.mark.calibration,
    # the geometry's Potentials (walls on per-model t50) are not hyper-priors: none is drawn here
    pytest.mark.filterwarnings("ignore:The effect of Potentials:UserWarning"),
]

N = 8000
ALPHA = 0.01


def graph_prior_draws(ds, seed: int) -> dict[str, np.ndarray]:
    """``N`` prior draws of each REFERENCE_PRIORS entry from the joint model's fitted graph
    (the first element of a vector: each element has the same marginal prior)."""
    import pymc as pm

    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.spec import build_spec

    model = build_model(build_spec(ds, "joint"))
    names = list(REFERENCE_PRIORS)
    with model:
        idata = pm.sample_prior_predictive(draws=N, var_names=names, random_seed=seed)
    prior = idata.prior if hasattr(idata, "prior") else idata["prior"]
    out = {}
    for n in names:
        x = np.asarray(prior[n].values, float)
        out[n] = x.reshape(x.shape[0] * x.shape[1], -1)[:, 0]
    return out


def reference_draws(ds, seed: int) -> dict[str, np.ndarray]:
    """The same from the documented priors (ZeroSumNormal over the study's raters)."""
    rng = np.random.default_rng([seed, 55])
    n_raters = ds.sizes["rater"]
    out = {}
    for n, entry in REFERENCE_PRIORS.items():
        if entry[0] == "ZeroSumNormal":
            out[n] = np.array([draw_reference(entry, rng, n_raters)[0] for _ in range(N)])
        else:
            out[n] = draw_reference(entry, rng, N)
    return out


def prior_check_pvalues(ds, seed: int = 0) -> dict[str, float]:
    got, ref = graph_prior_draws(ds, seed), reference_draws(ds, seed)
    return {n: float(stats.ks_2samp(got[n], ref[n]).pvalue) for n in REFERENCE_PRIORS}


def test_the_fitted_graphs_prior_is_the_documented_prior(small_study):
    """Every entry's KS p-value above 0.01 / 9 (the module docstring has what it catches)."""
    p = prior_check_pvalues(small_study)
    bad = {n: v for n, v in p.items() if v < ALPHA / len(p)}
    assert not bad, f"the graph's prior differs from the documented one: {bad}"
