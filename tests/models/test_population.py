"""Population-level contrasts (models.population): calibrated under an exchangeable null, covering
a known shift, wider than the finite-sample contrast. numpy only (no fit), CI-cheap."""

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.data.simulate import simulate_study
from delusion_bayes.models.derived import posterior_contrasts
from delusion_bayes.models.population import population_contrasts, population_draws

GROUPS = np.array([True] * 6 + [False] * 9)  # the cohort contrast's 6 vs 9 models


def _study_draws(rng, shift, n_draws=200, noise=1.0):
    """Per-model posterior-like draws: true values N(mu_g, 8), measurement noise N(0, noise)."""
    truth = rng.normal(16.0, 8.0, GROUPS.size) + shift * GROUPS
    return truth[None, :] + rng.normal(0.0, noise, (n_draws, GROUPS.size))


@pytest.mark.calibration
def test_population_interval_is_calibrated_under_an_exchangeable_null():
    """400 null studies: the 95% population interval (``intervals.eti``) excludes 0 in 7-33 of
    them (3 binomial SEs of a 5% rate, 1.1%, either side). Binomial tails: false alarm
    0.0023 on a correct interval; halved intervals (rejecting ~32%) caught with P = 1.000,
    a doubled type-I error (10%) with P = 0.86, too-wide intervals rejecting 1% with
    P = 0.89."""
    from delusion_bayes.intervals import eti

    rng = np.random.default_rng(1)
    reject = 0
    for _ in range(400):
        d = population_draws(_study_draws(rng, 0.0), GROUPS, ~GROUPS, rng, reps=5)
        lo, hi = eti(d, 0.95)
        reject += (lo > 0) or (hi < 0)
    assert 0.05 - 3 * 0.011 <= reject / 400 <= 0.05 + 3 * 0.011


def test_population_contrast_covers_a_known_shift_and_is_wider_than_finite_sample():
    rng = np.random.default_rng(2)
    x = _study_draws(rng, -10.0, n_draws=400)
    ds = xr.Dataset(
        {"t50": (("chain", "draw", "model"), x.reshape(2, 200, -1))},
        coords={
            "model": [f"m{i}" for i in range(15)],
            "cohort": ("model", np.where(GROUPS, "late-2025", "earlier")),
        },
    )
    spec = {
        "name": "c",
        "by": "cohort",
        "a": ["late-2025"],
        "b": ["earlier"],
        "alternative": "two-sided",
        "quantities": ["t50", "first_clinical"],
    }
    pop = population_contrasts(ds, [spec]).set_index("quantity")
    fin = posterior_contrasts(ds, [spec]).set_index("quantity")
    p, f = pop.loc["t50"], fin.loc["t50"]
    # measurement noise 1 -> finite-sample SE ~0.07; between-model SD 8 -> population SE ~4.2
    assert p.ci_low < -10.0 < p.ci_high
    assert (p.ci_high - p.ci_low) > 5 * (f.ci_high - f.ci_low)
    assert p.ci_high - p.ci_low == pytest.approx(2 * 2.16 * 8 * np.sqrt(1 / 6 + 1 / 9), rel=0.35)
    assert np.isnan(pop.loc["first_clinical", "median"])
    assert "not a quantity" in pop.loc["first_clinical", "note"]
    again = population_contrasts(ds, [spec]).set_index("quantity")
    assert again.loc["t50", "ci_low"] == p.ci_low  # seeded


def test_group_shift_moves_only_that_groups_truth():
    base = simulate_study("null", seed=0)
    shifted = simulate_study(
        "null", seed=0, group_shift={"by": "cohort", "level": "late-2025", "t50": -8.0}
    )
    diff = shifted["true_t50"].values - base["true_t50"].values
    late = shifted["cohort"].values == "late-2025"
    np.testing.assert_allclose(diff[late], -8.0)
    np.testing.assert_allclose(diff[~late], 0.0)
    with pytest.raises(ValueError, match="null preset"):
        simulate_study("paper_like", seed=0, group_shift={"by": "cohort", "level": "earlier"})
    with pytest.raises(ValueError, match="not a cohort"):
        simulate_study("null", seed=0, group_shift={"by": "cohort", "level": "2030"})
