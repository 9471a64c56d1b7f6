"""The rating terms after the latent pass
(:func:`delusion_bayes.models.latent.rating_loglik_and_draw`): per draw and rating,
``log P(y | stage)`` of the cumulative logit and the posterior predictive rating. Checked against
50-digit mpmath and against the definition of the draw."""

from __future__ import annotations

from types import SimpleNamespace

import mpmath
import numpy as np
import pytest

from delusion_bayes.models.latent import STAGE_CUTS, rating_loglik_and_draw


def _reference_logp(y: int, eta: float, d: float, cuts) -> float:
    """``log(sigmoid(d (eta - c_{y-1})) - sigmoid(d (eta - c_y)))`` in 50-digit arithmetic."""
    with mpmath.workdps(50):

        def sig(x):
            return 1 / (1 + mpmath.exp(-x))

        upper = sig(d * (mpmath.mpf(eta) - cuts[y - 1])) if y > 0 else mpmath.mpf(1)
        lower = sig(d * (mpmath.mpf(eta) - cuts[y])) if y < len(cuts) else mpmath.mpf(0)
        return float(mpmath.log(upper - lower))


@pytest.fixture(scope="module")
def study():
    """2 chains x 3 draws, 3 models x 4 days, 3 raters, every category and both tails: stages
    far below the lowest cutpoint and far above the highest (probabilities down to 1e-30)."""
    rng = np.random.default_rng(5)
    n_chain, n_draw, n_model, n_day, n_rater = 2, 3, 3, 4, 3
    stage = rng.normal(2.5, 1.2, (n_chain, n_draw, n_model, n_day))
    stage[0, 0, 0, 0], stage[1, 2, 2, 3] = -8.0, 12.0  # deep tails
    sev = rng.normal(0, 0.3, (n_chain, n_draw, n_rater))
    disc = np.exp(rng.normal(1.0, 0.6, (n_chain, n_draw, n_rater)))
    disc[0, 0, 0] = 9.0
    cells = [(m, t, r) for m in range(n_model) for t in range(n_day) for r in range(n_rater)]
    m_idx, t_idx, r_idx = (np.array(c) for c in zip(*cells, strict=True))
    y = rng.integers(0, 4, len(cells))
    y[:4] = [0, 3, 1, 2]  # the deep lower tail: every category, so log P reaches ~-70
    data = SimpleNamespace(model_idx=m_idx, day_idx=t_idx, rater_idx=r_idx, y=y)
    return stage, data, sev, disc


def test_log_likelihood_matches_50_digit_arithmetic_in_the_body_and_the_tails(study):
    """Relative error below 1e-14 in every cell with ``|log P| > 1e-17``: probabilities of
    1e-30 (where ``log(sigmoid(a) - sigmoid(b))`` in doubles would be -inf or off by the
    cancellation) to ``log P`` of -4e-14; closer to 1 the absolute error is below 1e-17
    (``log P`` of -1e-37 is 0 here: below half the last bit of any sum it enters)."""
    stage, d, sev, disc = study
    ll, pp = rating_loglik_and_draw(stage, d, sev, disc, STAGE_CUTS, None)
    assert pp is None and ll.shape == (2, 3, len(d.y))
    cuts = [mpmath.mpf(float(c)) for c in STAGE_CUTS]
    worst, lowest, tiny = 0.0, 0.0, 0
    for c in range(2):
        for k in range(3):
            for o in range(len(d.y)):
                r = d.rater_idx[o]
                eta = stage[c, k, d.model_idx[o], d.day_idx[o]] + sev[c, k, r]
                ref = _reference_logp(int(d.y[o]), eta, disc[c, k, r], cuts)
                err = abs(ll[c, k, o] - ref)
                if abs(ref) > 1e-17:
                    worst = max(worst, err / abs(ref))
                else:
                    tiny += 1
                    assert err < 1e-17, (ref, ll[c, k, o])
                lowest = min(lowest, ref)
    assert lowest < -60  # the tails were reached
    assert worst < 1e-14, worst
    assert tiny >= 1  # a cell with P within 1e-17 of 1 was checked too


def test_predictive_draw_is_the_count_of_exceeded_cutpoints(study):
    """``y_rep = #{j : u < sigmoid(d (eta - c_j))}`` for the uniforms given, and without the
    log-likelihood asked for none is computed."""
    stage, d, sev, disc = study
    u = np.random.default_rng(1).uniform(size=(2, 3, len(d.y)))
    ll, pp = rating_loglik_and_draw(stage, d, sev, disc, STAGE_CUTS, u, log_likelihood=False)
    assert ll is None and pp.dtype == np.int8
    eta = stage[:, :, d.model_idx, d.day_idx] + sev[..., d.rater_idx]
    p_gt = 1 / (1 + np.exp(-disc[..., d.rater_idx][..., None] * (eta[..., None] - STAGE_CUTS)))
    np.testing.assert_array_equal(pp, (u[..., None] < p_gt).sum(-1))
    assert set(np.unique(pp)) == {0, 1, 2, 3}
    none = rating_loglik_and_draw(stage, d, sev, disc, STAGE_CUTS, None, log_likelihood=False)
    assert none == (None, None)


def test_predictive_frequencies_match_the_category_probabilities():
    """Many uniforms for one rating: the frequencies of the drawn categories are the model's
    probabilities within 4 binomial standard errors."""
    n = 200_000
    stage = np.full((1, n, 1, 1), 2.3)
    sev, disc = np.zeros((1, n, 1)), np.full((1, n, 1), 1.7)
    d = SimpleNamespace(model_idx=[0], day_idx=[0], rater_idx=[0], y=np.array([1]))
    u = np.random.default_rng(2).uniform(size=(1, n, 1))
    _, pp = rating_loglik_and_draw(stage, d, sev, disc, STAGE_CUTS, u)
    p_gt = 1 / (1 + np.exp(-1.7 * (2.3 - STAGE_CUTS)))
    probs = -np.diff(np.concatenate([[1.0], p_gt, [0.0]]))
    freq = np.bincount(pp.ravel(), minlength=4) / n
    np.testing.assert_allclose(freq, probs, atol=4 * np.sqrt(probs * (1 - probs) / n).max())
