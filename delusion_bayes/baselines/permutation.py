"""Exact permutation tests on rank sums and the pre-specified group contrasts.

Trajectory paper, "Statistical Analysis": "exact permutation tests on rank-sums (censored
latencies enter as ranks)" at the model level; censored latencies tie (midranks). Why by hand:
``scipy.stats.mannwhitneyu(method="exact")`` ignores ties and ``permutation_test`` enumerates
all splits; here a recursion on doubled midranks (integers), the shift algorithm of Streitberg &
Roehmel (1986) used by R's ``coin``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..data.schema import MODEL
from ._validate import as_float_array, check_option
from .config import ALTERNATIVES, QUANTITIES, QUANTITY_NEEDS, ContrastConfig
from .results import BaselineResult

#: DP tables larger than this many cells switch to Monte Carlo (memory: 8 bytes per cell)
MAX_CELLS = 50_000_000
#: the test's columns in the contrasts table, in order (the summary adds n_x, n_y after alternative)
_TEST_COLUMNS = "statistic expected pvalue alternative n_arrangements exact method".split()


@dataclass
class RankSumResult:
    """Result of :func:`rank_sum_test` (renders itself)."""

    statistic: float
    pvalue: float
    alternative: str
    n_x: int
    n_y: int
    expected: float
    n_arrangements: int
    exact: bool
    method: str

    @property
    def summary(self) -> pd.DataFrame:
        """One-row DataFrame."""
        cols = [*_TEST_COLUMNS[:4], "n_x", "n_y", *_TEST_COLUMNS[4:]]
        return pd.DataFrame([asdict(self)], columns=cols)

    def to_latex(self, **kwargs: Any) -> str:
        """The summary row as LaTeX."""
        return self.summary.to_latex(index=False, float_format="{:.4g}".format, **kwargs)


def rank_sum_distribution(scores2: Sequence[int], m: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact null distribution of the sum of ``m`` of the integer scores ``scores2``.

    ``scores2``: integer scores of the pooled sample (doubled midranks); ``m``: the subset size.
    Returns the possible sums and the number of m-subsets with each sum (float64, adding to
    C(N, m)); ``N(i, s)`` = number of i-subsets of the first j items with sum s.
    """
    s = np.sort(np.asarray(scores2, dtype=np.int64))
    n_tot = s.size
    if not 0 <= m <= n_tot:
        raise ValueError(f"m must be in [0, {n_tot}]; got {m}")
    g = max(int(np.gcd.reduce(s)), 1) if s.size else 1
    base = int(s.min()) if s.size else 0
    w = (s - base) // g  # shifted, reduced scores >= 0
    s_max = int(np.sort(w)[::-1][:m].sum())
    if (m + 1) * (s_max + 1) > MAX_CELLS:
        raise MemoryError(
            f"exact rank-sum table would need {(m + 1) * (s_max + 1):,} cells (> {MAX_CELLS:,})"
        )
    dp = np.zeros((m + 1, s_max + 1))
    dp[0, 0] = 1.0
    cum = np.cumsum(w)  # items ascending: the first j+1 items cannot sum beyond cum[j]
    for j, wj in enumerate(w):
        top = min(j + 1, m)  # subsets of the first j+1 items have at most j+1 elements
        low = max(1, m - (n_tot - 1 - j))  # smaller subsets can no longer reach size m
        hi = min(s_max, int(cum[j])) + 1
        if low > top or wj >= hi:
            continue
        dp[low : top + 1, wj:hi] = dp[low : top + 1, wj:hi] + dp[low - 1 : top, : hi - wj]
    counts = dp[m]
    support = np.arange(s_max + 1) * g + m * base
    keep = counts > 0
    return support[keep], counts[keep]


def _monte_carlo_p(r2: np.ndarray, m: int, extreme, n_mc: int, seed) -> float:
    """``(1 + hits) / (1 + n_mc)`` over ``n_mc`` random permutations of the doubled ranks
    ``r2`` (the first ``m`` are x's), in batches of 2,000; ``extreme(sums)`` marks the hits."""
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_mc:
        b = min(2000, n_mc - done)
        perm = rng.permuted(np.tile(r2, (b, 1)), axis=1)[:, :m].sum(axis=1)
        hits += int(extreme(perm).sum())
        done += b
    return (1 + hits) / (1 + n_mc)


