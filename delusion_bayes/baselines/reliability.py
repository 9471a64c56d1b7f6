"""Inter-rater reliability: Krippendorff's alpha, Cohen's (weighted) kappa, Shrout-Fleiss ICCs.

Trajectory paper, "Evaluation Reliability" and supplement section C (Table C1): Krippendorff's
alpha, pairwise quadratic-weighted kappa and two-way random-effects ICCs for every rated variable.

Why by hand: the ``krippendorff`` package computes alpha but has no bootstrap CI and no per-unit
pattern decomposition (which makes 1,000 bootstrap replicates cost one matrix product);
``sklearn``'s kappa would be a heavy dependency for ten lines; no installed library gives the six
Shrout-Fleiss ICCs with F tests and CIs (pingouin is not a dependency; formulas follow
``psych::ICC`` and pingouin's ``intraclass_corr``).

References
----------
1. Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
   Communication, University of Pennsylvania. https://repository.upenn.edu/asc_papers/43
2. Cohen, J. (1968). Weighted kappa. Psychological Bulletin, 70(4), 213-220.
3. Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
   reliability. Psychological Bulletin, 86(2), 420-428.
4. McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
   coefficients. Psychological Methods, 1(1), 30-46 (CI of ICC(2,1)).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..data.schema import ADJUDICATED_VARIABLES, INTERVENTION_TYPE, RATED_VARIABLES, RATER
from ..intervals import eti
from ._validate import as_float_array, check_option, check_values_in
from .config import ALPHA_LEVELS
from .results import BaselineResult

__all__ = [
    "adjudication_agreement",
    "alpha_bootstrap",
    "cohen_kappa",
    "icc",
    "krippendorff_alpha",
    "percent_agreement",
    "reliability_table",
    "weighted_kappa",
]


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------
#: domains up to this size are counted by one equality pass per value (fast for rating scales);
#: larger ones by a single ``searchsorted`` + ``bincount``
_EQ_PASSES_MAX = 16


def _value_counts(data: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """(values, units) counts of each domain value per unit; NaN and off-domain values ignored.

    Layout (V, U) keeps each value's counts contiguous, so sums over values and the coincidence
    product run over long rows (10 raters x 100,000 units: a few ms).
    """
    if domain.size <= _EQ_PASSES_MAX:
        return np.stack([np.count_nonzero(data == v, axis=0) for v in domain]).astype(float)
    n_units = data.shape[1]
    ok = ~np.isnan(data)
    idx = np.searchsorted(domain, np.where(ok, data, domain[0]))
    idx = np.minimum(idx, domain.size - 1)
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
        present = np.flatnonzero(np.bincount((vals - lo).astype(np.int64)))
        return present + lo
    return np.unique(vals)


def _delta2(domain: np.ndarray, level: str, n_c: np.ndarray) -> np.ndarray:
    """Squared distance ``delta^2`` between domain values; ``n_c`` (..., V) for ``ordinal``.

    Krippendorff (2011), section E. For ``ordinal`` the distance depends on the pairable value
    frequencies ``n_c`` (which may carry a leading bootstrap dim).
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
    if domain is None:
        dom = _observed_values(arr)
    else:
        dom = np.unique(np.asarray(domain, dtype=float))
    if dom.size == 0:
        raise ValueError("data (rater x unit) has no non-missing value")
    counts = _value_counts(arr, dom)
    if domain is not None and counts.sum() != np.count_nonzero(~np.isnan(arr)):
        check_values_in(arr, dom.tolist(), "data (rater x unit)")  # raises, naming the values
    return counts, dom


def _pairable(counts: np.ndarray) -> np.ndarray:
    """(units, V) counts of the pairable units only (>= 2 values; Krippendorff 2011, C.1)."""
    return counts[:, counts.sum(axis=0) >= 2].T


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


