"""Scoring a coverage study: read the replicates, coverage and interval width per method and
quantity (closed at parameter bounds), error rates of the contrasts, the table and the plot
(the study itself: :mod:`delusion_bayes.sweep.coverage`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..plotting import save_figure

log = logging.getLogger(__name__)

REPLICATE_DIR = "replicates"
LEVELS: tuple[float, ...] = (0.9, 0.95)
#: quantities whose intervals are scored
QUANTITIES: tuple[str, ...] = ("t50", "L", "k", "first_clinical", "first_stable")
LOGISTIC: tuple[str, ...] = ("L", "k", "t50")
LATENCIES: tuple[str, ...] = ("first_clinical", "first_stable")
BASELINE = "baselines"
#: parameter-space bounds of a quantity (the least-squares L is bounded to [1, 4]; the Bayesian
#: L = 1 + exp(l) is not, but its prior keeps it near the scale top)
BOUNDS: dict[str, tuple[float, float]] = {"L": (1.0, 4.0)}
#: an interval end this close to a bound is closed at the bound when scoring coverage
BOUND_TOL = 0.05
#: columns of a replicate file
REPLICATE_COLUMNS: tuple[str, ...] = (
    "preset",
    "seed",
    "method",
    "kind",
    "quantity",
    "item",
    "regime",
    "truth",
    "estimate",
    "low_90",
    "high_90",
    "low_95",
    "high_95",
    "alternative",
    "stat",
    "reject",
    "truth_diff",
    "seconds",
    "note",
)


def level_tag(level: float) -> str:
    return f"{round(level * 100):d}"


def load_replicates(rep_dir: str | Path) -> pd.DataFrame:
    """All replicate files of a directory, concatenated (ValueError when there is none)."""
    files = sorted(Path(rep_dir).glob("*.csv"))
    if not files:
        raise ValueError(
            f"{str(rep_dir)!r} holds no replicate file (*.csv); run the coverage study first "
            "(python -m delusion_bayes.sweep.coverage -m experiment=coverage)"
        )
    # keep_default_na=False: the preset "null" must stay a string, not become NaN
    read = {"keep_default_na": False, "na_values": ["", "nan", "NaN"]}
    return pd.concat([pd.read_csv(f, **read) for f in files], ignore_index=True)


def close_at_bounds(
    quantity: str, low: np.ndarray, high: np.ndarray, tol: float = BOUND_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """Set an interval end within ``tol`` (a tenth of the rating resolution) of a bound of
    :data:`BOUNDS` to the bound. Why: an open parameter space never reaches its bound: ``true_L
    = 4`` is the supremum of the onset models' ``L = 1 + 3 sigmoid(l)``, so a 95% interval
    (3.68, 3.994) would "miss" it by 0.006."""
    if quantity not in BOUNDS:
        return low, high
    lower, upper = BOUNDS[quantity]
    low = np.where(low <= lower + tol, np.minimum(low, lower), low)
    high = np.where(high >= upper - tol, np.maximum(high, upper), high)
    return low, high


def coverage_metrics(reps: pd.DataFrame, n_days: int = 30) -> pd.DataFrame:
    """Coverage, width, bias and RMSE per preset x method x quantity x ``subset``: ``all`` or
    ``turning`` (true t50 <= ``n_days``: a never-turner's t50 would dominate widths and RMSE).
    ``n`` counts model-replicates, ``defined`` the fraction with a finite interval (a flat
    least-squares fit has none); coverage and width are over those. Coverage uses
    :func:`close_at_bounds`, widths the intervals as reported."""
    iv = reps[reps["kind"] == "interval"].copy()
    if iv.empty:
        return pd.DataFrame()
    t50 = iv[iv["quantity"] == "t50"].set_index(["preset", "seed", "method", "item"])["truth"]
    key = pd.MultiIndex.from_frame(iv[["preset", "seed", "method", "item"]])
    iv["turning"] = t50.reindex(key).to_numpy() <= n_days
    rows = []
    for subset, frame in (("all", iv), ("turning", iv[iv["turning"]])):
        for (preset, method, q), g in frame.groupby(["preset", "method", "quantity"], sort=False):
            row: dict[str, Any] = {
                "preset": preset,
                "method": method,
                "quantity": q,
                "subset": subset,
                "n": len(g),
            }
            for lv in LEVELS:
                tag = level_tag(lv)
                lo, hi = g[f"low_{tag}"].to_numpy(float), g[f"high_{tag}"].to_numpy(float)
                width = hi - lo
                lo, hi = close_at_bounds(q, lo, hi)
                ok = np.isfinite(lo) & np.isfinite(hi)
                tr = g["truth"].to_numpy(float)
                cov = (lo[ok] <= tr[ok]) & (tr[ok] <= hi[ok])
                row[f"coverage_{tag}"] = float(cov.mean()) if ok.any() else np.nan
                row[f"width_{tag}"] = float(np.mean(width[ok])) if ok.any() else np.nan
                row[f"defined_{tag}"] = float(ok.mean())
            err = (g["estimate"] - g["truth"]).to_numpy(float)
            err = err[np.isfinite(err)]
            row["bias"] = float(err.mean()) if err.size else np.nan
            row["rmse"] = float(np.sqrt(np.mean(err**2))) if err.size else np.nan
            row["n_replicates"] = g["seed"].nunique()
            rows.append(row)
    return pd.DataFrame(rows)


def contrast_metrics(reps: pd.DataFrame, tol: float = 1e-9) -> pd.DataFrame:
    """Rejection rates per preset x method x contrast x quantity; ``what`` is ``type-I error``
    where the true group difference is 0 (every ``null`` contrast) and ``power`` elsewhere.

    The posterior contrast is about *these* models' difference of group means, non-zero by
    chance under ``null`` (``truth_diff``), so its ``null`` rejection rate is a type-I error
    against the permutation test's population null, not a miscalibration.
    """
    c = reps[reps["kind"] == "contrast"].copy()
    if c.empty:
        return pd.DataFrame()
    c["reject"] = c["reject"].astype(float)
    rows = []
    by = ["preset", "method", "item", "quantity"]
    for (preset, method, item, q), g in c.groupby(by, sort=False):
        rej, diff = g["reject"], g["truth_diff"]
        null_true = preset == "null" or bool(np.all(np.abs(diff.to_numpy(float)) <= tol))
        n = int(rej.notna().sum())
        rate = float(rej.mean())
        row = {
            "preset": preset,
            "method": method,
            "contrast": item,
            "quantity": q,
            "what": "type-I error" if null_true else "power",
            "n": n,
            "rejection_rate": rate,
            "se": float(np.sqrt(rate * (1 - rate) / n)) if n else np.nan,
            "mean_stat": float(g["stat"].mean()),
            "truth_diff": float(diff.mean()),
            "mean_abs_truth_diff": float(diff.abs().mean()),
        }
        # intervals (the population contrast's): coverage of the true population difference
        for lv in LEVELS:
            lo, hi = (f"{e}_{level_tag(lv)}" for e in ("low", "high"))
            row[f"coverage_{level_tag(lv)}"] = np.nan
            if {lo, hi, "truth"} <= set(g.columns):
                ok = g[[lo, hi, "truth"]].notna().all(axis=1)
                t = g.loc[ok, "truth"]
                if ok.any():
                    cov = (g.loc[ok, lo] <= t) & (t <= g.loc[ok, hi])
                    row[f"coverage_{level_tag(lv)}"] = float(cov.mean())
        rows.append(row)
    return pd.DataFrame(rows)


def coverage_table(cov: pd.DataFrame, level: float = 0.95, subset: str = "all") -> pd.DataFrame:
    """Methods side by side: coverage and mean width of the ``level`` intervals per quantity."""
    tag = level_tag(level)
    sub = cov[cov["subset"] == subset]
    values = [f"coverage_{tag}", f"width_{tag}"]
    wide = sub.pivot_table(index=["preset", "quantity"], columns="method", values=values)
    wide.columns = [f"{m} {v.split('_')[0]} {tag}%" for v, m in wide.columns]
    methods = list(dict.fromkeys(sub["method"]))
    order = [f"{m} {w} {tag}%" for m in methods for w in ("coverage", "width")]
    return wide[[c for c in order if c in wide.columns]].reset_index()


def plot_coverage(cov: pd.DataFrame, errors: pd.DataFrame, subset: str = "all"):
    """Coverage of 90/95% intervals and widths per method and quantity; rejection rates."""
    import matplotlib.pyplot as plt

    sub = cov[cov["subset"] == subset]
    presets = list(dict.fromkeys(sub["preset"]))
    methods = list(dict.fromkeys(sub["method"]))
    nrow = len(presets) + 1
    fig, axes = plt.subplots(nrow, 2, figsize=(11, 3.0 * nrow), squeeze=False)
    markers = {0.9: "o", 0.95: "s"}
    for r, preset in enumerate(presets):
        g = sub[sub["preset"] == preset]
        qs = list(dict.fromkeys(g["quantity"]))
        for j, m in enumerate(methods):
            gm = g[g["method"] == m].set_index("quantity").reindex(qs)
            x = np.arange(len(qs)) + (j - (len(methods) - 1) / 2) * 0.22
            for lv in LEVELS:
                tag = level_tag(lv)
                axes[r, 0].scatter(
                    x,
                    gm[f"coverage_{tag}"],
                    marker=markers[lv],
                    color=f"C{j}",
                    label=f"{m} {tag}%" if r == 0 else None,
                    s=24,
                )
            axes[r, 1].bar(x, gm["width_95"], width=0.2, color=f"C{j}", label=m if r == 0 else None)
        for lv in LEVELS:
            axes[r, 0].axhline(lv, color="k", lw=0.6, ls="--")
        for ax in axes[r]:
            ax.set_xticks(range(len(qs)), qs, fontsize=8)
        axes[r, 0].set_ylim(-0.03, 1.03)
        title = f"{preset}: interval coverage (dashed = nominal 90/95%)"
        axes[r, 0].set_title(title, fontsize=9, loc="left")
        axes[r, 1].set_title(f"{preset}: mean width of 95% intervals", fontsize=9, loc="left")
        axes[r, 1].set_yscale("log")
    axes[0, 0].legend(fontsize=6, ncol=2)
    axes[0, 1].legend(fontsize=6)
    ax_t, ax_p = axes[-1]
    if not errors.empty:
        for ax, what in ((ax_t, "type-I error"), (ax_p, "power")):
            e = errors[errors["what"] == what]
            labels = list(dict.fromkeys(e["contrast"] + ": " + e["quantity"]))
            for j, m in enumerate(methods):
                em = e[e["method"] == m]
                em = em.set_index(em["contrast"] + ": " + em["quantity"]).reindex(labels)
                y = np.arange(len(labels)) + (j - (len(methods) - 1) / 2) * 0.22
                ax.barh(y, em["rejection_rate"], height=0.2, color=f"C{j}", label=m)
            ax.set_yticks(range(len(labels)), [lab[:45] for lab in labels], fontsize=6)
            ax.set_xlim(0, 1)
            ax.set_title(f"{what} (rejection rate at 5%)", fontsize=9, loc="left")
            if what == "type-I error":
                ax.axvline(0.05, color="k", lw=0.6, ls="--")
        ax_t.legend(fontsize=6)
    fig.tight_layout()
    return fig


def aggregate_coverage(
    rep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    formats: Sequence[str] = ("png", "pdf"),
) -> pd.DataFrame:
    """Aggregate replicate files into ``coverage.csv``, ``coverage_table.csv``/``.md``,
    ``contrast_errors.csv``, ``fit_times.csv`` and the figure; returns the coverage frame."""
    rep_dir = Path(rep_dir)
    out = Path(out_dir) if out_dir is not None else rep_dir.parent
    out.mkdir(parents=True, exist_ok=True)
    reps = load_replicates(rep_dir)
    cov = coverage_metrics(reps)
    errors = contrast_metrics(reps)
    cov.to_csv(out / "coverage.csv", index=False)
    errors.to_csv(out / "contrast_errors.csv", index=False)
    table = coverage_table(cov)
    table.to_csv(out / "coverage_table.csv", index=False)
    turning = coverage_table(cov, subset="turning") if not cov.empty else table
    (out / "coverage_table.md").write_text(
        "All models:\n\n"
        + markdown_table(table)
        + "\n\nModels whose true t50 lies within the study (a never-turning model's t50, L and k"
        " are beyond the data):\n\n" + markdown_table(turning) + "\n"
    )
    fits = reps[reps["kind"] == "fit"]
    if not fits.empty:
        fits.groupby(["preset", "method"])["seconds"].describe().to_csv(out / "fit_times.csv")
    if plot and not cov.empty:
        save_figure(plot_coverage(cov, errors), out / "coverage", formats)
    log.info("coverage of %d replicates -> %s", reps["seed"].nunique(), out / "coverage.csv")
    return cov


def _fixed(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def markdown_table(df: pd.DataFrame, cell: Callable[[Any], str] = _fixed) -> str:
    """``df`` as a Markdown table, each value written by ``cell``."""
    lines = ["| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)
