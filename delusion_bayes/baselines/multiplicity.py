"""Multiplicity control across a family of tests (issue 51, item 1): Holm and Benjamini-Hochberg
adjusted p-values, per family in a tidy table, and max-T simultaneous bootstrap intervals.

What each controls, for a family of ``m`` tests:

- **Holm** (1979): the family-wise error rate, P(at least one true null rejected) <= alpha, under
  any dependence between the tests.
- **Benjamini-Hochberg** (1995): the false-discovery rate, E[false rejections / rejections] <= q,
  for independent or positively dependent (PRDS) tests.
- **max-T** (Westfall & Young 1993; Romano & Wolf 2005): intervals that cover *all* the family's
  parameters at once with probability ``ci``; an interval excluding 0 is a rejection with FWER
  control (single-step), using the bootstrap's estimate of the dependence between the estimates.

NaN p-values (a test that could not run) stay NaN and do not count in the family size ``m``,
as R's ``p.adjust`` does. Why Holm is hand-written: ``scipy.stats.false_discovery_control`` has
only BH and BY, and raises on NaN; BH uses it on the non-NaN subset.

References
----------
1. Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Stat. 6.
2. Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate. JRSS B 57.
3. Westfall, P. H. & Young, S. S. (1993). Resampling-Based Multiple Testing. Wiley, section 2.6.
4. Romano, J. P. & Wolf, M. (2005). Exact and approximate stepdown methods for multiple
   hypothesis testing. JASA 100, 94-108.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ._validate import as_float_array

#: bootstrap replicate dim (arviz convention: ``chain``/``draw`` only for MCMC)
RESAMPLE = "resample"


def _finite_p(p: Any) -> tuple[np.ndarray, np.ndarray]:
    """``p`` as a 1-D float array and the mask of its non-NaN entries (checked in [0, 1])."""
    arr = as_float_array(p, "p").ravel()
    ok = ~np.isnan(arr)
    bad = arr[ok][(arr[ok] < 0) | (arr[ok] > 1)]
    if bad.size:
        raise ValueError(f"p-values must lie in [0, 1] (NaN for missing); got {bad[:5].tolist()}")
    return arr, ok


def holm(p: Any) -> np.ndarray:
    """Holm's step-down adjusted p-values (FWER), equal to R's ``p.adjust(p, "holm")``.

    ``p_(i)`` sorted ascending: ``adj_(i) = min(1, max_{j <= i} (m - j + 1) p_(j))``. NaN p-values
    stay NaN and are not counted in ``m``. Returns an array of ``p``'s shape (flattened to 1-D).
    """
    arr, ok = _finite_p(p)
    out = np.full(arr.shape, np.nan)
    q = arr[ok]
    m = q.size
    if m:
        order = np.argsort(q, kind="stable")
        adj = np.maximum.accumulate((m - np.arange(m)) * q[order])
        res = np.empty(m)
        res[order] = np.minimum(adj, 1.0)
        out[ok] = res
    return out


def benjamini_hochberg(p: Any) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (FDR), equal to R's ``p.adjust(p, "BH")``.

    ``scipy.stats.false_discovery_control(method="bh")`` on the non-NaN p-values; NaN stays NaN
    and is not counted in ``m``.
    """
    arr, ok = _finite_p(p)
    out = np.full(arr.shape, np.nan)
    if ok.any():
        out[ok] = stats.false_discovery_control(arr[ok], method="bh")
    return out


def adjust_family(
    df: pd.DataFrame, p_col: str = "pvalue", family_col: str | Sequence[str] | None = None
) -> pd.DataFrame:
    """A copy of ``df`` with ``p_holm``, ``p_bh`` and ``family_size`` columns, per family.

    ``family_col``: the column(s) naming each row's family (default: the whole table is one
    family). ``family_size`` is the number of non-NaN p-values of the row's family, the ``m``
    both adjustments used: state it under the table.
    """
    if p_col not in df.columns:
        raise ValueError(f"p_col={p_col!r} is not a column; columns are {list(df.columns)}")
    out = df.copy()
    cols = [family_col] if isinstance(family_col, str) else list(family_col or [])
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"family_col {missing} not in the columns {list(df.columns)}")
    out["p_holm"] = np.nan
    out["p_bh"] = np.nan
    out["family_size"] = 0
    by = cols[0] if len(cols) == 1 else cols
    groups = out.groupby(by, sort=False, dropna=False).groups if cols else {None: out.index}
    for idx in groups.values():
        p = out.loc[idx, p_col].to_numpy(dtype=float)
        out.loc[idx, "p_holm"] = holm(p)
        out.loc[idx, "p_bh"] = benjamini_hochberg(p)
        out.loc[idx, "family_size"] = int((~np.isnan(p)).sum())
    return out


