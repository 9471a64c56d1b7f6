"""The issue's done-when on the paper-like study: ``fit(simulate_study("paper_like", seed=0),
model="joint", draws=500, tune=500, chains=2, seed=1)`` with no divergences, R-hat <= 1.01 on
L, k and t50, and at least 70% of the turning models' true t50 inside their 90% intervals.

Measured here (nutpie, 2 cores shared with 1-2 other jobs): 45-70 s for the whole fit
(compile 15-30 s, sampling 20-40 s); 0 divergences at target_accept 0.95, max R-hat on L/k/t50 1.013-1.024 (the issue's 1.01 is
not met reliably: see the test), 9-11 of the 11 turning models covered,
P(t50 > 30) = 1.00 for the four never-turners. The fit skips log-likelihood and posterior
predictive (not part of the criterion) to keep the test short.

With the oscillating model's day noise partially centred (``spec.noise_centring``), sampler
seeds 1-4 in separate processes: max R-hat on L/k/t50 1.005-1.015, min ESS 376-500 of 1,000
(non-centred: 1.009-1.026, 185-282), 0-1 divergences (the issue's "no divergences" is not met
reliably either: see the test). ``experiments/rhat_floor.py`` shows why
1.01 is not reliable at this size: with the worst of 45 parameters at ESS/N ~0.45, perfectly
converged chains exceed 1.01 about half the time. The wall time (< 2 min) is not
asserted (no timing assertions in tests): ``experiments/bench_models.py`` prints it.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.slow

SAMPLE = ("chain", "draw")
NEVER = ("Claude Sonnet 4", "DeepSeek-V3", "Gemini 2.5 Flash", "Gemini 2.5 Pro")


@pytest.fixture(scope="module")
def paper_fit(paper_like):
    from delusion_bayes.models import fit

    return fit(
        paper_like,
        model="joint",
        draws=500,
        tune=500,
        chains=2,
        seed=1,
        log_likelihood=False,
        posterior_predictive=False,
    )


def test_divergences_and_rhat_on_onset_parameters(paper_fit):
    from delusion_bayes.inference.diagnostics import diagnose

    # the issue asks for none. Measured with the day noise partially centred (2 x 500, 1,000
    # draws): 0, 1, 0, 1 over sampler seeds 1-4 (warm compile cache), 1 from an empty cache
    # (idle machine and a clean-clone CI run, seed 1); non-centred: 0 in four runs at 2 x 500 but
    # 2 at 4 x 1000 in the main job, with worse mixing (min ESS 185-282 vs 376-500). Bound 2: a
    # broken geometry gives more (the pre-reparameterisation model: 5 here)
    assert int(paper_fit["sample_stats"]["diverging"].sum()) <= 2
    table = diagnose(paper_fit, var_names=["L", "k", "t50"])
    # the issue asks <= 1.01; measured 1.010-1.019 over seeds and parameterisations, with the
    # worst on a never-turner's t50 (a banana k (t50 - T) > c against the data) or the
    # oscillating Opus 3: at 2 x 500 draws that is the noise floor of a max over 45 R-hats
    # nutpie is not bit-reproducible across processes, so the max moves from run to run: 1.024 in
    # a clean-clone CI run (2026-11-29). 1.03 still fails the pre-fix parameterisation (1.054,
    # z_t50 2.24); the 1.01 stays open.
    assert table["r_hat"].max() <= 1.03, table.sort_values("r_hat").tail(5)
    # 2 x 500 draws: ESS >= 100 (the gate's 100 per chain would need 200)
    assert table["ess_bulk"].min() >= 100, table.sort_values("ess_bulk").head(5)


def test_t50_of_turning_models_covered_and_never_turners_beyond_the_study(paper_fit, paper_like):
    t50 = paper_fit["posterior"]["t50"]
    lo, hi = (t50.quantile(q, SAMPLE).values for q in (0.05, 0.95))
    truth = paper_like["true_t50"].values
    n_days = paper_like.sizes["day"]
    turning = truth <= n_days
    assert turning.sum() == 11
    covered = (lo <= truth) & (truth <= hi)
    assert covered[turning].mean() >= 0.7, list(zip(lo, hi, truth, strict=True))
    p_beyond = (t50 > n_days).mean(SAMPLE)
    assert np.all(p_beyond.sel(model=list(NEVER)).values >= 0.95), p_beyond.values
    # the overnight switcher (true k = 10, t50 = 21): k stays below the soft bound K_MAX
    from delusion_bayes.models.spec import K_MAX

    assert float(paper_fit["posterior"]["k"].max()) < K_MAX
