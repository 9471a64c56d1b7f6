"""The disengagement model sampled on a simulated study with a known level effect (issue 34,
deliver 4): one fit through :func:`delusion_bayes.models.fit` (nutpie, 2 chains x 300 draws after
300 tuning steps, seed 0) of ``tests/models/_recovery.disengagement_study(0)``.

The study: ``simulate_study("small", seed=0)`` (5 chatbots x 12 days, 3 raters), whose Level A
is ``P(A) = sigmoid(a0_m + 3 (stage - 2.5))`` (``simulate._adjudication``). That is the model's
``P(D >= 1) = sigmoid(beta_level (stage - 2.5) + u_m - c_level_1)`` exactly, so the known
level effect is ``beta_level = 3`` (the change in the log-odds of Level A per stage), with
``c_level_1 = -mean(a0) = 0`` and ``u_m = a0_m - mean(a0) = (1.5, 0.5, 0, -2, 0)``, read back from
the study's ``true_p_level_a`` (``_recovery.level_truth``). Level B given A is redrawn from the
model's ordinal form with a known gap ``c2 - c1 = 1.5`` (``log_gap_level = 0.405``): the
simulator's own Level B has a second per-model propensity the model does not have
(``_recovery.disengagement_study``).

This fit (measured; 24 model-days with Level A, 23 of them Level B): ``beta_level`` median 3.16
(90%: 2.10-4.49, 99%: 1.73-5.52) against 3; ``c_level_1`` -0.34 (-1.51 to 0.52) against 0;
``log_gap_level`` -0.66 (-1.66 to 0.14) against 0.405, outside its 90% interval (Level B on all
but one Level A day says little about the gap; over the pool the truth's rank is 0.46-0.95);
latent stage: mean rank 0.491, 56 of 60 inside the 90% intervals, 31 inside the 50% ones.

Sizing (issue 34): a pool of the same study at seeds 1-8, fitted as here
(``tests/wrong_impl/sizing/recovery_pool.py``), each scored as fitted, with its intervals halved
around their centres and with its draws shifted by +0.7 SD (the plugin's ``shift``);
``recovery_power.py`` applies this module's rules to it. In the tests' docstrings "pool k/8" is
how many of the 8 pool fits fail the rule (0 divergences in 7 fits, 4 in one); "binomial"
treats the targets as independent.

What this cannot catch: ``u`` of a chatbot whose Level A is (almost) always or never reached.
Over the pool the truth's rank among the draws of ``u`` is 0.59-1.00 for "Early" (Level A on
about 10 of 12 days, a0 = 1.5) and 0.03-0.16 for "Never" (no Level A, a0 = -2), whose 90%
intervals cover the truth in 5 and 3 of 8 fits (the other three chatbots: 8 of 8): partial
pooling pulls both towards 0. That is the hierarchy at a fixed truth, not a miscalibration, so
``u`` is not asserted; nor can one parameter's +0.7-SD shift be seen in one study (it moves the
truth's rank by ~0.2).
"""

from __future__ import annotations

import numpy as np
import pytest

from ._recovery import FIT, disengagement_study, pooled, score

#: ``calibration`` marks only the tests that can fail under a wrong implementation (issue 55):
#: the check of the simulator's truth cannot, so it is not one
pytestmark = pytest.mark.slow

LEVEL = ("beta_level", "c_level_1", "log_gap_level")


@pytest.fixture(scope="module")
def disengagement_recovery():
    """``(study, truth, scores, posterior)`` of the disengagement fit (module docstring);
    ``truth`` holds the level parameters and the latent stage of the 60 model-days."""
    from delusion_bayes.models import fit

    ds, truth = disengagement_study(0)
    truth["stage"] = ds["true_stage"].transpose("model", "day").values
    dt = fit(ds, "disengagement", seed=0, **FIT)
    post = dt["posterior"].to_dataset()
    return ds, truth, score(post[list(truth)], truth), post


def test_the_known_truth_is_the_simulators(disengagement_recovery):
    """The level truth read back from the study equals the small preset's roster
    (``simulate._SMALL_MODELS``: a0 = 1.5, 0.5, 0, -2, 0; slope 3 in ``_adjudication``), and the
    redrawn Level B implies Level A."""
    ds, truth, _, _ = disengagement_recovery
    np.testing.assert_allclose(truth["beta_level"], [3.0], atol=1e-9)
    np.testing.assert_allclose(truth["u"], [1.5, 0.5, 0.0, -2.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(truth["c_level_1"], [0.0], atol=1e-9)
    a, b = ds["level_a"].values, ds["level_b"].values
    assert ((b == 1) <= (a == 1)).all() and 0 < b.sum() < a.sum()


@pytest.mark.calibration
def test_level_effect_is_recovered(disengagement_recovery):
    """The known level effect ``beta_level = 3`` lies inside its 99% interval, and at least 2 of
    the 3 shared level parameters (``beta_level``, ``c_level_1``, ``log_gap_level``) inside their
    90% intervals.

    False alarm on the correct model: binomial 0.010 + 0.028, pool 0/8. Halved intervals
    caught with P ~ 0.5 by binomial (a halved 99% interval covers ~80%, a halved 90% one ~59%),
    pool 2/8; a +0.7-SD shift with P ~ 0.1 by binomial, pool 0/8. One
    study's level outcome (60 model-days, 24 of them Level A at seed 0) cannot show a 0.7-SD
    shift of three numbers; the latent-stage test below is the one with power against it."""
    from delusion_bayes.intervals import interval

    _, truth, sc, post = disengagement_recovery
    lo, hi = (float(b) for b in interval(post["beta_level"], 0.99))
    med = float(post["beta_level"].median())
    assert lo <= 3.0 <= hi, f"beta_level 99% interval [{lo:.2f}, {hi:.2f}] (median {med:.2f})"
    c90 = pooled(sc, LEVEL)["c90"]
    assert c90.sum() >= 2, dict(zip(LEVEL, c90, strict=True))


@pytest.mark.calibration
def test_latent_stage_is_recovered(disengagement_recovery):
    """The latent stage of the 60 model-days against the simulated ``true_stage``: mean
    normalised rank of the truth within 0.5 +- 0.12, the 90% intervals cover >= 47 of 60, the
    50% intervals 10-48 of 60 (fewer: too narrow, more: too wide).

    The model-days of one chatbot share its trajectory, so they are not independent and the
    rules are wider than binomial ones (binomial false alarm: 0.0013 rank, 0.002 90%, 4e-7 50%).
    Pool per fit, correct: mean rank 0.45-0.59, 90% coverage 0.82-1.00, 50% 0.22-0.75,
    false alarm 0/8; halved intervals: 90% coverage 0.35-0.77, caught
    8/8; +0.7-SD shift: mean rank 0.22-0.37, caught 8/8.
    Doubled intervals (50% ones covering ~82%) fail the upper bound with P ~ 0.6 (binomial)."""
    _, _, sc, _ = disengagement_recovery
    st = sc["stage"]
    n = st["rank"].size
    assert n == 60
    assert abs(st["rank"].mean() - 0.5) <= 0.12, f"mean rank {st['rank'].mean():.3f}"
    assert st["c90"].sum() >= 47, f"90% intervals cover {st['c90'].sum()} of {n}"
    assert 10 <= st["c50"].sum() <= 48, f"50% intervals cover {st['c50'].sum()} of {n}"
