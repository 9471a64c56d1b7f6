"""The rater model sampled on a simulated study (issue 34, deliver 4): one fit through
:func:`delusion_bayes.models.fit` (nutpie, 2 chains x 300 draws after 300 tuning steps, seed 0)
of ``simulate_study("small", seed=0, n_raters=6)`` (5 chatbots x 12 days, 6 raters).

The simulator draws per rater a severity (``N(0, 0.3)``, centred) and a discrimination
(``exp N(log 3.5, 0.2)``) and rates ``1 + sum_c [stage + severity_r + e > c]`` with ``e ~
Logistic(0, 1 / discrimination_r)``: the rater model's likelihood exactly. The truth of the
reliabilities is the rater model's formula (its module docstring) on the simulated stage,
severities and discriminations (``_recovery.rater_study``).

This fit (measured): severities 5 of 6 and discriminations 5 of 6 inside their 90% intervals
(rater R2's both outside: severity -0.483 vs -0.469 to -0.219, discrimination 3.09 vs 3.55 to
9.75), mean rank of the 12 truths 0.43; reliability single 0.804 (90%: 0.760-0.840; 99%:
0.735-0.855) against the simulated 0.774, consensus 0.961 (0.950-0.969) against 0.954; latent
scores: mean rank 0.545, 53 of 60 inside the 90% intervals, 31 inside the 50% ones.

Why 6 raters, not the small preset's 3: with 3 raters the posterior reliability overstates the
simulated one (measured on study seed 0, sampler seed 1: single 0.875, 90% interval
0.827-0.913, truth 0.793; consensus 0.954, 0.935-0.969, truth 0.920). The rater model's latent
score has a normal population, the simulated stage piles up at the scale's ends (1 before a
chatbot turns, 4 after), and a model-day every rater scores 1 bounds its score from above only,
so the score's draws spread below the floor: their variance over model-days was 2.69
(2.06-3.77) against the simulated 1.68. Six raters pin the ends (1.76, 1.49-2.09), but some of
the bias stays (see the reliability test). A limitation of the rater model on short studies with
few raters, stated here because no test asserts it.

Sizing: a pool of the same design at seeds 1-8 fitted as here
(``tests/wrong_impl/sizing/recovery_pool.py``; the rules applied by ``recovery_power.py``),
scored as fitted, with halved intervals and with draws shifted by +0.7 SD through the plugin's
``shift`` (the reliabilities recomputed from the shifted severities, discriminations and
stage, as under the plugin). "pool k/8": pool fits failing the rule (0 divergences in all 8).
"""

from __future__ import annotations

import pytest

from ._recovery import FIT, pooled, rater_draws, rater_study, score

#: ``calibration`` marks only the tests that can fail under a wrong implementation (issue 55):
#: the check of the simulator's truth cannot, so it is not one
pytestmark = pytest.mark.slow

RATER_PARAMS = ("severity", "discrimination")
RELIABILITY = ("reliability_single", "reliability_consensus")


@pytest.fixture(scope="module")
def rater_recovery():
    """``(study, truth, scores, draws)`` of the rater fit (module docstring)."""
    from delusion_bayes.models import fit

    ds, truth = rater_study(0)
    truth["stage"] = ds["true_stage"].transpose("model", "day").values
    dt = fit(ds, "rater", seed=0, **FIT)
    draws = rater_draws(dt).assign(stage=dt["posterior"]["stage"])
    return ds, truth, score(draws, truth), draws


def test_rater_truth_is_the_simulators(rater_recovery):
    """Severities centred (the model's zero-sum), reliabilities in (0, 1) with the consensus
    above the single rater (Spearman-Brown)."""
    _, truth, _, _ = rater_recovery
    assert truth["severity"].shape == truth["discrimination"].shape == (6,)
    assert abs(truth["severity"].sum()) < 1e-12
    assert 0 < truth["reliability_single"][0] < truth["reliability_consensus"][0] < 1


