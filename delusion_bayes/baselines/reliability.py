"""Inter-rater reliability: Krippendorff's alpha, Cohen's (weighted) kappa, Shrout-Fleiss ICCs.

Trajectory paper, "Evaluation Reliability" and supplement C (Table C1). Why by hand: ``sklearn``'s
kappa would be a heavy dependency for ten lines, and no installed library gives the six
Shrout-Fleiss ICCs with F tests and CIs (formulas as ``psych::ICC``; Shrout & Fleiss 1979,
McGraw & Wong 1996).
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
from ._validate import as_float_array, check_option, check_values_in
from .alpha import alpha_bootstrap, krippendorff_alpha
from .results import BaselineResult


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

    ``a, b``: ratings of the same units (NaN = missing, dropped pairwise). ``weights``: None,
    ``"linear"`` (``|i - j|``), ``"quadratic"`` (``(i - j)^2``) on label positions, or a square
    matrix of disagreement weights in label order. ``labels``: the categories in order (unused
    ones still count in the weights), default the sorted observed values; every value must be
    one. Returns ``1 - sum(w * observed) / sum(w * expected)`` (Cohen 1968; as R
    ``psych::cohen.kappa``, ``sklearn.metrics.cohen_kappa_score``); NaN with a warning when no
    disagreement is expected.
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


def icc(data: Any, ci: float = 0.95) -> pd.DataFrame:
    """The six Shrout-Fleiss intraclass correlations with F tests and confidence intervals.

    ``data``: (unit, rater); units with a missing rating are dropped (listwise, as
    ``psych::ICC``). Returns a DataFrame indexed ``ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k`` with
    ``icc, F, df1, df2, pval, ci_low, ci_high`` (``ci`` level) and ``attrs`` ``n_units``,
    ``n_raters``, ``n_dropped``. Mean squares of the two-way ANOVA (Shrout & Fleiss 1979,
    Table 1); F tests and CIs as Shrout & Fleiss (1979) and McGraw & Wong (1996) (ICC(2,1) with
    Satterthwaite df), the same as ``psych::ICC``. ICC(2,k) is the reliability of the k-rater
    consensus (paper: .948 for recognition).
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

    def single(f):  # CI bound of a one-rater ICC from an F bound
        return (f - 1) / (f + k - 1)

    def k_raters(r):  # Spearman-Brown: a one-rater bound -> the k-rater mean's
        return r * k / (1 + r * (k - 1))

    rows = {
        "ICC1": (icc1, f1, df1, df2_1, p1, single(f1l), single(f1u)),
        "ICC2": (icc2, f3, df1, df2_3, p3, l2, u2),
        "ICC3": (icc3, f3, df1, df2_3, p3, single(f3l), single(f3u)),
        "ICC1k": (icc1k, f1, df1, df2_1, p1, 1 - 1 / f1l, 1 - 1 / f1u),
        "ICC2k": (icc2k, f3, df1, df2_3, p3, k_raters(l2), k_raters(u2)),
        "ICC3k": (icc3k, f3, df1, df2_3, p3, 1 - 1 / f3l, 1 - 1 / f3u),
    }
    out = pd.DataFrame.from_dict(
        rows, orient="index", columns=["icc", "F", "df1", "df2", "pval", "ci_low", "ci_high"]
    )
    out.index.name = "type"
    out = out.astype(float)
    out.attrs.update(n_units=int(n), n_raters=int(k), n_dropped=int((~complete).sum()))
    return out


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
    """Table C1: reliability of every rated variable of a trajectory study (units: model-days).

    Per variable (each intervention type on its own): Krippendorff's alpha at ``level`` on the
    variable's scale, with a unit-bootstrap CI when ``n_boot`` > 0 (``ci``, ``seed``);
    quadratic-weighted kappa over rater pairs (mean, min, max); percent exact agreement; ICC(2,1)
    and ICC(2,k) on complete model-days; the number of units. ``recoded``: a second coder's
    ``level_a``/``level_b`` (model x day, NaN outside the re-coded subsample) adds rows of kappa
    and agreement with the adjudicated codes (paper: 95.3 %, kappa .90 for Level B). Returns a
    BaselineResult indexed by ``variable``.
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
            try:
                table = icc(mat.T)
                icc2 = {"icc2_1": table.loc["ICC2", "icc"], "icc2_k": table.loc["ICC2k", "icc"]}
            except ValueError:
                icc2 = {"icc2_1": np.nan, "icc2_k": np.nan}
        kappas_arr = np.asarray(kappas, dtype=float)
        fin = kappas_arr[np.isfinite(kappas_arr)]
        row.update(
            kappa_q_mean=float(fin.mean()) if fin.size else np.nan,
            kappa_q_min=float(fin.min()) if fin.size else np.nan,
            kappa_q_max=float(fin.max()) if fin.size else np.nan,
            pct_agreement=percent_agreement(mat),
            **icc2,
        )
        row["n_units"] = int((np.sum(~np.isnan(mat), axis=0) >= 2).sum())
        row["n_raters"] = int(mat.shape[0])
        rows.append(row)
    if recoded is not None:
        for name, r in adjudication_agreement(ds, recoded).summary.iterrows():
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

    ``ds`` has ``level_a``/``level_b`` (model x day, 0/1); ``recoded`` the second coder's on the
    same coords, NaN outside the subsample. Per variable: ``kappa`` (Cohen), ``pct_agreement``,
    ``n_units``, ``n_stricter`` (second coder 0, adjudicator 1: the paper reports every
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
