"""The one interval helper: equal-tailed (or highest-density) intervals over the sample dims,
as a NumPy kernel over an axis (:func:`eti`) and over named xarray dims (:func:`interval`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

#: dims that index draws of one quantity: MCMC (chain, draw) or bootstrap (resample)
SAMPLE_DIMS: tuple[str, ...] = ("chain", "draw", "resample")


def _check_prob(prob: float) -> None:
    if not 0 < prob < 1:
        raise ValueError(f"interval probability must be in (0, 1); got {prob!r}")


def eti(
    x: Any, prob: float = 0.95, axis: int = 0, *, skipna: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed ``prob`` interval of ``x`` along ``axis`` (quantiles ``(1-prob)/2``,
    ``(1+prob)/2``, linear interpolation) as arrays; NaN where every value is NaN (``skipna``,
    bootstrap replicates), or any is (posterior draws), or there are no values."""
    _check_prob(prob)
    q = [(1 - prob) / 2, (1 + prob) / 2]
    x = np.asarray(x, dtype=float)
    if x.ndim and x.shape[axis] == 0:  # no replicates (n_boot=0)
        empty = np.full(np.delete(x.shape, axis), np.nan)
        return empty, empty.copy()
    if not skipna:
        lo, hi = np.quantile(x, q, axis=axis)
        return lo, hi
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices -> NaN
        lo, hi = np.nanquantile(x, q, axis=axis)
    return lo, hi


def sample_dims(da: Any, dims: Sequence[str] | None = None) -> list[str]:
    """The sample dims of ``da`` (those of :data:`SAMPLE_DIMS` it has, or ``dims``)."""
    found = [d for d in (dims or SAMPLE_DIMS) if d in da.dims]
    if not found:
        raise ValueError(f"no sample dims {tuple(dims or SAMPLE_DIMS)} in {list(da.dims)}")
    return found


def interval(da: Any, prob: float = 0.95, kind: str = "eti", dims: Sequence[str] | None = None):
    """Lower and upper bound (DataArrays) of the ``prob`` interval of ``da`` over its sample dims:
    ``kind="eti"`` equal-tailed (as :func:`eti`), ``"hdi"`` the shortest interval holding
    ``ceil(prob * n)`` draws. NaN draws (a missing model-day) give NaN bounds."""
    _check_prob(prob)
    dims = sample_dims(da, dims)
    if kind == "eti":
        q = da.quantile([(1 - prob) / 2, (1 + prob) / 2], dim=dims, skipna=False)
        return q.isel(quantile=0, drop=True), q.isel(quantile=1, drop=True)
    if kind != "hdi":
        raise ValueError(f"interval kind {kind!r}; expected 'eti' or 'hdi'")
    stacked = da.stack(__sample__=dims).transpose(..., "__sample__")
    x = np.sort(stacked.values, axis=-1)
    n = x.shape[-1]
    m = int(np.ceil(prob * n))
    widths = x[..., m - 1 :] - x[..., : n - m + 1]
    with np.errstate(invalid="ignore"):
        i = np.nanargmin(np.where(np.isnan(widths), np.inf, widths), axis=-1)
    lo = np.take_along_axis(x, i[..., None], -1)[..., 0]
    hi = np.take_along_axis(x, (i + m - 1)[..., None], -1)[..., 0]
    nan = np.isnan(x).any(axis=-1)
    lo, hi = np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)
    tmpl = stacked.isel(__sample__=0, drop=True)
    return tmpl.copy(data=lo), tmpl.copy(data=hi)
