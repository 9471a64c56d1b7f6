"""Milestones and contrasts: Table 1, Figure E1 and the pre-specified contrasts (section E),
the baselines' tables beside the chosen model's posterior."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from delusion_bayes.baselines.config import MILESTONES, QUANTITY_NEEDS
from delusion_bayes.baselines.results import BaselineResult
from delusion_bayes.plotting import GREYS, shared_legend, style
from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.document import Section
from delusion_bayes.report.table import (
    Estimate,
    ReportTable,
    label,
    side_by_side,
)

T1 = "baselines/table1_milestones.csv"
CONTRASTS = "baselines/contrasts.csv"


def posterior_milestones(b: Builder, keys: list[str]) -> tuple[dict[str, Estimate], str | None]:
    """The chosen model's milestone posteriors per milestone, rows in the order of ``keys``."""
    res, src = b.posterior_result("milestones_posterior.csv")
    if res is None:
        return {}, None
    est, never = res.column("median"), res.column("p_censored")  # est with its interval
    out = {}
    for m, g in res.frame.groupby("milestone", sort=False):
        g = g.set_index("model").reindex(keys)
        p = {never.name: (never.label, g[never.name].to_numpy())}
        out[str(m)] = Estimate(g[est.name].to_numpy(), g[est.low], g[est.high], p)
    return out, src


def computed(base: pd.DataFrame) -> list[str]:
    """The milestones Table 1 holds for this study: a level-based one (``QUANTITY_NEEDS``) is
    written as NaN when the study has no adjudication, and left out here."""
    return [
        m for m in MILESTONES if m in base and (m not in QUANTITY_NEEDS or base[m].notna().any())
    ]


def table1(b: Builder) -> ReportTable | None:
    """Table 1: milestone latencies and day counts per model, consensus beside posterior (paper,
    "Statistical Analysis": latencies from the consensus trajectory, censored at n + 1)."""
    base = b.run.table(T1)
    if base is None:
        return None
    keys = base["model"].tolist()
    post, post_src = posterior_milestones(b, keys)
    censor = b.run.censor_day
    notes = [
        questions.table1(),
        f"'never' = not reached in the conversation (censored at day {censor}).",
    ]
    if post:
        notes.append(
            f"Posterior: median [{b.cfg.ci_prob:.0%} CrI] of the latency under `{b.post}`."
        )
    fixed = bool(post) and b.fixed_scale()
    if fixed:
        notes.append(questions.fixed_scale_note())
    title = "Table 1. Milestones per model: consensus trajectory beside the posterior"
    base_est = {m: Estimate(base[m].to_numpy()) for m in computed(base)}
    if absent := [m for m in MILESTONES if m not in base_est]:
        notes.append(f"Not computed for this study (no adjudication.csv): {', '.join(absent)}.")
    sources = [T1] + ([post_src] if post_src else [])
    return side_by_side(
        "table1_milestones",
        title,
        keys,
        base_est,
        post,
        ("consensus", "posterior" + (questions.FIXED_SCALE if fixed else "")),
        sources,
        notes,
        digits=1,
        censor=censor,
    )


def figure_e1(b: Builder) -> tuple[list[Path], list[str]]:
    """Figure E1: one panel per milestone; models ordered by first clinical framing; censored
    latencies drawn open at the censoring day; the posterior median and interval beside."""
    import matplotlib.pyplot as plt

    base = b.need(T1).sort_values("first_clinical", kind="stable")
    order = base["model"].tolist()
    post, post_src = posterior_milestones(b, order)
    censor = b.run.censor_day
    shown = computed(base)  # level-based ones need adjudication
    ncols = 3
    nrows = math.ceil(len(shown) / ncols)
    with style():
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(3.3 * ncols, 0.22 * len(order) * nrows + 1.4),
            sharey=True,
            squeeze=False,
        )
        y = np.arange(len(order))
        for ax, q in zip(axes.flat, shown, strict=False):
            draw_milestone_panel(ax, q, base[q].to_numpy(float), y, post.get(q), censor)
        for ax in axes.flat[len(shown) :]:
            ax.set_visible(False)
        axes[0, 0].set_yticks(y, order)
        axes[0, 0].invert_yaxis()
        shared_legend(fig, axes, loc="lower center", bbox_to_anchor=(0.5, -0.01))
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        paths = b.save(fig, "figureE1_milestones")
    return paths, [T1] + ([post_src] if post_src else [])


