"""The multiverse / specification-curve figure of a sweep (Simonsohn, Simmons & Nelson 2020,
Nature Human Behaviour 4, 1208-1214): one column per job (ordered by its choices), one panel per
headline conclusion, and at the bottom the dashboard, a dot for each choice the job made. Jobs
that did not finish are grey columns with a red cross.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..plotting import mpl_escape, short_label
from .quantities import REGIMES

REGIME_COLORS = ("#1b9e77", "#7570b3", "#d95f02", "#9e9e9e")
#: per-model panels drawn as heatmaps of days or ranks: (title, colour map)
_HEATMAPS = {
    "first_clinical": ("first clinical framing (day)", "viridis_r"),
    "first_stable": ("first stable framing (day)", "viridis_r"),
    "first_level_b": ("first Level-B recommendation (day)", "viridis_r"),
    "t50_rank": ("t50 ordering (rank of least-squares t50; flat = last)", "magma_r"),
}


def job_order(summary: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """Jobs sorted by their choices (numeric-aware), then by name."""
    jobs = summary.drop_duplicates("job").set_index("job")

    def sort_key(value: Any) -> tuple:
        try:
            return (0, float(value), "")
        except (TypeError, ValueError):
            return (1, 0.0, str(value))

    def by_choices(j: str) -> tuple:
        absent = (2, 0.0, "")
        choices = tuple(sort_key(jobs.at[j, k]) if k in jobs.columns else absent for k in keys)
        return choices, sort_key(j)

    return sorted(jobs.index, key=by_choices)


def _matrix(summary: pd.DataFrame, quantity: str, jobs: list[str], column: str = "value"):
    sub = summary[summary["quantity"] == quantity]
    if sub.empty:
        return None
    wide = sub.pivot_table(index="item", columns="job", values=column, aggfunc="first")
    return wide.reindex(index=list(dict.fromkeys(sub["item"])), columns=jobs)


def _heatmap(ax, mat: pd.DataFrame, title: str, cmap, vmin=None, vmax=None, fmt=None):
    data = mat.to_numpy(dtype=float)
    im = ax.imshow(
        np.ma.masked_invalid(data),
        aspect="auto",
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        interpolation="nearest",
    )
    ax.set_yticks(
        range(len(mat.index)), [mpl_escape(short_label(i)) for i in mat.index], fontsize=6
    )
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_xticks([])
    if fmt is not None and data.size <= 400:
        for (i, j), v in np.ndenumerate(data):
            if np.isfinite(v):
                ax.text(j, i, fmt(v), ha="center", va="center", fontsize=5, color="white")
    return im


def _series(ax, mat: pd.DataFrame, title: str, *, log: bool = False, lines=()):
    x = np.arange(mat.shape[1])
    for item, row in mat.iterrows():
        ax.plot(
            x,
            row.to_numpy(dtype=float),
            marker="o",
            ms=3,
            lw=0.8,
            label=mpl_escape(short_label(item)),
        )
    for level in lines:
        ax.axhline(level, color="k", lw=0.6, ls="--")
    if log:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=9, loc="left")
    ax.set_xticks([])
    if len(mat.index) <= 12 and any(str(i) for i in mat.index):
        ax.legend(fontsize=5, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)


def plot_multiverse(summary: pd.DataFrame, keys: Sequence[str], *, title: str | None = None):
    """The specification curve (a matplotlib figure) of a ``summary.csv`` frame
    (:func:`delusion_bayes.sweep.summarize.summary_table`); ``keys``: the override keys that
    vary across jobs (the dashboard's rows)."""
    import matplotlib.pyplot as plt

    keys = [k for k in keys if k in summary.columns]
    jobs = job_order(summary, keys)
    status = summary.drop_duplicates("job").set_index("job")["status"].reindex(jobs)
    posterior = sorted({q for q in summary["quantity"] if str(q).startswith("posterior_prob")})
    quantities = [
        "regime",
        *_HEATMAPS,
        "perm_p",
        *posterior,
        "gate_passed",
        "entrainment_level_b_rho",
    ]
    panels = [(q, mat) for q in quantities if (mat := _matrix(summary, q, jobs)) is not None]
    dash_rows = [(k, v) for k in keys for v in dict.fromkeys(summary.drop_duplicates("job")[k])]
    per_model = ("regime", *_HEATMAPS)
    heights = [
        max(1.2, 0.12 * len(mat.index)) if name in per_model else 1.4 for name, mat in panels
    ]
    heights.append(max(0.8, 0.16 * len(dash_rows)))
    width = min(22.0, 4.0 + 0.22 * len(jobs))
    fig, axes = plt.subplots(
        len(heights),
        1,
        figsize=(width, sum(heights) + 1.0),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        sharex=True,
    )
    axes = axes[:, 0]
    for ax, (name, mat) in zip(axes, panels, strict=False):
        _draw_panel(fig, ax, name, mat)
    # failed jobs: grey band in every panel
    bad = [i for i, s in enumerate(status) if s != "ok"]
    for ax in axes[:-1]:
        for i in bad:
            ax.axvspan(i - 0.5, i + 0.5, color="0.85", zorder=-1)
    _dashboard(axes[-1], summary, jobs, dash_rows, bad)
    title = title or f"Multiverse of {len(jobs)} jobs ({len(bad)} not finished)"
    fig.suptitle(title, fontsize=11, x=0.01, ha="left")
    fig.tight_layout()
    return fig


def _draw_panel(fig, ax, name: str, mat: pd.DataFrame) -> None:
    """One panel of the specification curve: regimes, a per-model heatmap, permutation p,
    posterior probabilities, the gate, or the entrainment correlation."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap

    if name == "regime":
        cmap = ListedColormap(REGIME_COLORS)
        im = _heatmap(
            ax,
            mat,
            "regime membership (Results: four regimes)",
            cmap,
            vmin=-0.5,
            vmax=len(REGIMES) - 0.5,
        )
        im.set_norm(BoundaryNorm(np.arange(-0.5, len(REGIMES)), cmap.N))
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in REGIME_COLORS]
        ax.legend(
            handles,
            REGIMES,
            fontsize=6,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            frameon=False,
        )
    elif name in _HEATMAPS:
        im = _heatmap(ax, mat, *_HEATMAPS[name], fmt=lambda v: f"{v:.0f}")
        fig.colorbar(im, ax=ax, pad=0.01, fraction=0.02)
    elif name == "perm_p":
        _series(
            ax,
            mat.clip(lower=1e-6),
            "exact permutation p per contrast:quantity",
            log=True,
            lines=(0.05,),
        )
    elif name.startswith("posterior_prob"):
        fit = name.partition(":")[2] or "model"
        _series(
            ax,
            mat,
            f"P(A - B > 0) of each contrast under the {fit} model",
            lines=(0.025, 0.975),
        )
        ax.set_ylim(-0.03, 1.03)
    elif name == "gate_passed":
        _heatmap(
            ax,
            mat,
            "diagnostics gate passed (1) / failed (0) per fitted model",
            ListedColormap(["#d95f02", "#1b9e77"]),
            vmin=0,
            vmax=1,
            fmt=lambda v: "ok" if v else "fail",
        )
    else:
        _series(ax, mat, "Spearman rho: entrainment vs Level-B days (paper -.69)", lines=(0.0,))


def _dashboard(dash, summary: pd.DataFrame, jobs: list, dash_rows: list, bad: list) -> None:
    """The choices of every job (one row per override value), failed jobs marked."""
    rows = summary.drop_duplicates("job").set_index("job").reindex(jobs)
    for r, (k, v) in enumerate(dash_rows):
        used = [i for i, j in enumerate(jobs) if str(rows.at[j, k]) == str(v)]
        dash.scatter(used, [r] * len(used), s=14, color="k")
    for i in bad:
        dash.scatter([i], [-1], marker="x", color="red", s=25)
    labels = ["job failed", *[f"{k}={v}"[:60] for k, v in dash_rows]]
    dash.set_yticks([-1, *range(len(dash_rows))], labels, fontsize=6)
    dash.set_ylim(len(dash_rows) - 0.5, -1.5)
    dash.set_xticks(range(len(jobs)), jobs, fontsize=6, rotation=90)
    dash.set_xlabel("job (ordered by choices)", fontsize=8)
    dash.set_xlim(-0.5, len(jobs) - 0.5)
    dash.set_title("choices (specification-curve dashboard)", fontsize=9, loc="left")
