"""Krippendorff's alpha (any measurement level, missing values allowed) and its bootstrap CI.

Trajectory paper, Table C1. Computed from per-unit coincidence patterns, so 1,000 bootstrap
replicates cost one matrix product (the ``krippendorff`` package has no bootstrap CI).
Reference: Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School
for Communication, University of Pennsylvania. https://repository.upenn.edu/asc_papers/43
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..intervals import eti
from ._validate import as_float_array, check_option, check_values_in
from .config import ALPHA_LEVELS

#: domains up to this size are counted by one equality pass per value (fast for rating scales);
#: larger ones by a single ``searchsorted`` + ``bincount``
_EQ_PASSES_MAX = 16


def _value_counts(data: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """(values, units) counts of each domain value per unit; NaN and off-domain values ignored.

    The (V, U) layout keeps each value's counts contiguous (fast sums and coincidence products).
    """
    if domain.size <= _EQ_PASSES_MAX:
        return np.stack([np.count_nonzero(data == v, axis=0) for v in domain]).astype(float)
    n_units = data.shape[1]
    ok = ~np.isnan(data)
    idx = np.minimum(np.searchsorted(domain, np.where(ok, data, domain[0])), domain.size - 1)
    ok &= domain[idx] == data
    flat = (idx * n_units + np.arange(n_units)[None, :])[ok]
    counts = np.bincount(flat, minlength=n_units * domain.size)
    return counts.reshape(domain.size, n_units).astype(float)


def _observed_values(arr: np.ndarray) -> np.ndarray:
    """Sorted distinct non-NaN values (a bincount for small-integer codes, else ``np.unique``)."""
    vals = arr[~np.isnan(arr)]
    if vals.size == 0:
        return vals
    lo, hi = vals.min(), vals.max()
    if hi - lo <= 4096 and np.array_equal(vals, np.rint(vals)):
        return np.flatnonzero(np.bincount((vals - lo).astype(np.int64))) + lo
    return np.unique(vals)


def _delta2(domain: np.ndarray, level: str, n_c: np.ndarray) -> np.ndarray:
    """Squared distance ``delta^2`` between domain values (Krippendorff 2011, section E).

    For ``ordinal`` it depends on the pairable value frequencies ``n_c`` (..., V), which may carry
    a leading bootstrap dim.
    """
    c, k = domain[:, None], domain[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        s = c + k
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s != 0, ((c - k) / np.where(s == 0, 1, s)) ** 2, 0.0)
    # ordinal: (sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2
    cum = np.cumsum(n_c, axis=-1)
    i = np.arange(domain.size)
    lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
    before_lo = np.where(lo > 0, cum[..., np.maximum(lo - 1, 0)], 0.0)
    between = cum[..., hi] - before_lo
    return (between - (n_c[..., lo] + n_c[..., hi]) / 2.0) ** 2


def _alpha_from_coincidences(o: np.ndarray, domain: np.ndarray, level: str) -> np.ndarray:
    """alpha = 1 - (n - 1) sum(o * d2) / sum(n_c n_k d2), vectorised over leading dims of ``o``."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    d2 = _delta2(domain, level, n_c)
    d_obs = (o * d2).sum(axis=(-2, -1))
    d_exp = (n_c[..., :, None] * n_c[..., None, :] * d2).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (n - 1.0) * d_obs / d_exp


