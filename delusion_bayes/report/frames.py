"""Find columns in the stages' CSVs and reshape estimates to one long form.

Each stage names its columns in its own way (``t50_ci_low`` or ``ci_low`` beside a ``quantity``
column; ArviZ's ``t50[Claude Haiku 4.5]`` row labels with ``eti95_lb``...). The report joins
baselines and posteriors on ``(key, quantity)``, so this module turns every such table into the
long form ``key..., quantity, estimate, low, high`` without changing a single number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import pandas as pd

#: column names that hold the quantity in a long table
QUANTITY_COLS = ("quantity", "parameter", "param", "milestone", "variable", "var_name", "statistic")
#: point estimates, in order of preference (the posterior median before its mean)
ESTIMATE_COLS = ("estimate", "value", "median", "est", "point", "mean", "observed", "consensus")
LOW_PAT = re.compile(
    r"(^|_)(ci_?low|ci_?lower|lower|low|lo|lb|q0?2\.?5|q05|hdi_?low|eti_?low)$|(lb|_lo)$"
)
HIGH_PAT = re.compile(
    r"(^|_)(ci_?high|ci_?upper|upper|high|hi|ub|q97\.?5|q95|hdi_?high|eti_?high)$|(ub|_hi)$"
)
_LABEL = re.compile(r"^(?P<var>[^\[\]]+)\[(?P<coord>.*)\]$")


def norm(name: object) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(name).strip().lower()).strip("_")


def find_col(df: pd.DataFrame, *candidates: str) -> str | None:
    """The first column of ``df`` whose normalised name equals a normalised candidate."""
    cols = {norm(c): c for c in df.columns}
    for cand in candidates:
        if norm(cand) in cols:
            return cols[norm(cand)]
    return None


def key_column(df: pd.DataFrame) -> str | None:
    """The per-model key column (``model``; else the first text column)."""
    col = find_col(df, "model", "model_name", "name")
    if col is not None:
        return col
    for c in df.columns:
        if df[c].dtype == object or pd.api.types.is_string_dtype(df[c]):
            return c
    return None


def split_labels(df: pd.DataFrame, key: str = "model") -> pd.DataFrame:
    """ArviZ-style summaries (``t50[Claude Haiku 4.5]`` labels) -> ``quantity`` + ``key`` columns.

    Returns ``df`` unchanged when it has no such label column.
    """
    for c in df.columns:
        values = df[c].astype(str)
        m = values.str.match(_LABEL)
        if len(values) and m.all():
            parts = values.str.extract(_LABEL)
            out = df.drop(columns=[c]).copy()
            out.insert(0, "quantity", parts["var"].str.strip())
            out.insert(0, key, parts["coord"].str.strip().str.strip("'\""))
            return out
    return df


def _ci_cols(df: pd.DataFrame, base: str | None) -> tuple[str | None, str | None]:
    """Lower/upper bound columns for ``base`` (a wide table) or of a long table (base None)."""
    low = high = None
    for c in df.columns:
        n = norm(c)
        if base is not None:
            b = norm(base)
            if not n.startswith(b + "_"):
                continue
            n = n[len(b) + 1 :]
            if n in ("sd", "se", "mcse"):
                continue
        if low is None and LOW_PAT.search(n):
            low = c
        elif high is None and HIGH_PAT.search(n):
            high = c
    return low, high


def is_bound(name: str) -> bool:
    n = norm(name)
    return bool(LOW_PAT.search(n) or HIGH_PAT.search(n))


def long_estimates(
    df: pd.DataFrame,
    key: str | None = None,
    quantities: Iterable[str] | None = None,
    extra: Sequence[str] = (),
) -> pd.DataFrame:
    """``df`` (wide or long) as columns ``key, quantity, estimate, low, high``.

    Parameters
    ----------
    df : a stage table. Long tables have a quantity column (``quantity``/``parameter``/...) and
        an estimate column (``estimate``/``median``/``mean``/...); wide tables have one column per
        quantity with optional ``<q>_ci_low``/``<q>_ci_high`` (or ``_lower``/``_upper``...) beside.
    key : the per-row key column (default: ``model``).
    quantities : keep only these quantities (normalised match); default all numeric ones.
    extra : further per-row columns to carry along (e.g. ``p_censored``): in a long table the
        column of that name, in a wide one ``<q>_<extra>`` or else the plain column ``extra``.

    Returns
    -------
    DataFrame with columns ``key, quantity, estimate, low, high, *extra`` (NaN where no bound or
    extra value exists), values copied unchanged.
    """
    df = split_labels(df, key or "model")
    key = key or key_column(df)
    if key is None or key not in df.columns:
        raise ValueError(f"no key column (e.g. 'model') among {list(df.columns)}")
    wanted = None if quantities is None else {norm(q): q for q in quantities}
    qcol = find_col(df, *QUANTITY_COLS)
    rows = []
    if qcol is not None and qcol != key:
        est = find_col(df, *ESTIMATE_COLS)
        if est is None:
            raise ValueError(f"long table without an estimate column among {list(df.columns)}")
        low, high = _ci_cols(df.drop(columns=[est]), None)
        ecols = {e: find_col(df, e) for e in extra}
        for _, r in df.iterrows():
            q = str(r[qcol])
            if wanted is not None and norm(q) not in wanted:
                continue
            rows.append(
                {
                    "key": r[key],
                    "quantity": wanted[norm(q)] if wanted else q,
                    "estimate": r[est],
                    "low": r[low] if low else float("nan"),
                    "high": r[high] if high else float("nan"),
                    **{e: r[c] if c else float("nan") for e, c in ecols.items()},
                }
            )
    else:
        df = _bare_estimates(df, wanted or {})
        for c in df.columns:
            if c == key or is_bound(c) or not pd.api.types.is_numeric_dtype(df[c]):
                continue
            if any(
                norm(c).startswith(norm(b) + "_") for b in df.columns if b != c and not is_bound(b)
            ):
                continue  # e.g. t50_sd beside t50
            if wanted is not None and norm(c) not in wanted:
                continue
            low, high = _ci_cols(df, c)
            ecols = {e: find_col(df, f"{c}_{e}", e) for e in extra}
            for _, r in df.iterrows():
                rows.append(
                    {
                        "key": r[key],
                        "quantity": wanted[norm(c)] if wanted else c,
                        "estimate": r[c],
                        "low": r[low] if low else float("nan"),
                        "high": r[high] if high else float("nan"),
                        **{e: r[x] if x else float("nan") for e, x in ecols.items()},
                    }
                )
    out = pd.DataFrame(rows, columns=["key", "quantity", "estimate", "low", "high", *extra])
    return out.rename(columns={"key": key})


def _bare_estimates(df: pd.DataFrame, wanted: dict[str, str]) -> pd.DataFrame:
    """A wide table with ``<q>_median`` (or ``_med``/``_estimate``/``_mean``) but no ``<q>`` column
    gets that column renamed to ``<q>`` (values untouched), so ``t50_median`` reads as ``t50``."""
    cols = {norm(c) for c in df.columns}
    rename = {}
    for nq in wanted:
        if nq in cols:
            continue
        for suffix in ("median", "med", "estimate", "mean"):
            c = find_col(df, f"{nq}_{suffix}")
            if c is not None:
                rename[c] = wanted[nq]
                break
    return df.rename(columns=rename) if rename else df


def ordered_quantities(found: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """``found`` quantities, the ``preferred`` ones first in their order, the rest after."""
    first = [q for q in preferred if q in found]
    return first + [q for q in found if q not in first]