def krippendorff_alpha(
    data: Any, level: str = "interval", domain: Sequence[float] | None = None
) -> float:
    """Krippendorff's alpha for any number of raters with missing values.

    Parameters
    ----------
    data : array_like, shape (rater, unit)
        Ratings, ``NaN`` = missing. Units with fewer than two ratings are not pairable and are
        ignored, as in Krippendorff (2011).
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement (difference function).
    domain : sequence of float, optional
        The value domain (e.g. ``(1, 2, 3, 4)`` for the recognition stage). Every value of
        ``data`` must lie in it. Default: the observed values. For the ordinal metric unused
        categories carry zero frequency, so the domain changes only which values are legal.

    Returns
    -------
    float
        alpha; ``NaN`` (with a RuntimeWarning) when there is no variation at all (expected
        disagreement 0).

    Notes
    -----
    Coincidence-matrix algorithm of Krippendorff (2011), sections C-E:
    ``alpha = 1 - (n - 1) * sum_ck o_ck d2_ck / sum_ck n_c n_k d2_ck``. Value counts are built
    in (value, unit) layout (one equality pass per value for scales of up to 16 values), so 10
    raters x 100,000 units take ~0.02 s, about 6x faster than the ``krippendorff`` package
    (``experiments/bench_baselines.py``). Interval data with more than 16 distinct values and no
    ``domain`` (continuous scores) use the equivalent moment form, without V x V matrices.

    Examples
    --------
    Krippendorff (2011), section C: 4 observers x 12 units with missing values.

    >>> import numpy as np
    >>> nan = np.nan
    >>> d = [[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    ...      [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    ...      [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    ...      [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]
    >>> round(krippendorff_alpha(d, "nominal"), 3)
    0.743
    """
    if level == "interval" and domain is None:
        arr = as_float_array(data, "data (rater x unit)", ndim=2)
        if _observed_values(arr).size > _EQ_PASSES_MAX:
            value = interval_alpha_direct(arr)  # many distinct values: no V x V matrices
            if not np.isfinite(value):
                warnings.warn(_UNDEFINED, RuntimeWarning, stacklevel=2)
            return value
    counts, dom = _prepare_alpha(data, level, domain)
    o, n_pairable = _coincidences(counts)
    if n_pairable == 0:
        raise ValueError("data (rater x unit) has no unit rated by at least two raters")
    value = float(_alpha_from_coincidences(o, dom, level))
    if not np.isfinite(value):
        warnings.warn(_UNDEFINED, RuntimeWarning, stacklevel=2)
    return value


