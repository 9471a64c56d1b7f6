"""Figures of a replicated study's tables (the replicated stage draws them; users can too).

Each ``plot_*`` takes a table of :mod:`delusion_bayes.baselines.replicated` (or ``_compare``)
and writes ``stem.<fmt>`` for every format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..plotting import save_figure, series_style, style


def _grid(n: int) -> tuple[int, int]:
    cols = min(3, max(n, 1))
    return int(np.ceil(n / cols)), cols


def plot_item_means(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    """One panel per item: each chatbot's mean per turn with its cluster-bootstrap interval,
    chatbots sorted by the mean (highest on top)."""
    import matplotlib.pyplot as plt

    items = list(dict.fromkeys(table["item"]))
    rows, cols = _grid(len(items))
    n_models = table["model"].nunique()
    with style():
        fig, axes = plt.subplots(
            rows, cols, figsize=(3.3 * cols, 0.6 + rows * (0.5 + 0.28 * n_models)), squeeze=False
        )
        for ax, item in zip(axes.ravel(), items, strict=False):
            g = table[table["item"] == item].sort_values("mean")
            y = np.arange(len(g))
            err = np.clip(np.vstack([g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]]), 0, None)
            ax.errorbar(g["mean"], y, xerr=err, fmt="o", color="k", ms=3, capsize=2, lw=1)
            ax.set_yticks(y, g["model"], fontsize=7)
            ax.set_title(item.replace("_", " "), fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
        for ax in axes.ravel()[len(items) :]:
            ax.set_visible(False)
        first = table.iloc[0]
        ci = int(round(100 * float(first["ci_prob"])))
        fig.suptitle(
            f"Mean per turn ({first['rule']}), {ci}% {first['cluster']} bootstrap intervals",
            fontsize=9,
        )
        fig.tight_layout()
        return save_figure(fig, stem, formats)


def plot_first_occurrence(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    """One panel per item: the share of each chatbot's conversations in which the behaviour has
    occurred by turn t (from :func:`~delusion_bayes.baselines.replicated_compare.
    first_occurrence`; a censored conversation never counts)."""
    import matplotlib.pyplot as plt

    table = table.dropna(subset=["first_turn"])
    items = list(dict.fromkeys(table["item"]))
    models = list(dict.fromkeys(table["model"]))
    rows, cols = _grid(len(items))
    t_max = float(table["censor_turn"].max())
    turns = np.arange(1, int(t_max))
    with style():
        fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.4 * rows), squeeze=False)
        for ax, item in zip(axes.ravel(), items, strict=False):
            for i, m in enumerate(models):
                g = table[(table["item"] == item) & (table["model"] == m)]
                hit = g["first_turn"].where(g["observed"]).to_numpy(dtype=float)
                share = [(hit <= t).sum() / max(len(g), 1) for t in turns]
                st = series_style(i)
                ax.step(turns, share, where="post", color=st["color"], ls=st["linestyle"], label=m)
            ax.set_ylim(0, 1.02)
            ax.set_title(item.replace("_", " "), fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in axes.ravel()[len(items) :]:
            ax.set_visible(False)
        axes.ravel()[0].legend(fontsize=6, frameon=False)
        fig.suptitle("Share of conversations with the behaviour by turn", fontsize=9)
        fig.tight_layout()
        return save_figure(fig, stem, formats)


__all__ = ["plot_first_occurrence", "plot_item_means"]
