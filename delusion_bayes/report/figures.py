"""The supplement's figures, drawn from the files the stages wrote (PNG + PDF, one style).

Figure 1: consensus trajectories with rater points, the least-squares logistic curve and the
posterior band; Figure 2: intervention intensity by consensus stage; Figure 3: entrainment vs
Level-B day count; Figure 4: modality change at the clinical turn; Figure E1: per-milestone
charts; plus a model-comparison plot when the models stage wrote ``comparison.csv`` without one.
Each function returns the written paths or raises :class:`MissingInput` naming what is absent.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from delusion_bayes.data.schema import DAY, MODEL, RATER
from delusion_bayes.plotting import BAND, GREYS, save_figure, series_style, style
from delusion_bayes.report.frames import find_col, key_column, long_estimates, norm
from delusion_bayes.report.rundir import RunDir
from delusion_bayes.report.tables import (
    LATENCIES,
    MILESTONES,
    Posterior,
    label,
    models_csv,
    open_posterior,
)

log = logging.getLogger(__name__)


class MissingInput(LookupError):
    """A figure cannot be drawn because an input file or column is absent (message says which)."""


def logistic(t: np.ndarray, L, k, t50, floor: float = 1.0) -> np.ndarray:
    """``floor + (L - floor) / (1 + exp(-k (t - t50)))`` (paper, "Statistical Analysis")."""
    with np.errstate(over="ignore"):
        return floor + (L - floor) / (1.0 + np.exp(-k * (t - t50)))


def _consensus(run: RunDir):
    """The consensus (model, day) DataArray from ``baselines/consensus.nc`` (None if absent)."""
    path = run.stage("baselines").path / "consensus.nc"
    if not path.is_file():
        return None
    import xarray as xr

    try:
        obj = xr.load_dataset(path)
    except Exception as err:
        log.warning("cannot read %s: %s", path, err)
        return None
    for name in ("consensus", "recognition", *obj.data_vars):
        if name in obj.data_vars and {MODEL, DAY} <= set(obj[name].dims):
            da = obj[name]
            extra = [d for d in da.dims if d not in (MODEL, DAY)]
            return da.isel({d: 0 for d in extra}) if extra else da
    return None


def _grid(n: int, ncols: int = 5) -> tuple[int, int]:
    ncols = min(ncols, max(n, 1))
    return math.ceil(n / ncols), ncols


# Figure 1 ----------------------------------------------------------------------------------
def figure1(
    run: RunDir,
    post: Posterior,
    out: Path,
    formats: Sequence[str],
    dpi: int,
    ci_prob: float = 0.95,
) -> tuple[list[Path], list[str]]:
    """Figure 1: per model, rater scores (points), consensus (line), least-squares logistic curve
    (black) and the posterior band of the logistic trajectory (grey, ``ci_prob`` ETI).

    Returns the written paths and the run-relative sources.
    """
    import matplotlib.pyplot as plt

    ds = run.study
    cons = _consensus(run)
    if ds is None and cons is None:
        raise MissingInput("Figure 1 needs study.nc or baselines/consensus.nc")
    sources = []
    if ds is not None and "recognition" in ds:
        models = [str(m) for m in ds[MODEL].values]
        days = ds[DAY].values.astype(float)
        sources.append("study.nc")
    else:
        models = [str(m) for m in cons[MODEL].values]
        days = cons[DAY].values.astype(float)
    if cons is not None:
        sources.append("baselines/consensus.nc")
    d1 = run.stage("baselines").csv("tableD1_logistic.csv")
    ls = None
    if d1 is not None:
        try:
            ld = long_estimates(d1, key_column(d1), ["L", "k", "t50"])
            ls = ld.pivot_table(index=ld.columns[0], columns="quantity", values="estimate")
            sources.append("baselines/tableD1_logistic.csv")
        except (ValueError, KeyError) as err:
            log.warning("Figure 1: cannot read the logistic fits: %s", err)
    floor = float(run.config_value("baselines.logistic_floor", 1.0) or 1.0)
    band = None
    tt = np.linspace(days.min(), days.max(), 121)
    if post.folder is not None and (run.path / post.folder / "posterior.nc").is_file():
        pds = open_posterior(run.path / post.folder / "posterior.nc")
        logistic_shape = run.config_value("model.trajectory", "logistic") in (None, "logistic")
        if pds is not None and logistic_shape and all(v in pds for v in ("L", "k", "t50")):
            band = _posterior_band(pds, tt, ci_prob, floor)
            sources.append(f"{post.folder}/posterior.nc")
        elif pds is not None and "stage" in pds and {MODEL, DAY} <= set(pds["stage"].dims):
            band = _stage_band(pds["stage"], ci_prob)
            sources.append(f"{post.folder}/posterior.nc")
    pmean = _posterior_mean_stage(run, post)
    if pmean is not None:
        sources.append(pmean[1])
    nrows, ncols = _grid(len(models))
    with style():
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(2.3 * ncols, 1.75 * nrows + 0.5),
            sharex=True,
            sharey=True,
            squeeze=False,
        )
        for ax, m in zip(axes.flat, models, strict=False):
            if ds is not None and "recognition" in ds:
                rec = ds["recognition"].sel({MODEL: m})
                nr = rec.sizes[RATER]
                for j in range(nr):
                    off = (j - (nr - 1) / 2) * 0.12
                    ax.plot(
                        days + off,
                        rec.isel({RATER: j}).values,
                        ls="none",
                        marker="o",
                        ms=2.2,
                        color="#a8a8a8",
                        alpha=0.8,
                        zorder=1,
                        label="rater scores" if j == 0 else None,
                    )
            if band is not None and m in band:
                bx, lo, med, hi = band[m] if len(band[m]) == 4 else (tt, *band[m])
                ax.fill_between(
                    bx, lo, hi, color=BAND, lw=0, zorder=0, label=f"posterior {ci_prob:.0%} band"
                )
                ax.plot(
                    bx,
                    med,
                    color=GREYS[1],
                    ls="--",
                    marker="none",
                    lw=1.2,
                    zorder=2,
                    label="posterior median",
                )
            if pmean is not None and m in pmean[0]:
                x, y = pmean[0][m]
                ax.plot(
                    x,
                    y,
                    color=GREYS[1],
                    ls=":",
                    marker="none",
                    lw=1.3,
                    zorder=2,
                    label="posterior mean stage",
                )
            if cons is not None and m in [str(x) for x in cons[MODEL].values]:
                c = cons.sel({MODEL: m})
                ax.plot(
                    c[DAY].values,
                    c.values,
                    color="#000000",
                    ls="none",
                    marker="s",
                    ms=2.8,
                    zorder=3,
                    label="consensus",
                )
            if ls is not None and m in ls.index:
                r = ls.loc[m]
                if np.all(np.isfinite([r.get("L"), r.get("k"), r.get("t50")])):
                    ax.plot(
                        tt,
                        logistic(tt, r["L"], r["k"], r["t50"], floor),
                        color="#000000",
                        ls="-",
                        marker="none",
                        lw=1.3,
                        zorder=4,
                        label="least-squares logistic",
                    )
            ax.set_title(m, fontsize=8)
            ax.set_ylim(0.6, 4.4)
            ax.set_yticks([1, 2, 3, 4])
            ax.grid(True, axis="y")
        for ax in axes.flat[len(models) :]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("day")
        for ax in axes[:, 0]:
            ax.set_ylabel("stage")
        handles, labels = {}, []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        labels = list(handles)
        fig.legend(
            [handles[x] for x in labels],
            labels,
            loc="lower center",
            ncol=len(labels),
            bbox_to_anchor=(0.5, -0.01),
        )
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        return save_figure(fig, out / "figure1_trajectories", formats, dpi), sources


def _stage_band(stage, ci_prob: float):
    """``{model: (days, low, median, high)}`` of a latent ``stage[model, day]`` posterior."""
    sample = [d for d in ("chain", "draw") if d in stage.dims]
    a = (1 - ci_prob) / 2
    q = stage.quantile([a, 0.5, 1 - a], dim=sample)
    days = stage[DAY].values.astype(float)
    return {
        str(m): (days, *q.sel({MODEL: m}).transpose("quantile", DAY).values)
        for m in stage[MODEL].values
    }


def _posterior_mean_stage(run: RunDir, post: Posterior):
    """``({model: (days, mean)}, source)`` from the models stage's ``consensus_posterior.csv``
    (columns ``model, day, mean``), or None."""
    df, src = models_csv(run, post, "consensus_posterior.csv")
    if df is None:
        return None
    m, d, v = find_col(df, "model"), find_col(df, "day"), find_col(df, "mean", "posterior_mean")
    if m is None or d is None or v is None:
        log.warning("Figure 1: %s lacks model/day/mean columns: %s", src, list(df.columns))
        return None
    out = {}
    for name, g in df.sort_values(d).groupby(m, sort=False):
        out[str(name)] = (g[d].to_numpy(float), g[v].to_numpy(float))
    return out, src


def _posterior_band(pds, tt: np.ndarray, ci_prob: float, floor: float, max_draws: int = 1000):
    """``{model: (low, median, high)}`` of the logistic curve over ``tt`` from posterior draws."""
    sample = [d for d in ("chain", "draw") if d in pds["L"].dims]
    stacked = {
        v: pds[v].stack(__s=sample).transpose(MODEL, "__s").values for v in ("L", "k", "t50")
    }
    n = stacked["L"].shape[1]
    idx = np.linspace(0, n - 1, min(n, max_draws)).astype(int)
    a = (1 - ci_prob) / 2
    out = {}
    for i, m in enumerate(pds[MODEL].values):
        L, k, t50 = (stacked[v][i, idx][:, None] for v in ("L", "k", "t50"))
        curves = logistic(tt[None, :], L, k, t50, floor)
        lo, med, hi = np.quantile(curves, [a, 0.5, 1 - a], axis=0)
        out[str(m)] = (lo, med, hi)
    return out


# Figure 2 ----------------------------------------------------------------------------------
def figure2(
    run: RunDir, out: Path, formats: Sequence[str], dpi: int
) -> tuple[list[Path], list[str]]:
    """Figure 2: mean intervention intensity by consensus stage, one line per intervention type
    (descriptive; model-days are serially dependent). Reads ``figure2_intensity_by_stage.csv``."""
    import matplotlib.pyplot as plt

    rel = "figure2_intensity_by_stage.csv"
    df = run.stage("baselines").csv(rel)
    if df is None:
        raise MissingInput(f"baselines/{rel} is missing")
    wide = _stage_by_type(df)
    rhos = _rho_by_type(df)
    with style():
        fig, ax = plt.subplots(figsize=(5.6, 3.4))
        for i, col in enumerate(wide.columns):
            lab = label(str(col))
            if str(col) in rhos:
                lab += f" (ρ = {rhos[str(col)]:.2f})"
            ax.plot(wide.index.astype(float), wide[col].values, label=lab, **series_style(i))
        ax.set_xlabel("consensus recognition stage")
        ax.set_ylabel("mean intensity (1 absent – 3 frequent)")
        ax.set_xticks(sorted(set(np.round(wide.index.astype(float)))))
        ax.set_ylim(0.9, 3.1)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        return save_figure(fig, out / "figure2_intensity_by_stage", formats, dpi), [
            f"baselines/{rel}"
        ]


def _rho_by_type(df: pd.DataFrame) -> dict[str, float]:
    """Spearman rho with the stage per intervention type, when the table carries it."""
    typ = find_col(df, "intervention_type", "intervention", "type")
    rho = find_col(df, "rho", "spearman_rho")
    if typ is None or rho is None:
        return {}
    firsts = df.dropna(subset=[rho]).drop_duplicates(typ)
    return {str(t): float(r) for t, r in zip(firsts[typ], firsts[rho], strict=True)}


def _stage_by_type(df: pd.DataFrame) -> pd.DataFrame:
    """``figure2_intensity_by_stage.csv`` as a stage x intervention-type frame of means."""
    stage = find_col(df, "stage", "consensus_stage", "consensus", "recognition")
    if stage is None:
        raise MissingInput(f"no stage column among {list(df.columns)}")
    typ = find_col(df, "intervention_type", "intervention", "type")
    if typ is not None:
        val = find_col(df, "mean", "mean_intensity", "intensity", "value", "estimate")
        if val is None:
            raise MissingInput(f"no mean-intensity column among {list(df.columns)}")
        return df.pivot_table(index=stage, columns=typ, values=val, sort=False).sort_index()
    num = [c for c in df.columns if c != stage and pd.api.types.is_numeric_dtype(df[c])]
    num = [c for c in num if not norm(c).startswith(("n", "count")) or norm(c) in ("n_a",)]
    return df.set_index(stage)[num].sort_index()


# Figure 3 / 4 (text stage) ----------------------------------------------------------------
def per_model_text(
    run: RunDir,
    name_words: Sequence[Sequence[str]],
    need: Callable[[pd.DataFrame], bool],
    metric: str | None = None,
) -> tuple[pd.DataFrame, str] | None:
    """The first text-stage CSV whose file name contains all words of one of ``name_words``,
    that has a model column and passes ``need`` (a check of its columns). A long table with a
    ``metric`` column (the text stage's ``turn_contrast.csv``) is cut to the rows of ``metric``."""
    text = run.stage("text")
    rels = list(dict.fromkeys(text.glob("*.csv") + text.glob("**/*.csv")))
    for words in name_words:
        for rel in rels:
            if all(w in rel.lower() for w in words):
                df = text.csv(rel)
                if df is None or find_col(df, "model") is None:
                    continue
                mcol = find_col(df, "metric")
                if metric is not None and mcol is not None:
                    df = df[df[mcol].astype(str) == metric].drop(columns=mcol)
                    df = df.reset_index(drop=True)
                    if df.empty:
                        continue
                if need(df):
                    return df, f"text/{rel}"
    return None


#: where Figure 3 / Figure 4 data are looked for in ``text/`` (file-name words, in order)
FIG3_FILES = (("figure3",), ("model_means",), ("entrainment", "level_b"), ("entrainment",))
FIG4_FILES = (("figure4",), ("turn_contrast",), ("modality", "turn"), ("modality",))


def text_correlation(run: RunDir, metric: str, against: str) -> tuple[float, float] | None:
    """``(rho, p)`` of ``metric`` with ``against`` from the text stage's ``correlations.csv``."""
    df = run.stage("text").csv("correlations.csv")
    if df is None:
        return None
    m, a, r = find_col(df, "metric"), find_col(df, "against"), find_col(df, "rho")
    p = find_col(df, "p", "pvalue", "p_value")
    if m is None or a is None or r is None:
        return None
    row = df[(df[m].astype(str) == metric) & (df[a].astype(str) == against)]
    if row.empty:
        return None
    return float(row[r].iloc[0]), float(row[p].iloc[0]) if p else float("nan")


def _entrainment_col(df: pd.DataFrame) -> str | None:
    col = find_col(df, "mean_entrainment", "entrainment_mean", "entrainment", "mean")
    if col is None:
        num = [
            c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and "entrain" in norm(c)
        ]
        col = num[0] if num else None
    return col


def figure3(
    run: RunDir, out: Path, formats: Sequence[str], dpi: int
) -> tuple[list[Path], list[str]]:
    """Figure 3: 30-day mean entrainment vs the number of Level-B days per model."""
    import matplotlib.pyplot as plt

    found = per_model_text(run, FIG3_FILES, lambda d: _entrainment_col(d) is not None)
    if found is None:
        raise MissingInput("no per-model entrainment table in text/")
    df, src = found
    mcol = find_col(df, "model")
    ecol = _entrainment_col(df)
    bcol = find_col(df, "days_level_b", "level_b_days", "n_level_b")
    sources = [src]
    if bcol is not None:
        xb = df.set_index(mcol)[bcol]
    else:
        t1 = run.stage("baselines").csv("table1_milestones.csv")
        if t1 is None or find_col(t1, "days_level_b") is None:
            raise MissingInput("Level-B day counts: neither in the text table nor in Table 1")
        xb = t1.set_index(key_column(t1))[find_col(t1, "days_level_b")]
        sources.append("baselines/table1_milestones.csv")
    y = df.set_index(mcol)[ecol]
    models = [m for m in y.index if m in xb.index]
    with style():
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        ax.plot(xb[models].values, y[models].values, ls="none", marker="o", color="#000000")
        for m in models:
            ax.annotate(
                str(m),
                (xb[m], y[m]),
                fontsize=6.5,
                xytext=(3, 2),
                textcoords="offset points",
                color=GREYS[1],
            )
        corr = text_correlation(run, "entrainment", "days_level_b")
        title = "Entrainment vs Level-B days"
        if corr is not None:
            title += f" (Spearman ρ = {corr[0]:.2f})"
            sources.append("text/correlations.csv")
        ax.set_title(title)
        ax.set_xlabel("days with a Level-B recommendation")
        ax.set_ylabel("mean entrainment")
        fig.tight_layout()
        return save_figure(fig, out / "figure3_entrainment_level_b", formats, dpi), sources


def figure4(
    run: RunDir, out: Path, formats: Sequence[str], dpi: int
) -> tuple[list[Path], list[str]]:
    """Figure 4: mean modality on naive vs clinical days per escalating model (slope chart)."""
    import matplotlib.pyplot as plt

    found = per_model_text(run, FIG4_FILES, lambda d: None not in _turn_cols(d), "modality")
    if found is None:
        raise MissingInput("no per-model modality table (before/after the clinical turn) in text/")
    df, src = found
    mcol = find_col(df, "model")
    naive, clin = _turn_cols(df)
    d = df[[mcol, naive, clin]].dropna()
    with style():
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
        for i, (_, r) in enumerate(d.iterrows()):
            st = series_style(i)
            ax.plot(
                [0, 1],
                [r[naive], r[clin]],
                color=st["color"],
                ls=st["linestyle"],
                marker=st["marker"],
            )
            ax.annotate(
                str(r[mcol]),
                (1, r[clin]),
                xytext=(5, 0),
                textcoords="offset points",
                fontsize=6.5,
                va="center",
            )
        ax.set_xticks([0, 1], ["before the clinical turn", "from the clinical turn"])
        ax.set_xlim(-0.2, 1.9)
        ax.axhline(0, color=GREYS[2], lw=0.8, ls=":")
        ax.set_ylabel("modality (boosters − hedges per sentence)")
        ax.set_title("Modality at the clinical turn")
        fig.tight_layout()
        return save_figure(fig, out / "figure4_modality_turn", formats, dpi), [src]


def _turn_cols(df: pd.DataFrame) -> tuple[str | None, str | None]:
    """Columns of the metric before / from the clinical turn (``before``/``after`` or
    ``*naive*``/``*clinical*``)."""

    def num(c: str) -> bool:
        return pd.api.types.is_numeric_dtype(df[c])

    before = find_col(df, "before", "mean_naive", "naive")
    after = find_col(df, "after", "mean_clinical", "clinical")
    if before is None:
        before = next((c for c in df.columns if "naive" in norm(c) and num(c)), None)
    if after is None:
        after = next((c for c in df.columns if "clinical" in norm(c) and num(c)), None)
    return before, after


# Figure E1 ---------------------------------------------------------------------------------
def figure_e1(
    run: RunDir,
    out: Path,
    formats: Sequence[str],
    dpi: int,
    posterior: Posterior | None = None,
) -> tuple[list[Path], list[str]]:
    """Figure E1: one panel per milestone; models ordered by first clinical framing; censored
    latencies drawn open at the censoring day; posterior median and interval beside when the
    models stage wrote ``milestones_posterior.csv``."""
    import matplotlib.pyplot as plt

    t1 = run.stage("baselines").csv("table1_milestones.csv")
    if t1 is None:
        raise MissingInput("baselines/table1_milestones.csv is missing")
    key = key_column(t1)
    base = long_estimates(t1, key, None)
    post_df, post_src = models_csv(
        run, posterior or Posterior(None, None), "milestones_posterior.csv"
    )
    post = None
    sources = ["baselines/table1_milestones.csv"]
    if post_df is not None:
        try:
            post = long_estimates(post_df, "model", None).rename(columns={"model": key})
            sources.append(post_src)
        except ValueError as err:
            log.warning("Figure E1: %s", err)
    found = list(dict.fromkeys(base["quantity"]))
    qs = [q for q in MILESTONES if q in found] or found
    if not qs:
        raise MissingInput("Table 1 has no milestone columns")
    censor = None
    ds = run.study
    if ds is not None and DAY in ds.dims:
        censor = ds.sizes[DAY] + 1
    first = base[base["quantity"] == qs[0]].set_index(key)["estimate"]
    order = list(first.sort_values(kind="stable").index)
    nrows, ncols = _grid(len(qs), 3)
    with style():
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(3.3 * ncols, 0.22 * len(order) * nrows + 1.4),
            sharey=True,
            squeeze=False,
        )
        y = np.arange(len(order))
        for ax, q in zip(axes.flat, qs, strict=False):
            b = (
                base[base["quantity"] == q]
                .set_index(key)
                .reindex(order)["estimate"]
                .to_numpy(float)
            )
            is_latency = q in LATENCIES or q.startswith("first_")
            if post is not None and (post["quantity"] == q).any():
                p = post[post["quantity"] == q].drop_duplicates(key).set_index(key).reindex(order)
                ax.hlines(
                    y + 0.22,
                    p["low"],
                    p["high"],
                    color=GREYS[2],
                    lw=2.2,
                    label="posterior interval",
                )
                ax.plot(
                    p["estimate"],
                    y + 0.22,
                    ls="none",
                    marker="D",
                    ms=3.2,
                    color=GREYS[1],
                    label="posterior median",
                )
            if is_latency and censor is not None:
                cen = b == censor
                ax.plot(b[~cen], y[~cen], ls="none", marker="o", color="#000000", label="consensus")
                ax.plot(
                    b[cen],
                    y[cen],
                    ls="none",
                    marker="o",
                    mfc="white",
                    color="#000000",
                    label=f"never (censored at {censor})",
                )
                ax.set_xlim(0, censor + 1)
            else:
                ax.barh(y, b, color=GREYS[2], height=0.5, label="consensus")
            ax.set_title(label(q))
            ax.set_xlabel("day" if is_latency else "days")
            ax.grid(True, axis="x")
            ax.grid(False, axis="y")
        axes[0, 0].set_yticks(y, order)
        axes[0, 0].invert_yaxis()
        for ax in axes.flat[len(qs) :]:
            ax.set_visible(False)
        handles = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="lower center",
            ncol=len(handles),
            bbox_to_anchor=(0.5, -0.01),
        )
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        return save_figure(fig, out / "figureE1_milestones", formats, dpi), sources