def _boot_matrix(boot: Any, names: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """``boot`` as a (resample, item) array and the item names."""
    if isinstance(boot, xr.DataArray):
        if RESAMPLE not in boot.dims or boot.ndim != 2:
            raise ValueError(
                f"boot must be 2-D with a {RESAMPLE!r} dim and one item dim; got dims {boot.dims}"
            )
        item = next(d for d in boot.dims if d != RESAMPLE)
        boot = boot.transpose(RESAMPLE, item)
        if names is None:
            names = [str(v) for v in boot[item].values]
    arr = as_float_array(boot, "boot", ndim=2)
    names = [str(i) for i in range(arr.shape[1])] if names is None else [str(n) for n in names]
    if len(names) != arr.shape[1]:
        raise ValueError(f"{len(names)} names for {arr.shape[1]} items (boot's second axis)")
    return arr, names


def maxt_intervals(
    boot: Any, estimate: Any, ci: float = 0.95, names: Sequence[str] | None = None
) -> pd.DataFrame:
    """Simultaneous ``ci`` intervals for a family of estimates by the bootstrap max-T method.

    With ``se_j`` the bootstrap SD of item ``j`` and ``T_bj = |boot_bj - estimate_j| / se_j``, the
    critical value ``c`` is the ``ci`` quantile of ``max_j T_bj`` over the replicates ``b``; the
    intervals ``estimate_j -/+ c se_j`` then cover every item's parameter at once with probability
    about ``ci`` (Westfall & Young 1993, section 2.6; Romano & Wolf 2005, single step), where the
    pointwise ``-/+ 1.96 se_j`` cover each one. ``p_maxt`` is the single-step max-T adjusted
    p-value of ``H0: parameter_j = 0``, the share of replicates with ``max_j T_bj >= |t_j|``
    (``t_j = estimate_j / se_j``): reject where ``p_maxt < 1 - ci``, i.e. the interval excludes 0.

    Parameters
    ----------
    boot : array (resample, item) or DataArray with a ``resample`` dim
        Bootstrap replicates of the family's estimates, all from the same resamples (their joint
        distribution carries the dependence). NaN replicates of an item are skipped for it.
    estimate : array (item,)
        The full-sample estimates.
    ci : float
        Simultaneous coverage.

    Returns
    -------
    DataFrame with ``item, estimate, se, lower, upper, p_maxt, crit`` (``crit`` is ``c``, equal
    in every row; items with a zero or undefined SE get NaN and do not enter the maximum).
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1); got {ci!r}")
    arr, names = _boot_matrix(boot, names)
    est = as_float_array(estimate, "estimate").ravel()
    if est.size != arr.shape[1]:
        raise ValueError(f"estimate has {est.size} values for {arr.shape[1]} items in boot")
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.nanstd(arr, axis=0, ddof=1)
        use = np.isfinite(se) & (se > 0) & np.isfinite(est)
        t_boot = np.abs(arr[:, use] - est[use]) / se[use]
    crit = np.nan
    p_maxt = np.full(est.size, np.nan)
    if use.any():
        t_boot = np.where(np.isnan(t_boot), -np.inf, t_boot)
        max_t = t_boot.max(axis=1)
        max_t = max_t[np.isfinite(max_t)]
        crit = float(np.quantile(max_t, ci))
        t_obs = np.abs(est[use]) / se[use]
        p_maxt[use] = (max_t[None, :] >= t_obs[:, None]).mean(axis=1)
    half = np.where(use, crit * se, np.nan)
    return pd.DataFrame(
        {
            "item": names,
            "estimate": est,
            "se": np.where(use, se, np.nan),
            "lower": est - half,
            "upper": est + half,
            "p_maxt": p_maxt,
            "crit": crit,
        }
    )
