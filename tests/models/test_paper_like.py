"""The Bayesian-core issue on the paper-like study at test size: ``fit(simulate_study("paper_like",
seed=0), model="joint", draws=500, tune=500, chains=2, seed=1)`` has no divergences, the gate's
ESS (>= 100 per chain) and R-hat <= 1.02 (the noise floor of 2 x 500 draws) on L, k and t50,
and covers at least 70% of the turning models' true t50 with its 90% intervals.

Before the stage was integrated out and the never-turners' t50 put in the coordinate of their
wall (``models.joint``), this fit had max R-hat 1.007-1.017 over sampler seeds 1-6 (a
never-turner's t50 at ESS ~300 of 1,000), so the test could only ask 1.02. The fit skips
log-likelihood and posterior predictive (not part of the criterion) to keep the test short;
its wall time is printed by ``experiments/bench/bench_models.py``, not asserted here.
"""

from __future__ import annotations

import numpy as np
import pytest

from ._checks import check_t50_coverage, t50_check

pytestmark = pytest.mark.slow

NEVER = ("Claude Sonnet 4", "DeepSeek-V3", "Gemini 2.5 Flash", "Gemini 2.5 Pro")


def _done_when_fit(ds, model: str):
    """The issue's call: 2 chains x 500 draws after 500 tuning steps, sampler seed 1 (without
    log-likelihood and posterior predictive, which the checks here do not use)."""
    from delusion_bayes.models import fit

    return fit(
        ds,
        model=model,
        draws=500,
        tune=500,
        chains=2,
        seed=1,
        log_likelihood=False,
        posterior_predictive=False,
    )


@pytest.fixture(scope="module")
def paper_fit(paper_like):
    return _done_when_fit(paper_like, "joint")


def test_divergences_and_rhat_on_onset_parameters(paper_fit):
    from delusion_bayes.inference.diagnostics import diagnose

    assert int(paper_fit["sample_stats"]["diverging"].sum()) == 0
    table = diagnose(paper_fit, var_names=["L", "k", "t50"])
    # at 2 x 500 draws a max over 45 R-hats has a noise floor near 1.01 even for perfectly
    # mixed chains (experiments/bench/rhat_floor.py: exceeded in ~45% of runs at ESS/N 0.6), so 1.02
    # here (measured 1.005-1.013); the gate's 1.01 is checked at the main job's 4 x 1000
    assert table["r_hat"].max() <= 1.02, table.sort_values("r_hat").tail(5)
    assert table["ess_bulk"].min() >= 200, table.sort_values("ess_bulk").head(5)


@pytest.mark.calibration
def test_t50_of_turning_models_covered_and_never_turners_beyond_the_study(paper_fit, paper_like):
    """Coverage of the 11 turning models' true t50: >= 8 by the 90% intervals and 2-9 by the
    50% ones (``_checks.COVERAGE_RULE``: false alarm 0.019 + 0.012 on a correct model; halved
    intervals caught with P >= 0.73; a +0.7-SD shift is the onset SBC's to catch, P 0.15
    here); never-turners P(t50 > 31) >= 0.95 (the shift plugin moves t50 up, so not this)."""
    c = t50_check(paper_fit, paper_like)
    assert c.turning.sum() == 11
    check_t50_coverage(c)
    never = np.isin(paper_like["model"].values, NEVER)
    assert np.array_equal(never, ~c.turning)
    assert np.all(c.p_beyond[never] >= 0.95), c.p_beyond
    # the overnight switcher (true k = 10, t50 = 21): k stays below the soft bound K_MAX
    from delusion_bayes.data.schema import K_MAX

    assert float(paper_fit["posterior"]["k"].max()) < K_MAX


@pytest.fixture(scope="module")
def onset_fit(paper_like):
    return _done_when_fit(paper_like, "onset")


@pytest.mark.calibration
def test_onset_model_has_no_slow_ramp_mode_on_never_turners(onset_fit, paper_like):
    """The onset model reads the consensus as censored at the scale's floor
    (``models.onset``). Read as Gaussian, a never-turner's floor noise (consensus 1.0 or 1.5)
    made a second mode, a far-off slow curve (k < 0.15/day with t50 > 45), holding 2-27% of
    the draws per never-turner (max over the four 0.20-0.27, seeds 1-3, 2 x 500), with 3-5
    divergences and k's ESS 75-754. Censored at the floor, at the onset model's target_accept
    0.99 (seeds 1-3): <= 0.2% in that region, k's ESS 933-1814 of 1,000, 0 divergences (at
    0.95, one run of six had one, at a small ``sigma_L``). With the plateau's fixed prior and
    the never-turners' wall coordinate: k's ESS 485-739 (sampler seed 1), so >= 400 is asked."""
    post = onset_fit["posterior"]
    assert post.attrs["target_accept"] == 0.99  # the onset model's own (its definition)
    assert int(onset_fit["sample_stats"]["diverging"].sum()) <= 1
    never = post.sel(model=list(NEVER))
    slow = ((never["k"] < 0.15) & (never["t50"] > 45)).mean(("chain", "draw")).values
    assert slow.max() < 0.02, dict(zip(NEVER, slow, strict=True))
    import arviz as az

    ess = az.ess(never["k"]).values
    assert ess.min() >= 400, dict(zip(NEVER, ess, strict=True))
    c = t50_check(onset_fit, paper_like)
    assert np.all(c.p_beyond[~c.turning] >= 0.95), c.p_beyond
    check_t50_coverage(c)