@pytest.mark.calibration
def test_rater_severities_and_discriminations_are_recovered(rater_recovery):
    """The 12 per-rater parameters (6 severities, 6 discriminations): >= 8 inside their 90%
    intervals, 2-11 inside their 50% intervals, mean normalised rank of the truth within
    0.5 +- 0.2.

    Pool per fit: correct 8-12 covered by the 90% intervals (all 96: 0.875), 4-10 by the 50%
    ones, mean rank 0.50-0.61 -> false alarm 0/8 (binomial 0.004 + 0.003 + 0.016); halved
    intervals 5-10 covered -> caught 4/8 (binomial 0.59); a +0.7-SD shift, mean rank
    0.25-0.42 -> caught 2/8 (binomial 0.46). The latent-score test is the one with power."""
    _, _, sc, draws = rater_recovery
    p = pooled(sc, RATER_PARAMS)
    assert p["rank"].size == 12
    detail = {v: (sc[v]["rank"].round(2), draws[v].median(("chain", "draw")).values.round(2))
              for v in RATER_PARAMS}  # fmt: skip
    assert p["c90"].sum() >= 8, f"90% intervals cover {p['c90'].sum()} of 12: {detail}"
    assert 2 <= p["c50"].sum() <= 11, f"50% intervals cover {p['c50'].sum()} of 12: {detail}"
    assert abs(p["rank"].mean() - 0.5) <= 0.2, f"mean rank {p['rank'].mean():.3f}: {detail}"


@pytest.mark.calibration
def test_posterior_reliability_covers_the_simulated_one(rater_recovery):
    """Single-rater and 6-rater consensus reliability (the ICC(2,1) / ICC(2,k) analogues of
    ``models.derived.reliability_draws``): the simulated values inside their 99% intervals.

    The two are one number (both increase with v_theta / (v_s + v_e); the truth's rank is the
    same for both in every pool fit). The posterior sits above the simulated reliability: the
    truth's rank among the draws was 0.03-0.59 over the pool, mean 0.26 (calibrated: 0.5), the
    90% intervals covering it in 7 of 8 fits; the 99% rule passes 8/8 (binomial false alarm
    0.01 were it calibrated). Halved intervals caught 1/8, a +0.7-SD shift 2/8 (the truth's rank
    then 0.00-0.10): a weak check, kept because it is the rater model's headline number and it
    does fail when the posterior moves further up."""
    from delusion_bayes.intervals import interval

    _, truth, _, draws = rater_recovery
    for q in RELIABILITY:
        lo, hi = (float(b) for b in interval(draws[q], 0.99))
        t = float(truth[q][0])
        assert lo <= t <= hi, f"{q}: truth {t:.3f}, 99% interval [{lo:.3f}, {hi:.3f}]"


@pytest.mark.calibration
def test_latent_scores_are_recovered(rater_recovery):
    """The latent score of the 60 model-days against the simulated ``true_stage``: mean
    normalised rank within 0.5 +- 0.12, the 90% intervals cover >= 47 of 60, the 50% ones
    10-48 (fewer: too narrow, more: too wide).

    Pool per fit: correct mean rank 0.46-0.57, 49-59 covered by the 90% intervals, 26-32 by the
    50% ones -> false alarm 0/8 (binomial 0.0013 + 0.002 + 4e-7); halved intervals 28-36
    covered -> caught 8/8; a +0.7-SD shift, mean rank 0.25-0.35 -> caught 8/8. Doubled
    intervals (50% ones covering ~82%) fail the upper bound with P ~ 0.6 (binomial)."""
    _, _, sc, _ = rater_recovery
    st = sc["stage"]
    assert st["rank"].size == 60
    assert abs(st["rank"].mean() - 0.5) <= 0.12, f"mean rank {st['rank'].mean():.3f}"
    assert st["c90"].sum() >= 47, f"90% intervals cover {st['c90'].sum()} of 60"
    assert 10 <= st["c50"].sum() <= 48, f"50% intervals cover {st['c50'].sum()} of 60"
