"""Consensus scores: reduce the raters of every model-day to one score.

Trajectory paper, "Statistical Analysis": "Consensus scores were counted as 4-evaluator medians
per model-day". With an even number of available raters the median can land between two scale
points (x.5); ``half_rule`` says what happens then:

``keep`` (default)
    The x.5 value stays. Thresholds then read it literally: a 3.5 counts as clinical framing
    (>= 3) but not as stage 4 (>= 4); a 2.5 is not clinical. The logistic fit sees 3.5.
``down``
    Round x.5 down (conservative: a stage counts only when more than half the raters reach it).
``up``
    Round x.5 up (liberal: half the raters suffice).

``mean`` is the plain mean of the available raters (``half_rule`` does not apply); ``mode`` is the
most frequent score, ties between modes resolved by ``half_rule`` (``down``: the smallest tied
mode, ``up``: the largest, ``keep``: their mean). Model-days with fewer than ``min_raters``
ratings become NaN (missing day; see :func:`~delusion_bayes.baselines.milestones.milestones`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..data.schema import RATER
from ._validate import check_dims, check_option
from .config import CONSENSUS_RULES, HALF_RULES

__all__ = ["consensus", "consensus_np"]


def _apply_half(x: np.ndarray, half_rule: str) -> np.ndarray:
    if half_rule == "keep":
        return x
    frac = x - np.floor(x)
    half = np.isclose(frac, 0.5)
    if half_rule == "down":
        return np.where(half, np.floor(x), x)
    return np.where(half, np.ceil(x), x)


def consensus_np(
    x: np.ndarray,
    axis: int = 0,
    rule: str = "median",
    half_rule: str = "keep",
    min_raters: int = 1,
) -> np.ndarray:
    """NumPy kernel of :func:`consensus`: reduce ``axis`` (raters) of ``x`` (NaN = missing).

    Vectorised over every other axis (e.g. bootstrap replicates x raters x models x days): the
    median is taken from the sorted ratings (NaNs sort last) at the positions given by the number
    of available raters, so no Python loop runs over cells.
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

    Parameters
    ----------
    da : xarray.DataArray or xarray.Dataset
        Ratings with a ``rater`` dim (NaN = missing), e.g. ``ds.recognition`` or
        ``ds.intervention``; any other dims are kept (``model``, ``day``, ``intervention_type``,
        ``resample``, ...). For a Dataset every variable with the ``rater`` dim is reduced and the
        others are dropped.
    rule : {"median", "mean", "mode"}
        Reduction (paper: median).
    half_rule : {"keep", "down", "up"}
        What a median on x.5 (even number of raters) or a tied mode becomes; see the module
        docstring. Default ``keep``: 4 raters at (2, 3, 3, 4) give 3, at (2, 2, 3, 4) give 2.5,
        which is not clinical framing (< 3).
    min_raters : int
        Fewer available ratings than this give NaN.
    dim : str
        The rater dim.

    Returns
    -------
    xarray.DataArray or xarray.Dataset
        Without ``dim``; attrs record the rule.
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
