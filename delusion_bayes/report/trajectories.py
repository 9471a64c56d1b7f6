"""Trajectories: Figure 1 (from ``study.nc``, the consensus, Table D1 and the chosen model's
posterior) and Table D1 (the logistic fits beside ``t50_posterior.csv``, section D)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from delusion_bayes.baselines import logistic
from delusion_bayes.baselines.config import BaselinesConfig
from delusion_bayes.data.schema import DAY, MODEL, RATER
from delusion_bayes.intervals import interval
from delusion_bayes.plotting import BAND, GREYS, shared_legend, style
from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder, MissingInput
from delusion_bayes.report.document import Section
from delusion_bayes.report.table import Estimate, ReportTable, side_by_side

if TYPE_CHECKING:
    import pandas as pd

D1 = "baselines/tableD1_logistic.csv"
CONSENSUS = "baselines/consensus.nc"
LOGISTIC = ("L", "k", "t50")


#: a model whose posterior puts t50 beyond the last day with more than this probability is a
#: never-turner: its L, k and t50 cells in Table D1 are marked prior-driven
NEVER_TURNER_P = 0.5


def prior_driven(b: Builder, post) -> dict[str, list[str]]:
    """``{quantity: [marker or "" per model]}`` for Table D1's posterior cells (rows of ``post``,
    ``t50_posterior.csv`` indexed by model): marked where the model is a never-turner
    (``p_beyond_last_day`` > :data:`NEVER_TURNER_P`, all three of L, k, t50) or where the
    fit's ``sensitivity.csv`` calls that parameter "weak likelihood" (prior-dominated)."""
    never = (post["p_beyond_last_day"] > NEVER_TURNER_P).to_numpy()
    weak: set[str] = set()
    sens = b.run.table("models/{fit}/sensitivity.csv", b.post) if b.post else None
    if sens is not None:
        weak = set(sens.loc[sens["verdict"] == "weak likelihood", "parameter"].astype(str))
    return {
        q: [
            questions.PRIOR_DRIVEN if nv or f"{q}[{m}]" in weak else ""
            for m, nv in zip(post.index, never, strict=True)
        ]
        for q in LOGISTIC
    }


def table_d1(b: Builder) -> ReportTable | None:
    """Table D1: least-squares logistic fits with rater-bootstrap CIs beside the posterior."""
    d1 = b.run.result(D1)
    if d1 is None:
        return None
    base = d1.frame
    keys = base["model"].tolist()
    res, src = b.posterior_result("t50_posterior.csv")
    notes = [
        questions.table_d1(),
        "m(t) = 1 + (L − 1) / (1 + exp(−k (t − t50))); least squares on the consensus.",
    ]
    pe = None
    if res is not None:
        post = res.frame.set_index("model").reindex(keys)
        marks = prior_driven(b, post)
        cols = {q: res.column(f"{q}_median") for q in LOGISTIC}  # with their interval columns
        pe = {
            q: Estimate(post[c.name], post[c.low], post[c.high], marks=marks[q])
            for q, c in cols.items()
        }
        p = res.column("p_beyond_last_day")
        pe["t50"].extra[p.name] = (p.label, post[p.name])
        notes += [
            f"Posterior: median [credible interval] of model `{b.post}`.",
            "P(> last day): posterior probability that t50 lies beyond the observed days.",
        ]
        if any(m for v in marks.values() for m in v):
            notes.append(questions.prior_driven_note(NEVER_TURNER_P))
        if b.fixed_scale():
            notes.append(questions.fixed_scale_note())
    fits = {q: d1.column(q) for q in LOGISTIC}  # each with its bootstrap CI columns
    ls = {q: Estimate(base[c.name], base[c.low], base[c.high]) for q, c in fits.items()}
    # a no_turn model has no logistic curve: its cells would print the optimiser's bounds
    no_turn = (base["status"] == "no_turn").to_numpy()
    if no_turn.any():
        notes.append(
            f"LS cells are blank for no_turn models ({int(no_turn.sum())}): their consensus "
            "never rises, so no logistic curve is identified (the optimiser's values, at its "
            f"bounds, stay in `{D1}` and this table's CSV)."
        )
    table = side_by_side(
        "tableD1_logistic",
        "Table D1. Logistic trajectory fits: least squares [bootstrap CI] beside the posterior",
        keys,
        ls,
        pe,
        ("LS", "posterior" + (questions.FIXED_SCALE if b.fixed_scale() else "")),
        [D1] + ([src] if src else []),
        notes,
        extra_base={c: (d1.header(c), base[c]) for c in ("r2", "status")},
    )
    return blank_cells(table, no_turn, ls_columns(table, d1.header("r2")))