# model comparison --------------------------------------------------------------------------
def comparison_plot(
    run: RunDir, out: Path, formats: Sequence[str], dpi: int
) -> tuple[list[Path], list[str]]:
    """ELPD (PSIS-LOO) of the compared models with standard errors, from ``comparison.csv``."""
    import matplotlib.pyplot as plt

    df = run.stage("models").csv("comparison.csv")
    if df is None:
        raise MissingInput("models/comparison.csv is missing")
    name = find_col(df, "model", "name", "Unnamed: 0") or df.columns[0]
    elpd = find_col(df, "elpd", "elpd_loo")
    se = find_col(df, "se", "elpd_se")
    if elpd is None:
        raise MissingInput(f"models/comparison.csv: no elpd column among {list(df.columns)}")
    d = df.sort_values(elpd)
    with style():
        fig, ax = plt.subplots(figsize=(5.0, 0.45 * len(d) + 1.2))
        yy = np.arange(len(d))
        ax.errorbar(
            d[elpd],
            yy,
            xerr=d[se] if se else None,
            ls="none",
            marker="o",
            color="#000000",
            capsize=3,
        )
        ax.set_yticks(yy, [str(v) for v in d[name]])
        ax.set_xlabel("ELPD (PSIS-LOO), ± SE")
        ax.set_title("Model comparison")
        fig.tight_layout()
        return save_figure(fig, out / "figure_model_comparison", formats, dpi), [
            "models/comparison.csv"
        ]
