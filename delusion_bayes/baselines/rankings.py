"""Rankings with uncertainty (issue 51, item 3): each item's rank distribution over posterior draws
or bootstrap replicates, its median rank, a 95% rank interval, P(best), P(worst), and the groups
of items that cannot be told apart; :func:`plot_ranks` draws them.

Ranks are taken within each draw (rank 1 = best in the declared direction; ties get their
average rank, so two items tied for first both get 1.5). P(best) counts a draw where ``k``
items tie for the best as ``1/k`` to each (the P(best) of a family then add to 1); likewise
P(worst). The rank interval is equal-tailed on the rank distribution: its ends are the
``(1-prob)/2`` and ``(1+prob)/2`` quantiles by the inverted CDF (no interpolation), so it holds
at least ``prob`` of the draws and both ends are ranks that occur.

Groups (a documented, simple algorithm, in the spirit of the "cannot be told apart" groups of
Nemenyi-style rank plots): sort items by median rank (ties by mean rank); the first ungrouped
item leads a new group, and every ungrouped item whose rank interval overlaps the leader's
(``rank_lower <= leader's rank_upper``) joins it; repeat. Group 1 is the items that cannot be told
apart from the top item (``tied_with_best``). Groups are not transitive equivalence classes:
two members of group 1 need not overlap each other.

References
----------
1. Goldstein, H. & Spiegelhalter, D. J. (1996). League tables and their limitations. JRSS A 159.
2. Hall, P. & Miller, H. (2009). Using the bootstrap to quantify the authority of an empirical
   ranking. Ann. Stat. 37, 3929-3959.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..intervals import SAMPLE_DIMS
from ..plotting import ACCENT, GREYS, style
from ._validate import as_float_array, check_option

#: the columns of :func:`rankings`, in order
RANK_COLUMNS = (
    "item estimate rank_mean rank_median rank_lower rank_upper p_best p_worst group tied_with_best"
).split()


def _draw_matrix(draws: Any, names: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """``draws`` as a (sample, item) array (sample dims stacked) and the item names."""
    if isinstance(draws, xr.DataArray):
        sdims = [d for d in draws.dims if d in SAMPLE_DIMS]
        other = [d for d in draws.dims if d not in SAMPLE_DIMS]
        if not sdims or len(other) != 1:
            raise ValueError(
                f"draws needs sample dim(s) from {SAMPLE_DIMS} and exactly one item dim; "
                f"got dims {draws.dims}"
            )
        stacked = draws.stack(__sample__=sdims).transpose("__sample__", other[0])
        if names is None:
            names = [str(v) for v in stacked[other[0]].values]
        draws = stacked.values
    arr = as_float_array(draws, "draws", ndim=2)
    names = [str(i) for i in range(arr.shape[1])] if names is None else [str(n) for n in names]
    if len(names) != arr.shape[1]:
        raise ValueError(f"{len(names)} names for {arr.shape[1]} items (draws' second axis)")
    return arr, names


def rank_draws(draws: Any, higher_is: str = "better") -> np.ndarray:
    """Ranks within each draw of a (sample, item) array: 1 = best, ties get the average rank.

    ``higher_is``: ``"better"`` (the highest value ranks 1) or ``"worse"`` (the lowest ranks 1).
    """
    check_option("higher_is", higher_is, ("better", "worse"))
    arr = as_float_array(draws, "draws", ndim=2)
    sign = -1.0 if higher_is == "better" else 1.0
    return stats.rankdata(sign * arr, method="average", axis=1)


def _share_at(ranks: np.ndarray, extreme: np.ndarray) -> np.ndarray:
    """Per item, the share of draws where it holds the extreme value (ties split evenly)."""
    hit = ranks == extreme[:, None]
    return (hit / hit.sum(axis=1, keepdims=True)).mean(axis=0)


def _groups(order: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Leader grouping of the module docstring; ``order`` = items best first."""
    group = np.zeros(order.size, dtype=int)
    g = 0
    for lead in order:
        if group[lead]:
            continue
        g += 1
        group[lead] = g
        for j in order:
            if not group[j] and lower[j] <= upper[lead]:
                group[j] = g
    return group


def rank_distribution(
    draws: Any, names: Sequence[str] | None = None, higher_is: str = "better"
) -> pd.DataFrame:
    """Tidy rank distribution: one row per item and rank that occurs, ``item, rank, prob``."""
    arr, names = _draw_matrix(draws, names)
    ranks = rank_draws(arr[~np.isnan(arr).any(axis=1)], higher_is)
    rows = []
    for j, name in enumerate(names):
        vals, counts = np.unique(ranks[:, j], return_counts=True)
        rows += [(name, v, c / ranks.shape[0]) for v, c in zip(vals, counts, strict=True)]
    return pd.DataFrame(rows, columns=["item", "rank", "prob"])


