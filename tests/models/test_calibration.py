"""Simulation-based calibration of the onset model through ``models.fit`` and
``intervals.interval``, with power against two named wrong implementations (issue 34).

``S`` studies on the small design (5 models x 12 days) are drawn from the onset model's own
prior (every t50 centred, as ``models.sbc`` does, so the prior can be drawn), each is fitted by
:func:`delusion_bayes.models.fit` (nutpie, 2 chains x 100 draws after 200 tuning steps), and for
the ``P`` = 19 parameters (L, k, t50 of 5 models, mu_log_k, mu_t50, sigma_t50, sigma_y) the
truth's normalised rank among the draws and its coverage by the 90% and 50% equal-tailed
intervals of :func:`delusion_bayes.intervals.interval` are recorded. The studies share one
compiled graph (their data are graph inputs), so a fit is its sampling, ~0.4 s.

Each study gives one summary per statistic, the mean over its ``P`` parameters. The studies are
independent, so the ``S`` summaries are i.i.d.; SBC fixes their expectation on a correct
model (mean rank 1/2, coverage = nominal up to Monte-Carlo error of the draws' quantiles), but
not their variance (parameters of one study are correlated), so each check is a one-sample
t-test over the ``S`` summaries with the variance estimated from them, at two-sided level
``ALPHA`` = 0.001 each.

Sizing (issue 34): a pool of 60 other studies (prior seed 7, the same fits; per-study mean
rank 0.512 +- 0.084, 90% coverage 0.880 +- 0.102, 50% coverage 0.496 +- 0.151), each also
scored with its posterior draws shifted by +0.7 SD and with its intervals halved or doubled
around their centres; ``S`` studies resampled from the pool 20,000 times give the rejection
probabilities in the test docstrings (script: /tmp/calib/onsetpow.py, in the issue-34 note).
At S = 15 all three checks together fail a correct model with P = 0.006, halved intervals
with P = 1.000, a +0.7-SD shift with P = 1.000, doubled intervals with P = 1.000.

The wrong implementations are ``tests/wrong_impl/halve_intervals.py`` and
``tests/wrong_impl/shift_posterior.py``; ``pytest -m calibration -p tests.wrong_impl.<name>``
fails, ``pytest -m calibration`` passes.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy import stats

#: ``calibration`` marks only the tests that can fail under a wrong implementation (issue 55);
#: the shape check cannot, so it is not one
pytestmark = pytest.mark.slow

S = 15
ALPHA = 0.001
VARS = ("L", "k", "t50", "mu_log_k", "mu_t50", "sigma_t50", "sigma_y")
SAMPLE = ("chain", "draw")


@pytest.fixture(scope="module")
def onset_sbc(small_study):
    """Per study (rows) and parameter (columns): normalised rank of the truth among the
    posterior draws, and whether the 90% / 50% intervals cover it."""
    import pymc as pm

    from delusion_bayes.intervals import interval
    from delusion_bayes.models import fit
    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.spec import build_spec

    spec = build_spec(small_study, "onset")
    spec.data["t50_centred"] = np.ones(len(spec.coords["model"]), bool)
    prior = pm.sample_prior_predictive(draws=S, model=build_model(spec), random_seed=2026)
    y = prior["prior_predictive"]["y"].isel(chain=0)
    truth = prior["prior"].isel(chain=0)
    ranks, cov90, cov50 = [], [], []
    for i in range(S):
        sim = copy.deepcopy(spec)
        sim.data["y"] = np.asarray(y.isel(draw=i).values, float)
        post = fit(small_study, spec=sim, draws=100, tune=200, chains=2, seed=i,
                   log_likelihood=False, log_prior=False,
                   posterior_predictive=False)["posterior"]  # fmt: skip
        r, c90, c50 = [], [], []
        for v in VARS:
            x, t = post[v], truth[v].isel(draw=i).values
            r.append(np.ravel((x < t).mean(SAMPLE).values + 0.5 * (x == t).mean(SAMPLE).values))
            for prob, out in ((0.9, c90), (0.5, c50)):
                lo, hi = interval(x, prob)
                out.append(np.ravel((lo.values <= t) & (t <= hi.values)))
        ranks.append(np.concatenate(r))
        cov90.append(np.concatenate(c90))
        cov50.append(np.concatenate(c50))
    return {"rank": np.array(ranks), "cover90": np.array(cov90), "cover50": np.array(cov50)}


def _t_test(per_study: np.ndarray, expected: float) -> tuple[float, float]:
    """Two-sided one-sample t-test of the per-study means against ``expected``."""
    res = stats.ttest_1samp(per_study, expected)
    return float(res.statistic), float(res.pvalue)


def test_onset_sbc_shapes(onset_sbc):
    assert onset_sbc["rank"].shape == (S, 19)
    assert onset_sbc["cover90"].shape == onset_sbc["cover50"].shape == (S, 19)
    assert ((onset_sbc["rank"] >= 0) & (onset_sbc["rank"] <= 1)).all()


@pytest.mark.calibration
def test_onset_sbc_mean_rank_is_one_half(onset_sbc):
    """Catches a posterior shifted by +0.7 of its SD (``shift_posterior``): the mean rank drops
    to 0.30 (pool), rejected with P = 1.000; false alarm on the correct model 0.003."""
    per_study = onset_sbc["rank"].mean(axis=1)
    t, p = _t_test(per_study, 0.5)
    assert p > ALPHA, (f"mean normalised rank {per_study.mean():.3f} over {S} studies "
                       f"(expected 0.5; t = {t:.2f}, p = {p:.2g})")  # fmt: skip


@pytest.mark.calibration
def test_onset_sbc_90_percent_intervals_cover_90_percent(onset_sbc):
    """Catches intervals half as wide around the same centre (``halve_intervals``; pool
    coverage 0.535): P = 1.000; a +0.7-SD shift (coverage 0.71): P = 0.977; false alarm on the
    correct model 0.0015."""
    per_study = onset_sbc["cover90"].mean(axis=1)
    t, p = _t_test(per_study, 0.9)
    assert p > ALPHA, (f"90% intervals cover {per_study.mean():.3f} over {S} studies "
                       f"(t = {t:.2f}, p = {p:.2g})")  # fmt: skip


@pytest.mark.calibration
def test_onset_sbc_50_percent_intervals_cover_50_percent(onset_sbc):
    """Two-sided: intervals too narrow (halved; pool coverage 0.255) fail with P = 0.999, too
    wide (doubled; 0.813) with P = 1.000, shifted +0.7 SD (0.336) with P = 0.82; false alarm
    on the correct model 0.001."""
    per_study = onset_sbc["cover50"].mean(axis=1)
    t, p = _t_test(per_study, 0.5)
    assert p > ALPHA, (f"50% intervals cover {per_study.mean():.3f} over {S} studies "
                       f"(t = {t:.2f}, p = {p:.2g})")  # fmt: skip
