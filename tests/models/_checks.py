"""Checks shared by the model tests (a module, not a conftest: imported explicitly)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

SAMPLE = ("chain", "draw")


class T50Check(NamedTuple):
    """Posterior t50 against the simulated truth (the package's 90% and 50% equal-tailed
    intervals, :func:`delusion_bayes.intervals.interval`, so a wrong interval helper shows)."""

    lo: np.ndarray
    hi: np.ndarray
    truth: np.ndarray
    turning: np.ndarray  # true t50 within the study
    covered: np.ndarray  # truth inside [lo, hi]
    p_beyond: np.ndarray  # P(t50 > last day) per model
    covered50: np.ndarray  # truth inside the 50% interval


#: binomial sizing of the t50 coverage checks of one fit over n turning models
#: (scipy.stats.binom; models treated as independent): ``(n, min of n covered by the 90%
#: intervals, (min, max) of n covered by the 50% intervals)``. n = 11 (paper_like): on a correct
#: model P(fail) = 0.019 (90%) + 0.012 (50%); halved intervals (covering ~59% and ~26%) fail
#: with P = 0.73 (90%) and >= 0.73 overall; a +0.7-SD shift (covering ~82%, ~41%) only with
#: P = 0.12 + 0.03: one study cannot see it, the onset SBC (test_calibration.py) does.
#: n = 4 (small): P(fail) = 0.052 + 0.063 on a correct model, halved 0.54 + 0.29 (too wide
#: intervals cannot be seen in 4).
COVERAGE_RULE = {11: (8, (2, 9)), 4: (3, (1, 4))}


def t50_check(fit: xr.DataTree, ds: xr.Dataset, prob: float = 0.9) -> T50Check:
    """The 90% intervals of ``t50`` of ``fit``, which models turn, which are covered and each
    model's posterior probability of a t50 beyond the study's last day."""
    from delusion_bayes.intervals import interval

    t50 = fit["posterior"]["t50"]
    lo, hi = (b.values for b in interval(t50, prob, dims=SAMPLE))
    lo50, hi50 = (b.values for b in interval(t50, 0.5, dims=SAMPLE))
    truth = ds["true_t50"].values
    n_days = ds.sizes["day"]
    turning = truth <= n_days
    covered = (lo <= truth) & (truth <= hi)
    p_beyond = (t50 > n_days).mean(SAMPLE).values
    covered50 = (lo50 <= truth) & (truth <= hi50)
    return T50Check(lo, hi, truth, turning, covered, p_beyond, covered50)


def check_t50_coverage(c: T50Check) -> None:
    """Assert the binomial rule of :data:`COVERAGE_RULE` for the turning models of ``c``."""
    n = int(c.turning.sum())
    min90, (min50, max50) = COVERAGE_RULE[n]
    n90, n50 = int(c.covered[c.turning].sum()), int(c.covered50[c.turning].sum())
    detail = list(
        zip(c.lo[c.turning].round(2), c.hi[c.turning].round(2), c.truth[c.turning], strict=True)
    )
    assert n90 >= min90, f"90% intervals cover {n90} of {n} true t50; expected >= {min90}: {detail}"
    assert min50 <= n50 <= max50, (
        f"50% intervals cover {n50} of {n} true t50; expected {min50}-{max50} (fewer: too "
        f"narrow, more: too wide): {detail}"
    )


def cat_prob(s, y, d, sev, cuts=(1.5, 2.5, 3.5)) -> np.ndarray:
    """P(Y = y | s) of the cumulative logit ``P(Y > j) = sigmoid(d (s + sev - c_j))`` as the
    difference of two sigmoids (the textbook form, independent of the package's log-space one);
    ``s``: (n,) latent values, ``y, d, sev``: (R,) per rating; returns (n, R)."""
    from scipy.special import expit

    x = np.asarray(d)[:, None] * (np.asarray(s)[:, None, None] + np.asarray(sev)[:, None] - cuts)
    n, r = x.shape[:2]
    pgt = np.concatenate([np.ones((n, r, 1)), expit(x), np.zeros((n, r, 1))], axis=-1)
    idx = np.arange(r)
    return pgt[:, idx, y] - pgt[:, idx, y + 1]


def log_cat_prob_sum(s, y, d, sev) -> np.ndarray:
    """``sum_r log P(y_r | s)`` per latent value (far tails underflow to ``-inf`` in this form)."""
    with np.errstate(divide="ignore"):
        return np.log(cat_prob(s, y, d, sev)).sum(1)


def grid_log_integral(log_f, mu: float, sigma: float, n: int = 40_001) -> float:
    """``log int exp(log_f(s)) N(s; mu, sigma) ds`` by a trapezoid over ``mu +- 12 sigma``."""
    from scipy import stats
    from scipy.special import logsumexp

    s = mu + sigma * np.linspace(-12.0, 12.0, n)
    return float(logsumexp(log_f(s) + stats.norm.logpdf(s, mu, sigma)) + np.log(s[1] - s[0]))