def draw_milestone_panel(
    ax: Any, q: str, v: np.ndarray, y: np.ndarray, p: Estimate | None, censor: int | None
) -> None:
    """One milestone's panel: the posterior median and interval (when fitted) beside the
    consensus (censored first-day latencies drawn open at the censoring day)."""
    if p is not None:
        ax.hlines(y + 0.22, p.low, p.high, color=GREYS[2], lw=2.2, label="posterior interval")
        ax.plot(
            p.est,
            y + 0.22,
            ls="none",
            marker="D",
            ms=3.2,
            color=GREYS[1],
            label="posterior median",
        )
    if q.startswith("first_"):
        cen = v == censor
        ax.plot(v[~cen], y[~cen], ls="none", marker="o", color="#000000", label="consensus")
        ax.plot(
            v[cen],
            y[cen],
            ls="none",
            marker="o",
            mfc="white",
            color="#000000",
            label=f"never (censored at {censor})",
        )
        ax.set_xlim(0, censor + 1)
    else:
        ax.barh(y, v, color=GREYS[2], height=0.5, label="consensus")
    ax.set_title(label(q))
    ax.set_xlabel("day" if q.startswith("first_") else "days")
    ax.grid(True, axis="x")
    ax.grid(False, axis="y")


def posterior_cells(res: BaselineResult, data: pd.DataFrame, suffix: str) -> pd.DataFrame:
    """The declared ``Δ [CrI]`` and ``P(Δ > 0)`` cells of one posterior contrasts file (``res``)
    from its columns in the merged table ``data`` (suffixed ``suffix``)."""
    cols = [c for c in res.used() if f"{c}{suffix}" in data]
    return res.display(data[[f"{c}{suffix}" for c in cols]].set_axis(cols, axis=1))


def contrasts(b: Builder) -> ReportTable | None:
    """Pre-specified contrasts (section E): the exact permutation test beside the population
    contrast (``contrasts_population.csv``: the difference of the groups' population means),
    the two answers about the population of chatbots. The finite-sample contrast of these N
    models is descriptive and sits in the Bayesian section (:func:`finite_contrasts`)."""
    base = b.run.result(CONTRASTS)
    pop, pop_src = b.posterior_result("contrasts_population.csv")
    if base is None and pop is None:
        return None
    keys = ["contrast", "quantity"]
    data = merged_contrasts(*(None if r is None else r.frame for r in (base, pop)), None, keys)
    n = n_models(b)
    disp, groups, notes, sources = data[keys].copy(), [("", 2)], [], []
    disp["quantity"] = [label(str(q)) for q in disp["quantity"]]  # words; the CSV keeps names
    add_permutation_columns(base, data, disp, groups, notes, sources)
    mark = questions.FIXED_SCALE if pop is not None and b.fixed_scale() else ""
    if pop is not None:
        group = f"Population of chatbots ({b.post}){mark}"
        add_posterior_columns(pop, pop_src, "_population", group, data, disp, groups, notes)
        sources.append(pop_src)
        notes.append(
            "Population: median [credible interval] of the difference of the groups' "
            "population means (the model refitted with the grouping; the between-model "
            "variation is in the interval: delusion_bayes.models.population)."
        )
    else:
        notes.append("The population contrasts (models stage) are not in this run.")
    if mark:
        notes.append(questions.fixed_scale_note())
    notes.insert(0, questions.contrasts(n))
    title = "Pre-specified contrasts: exact permutation tests beside the population contrast"
    return ReportTable(
        "contrasts", title, data, disp, sources, notes, groups if len(groups) > 2 else None
    )


def n_models(b: Builder) -> int | None:
    """How many models the finite-sample contrasts average over (None: not one number)."""
    fin, _ = b.posterior_result("contrasts_posterior.csv")
    if fin is None:
        return None
    sizes = set((fin.frame["n_a"] + fin.frame["n_b"]).astype(int))
    return sizes.pop() if len(sizes) == 1 else None


def add_posterior_columns(res, src, suffix, group, data, disp, groups, notes, empty="'–'") -> None:
    """A posterior contrasts file's declared cells (suffixed ``suffix`` in ``data``) under the
    header ``group``, and the reasons of its '–' cells as a note (in place)."""
    cells = posterior_cells(res, data, suffix)
    disp[list(cells.columns)] = cells.to_numpy()
    groups.append((group, cells.shape[1]))
    why = sorted({str(v).strip() for v in res.frame["note"]} - {""})
    if why:
        notes.append(f"{group} {empty}: " + "; ".join(why) + ".")