def rank_sum_test(
    x: Any,
    y: Any,
    alternative: str = "two-sided",
    *,
    max_exact: int = 1000,
    n_mc: int = 100_000,
    seed: int | np.random.Generator | None = 0,
    nan_policy: str = "raise",
) -> RankSumResult:
    """Exact permutation (Wilcoxon-Mann-Whitney) test on the rank sum of ``x``, midranks for ties.

    ``x, y`` may hold ``inf`` (censored latencies; they tie). ``alternative``: ``less`` (x tends
    smaller), ``greater`` or ``two-sided`` (``P(|T - E T| >= |t - E T|)``). Above ``max_exact``
    pooled values (or ``MAX_CELLS`` table cells) the p-value is Monte Carlo, ``(1 + #{as
    extreme}) / (1 + n_mc)`` over ``n_mc`` seeded splits, and ``exact=False`` says so.
    ``nan_policy``: NaN values raise or are dropped (``omit``; ``n_x``/``n_y`` show what was used).
    Ties are exact and two-sided tails compared in integer arithmetic; the statistic and p-value
    equal R's ``coin::wilcox_test(..., distribution = "exact")``.
    """
    check_option("alternative", alternative, ALTERNATIVES)
    check_option("nan_policy", nan_policy, ("raise", "omit"))
    xa = as_float_array(x, "x").ravel()
    ya = as_float_array(y, "y").ravel()
    if nan_policy == "raise" and (np.isnan(xa).any() or np.isnan(ya).any()):
        raise ValueError(
            f"x has {int(np.isnan(xa).sum())} and y {int(np.isnan(ya).sum())} NaN values; "
            "drop them or pass nan_policy='omit'"
        )
    xa, ya = xa[~np.isnan(xa)], ya[~np.isnan(ya)]
    m, n = xa.size, ya.size
    if m == 0 or n == 0:
        raise ValueError(f"both samples need at least one value; got n_x={m}, n_y={n}")
    pooled = np.concatenate([xa, ya])
    r2 = np.rint(2 * stats.rankdata(pooled, method="average")).astype(np.int64)
    big_n = m + n
    t2 = int(r2[:m].sum())
    e2 = m * (big_n + 1)  # E[doubled rank sum]
    n_arr = math.comb(big_n, m)
    exact = big_n <= max_exact
    p = np.nan
    method = "exact recursion over the rank-sum distribution (doubled midranks)"

    def extreme(sums: np.ndarray) -> np.ndarray:
        """Rank sums at least as extreme as the observed ``t2`` under ``alternative``."""
        if alternative == "less":
            return sums <= t2
        if alternative == "greater":
            return sums >= t2
        return np.abs(sums - e2) >= abs(t2 - e2)

    if exact:
        try:
            small = min(m, n)
            support, counts = rank_sum_distribution(r2, small)
            if small != m:  # distribution of the complement's sum -> x's sum
                support, counts = int(r2.sum()) - support[::-1], counts[::-1]
            p = counts[extreme(support)].sum() / counts.sum()
        except MemoryError:
            exact = False
    if not exact:
        p = _monte_carlo_p(r2, m, extreme, n_mc, seed)
        method = f"Monte Carlo, {n_mc} random permutations (pooled n={big_n} above exact limit)"
    return RankSumResult(
        statistic=t2 / 2.0,
        pvalue=float(min(1.0, p)),
        alternative=alternative,
        n_x=int(m),
        n_y=int(n),
        expected=e2 / 2.0,
        n_arrangements=int(n_arr),
        exact=bool(exact),
        method=method,
    )


def as_contrast(c: Any) -> ContrastConfig:
    """A ContrastConfig from a ContrastConfig or a mapping (unknown keys are an error)."""
    if isinstance(c, ContrastConfig):
        return c
    if isinstance(c, Mapping) or hasattr(c, "keys"):
        d = dict(c)
        unknown = set(d) - {"name", "by", "a", "b", "alternative", "quantities"}
        if unknown:
            raise ValueError(
                f"contrast {d.get('name', '?')!r} has unknown key(s) {sorted(unknown)}; "
                "expected name, by, a, b, alternative, quantities"
            )
        for key in ("a", "b", "quantities"):
            if d.get(key) is not None:
                d[key] = list(d[key])
        return ContrastConfig(**d)
    raise ValueError(f"a contrast must be a ContrastConfig or a mapping; got {type(c).__name__}")