def ls_columns(table: ReportTable, r2_header: str) -> list[int]:
    """Positions of Table D1's least-squares cells in its display: the first column of each
    quantity's header group (the LS estimate [CI]) and the R² column."""
    pos, out = 0, []
    for label, n in table.groups or [("", 1)] + [(q, 1) for q in LOGISTIC]:
        if label in ("L", "k", "t50"):
            out.append(pos)
        pos += n
    cols = list(table.display.columns)
    return out + ([cols.index(r2_header)] if r2_header in cols else [])


def blank_cells(table: ReportTable, rows: np.ndarray, cols: list[int]) -> ReportTable:
    """``table`` with the display cells ``rows`` x ``cols`` blank (its data, the CSV, keep
    every number)."""
    if rows.any() and cols:
        disp = table.display.copy()
        disp.iloc[np.flatnonzero(rows), cols] = ""
        table.display = disp
    return table


def _posterior_band(b: Builder, tt: np.ndarray, floor: float):
    """``{model: (x, low, median, high)}`` of the chosen model's trajectory (logistic curve over
    ``tt`` from the draws, else the latent stage), and its source; (None, None) without one."""
    if b.post is None:
        return None, None
    key = "models/{fit}/posterior.nc"
    if (tree := b.run.table(key, b.post)) is None:
        return None, None
    post = tree["posterior"].to_dataset()
    shape = b.run.config_value("model.trajectory", "logistic") in (None, "logistic")
    q = (1 - b.cfg.ci_prob) / 2
    if shape and all(v in post for v in LOGISTIC):
        stacked = {
            v: post[v].stack(s=("chain", "draw")).transpose(MODEL, "s").values for v in LOGISTIC
        }
        n = stacked["L"].shape[1]
        idx = np.linspace(0, n - 1, min(n, 1000)).astype(int)
        band = {}
        for i, m in enumerate(post[MODEL].values):
            L, k, t50 = (stacked[v][i, idx][:, None] for v in LOGISTIC)
            # the latent stage, drawn on the 1-4 rating scale it is read on (caption says so)
            curves = np.clip(logistic(tt[None, :], L, k, t50, floor), 1.0, 4.0)
            band[str(m)] = (tt, *np.quantile(curves, [q, 0.5, 1 - q], axis=0))
    elif "stage" in post:
        stage = post["stage"]
        lo, hi = (x.clip(1.0, 4.0) for x in interval(stage, b.cfg.ci_prob))
        med = stage.median(("chain", "draw")).clip(1.0, 4.0)
        x = stage[DAY].values.astype(float)
        band = {
            str(m): (
                x,
                lo.sel({MODEL: m}).values,
                med.sel({MODEL: m}).values,
                hi.sel({MODEL: m}).values,
            )
            for m in stage[MODEL].values
        }
    else:
        return None, None
    return band, b.run.source(key, b.post)


