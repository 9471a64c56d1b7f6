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