def _prepare_alpha(
    data: Any, level: str, domain: Sequence[float] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Value counts (V, U) of every unit (unpairable ones included) and the value domain."""
    check_option("level", level, ALPHA_LEVELS)
    arr = as_float_array(data, "data (rater x unit)", ndim=2)
    dom = _observed_values(arr) if domain is None else np.unique(np.asarray(domain, dtype=float))
    if dom.size == 0:
        raise ValueError("data (rater x unit) has no non-missing value")
    counts = _value_counts(arr, dom)
    if domain is not None and counts.sum() != np.count_nonzero(~np.isnan(arr)):
        check_values_in(arr, dom.tolist(), "data (rater x unit)")  # raises, naming the values
    return counts, dom


def _unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices (units, V, V): (c c^T - diag c) / (m_u - 1)."""
    m = counts.sum(axis=1).astype(float)
    outer = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(counts.shape[1])
    return outer / (m - 1.0)[:, None, None]


def _coincidences(counts: np.ndarray) -> tuple[np.ndarray, int]:
    """Coincidence matrix (V, V) from (V, U) counts, and the number of pairable units.

    ``o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)`` over units with ``m_u >= 2``.
    """
    m = counts.sum(axis=0)
    pair = m >= 2
    w = np.where(pair, 1.0 / np.where(pair, m - 1.0, 1.0), 0.0)
    cw = counts * w
    return cw @ counts.T - np.diag(cw.sum(axis=1)), int(pair.sum())


def _alpha_value(counts: np.ndarray, dom: np.ndarray, level: str) -> tuple[float, int]:
    """alpha of (V, U) value counts and the number of pairable units (none is an error)."""
    o, n_pairable = _coincidences(counts)
    if n_pairable == 0:
        raise ValueError(_NO_PAIRS)
    return float(_alpha_from_coincidences(o, dom, level)), n_pairable


def krippendorff_alpha(
    data: Any, level: str = "interval", domain: Sequence[float] | None = None
) -> float:
    """Krippendorff's alpha for any number of raters with missing values.

    ``data``: (rater, unit), NaN = missing; units with fewer than two ratings are not pairable.
    ``domain``: the legal values (e.g. ``(1, 2, 3, 4)``), default the observed ones. NaN with a
    RuntimeWarning when there is no variation. Krippendorff (2011), sections C-E:
    ``alpha = 1 - (n - 1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck``; interval data with more
    than 16 distinct values and no ``domain`` use the equivalent moment form.
    """
    value = None
    if level == "interval" and domain is None:
        arr = as_float_array(data, "data (rater x unit)", ndim=2)
        if _observed_values(arr).size > _EQ_PASSES_MAX:
            value = interval_alpha_direct(arr)
    if value is None:
        value, _ = _alpha_value(*_prepare_alpha(data, level, domain), level)
    if not np.isfinite(value):
        warnings.warn(
            "Krippendorff's alpha is undefined: all pairable values are identical "
            "(expected disagreement is 0); returning NaN",
            RuntimeWarning,
            stacklevel=2,
        )
    return value


_NO_PAIRS = "data (rater x unit) has no unit rated by at least two raters"


def interval_alpha_direct(arr: np.ndarray) -> float:
    """Interval alpha from sums of squares, O(raters x units) for any number of distinct values.

    With ``delta^2 = (c - k)^2`` the coincidence sums reduce to moments: a unit with ``m_u``
    values contributes ``sum_{i != j} (x_i - x_j)^2 / (m_u - 1) = 2 (m_u S2_u - S1_u^2) /
    (m_u - 1)`` to ``sum o_ck delta^2``, and ``sum n_c n_k delta^2 = 2 (n S2 - S1^2)`` over all
    ``n`` pairable values; values are centred first for precision.
    """
    ok = ~np.isnan(arr)
    m = ok.sum(axis=0)
    pair = m >= 2
    if not pair.any():
        raise ValueError(_NO_PAIRS)
    x = arr[:, pair]
    okp = ok[:, pair]
    mp = m[pair].astype(float)
    x = np.where(okp, x - x[okp].mean(), 0.0)
    s1, s2 = x.sum(axis=0), (x * x).sum(axis=0)
    n = mp.sum()
    d_obs = (2.0 * (mp * s2 - s1 * s1) / (mp - 1.0)).sum()
    d_exp = 2.0 * (n * s2.sum() - s1.sum() ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(1.0 - (n - 1.0) * d_obs / d_exp)


def alpha_bootstrap(
    data: Any,
    level: str = "interval",
    domain: Sequence[float] | None = None,
    *,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> dict[str, Any]:
    """Krippendorff's alpha with a percentile bootstrap CI over (pairable) units.

    ``data, level, domain`` as :func:`krippendorff_alpha`; same ``seed``, same CI. Units with the
    same value pattern contribute the same coincidences, so a replicate is a multinomial draw of
    pattern counts (the same distribution as resampling units one by one); the plain unit
    bootstrap, not Hayes & Krippendorff's (2007) KALPHA. Returns ``alpha``, ``ci_low``,
    ``ci_high``, ``n_units`` (pairable), ``n_boot``, ``replicates``.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    counts, dom = _prepare_alpha(data, level, domain)
    alpha, n_units = _alpha_value(counts, dom, level)
    counts = counts[:, counts.sum(axis=0) >= 2].T.astype(np.int64)  # (pairable units, V)
    # group units by their value-count pattern
    base = int(counts.max()) + 1
    if base ** counts.shape[1] < 2**62:
        keys = counts @ (base ** np.arange(counts.shape[1], dtype=np.int64))
        _, first, freq = np.unique(keys, return_index=True, return_counts=True)
        patterns = counts[first]
    else:
        patterns, freq = np.unique(counts, axis=0, return_counts=True)
    o_pat = _unit_coincidences(patterns).reshape(patterns.shape[0], -1)
    rng = np.random.default_rng(seed)
    p = freq / n_units
    reps = np.empty(n_boot)
    chunk = max(1, int(2e7 // max(1, patterns.shape[0])))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        w = rng.multinomial(n_units, p, size=stop - start).astype(float)
        o_b = (w @ o_pat).reshape(stop - start, dom.size, dom.size)
        reps[start:stop] = _alpha_from_coincidences(o_b, dom, level)
    lo, hi = eti(reps, ci)
    return dict(
        alpha=alpha,
        ci_low=float(lo),
        ci_high=float(hi),
        n_units=int(n_units),
        n_boot=int(n_boot),
        replicates=reps,
    )