def figure1(b: Builder) -> tuple[list[Path], list[str]]:
    """Figure 1: per model, rater scores (points), consensus (squares), least-squares logistic
    curve (black) and the posterior band of the trajectory (grey, ``ci_prob`` ETI)."""
    import matplotlib.pyplot as plt

    ds, cons = b.run.study, b.run.table(CONSENSUS)
    if ds is None:
        raise MissingInput("Figure 1 needs study.nc")
    models, days = [str(m) for m in ds[MODEL].values], ds[DAY].values.astype(float)
    sources = ["study.nc"] + ([CONSENSUS] if cons is not None else [])
    d1 = b.run.table(D1)
    if d1 is not None:
        sources.append(D1)
    floor = float(b.run.config_value("baselines.logistic_floor") or BaselinesConfig.logistic_floor)
    tt = np.linspace(days.min(), days.max(), 121)
    band, band_src = _posterior_band(b, tt, floor)
    pmean, pmean_src = b.posterior("consensus_posterior.csv")
    sources += [s for s in (band_src, pmean_src) if s]
    ncols = min(5, max(len(models), 1))
    nrows = math.ceil(len(models) / ncols)
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
            draw_rater_scores(ax, ds["recognition"].sel({MODEL: m}), days)
            if band is not None and m in band:
                draw_posterior_band(ax, band[m], b.cfg.ci_prob)
            if pmean is not None:
                draw_posterior_mean(ax, pmean[pmean["model"] == m])
            if cons is not None:
                draw_consensus(ax, cons["recognition"].sel({MODEL: m}))
            if d1 is not None:
                draw_logistic_fit(ax, d1.set_index("model").loc[m], tt, floor)
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
        shared_legend(fig, axes, loc="lower center", bbox_to_anchor=(0.5, -0.01))
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        paths = b.save(fig, "figure1_trajectories")
    return paths, sources


FIGURE1_CAPTION = (
    "Consensus recognition-stage trajectories of every model (squares), the raters' scores "
    "(grey points, offset per rater), the least-squares logistic fit (black line) and, where a "
    "Bayesian model was fitted, its posterior median (dashed), {ci:.0%} band (grey) and posterior "
    "mean stage per day (dotted)"
)


def section_d(b: Builder) -> Section:
    s = Section("D", "D. Logistic trajectory fits")
    if not b.run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "Table D1"))
    s.add(*b.post_warning("Table D1"))
    s.add(*b.one_table("Table D1", lambda: table_d1(b), b.missing(D1, "Table D1")))
    if b.post is None:
        s.add(b.not_run("models", "the posterior column of Table D1"))
    return s


def draw_rater_scores(ax: Any, rec: Any, days: np.ndarray) -> None:
    """Each rater's scores of one model, jittered sideways so that raters do not overlap."""
    nr = rec.sizes[RATER]
    for j in range(nr):
        ax.plot(
            days + (j - (nr - 1) / 2) * 0.12,
            rec.isel({RATER: j}).values,
            ls="none",
            marker="o",
            ms=2.2,
            color="#a8a8a8",
            alpha=0.8,
            zorder=1,
            label="rater scores" if j == 0 else None,
        )


def draw_posterior_band(ax: Any, band: tuple, ci_prob: float) -> None:
    """The posterior band of one model's trajectory and its median."""
    x, lo, med, hi = band
    ax.fill_between(x, lo, hi, color=BAND, lw=0, zorder=0, label=f"posterior {ci_prob:.0%} band")
    ax.plot(
        x,
        med,
        color=GREYS[1],
        ls="--",
        marker="none",
        lw=1.2,
        zorder=2,
        label="posterior median",
    )


def draw_posterior_mean(ax: Any, g: pd.DataFrame) -> None:
    """The posterior mean stage per day of one model."""
    ax.plot(
        g["day"],
        g["mean"],
        color=GREYS[1],
        ls=":",
        marker="none",
        lw=1.3,
        zorder=2,
        label="posterior mean stage",
    )


def draw_consensus(ax: Any, c: Any) -> None:
    """The raters' consensus score per day of one model."""
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


def draw_logistic_fit(ax: Any, r: pd.Series, tt: np.ndarray, floor: float) -> None:
    """The least-squares logistic curve of one model, when all its parameters are finite."""
    if np.all(np.isfinite([r["L"], r["k"], r["t50"]])):
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