_UNDEFINED = (
    "Krippendorff's alpha is undefined: all pairable values are identical "
    "(expected disagreement is 0); returning NaN"
)


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
        raise ValueError("data (rater x unit) has no unit rated by at least two raters")
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
    """Krippendorff's alpha with a percentile bootstrap CI over units.

    Units (pairable ones) are resampled with replacement. Units with the same value pattern have
    the same coincidence contribution, so a bootstrap replicate is a multinomial draw of pattern
    counts and alpha of all replicates is one matrix product (exactly the same distribution as
    resampling units one by one, at the cost of ``n_patterns`` instead of ``n_units``).

    Parameters
    ----------
    data, level, domain
        As :func:`krippendorff_alpha`.
    n_boot : int
        Replicates.
    ci : float
        Central percentile interval mass.
    seed : int or Generator
        Seed (same seed -> same CI).

    Returns
    -------
    dict
        ``alpha``, ``ci_low``, ``ci_high``, ``n_units`` (pairable), ``n_boot``, ``replicates``.

    Notes
    -----
    This is the plain nonparametric unit bootstrap (percentile interval), not the Hayes &
    Krippendorff (2007) KALPHA resampling of pairable values.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    counts, dom = _prepare_alpha(data, level, domain)
    o, n_units = _coincidences(counts)
    if n_units == 0:
        raise ValueError("data (rater x unit) has no unit rated by at least two raters")
    alpha = float(_alpha_from_coincidences(o, dom, level))
    counts = _pairable(counts).astype(np.int64)
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
    return {
        "alpha": alpha,
        "ci_low": float(lo),
        "ci_high": float(hi),
        "n_units": int(n_units),
        "n_boot": int(n_boot),
        "replicates": reps,
    }


# --------------------------------------------------------------------------------------------
# kappa and agreement
# --------------------------------------------------------------------------------------------
def _pair(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x = as_float_array(a, "a").ravel()
    y = as_float_array(b, "b").ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same length; got {x.size} and {y.size}")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def weighted_kappa(
    a: Any,
    b: Any,
    weights: str | np.ndarray | None = None,
    labels: Sequence[float] | None = None,
) -> float:
    """Cohen's kappa for two raters, unweighted or with linear / quadratic disagreement weights.

    Parameters
    ----------
    a, b : array_like
        Ratings of the same units by two raters (``NaN`` = missing; units missing in either are
        dropped pairwise).
    weights : {None, "linear", "quadratic"} or array_like (n_labels, n_labels)
        Disagreement weights on label positions: ``|i - j|`` or ``(i - j)^2``, or any square
        matrix of disagreement weights in label order (Cohen 1968 used 0/1/3/6).
    labels : sequence, optional
        The categories in order (unused categories still count in the weights). Default: the
        sorted union of observed values. Every value must be a label.

    Returns
    -------
    float
        ``kappa = 1 - sum(w * observed) / sum(w * expected)``; NaN (with a warning) when the
        expected disagreement is 0.

    References
    ----------
    Cohen (1968); Fleiss, Cohen & Everitt (1969). Same definition as R ``psych::cohen.kappa`` and
    ``sklearn.metrics.cohen_kappa_score``.
    """
    wmat = None
    if weights is not None and not isinstance(weights, str):
        wmat = np.asarray(weights, dtype=float)
    else:
        check_option("weights", weights, (None, "linear", "quadratic"))
    x, y = _pair(a, b)
    if x.size == 0:
        raise ValueError("a and b have no unit rated by both")
    if labels is None:
        lab = np.unique(np.concatenate([x, y]))
    else:
        lab = np.asarray(labels, dtype=float)
        check_values_in(x, lab.tolist(), "a")
        check_values_in(y, lab.tolist(), "b")
    n_lab = lab.size
    sorter = np.argsort(lab)
    ix = sorter[np.searchsorted(lab, x, sorter=sorter)]  # positions in the given label order
    iy = sorter[np.searchsorted(lab, y, sorter=sorter)]
    obs = np.zeros((n_lab, n_lab))
    np.add.at(obs, (ix, iy), 1.0)
    obs /= obs.sum()
    exp = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    i = np.arange(n_lab)
    if wmat is not None:
        if wmat.shape != (n_lab, n_lab):
            raise ValueError(
                f"weights must be a ({n_lab}, {n_lab}) matrix for labels {lab.tolist()}; "
                f"got shape {wmat.shape}"
            )
        w = wmat
    elif weights is None:
        w = (i[:, None] != i[None, :]).astype(float)
    elif weights == "linear":
        w = np.abs(i[:, None] - i[None, :]).astype(float)
    else:
        w = ((i[:, None] - i[None, :]) ** 2).astype(float)
    denom = (w * exp).sum()
    if denom == 0:
        warnings.warn("kappa undefined: no expected disagreement; NaN", RuntimeWarning, 2)
        return float("nan")
    return float(1.0 - (w * obs).sum() / denom)


def cohen_kappa(a: Any, b: Any, labels: Sequence[float] | None = None) -> float:
    """Unweighted Cohen's kappa (:func:`weighted_kappa` with ``weights=None``)."""
    return weighted_kappa(a, b, weights=None, labels=labels)


def percent_agreement(data: Any) -> float:
    """Exact agreement in percent, averaged over rater pairs (rater x unit, NaN missing).

    For each pair of raters, the share of units both rated on which they gave the same value;
    the mean over pairs (pairs with no common unit are skipped).
    """
    arr = as_float_array(data, "data (rater x unit)", ndim=2)
    shares = []
    for i, j in itertools.combinations(range(arr.shape[0]), 2):
        ok = ~(np.isnan(arr[i]) | np.isnan(arr[j]))
        if ok.any():
            shares.append(np.mean(arr[i, ok] == arr[j, ok]))
    if not shares:
        raise ValueError("no pair of raters shares a rated unit")
    return float(100.0 * np.mean(shares))