def contrast_groups(ds: xr.Dataset | xr.DataArray, contrast: Any) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks over the ``model`` dim for groups A and B of a contrast.

    ``contrast.by`` names a coordinate on ``model`` (or is ``"model"``); ``b = None`` means every
    model not in A; values compared as strings (``4.5`` matches generation "4.5"). A ValueError
    names an unknown coordinate, a value matching no model, overlapping or empty groups.
    """
    c = as_contrast(contrast)
    check_option(f"contrast {c.name!r} alternative", c.alternative, ALTERNATIVES)
    if MODEL not in ds.dims:
        raise ValueError(f"contrast {c.name!r}: the data have no {MODEL!r} dim")
    if c.by == MODEL:
        labels = np.asarray(ds[MODEL].values)
    else:
        coord_names = [k for k in ds.coords if ds.coords[k].dims == (MODEL,) and k != MODEL]
        if c.by not in coord_names:
            raise ValueError(
                f"contrast {c.name!r}: by={c.by!r} is not a coordinate on {MODEL!r}; "
                f"available: {[MODEL, *coord_names]}"
            )
        labels = np.asarray(ds[c.by].values)
    lab = np.array([str(v) for v in labels])
    available = sorted(set(lab.tolist()))

    def _mask(values: Iterable[Any], group: str) -> np.ndarray:
        vals = [str(v) for v in values]
        if not vals:
            raise ValueError(f"contrast {c.name!r}: group {group} lists no value")
        bad = [v for v in vals if v not in available]
        if bad:
            raise ValueError(
                f"contrast {c.name!r}: {c.by}={bad} (group {group}) matches no model; "
                f"available values of {c.by!r}: {available}"
            )
        return np.isin(lab, vals)

    mask_a = _mask(c.a, "a")
    mask_b = ~mask_a if c.b is None else _mask(c.b, "b")
    if (mask_a & mask_b).any():
        raise ValueError(
            f"contrast {c.name!r}: groups overlap on models "
            f"{np.asarray(ds[MODEL].values)[mask_a & mask_b].tolist()}"
        )
    if not mask_b.any():
        raise ValueError(f"contrast {c.name!r}: group b is empty (a covers every model)")
    return mask_a, mask_b


@dataclass
class Skipped:
    """An analysis a study cannot support: what it is, why, and what would switch it on."""

    analysis: str
    reason: str
    #: the files (relative to the stage folder) the analysis would have written
    files: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.analysis}: {self.reason}"


def _group_problem(ds: xr.Dataset | xr.DataArray, c: ContrastConfig) -> str | None:
    """Why the study's model metadata cannot form the contrast's groups, or None if it can."""
    if c.by == MODEL:
        labels = np.asarray(ds[MODEL].values)
    else:
        coord_names = [k for k in ds.coords if ds.coords[k].dims == (MODEL,) and k != MODEL]
        if c.by not in coord_names:
            have = f"it has {coord_names}" if coord_names else "it has no model metadata"
            return (
                f"the study has no {c.by!r} coordinate on {MODEL!r} ({have}); add a "
                f"{c.by!r} column to models.csv to run it"
            )
        labels = np.asarray(ds[c.by].values)
    lab = [str(v) for v in labels]
    available = sorted(set(lab))
    for group, values in (("a", c.a), ("b", c.b)):
        if values is None:
            continue
        absent = [str(v) for v in values if str(v) not in available]
        if absent:
            return (
                f"no model has {c.by}={absent} (group {group}); the study's values of "
                f"{c.by!r}: {available}"
            )
    if c.b is None and set(lab) <= {str(v) for v in c.a}:
        return f"group b is empty: every model has {c.by} in {[str(v) for v in c.a]}"
    return None


def applicable_contrasts(
    data: xr.Dataset | xr.DataArray, contrasts: Iterable[Any], quantities: Iterable[str] | None
) -> tuple[list[ContrastConfig], list[Skipped]]:
    """The contrasts (and their quantities) this study can support, and the ones it cannot.

    A contrast is skipped when its ``by`` coordinate is not model metadata of the study (no
    ``models.csv`` column) or when no model carries group A's (or B's) values; a quantity is
    dropped from a contrast when the study does not have it (``quantities``: the names
    available; ``first_level_b`` needs ``level_b`` from ``adjudication.csv``). A contrast left
    with no quantity is skipped. Malformed contrasts (unknown key, bad alternative, overlapping
    groups) still raise: those are configuration errors, not missing data.
    """
    have = None if quantities is None else set(quantities)
    usable: list[ContrastConfig] = []
    skipped: list[Skipped] = []
    for raw in contrasts:
        c = as_contrast(raw)
        check_option(f"contrast {c.name!r} alternative", c.alternative, ALTERNATIVES)
        label = f"contrast {c.name!r}"
        problem = _group_problem(data, c)
        if problem is not None:
            skipped.append(Skipped(label, problem, ("contrasts.csv",)))
            continue
        keep = list(c.quantities) if have is None else [q for q in c.quantities if q in have]
        for q in c.quantities:
            if q not in keep:
                need = QUANTITY_NEEDS.get(q)
                why = (
                    f"needs {need!r} (adjudication.csv), which the study does not have"
                    if need
                    else "not computed for this study"
                )
                skipped.append(Skipped(f"{label}, quantity {q!r}", why))
        if not keep:
            continue
        usable.append(ContrastConfig(**{**asdict(c), "quantities": keep}))
    return usable, skipped


def min_two_sided_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p an exact rank-sum test of ``n_a`` vs ``n_b`` untied values can
    reach: ``2 / C(n_a + n_b, n_a)`` (one arrangement in each tail), at most 1."""
    return min(1.0, 2.0 / math.comb(int(n_a) + int(n_b), int(n_a)))


