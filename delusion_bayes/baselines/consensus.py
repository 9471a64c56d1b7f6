"""Consensus scores: reduce the raters of every model-day to one score.

Trajectory paper: "Consensus scores were counted as 4-evaluator medians per model-day". A median
of an even number of raters can land on x.5; ``half_rule`` ``keep`` (default) leaves it (3.5 is
clinical, >= 3, but not stage 4), ``down`` rounds it down (more than half the raters must reach
a stage), ``up`` rounds it up. ``mean`` ignores ``half_rule``; ``mode`` resolves tied modes by it
(``down``: smallest, ``up``: largest, ``keep``: their mean). Fewer than ``min_raters`` give NaN.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..data.schema import RATER
from ._validate import check_dims, check_option
from .config import CONSENSUS_RULES, HALF_RULES


def _apply_half(x: np.ndarray, half_rule: str) -> np.ndarray:
    if half_rule == "keep":
        return x
    half = np.isclose(x - np.floor(x), 0.5)
    return np.where(half, np.floor(x) if half_rule == "down" else np.ceil(x), x)


def consensus_np(
    x: np.ndarray,
    axis: int = 0,
    rule: str = "median",
    half_rule: str = "keep",
    min_raters: int = 1,
) -> np.ndarray:
    """NumPy kernel of :func:`consensus`: reduce ``axis`` (raters) of ``x`` (NaN = missing).

    Vectorised over every other axis: the median is read from the sorted ratings (NaNs sort
    last) at the positions given by the number of available raters.
    """
    check_option("rule", rule, CONSENSUS_RULES)
    check_option("half_rule", half_rule, HALF_RULES)
    if min_raters < 1:
        raise ValueError(f"min_raters must be >= 1; got {min_raters}")
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    n = np.sum(~np.isnan(x), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if rule == "median":
            s = np.sort(x, axis=-1)
            lo = np.clip((n - 1) // 2, 0, None)[..., None]
            hi = np.clip(n // 2, 0, None)[..., None]
            out = 0.5 * (
                np.take_along_axis(s, lo, axis=-1)[..., 0]
                + np.take_along_axis(s, hi, axis=-1)[..., 0]
            )
            out = _apply_half(out, half_rule)
        elif rule == "mean":
            out = np.nansum(x, axis=-1) / n
        else:  # mode
            vals = np.unique(x[~np.isnan(x)])
            if vals.size == 0:
                out = np.full(n.shape, np.nan)
            else:
                counts = (x[..., None] == vals).sum(axis=-2)  # (..., V)
                is_mode = counts == counts.max(axis=-1, keepdims=True)
                if half_rule == "down":
                    out = vals[np.argmax(is_mode, axis=-1)]
                elif half_rule == "up":
                    out = vals[vals.size - 1 - np.argmax(is_mode[..., ::-1], axis=-1)]
                else:
                    out = (is_mode * vals).sum(axis=-1) / is_mode.sum(axis=-1)
    return np.where(n >= min_raters, out, np.nan)


def consensus(
    da: xr.DataArray | xr.Dataset,
    rule: str = "median",
    half_rule: str = "keep",
    *,
    min_raters: int = 1,
    dim: str = RATER,
) -> xr.DataArray | xr.Dataset:
    """Consensus score per model-day: reduce the ``rater`` dim.

    ``da``: ratings with a ``rater`` dim (NaN = missing); other dims are kept. For a Dataset
    every variable with ``dim`` is reduced and the others are dropped. ``rule`` (paper: median),
    ``half_rule`` and ``min_raters`` as in the module docstring (``keep``: raters at (2, 2, 3, 4)
    give 2.5, not clinical framing). Returns the consensus without ``dim``, the rule in attrs.
    """
    if isinstance(da, xr.Dataset):
        rated = [v for v in da.data_vars if dim in da[v].dims]
        if not rated:
            raise ValueError(f"no variable of the Dataset has a {dim!r} dim")
        return xr.Dataset(
            {v: consensus(da[v], rule, half_rule, min_raters=min_raters, dim=dim) for v in rated}
        )
    check_dims(da, [dim], f"ratings {da.name!r}")
    out = xr.apply_ufunc(
        consensus_np,
        da,
        input_core_dims=[[dim]],
        kwargs={"axis": -1, "rule": rule, "half_rule": half_rule, "min_raters": min_raters},
        keep_attrs=False,
    )
    out = out.drop_vars([c for c in out.coords if dim in out[c].dims], errors="ignore")
    out.attrs.update({"consensus": rule, "half_rule": half_rule, "min_raters": int(min_raters)})
    out.name = da.name
    return out