# --------------------------------------------------------------------------------------------
# ICC
# --------------------------------------------------------------------------------------------
ICC_INDEX = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
ICC_DESCRIPTION = {
    "ICC1": "single rater, one-way random (ICC(1,1))",
    "ICC2": "single rater, two-way random, absolute agreement (ICC(2,1))",
    "ICC3": "single rater, two-way mixed, consistency (ICC(3,1))",
    "ICC1k": "mean of k raters, one-way random (ICC(1,k))",
    "ICC2k": "mean of k raters, two-way random, absolute agreement (ICC(2,k))",
    "ICC3k": "mean of k raters, two-way mixed, consistency (ICC(3,k))",
}


def icc(data: Any, ci: float = 0.95) -> pd.DataFrame:
    """The six Shrout-Fleiss intraclass correlations with F tests and confidence intervals.

    Parameters
    ----------
    data : array_like, shape (unit, rater)
        Ratings (``NaN`` missing). Units with any missing rating are dropped (listwise, as
        ``psych::ICC``); the number dropped is in ``result.attrs["n_dropped"]``.
    ci : float
        Confidence level of the intervals.

    Returns
    -------
    pandas.DataFrame
        Indexed ``ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k`` with columns
        ``icc, F, df1, df2, pval, ci_low, ci_high``. ``attrs``: ``n_units``, ``n_raters``,
        ``n_dropped``.

    Notes
    -----
    Mean squares of the two-way ANOVA (targets ``n`` x judges ``k``): ``BMS`` between targets,
    ``WMS`` within targets, ``JMS`` judges, ``EMS`` residual (Shrout & Fleiss 1979, Table 1).
    ``ICC(1,1) = (BMS - WMS) / (BMS + (k-1) WMS)``,
    ``ICC(2,1) = (BMS - EMS) / (BMS + (k-1) EMS + k (JMS - EMS) / n)``,
    ``ICC(3,1) = (BMS - EMS) / (BMS + (k-1) EMS)``, and the k-rater forms. F tests and CIs as
    Shrout & Fleiss (1979) and McGraw & Wong (1996) (CI of ICC(2,1) with Satterthwaite df), the
    same as ``psych::ICC``. ICC(2,k) is the reliability of the k-rater consensus (paper: .948 for
    recognition).
    """
    arr = as_float_array(data, "data (unit x rater)", ndim=2)
    complete = ~np.isnan(arr).any(axis=1)
    x = arr[complete]
    n, k = x.shape
    if k < 2 or n < 2:
        raise ValueError(
            f"icc needs at least 2 complete units and 2 raters; got {n} complete units "
            f"(of {arr.shape[0]}) and {k} raters"
        )
    grand = x.mean()
    ss_total = ((x - grand) ** 2).sum()
    ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
    ss_err = ss_total - ss_rows - ss_cols
    bms = ss_rows / (n - 1)
    wms = (ss_total - ss_rows) / (n * (k - 1))
    jms = ss_cols / (k - 1)
    ems = ss_err / ((n - 1) * (k - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (bms - wms) / (bms + (k - 1) * wms)
        icc2 = (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
        icc3 = (bms - ems) / (bms + (k - 1) * ems)
        icc1k = (bms - wms) / bms
        icc2k = (bms - ems) / (bms + (jms - ems) / n)
        icc3k = (bms - ems) / bms
        f1 = bms / wms
        f3 = bms / ems
        fj = jms / ems
    df1, df2_1, df2_3 = n - 1, n * (k - 1), (n - 1) * (k - 1)
    p1 = stats.f.sf(f1, df1, df2_1)
    p3 = stats.f.sf(f3, df1, df2_3)
    a = 1 - ci
    with np.errstate(divide="ignore", invalid="ignore"):
        f1l = f1 / stats.f.ppf(1 - a / 2, df1, df2_1)
        f1u = f1 * stats.f.ppf(1 - a / 2, df2_1, df1)
        f3l = f3 / stats.f.ppf(1 - a / 2, df1, df2_3)
        f3u = f3 * stats.f.ppf(1 - a / 2, df2_3, df1)
        # McGraw & Wong (1996) / Shrout & Fleiss (1979) eq. for ICC(2,1) with Satterthwaite df
        vn = (k - 1) * (n - 1) * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = (n - 1) * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u = stats.f.ppf(1 - a / 2, n - 1, v)
        f2l = stats.f.ppf(1 - a / 2, v, n - 1)
        l2 = n * (bms - f2u * ems) / (f2u * (k * jms + (k * n - k - n) * ems) + n * bms)
        u2 = n * (f2l * bms - ems) / (k * jms + (k * n - k - n) * ems + n * f2l * bms)
    rows = {
        "ICC1": (icc1, f1, df1, df2_1, p1, (f1l - 1) / (f1l + k - 1), (f1u - 1) / (f1u + k - 1)),
        "ICC2": (icc2, f3, df1, df2_3, p3, l2, u2),
        "ICC3": (icc3, f3, df1, df2_3, p3, (f3l - 1) / (f3l + k - 1), (f3u - 1) / (f3u + k - 1)),
        "ICC1k": (icc1k, f1, df1, df2_1, p1, 1 - 1 / f1l, 1 - 1 / f1u),
        "ICC2k": (
            icc2k,
            f3,
            df1,
            df2_3,
            p3,
            l2 * k / (1 + l2 * (k - 1)),
            u2 * k / (1 + u2 * (k - 1)),
        ),
        "ICC3k": (icc3k, f3, df1, df2_3, p3, 1 - 1 / f3l, 1 - 1 / f3u),
    }
    out = pd.DataFrame.from_dict(
        rows, orient="index", columns=["icc", "F", "df1", "df2", "pval", "ci_low", "ci_high"]
    )
    out.index.name = "type"
    out = out.astype(float)
    out.attrs.update(n_units=int(n), n_raters=int(k), n_dropped=int((~complete).sum()))
    return out


# --------------------------------------------------------------------------------------------
# study level: Table C1
# --------------------------------------------------------------------------------------------
def _rated_items(ds: xr.Dataset) -> list[tuple[str, xr.DataArray, tuple[int, ...]]]:
    """(label, DataArray rater x unit-dims, scale values) for every rated variable in ``ds``."""
    items = []
    for name, spec in RATED_VARIABLES.items():
        if name not in ds.data_vars:
            continue
        da = ds[name]
        if RATER not in da.dims:
            raise ValueError(f"variable {name!r} has no {RATER!r} dim; dims are {list(da.dims)}")
        if INTERVENTION_TYPE in da.dims:
            for t in da[INTERVENTION_TYPE].values:
                items.append((f"{name}:{t}", da.sel({INTERVENTION_TYPE: t}), spec.scale.values))
        else:
            items.append((name, da, spec.scale.values))
    if not items:
        raise ValueError(
            f"the study has none of the rated variables {list(RATED_VARIABLES)}; "
            f"it has {list(ds.data_vars)}"
        )
    return items


def reliability_table(
    ds: xr.Dataset,
    *,
    level: str = "interval",
    n_boot: int = 0,
    ci: float = 0.95,
    seed: int = 0,
    recoded: xr.Dataset | None = None,
) -> BaselineResult:
    """Table C1: reliability of every rated variable of a trajectory study.

    Units are model-days. For each variable (recognition, confidence, each intervention type, the
    disengagement flag): Krippendorff's alpha (``level``; value domain = the variable's scale),
    optional unit-bootstrap CI of alpha, pairwise quadratic-weighted kappa over rater pairs (mean,
    min, max; labels = the scale), percent exact agreement (mean over pairs), ICC(2,1) and
    ICC(2,k) (complete model-days only), and the number of units.

    Parameters
    ----------
    ds : xarray.Dataset
        Trajectory study (``rater x model x day`` rated variables).
    level : str
        Level of measurement for alpha.
    n_boot : int
        Bootstrap replicates for the CI of alpha (0 = no CI).
    ci, seed
        CI mass and seed of that bootstrap.
    recoded : xarray.Dataset, optional
        A second coder's re-coding of the adjudicated variables (``level_a``, ``level_b`` on
        ``model x day``, NaN outside the re-coded subsample); adds rows with kappa and percent
        agreement against ``ds``'s adjudicated codes (paper: 95.3 %, kappa .90 for Level B).

    Returns
    -------
    BaselineResult
        ``summary`` indexed by ``variable``.
    """
    rows = []
    for label, da, scale in _rated_items(ds):
        mat = da.transpose(RATER, ...).values.reshape(da.sizes[RATER], -1)
        row: dict[str, Any] = {"variable": label}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if n_boot:
                boot = alpha_bootstrap(mat, level, scale, n_boot=n_boot, ci=ci, seed=seed)
                row.update(alpha=boot["alpha"], alpha_ci_low=boot["ci_low"])
                row.update(alpha_ci_high=boot["ci_high"])
            else:
                row["alpha"] = krippendorff_alpha(mat, level, scale)
            kappas = [
                weighted_kappa(mat[i], mat[j], "quadratic", scale)
                for i, j in itertools.combinations(range(mat.shape[0]), 2)
                if (~(np.isnan(mat[i]) | np.isnan(mat[j]))).any()
            ]
        kappas_arr = np.asarray(kappas, dtype=float)
        fin = kappas_arr[np.isfinite(kappas_arr)]
        row.update(
            kappa_q_mean=float(fin.mean()) if fin.size else np.nan,
            kappa_q_min=float(fin.min()) if fin.size else np.nan,
            kappa_q_max=float(fin.max()) if fin.size else np.nan,
            pct_agreement=percent_agreement(mat),
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                table = icc(mat.T)
            row.update(icc2_1=table.loc["ICC2", "icc"], icc2_k=table.loc["ICC2k", "icc"])
        except ValueError:
            row.update(icc2_1=np.nan, icc2_k=np.nan)
        row["n_units"] = int((np.sum(~np.isnan(mat), axis=0) >= 2).sum())
        row["n_raters"] = int(mat.shape[0])
        rows.append(row)
    if recoded is not None:
        agree = adjudication_agreement(ds, recoded)
        for name, r in agree.summary.iterrows():
            rows.append(
                {
                    "variable": f"{name} (re-coded subsample)",
                    "kappa_q_mean": r["kappa"],
                    "pct_agreement": r["pct_agreement"],
                    "n_units": r["n_units"],
                    "n_raters": 2,
                }
            )
    summary = pd.DataFrame(rows).set_index("variable")
    notes = [
        f"units = model-days; alpha level = {level}, domain = the variable's scale",
        "kappa: quadratic weights over all rater pairs (mean, min, max); ICC on complete units",
    ]
    if n_boot:
        notes.append(f"alpha CI: {ci:.0%} percentile unit bootstrap, {n_boot} replicates")
    return BaselineResult(
        "tableC1_reliability", summary, "Table C1: inter-rater reliability", notes
    )


def adjudication_agreement(ds: xr.Dataset, recoded: xr.Dataset) -> BaselineResult:
    """Agreement of a second coder's re-coding with the adjudicated Level A / Level B codes.

    Parameters
    ----------
    ds : xarray.Dataset
        Study with ``level_a``/``level_b`` (model x day, 0/1).
    recoded : xarray.Dataset
        Second coder's ``level_a``/``level_b`` on the same coords, NaN outside the subsample.

    Returns
    -------
    BaselineResult
        Per variable: ``kappa`` (Cohen), ``pct_agreement``, ``n_units``, ``n_stricter`` (units
        where the second coder coded 0 and the adjudicator 1; the paper reports every
        disagreement being the second coder coding more strictly).
    """
    rows = []
    for name in ADJUDICATED_VARIABLES:
        if name not in recoded.data_vars:
            continue
        if name not in ds.data_vars:
            raise ValueError(f"recoded has {name!r} but the study does not")
        a, b = xr.align(ds[name], recoded[name], join="inner")
        x, y = _pair(a.values, b.values)
        if x.size == 0:
            raise ValueError(f"recoded {name!r} shares no coded model-day with the study")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            kap = cohen_kappa(x, y, labels=(0, 1))
        rows.append(
            {
                "variable": name,
                "kappa": kap,
                "pct_agreement": 100.0 * float(np.mean(x == y)),
                "n_units": int(x.size),
                "n_stricter": int(np.sum((x == 1) & (y == 0))),
            }
        )
    if not rows:
        raise ValueError(f"recoded has none of {list(ADJUDICATED_VARIABLES)}")
    return BaselineResult(
        "adjudication_agreement",
        pd.DataFrame(rows).set_index("variable"),
        "Adjudication agreement on the re-coded subsample",
    )
