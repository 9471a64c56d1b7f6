"""Figures of a replay study's tables (the replay stage draws them; users can too).

Each ``plot_*`` takes the table the replay analysis returns (``prevalence``, ``deltas``, the
depth curve, the posterior beside the bootstrap) and writes ``stem.<fmt>`` for every format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..plotting import save_figure, series_style, style


def _err(est, lo, hi) -> np.ndarray:
    """Error-bar lengths (2, n) of intervals ``[lo, hi]`` around ``est`` (never negative)."""
    return np.clip(np.vstack([est - lo, hi - est]), 0, None)


def plot_prevalence(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    cat = table[table["level"] == "category"]
    cats = list(dict.fromkeys(cat["category"]))
    models = list(dict.fromkeys(cat["model"]))
    with style():
        fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.5 * len(cats) * max(1, len(models) / 3)))
        step = 0.8 / max(len(models), 1)
        for i, m in enumerate(models):
            g = cat[cat["model"] == m].set_index("category").reindex(cats)
            y = np.arange(len(cats)) + (i - (len(models) - 1) / 2) * step
            st = series_style(i)
            ax.errorbar(
                g["estimate"],
                y,
                xerr=_err(g["estimate"], g["ci_low"], g["ci_high"]),
                fmt=st.get("marker", "o"),
                color=st.get("color", "k"),
                ms=4,
                capsize=2,
                lw=1,
                label=m,
            )
            if "truth" in g:
                ax.plot(g["truth"], y, "|", color="#b35900", ms=7)
        ax.set_yticks(np.arange(len(cats)), cats)
        ax.invert_yaxis()
        ax.set_xlabel("prevalence (share of scored samples x codes)")
        ci = int(round(100 * float(cat["ci_prob"].iloc[0])))
        title = f"Prevalence with {ci}% {cat['cluster'].iloc[0]} bootstrap CIs"
        if "truth" in cat:
            title += " (| = simulated truth)"
        ax.set_title(title)
        ax.legend(fontsize=7, frameon=False, loc="best")
        return save_figure(fig, stem, formats)


def plot_heatmap(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    cat = table[table["level"] == "category"]
    grid = cat.pivot(index="model", columns="category", values="estimate")
    grid = grid.loc[list(dict.fromkeys(cat["model"])), list(dict.fromkeys(cat["category"]))]
    with style():
        fig, ax = plt.subplots(figsize=(1.2 + 1.1 * grid.shape[1], 0.8 + 0.4 * grid.shape[0]))
        im = ax.imshow(grid.to_numpy(), cmap="Greys", vmin=0, aspect="auto")
        ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=30, ha="right")
        ax.set_yticks(range(grid.shape[0]), grid.index)
        top = np.nanmax(grid.to_numpy()) if grid.size else 1
        for (r, c), v in np.ndenumerate(grid.to_numpy()):
            if np.isfinite(v):
                colour = "white" if v > 0.6 * top else "black"
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7, color=colour)
        fig.colorbar(im, ax=ax, shrink=0.8, label="prevalence")
        ax.set_title("Prevalence, model x category")
        return save_figure(fig, stem, formats)


def plot_deltas(deltas: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    d = deltas[deltas["level"] == "category"].reset_index(drop=True)
    with style():
        fig, ax = plt.subplots(figsize=(6, 0.6 + 0.22 * len(d)))
        y = np.arange(len(d))
        ax.errorbar(
            d["estimate"],
            y,
            xerr=_err(d["estimate"], d["ci_low"], d["ci_high"]),
            fmt="o",
            color="k",
            ms=3,
            capsize=2,
            lw=1,
        )
        ax.axvline(0, color="#9a9a9a", lw=0.8, ls="--")
        ax.set_yticks(y, [f"{m} | {c}" for m, c in zip(d["model"], d["category"], strict=True)])
        ax.invert_yaxis()
        base = d["baseline"].iloc[0] if len(d) else "original"
        ax.set_xlabel(f"prevalence difference (model - {base})")
        ax.set_title("Deltas vs the original transcript (paired bootstrap CIs)")
        return save_figure(fig, stem, formats)


def plot_depth(curve: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    cats = list(dict.fromkeys(curve["category"]))
    models = list(dict.fromkeys(curve["model"]))
    ncol = min(3, len(cats))
    nrow = int(np.ceil(len(cats) / ncol))
    with style():
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.0 * ncol, 2.4 * nrow), squeeze=False)
        for a, cat in zip(axes.ravel(), cats, strict=False):
            for i, m in enumerate(models):
                g = curve[(curve["model"] == m) & (curve["category"] == cat)]
                g = g[np.isfinite(g["estimate"])]
                st = series_style(i)
                a.plot(g["depth_mean"], g["estimate"], label=m, ms=3, lw=1, **st)
                a.fill_between(
                    g["depth_mean"],
                    g["ci_low"],
                    g["ci_high"],
                    color=st.get("color"),
                    alpha=0.12,
                    lw=0,
                )
            a.set_title(cat)
            a.set_xlabel("context depth (messages)")
            a.set_ylabel("prevalence")
        for a in axes.ravel()[len(cats) :]:
            a.axis("off")
        axes.ravel()[0].legend(fontsize=6, frameon=False)
        fig.suptitle("Prevalence vs context depth (messages before the user turn; bootstrap CIs)")
        fig.tight_layout()
        return save_figure(fig, stem, formats)


def plot_bayes(both: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    with style():
        fig, ax = plt.subplots(figsize=(4.2, 4.0))
        ax.errorbar(
            both["estimate"],
            both["post_mean"],
            xerr=_err(both["estimate"], both["ci_low"], both["ci_high"]),
            yerr=_err(both["post_mean"], both["post_ci_low"], both["post_ci_high"]),
            fmt="o",
            color="k",
            ms=3,
            lw=0.8,
            capsize=1.5,
        )
        top = float(np.nanmax(both[["ci_high", "post_ci_high"]].to_numpy())) * 1.05
        ax.plot([0, top], [0, top], ls="--", color="#9a9a9a", lw=0.8)
        ax.set_xlabel("bootstrap estimate and CI")
        ax.set_ylabel("posterior mean and interval")
        ax.set_title("Category prevalence: Bayesian vs bootstrap")
        return save_figure(fig, stem, formats)