def permutation_contrasts(
    quantities: xr.Dataset,
    contrasts: Iterable[Any],
    *,
    max_exact: int = 1000,
    n_mc: int = 100_000,
    seed: int = 0,
) -> BaselineResult:
    """Exact rank-sum permutation tests for every pre-specified contrast x quantity.

    ``quantities`` holds per-model milestones (censored values tie) and logistic ``L, k, t50``
    over the ``model`` dim, with the model coords the contrasts use; ``contrasts`` are
    :class:`~delusion_bayes.baselines.config.ContrastConfig` or mappings; ``max_exact, n_mc,
    seed`` go to :func:`rank_sum_test`. One row per contrast and quantity: groups, sizes,
    medians, rank sum of A, its expectation, p-value, alternative, number of arrangements, exact
    flag, method, and ``dropped`` (models whose value is NaN, listed, never silently lost).
    """
    rows = []
    models = np.asarray(quantities[MODEL].values)
    for raw in contrasts:
        c = as_contrast(raw)
        mask_a, mask_b = contrast_groups(quantities, c)
        for q in c.quantities:
            if q not in quantities.data_vars:
                raise ValueError(
                    f"contrast {c.name!r}: quantity {q!r} is not available; available: "
                    f"{[v for v in quantities.data_vars]} (known names: {list(QUANTITIES)})"
                )
            v = np.asarray(quantities[q].transpose(MODEL).values, dtype=float)
            nan = np.isnan(v)
            dropped = models[(mask_a | mask_b) & nan].tolist()
            xa, yb = v[mask_a & ~nan], v[mask_b & ~nan]
            row: dict[str, Any] = {
                "contrast": c.name,
                "quantity": q,
                "by": c.by,
                "a": "|".join(map(str, c.a)),
                "b": "rest" if c.b is None else "|".join(map(str, c.b)),
                "n_a": int(xa.size),
                "n_b": int(yb.size),
                "median_a": float(np.median(xa)) if xa.size else np.nan,
                "median_b": float(np.median(yb)) if yb.size else np.nan,
                "dropped": ";".join(map(str, dropped)),
            }
            if xa.size and yb.size:
                r = rank_sum_test(xa, yb, c.alternative, max_exact=max_exact, n_mc=n_mc, seed=seed)
            else:
                method = "not testable: an empty group after dropping NaN"
                r = RankSumResult(
                    statistic=np.nan,
                    pvalue=np.nan,
                    alternative=c.alternative,
                    n_x=0,
                    n_y=0,
                    expected=np.nan,
                    n_arrangements=0,
                    exact=False,
                    method=method,
                )
            row.update({k: getattr(r, k) for k in _TEST_COLUMNS})
            rows.append(row)
    summary = pd.DataFrame(rows)
    notes = [
        "exact permutation tests on rank sums (midranks for ties; censored latencies tie at the "
        "censoring day); statistic = rank sum of group a",
        "two-sided p = P(|T - E T| >= |t - E T|)",
    ]
    return BaselineResult(
        "contrasts", summary, "Pre-specified group contrasts (exact rank-sum tests)", notes
    )