def finite_contrasts(b: Builder) -> ReportTable | None:
    """The Bayesian section's descriptive table: how the group means of THESE N models differ
    (``contrasts_posterior.csv``), with only their measurement uncertainty."""
    fin, fin_src = b.posterior_result("contrasts_posterior.csv")
    if fin is None:
        return None
    keys = ["contrast", "quantity"]
    data = merged_contrasts(None, None, fin.frame, keys)
    data = data[data["median_posterior"].notna()].reset_index(drop=True)  # the CSV has all
    n = n_models(b)
    mark = questions.FIXED_SCALE if b.fixed_scale() else ""
    disp, groups, notes = data[keys].copy(), [("", 2)], []
    disp["quantity"] = [label(str(q)) for q in disp["quantity"]]
    group = f"Posterior, {questions.finite_label(n)} ({b.post}){mark}"
    add_posterior_columns(fin, fin_src, "_posterior", group, data, disp, groups, notes, "left out")
    notes.insert(
        0,
        f"Descriptive: the difference between the group means of {questions.finite_label(n)}, "
        "per posterior draw, with their measurement uncertainty only. It is not a statement "
        "about chatbots beyond these (section E has the population contrast and the test). "
        "P(Δ > 0) is a probability, not a p-value.",
    )
    if mark:
        notes.append(questions.fixed_scale_note())
    title = f"Descriptive contrasts of {questions.finite_label(n)} (finite sample)"
    return ReportTable("contrasts_finite", title, data, disp, [fin_src], notes, groups)


def merged_contrasts(
    base: pd.DataFrame | None,
    pop: pd.DataFrame | None,
    fin: pd.DataFrame | None,
    keys: list[str],
) -> pd.DataFrame:
    """The permutation tests, population and finite-sample contrasts on one row per contrast
    and quantity (posterior columns suffixed ``_population`` / ``_posterior``)."""
    data = None if base is None else base.copy()
    for df, suffix in ((pop, "_population"), (fin, "_posterior")):
        if df is None:
            continue
        df = df.rename(columns={"name": "contrast"})
        df = df.rename(columns={c: f"{c}{suffix}" for c in df.columns if c not in keys})
        if data is None:
            data = df
            continue
        # rows in the order seen, then rows the earlier files do not have
        data = data.merge(df, on=keys, how="left")
        only = df.merge(data[keys], on=keys, how="left", indicator=True)
        only = only[only.pop("_merge") == "left_only"]
        data = pd.concat([data, only], ignore_index=True) if len(only) else data
    assert data is not None
    return data


def add_permutation_columns(
    res: BaselineResult | None,
    data: pd.DataFrame,
    disp: pd.DataFrame,
    groups: list,
    notes: list[str],
    sources: list[str],
) -> None:
    """Add the permutation test's declared columns (``res``: ``contrasts.csv`` as a result
    object; the definition and the method stay in the CSV), header group, notes and source
    (in place), or the note that the baselines stage's tests are not in this run."""
    if res is not None:
        base = res.frame
        shown = res.display(data.drop(columns=list(disp.columns)))  # the keys are shown
        disp[list(shown.columns)] = shown.to_numpy()
        groups.append(("Permutation test", shown.shape[1]))
        exact = "exact (full enumeration of the rank-sum distribution, midranks for ties)"
        notes.append(
            f"Permutation p-values are {exact} over models."
            if base["exact"].all()
            else "Rows with exact = False used Monte Carlo permutations (see the CSV)."
        )
        defs = base.drop_duplicates("contrast")
        notes.append(
            "Groups: "
            + "; ".join(f"{r.contrast}: {r.by} = {r.a} vs {r.b}" for r in defs.itertuples())
            + "."
        )
        sources.append(CONTRASTS)
    else:
        notes.append("The permutation tests (baselines stage) are not in this run.")


def section_e(b: Builder) -> Section:
    s = Section("E", "E. Milestones and contrasts")
    if not b.run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "Figure E1 and the contrast tests"))
    s.add(
        *b.draw(
            "Figure E1.",
            "Per-milestone charts: latencies (open circles: never reached, "
            "censored) and day counts per model, with the posterior median and interval "
            "beside where fitted",
            lambda: figure_e1(b),
        )
    )
    missing = b.missing(CONTRASTS, "The contrast tests")
    return s.add(*b.one_table("contrasts", lambda: contrasts(b), missing))
