"""Checks shared by the model tests (a module, not a conftest: imported explicitly)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

SAMPLE = ("chain", "draw")


class T50Check(NamedTuple):
    """Posterior t50 against the simulated truth (90% equal-tailed intervals)."""

    lo: np.ndarray
    hi: np.ndarray
    truth: np.ndarray
    turning: np.ndarray  # true t50 within the study
    covered: np.ndarray  # truth inside [lo, hi]
    p_beyond: np.ndarray  # P(t50 > last day) per model


def t50_check(fit: xr.DataTree, ds: xr.Dataset, prob: float = 0.9) -> T50Check:
    """The 90% intervals of ``t50`` of ``fit``, which models turn, which are covered and each
    model's posterior probability of a t50 beyond the study's last day."""
    t50 = fit["posterior"]["t50"]
    tail = (1.0 - prob) / 2.0
    lo, hi = (t50.quantile(q, SAMPLE).values for q in (tail, 1.0 - tail))
    truth = ds["true_t50"].values
    n_days = ds.sizes["day"]
    turning = truth <= n_days
    covered = (lo <= truth) & (truth <= hi)
    p_beyond = (t50 > n_days).mean(SAMPLE).values
    return T50Check(lo, hi, truth, turning, covered, p_beyond)


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