def rankings(
    draws: Any,
    names: Sequence[str] | None = None,
    higher_is: str = "better",
    prob: float = 0.95,
) -> pd.DataFrame:
    """Per item: median rank, equal-tailed ``prob`` rank interval, P(best), P(worst), group.

    Parameters
    ----------
    draws : array (sample, item) or DataArray
        Posterior draws (dims ``chain``, ``draw`` and one item dim) or bootstrap replicates (dim
        ``resample``) of the quantity ranked. Draws where any item is NaN are dropped (a rank
        needs every item); the number used is ``df.attrs["n_draws"]``.
    names : item names (default: the item coordinate, or 0..n-1).
    higher_is : ``"better"`` or ``"worse"``: the direction, declared (rank 1 = best).
    prob : rank-interval probability.

    Returns
    -------
    DataFrame with :data:`RANK_COLUMNS`, sorted best first (median rank, then mean rank);
    ``estimate`` is the item's median over the draws. See the module docstring for ties, the
    interval and the groups.
    """
    if not 0 < prob < 1:
        raise ValueError(f"prob must be in (0, 1); got {prob!r}")
    arr, names = _draw_matrix(draws, names)
    keep = ~np.isnan(arr).any(axis=1)
    if not keep.any():
        raise ValueError("every draw has a NaN item; nothing to rank")
    arr = arr[keep]
    ranks = rank_draws(arr, higher_is)
    lo, med, hi = np.quantile(
        ranks, [(1 - prob) / 2, 0.5, (1 + prob) / 2], axis=0, method="inverted_cdf"
    )
    mean = ranks.mean(axis=0)
    order = np.lexsort((mean, med))
    df = pd.DataFrame(
        {
            "item": names,
            "estimate": np.median(arr, axis=0),
            "rank_mean": mean,
            "rank_median": med,
            "rank_lower": lo,
            "rank_upper": hi,
            "p_best": _share_at(ranks, ranks.min(axis=1)),
            "p_worst": _share_at(ranks, ranks.max(axis=1)),
            "group": _groups(order, lo, hi),
        }
    )
    df["tied_with_best"] = df["group"] == 1
    df = df.iloc[order].reset_index(drop=True)
    df.attrs.update(n_draws=int(keep.sum()), higher_is=higher_is, prob=prob)
    return df


def plot_ranks(df: pd.DataFrame, ax: Any = None, title: str | None = None) -> Any:
    """Ranks at a glance: items sorted best first (top), median rank with the rank interval as a
    bar, group 1 (cannot be told apart from the best) in the accent colour, P(best) at the right.

    ``df``: the output of :func:`rankings`. Returns the Figure.
    """
    import matplotlib.pyplot as plt

    need = {"item", "rank_median", "rank_lower", "rank_upper", "p_best", "group"}
    if need - set(df.columns):
        raise ValueError(f"df lacks {sorted(need - set(df.columns))}; pass rankings()'s output")
    d = df.sort_values(["rank_median", "rank_lower"]).reset_index(drop=True)
    n = len(d)
    with style():
        if ax is None:
            _, ax = plt.subplots(figsize=(5.0, 0.8 + 0.28 * n))
        y = np.arange(n)
        col = np.where(d["group"] == 1, ACCENT, GREYS[0])
        ax.hlines(y, d["rank_lower"], d["rank_upper"], colors=col, lw=2.2)
        ax.scatter(d["rank_median"], y, c=col, zorder=3, s=22)
        ax.set_yticks(y, d["item"])
        ax.set_ylim(n - 0.5, -0.5)
        top = max(float(d["rank_upper"].max()), n)
        ax.set_xlim(0.5, top + 0.5 + 0.12 * top)
        for yi, pb in zip(y, d["p_best"], strict=True):
            ax.text(top + 0.6, yi, f"{pb:.2f}", va="center", fontsize=7, color=GREYS[1])
        ax.text(top + 0.6, -0.9, "P(best)", fontsize=7, color=GREYS[1], va="bottom")
        prob = df.attrs.get("prob", 0.95)
        ax.set_xlabel(f"rank (1 = best); median and {prob:.0%} interval")
        ax.grid(axis="y", visible=False)
        if title:
            ax.set_title(title)
    return ax.figure


def quantity_rankings(
    draws: dict[str, tuple[np.ndarray, Sequence[str], str]], prob: float = 0.95
) -> pd.DataFrame | None:
    """:func:`rankings` of several quantities in one table: ``draws`` maps a quantity to
    ``(samples x items, item names, higher_is)`` (bootstrap replicates or posterior draws of
    each chatbot's value, e.g. a category's prevalence); rows are :data:`RANK_COLUMNS` plus
    ``quantity``, ``higher_is`` and ``n_draws``. A quantity with no draw where every item is
    defined is left out; None when none is left."""
    frames = []
    for q, (arr, names, higher_is) in draws.items():
        try:
            df = rankings(np.asarray(arr, float), list(names), higher_is=higher_is, prob=prob)
        except ValueError:  # every draw has an undefined item: nothing to rank
            continue
        frames.append(df.assign(quantity=q, higher_is=higher_is, n_draws=df.attrs["n_draws"]))
    return pd.concat(frames, ignore_index=True) if frames else None
