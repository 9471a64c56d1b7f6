"""Computational measures: Figures 3 and 4 and their data, and the text stage's other tables."""

from __future__ import annotations

from pathlib import Path

from delusion_bayes import results
from delusion_bayes.plotting import GREYS, series_style, short_label, style
from delusion_bayes.report.builder import Builder, MissingInput
from delusion_bayes.report.document import Note, Section
from delusion_bayes.report.table import ReportTable, display_frame, fmt_num, fmt_p

MEANS = "text/model_means.csv"
CORR = "text/correlations.csv"
TURNS = "text/turn_contrast.csv"


def level_b_correlation(b: Builder) -> tuple[float, float] | None:
    """``(rho, p)`` of mean entrainment with the Level-B day count (``text/correlations.csv``)."""
    df = b.run.table(CORR)
    if df is None:
        return None
    row = df[(df["metric"] == "entrainment") & (df["against"] == "days_level_b")]
    return None if row.empty else (float(row["rho"].iloc[0]), float(row["p"].iloc[0]))


def _means(b: Builder):
    df = b.need(MEANS)
    if "days_level_b" not in df:
        raise MissingInput(f"{MEANS} has no days_level_b (the study has no level_b)")
    return df


def figure3(b: Builder) -> tuple[list[Path], list[str]]:
    """Figure 3: mean entrainment vs the number of Level-B days per model."""
    import matplotlib.pyplot as plt

    df, corr = _means(b), level_b_correlation(b)
    with style():
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        ax.plot(df["days_level_b"], df["entrainment_mean"], ls="none", marker="o", color="#000000")
        for r in df.itertuples():
            ax.annotate(
                short_label(r.model),
                (r.days_level_b, r.entrainment_mean),
                fontsize=6.5,
                xytext=(3, 2),
                textcoords="offset points",
                color=GREYS[1],
            )
        rho = f" (Spearman ρ = {corr[0]:.2f})" if corr is not None else ""
        ax.set_title("Entrainment vs Level-B days" + rho)
        ax.set_xlabel("days with a Level-B recommendation")
        ax.set_ylabel("mean entrainment")
        fig.tight_layout()
        paths = b.save(fig, "figure3_entrainment_level_b")
    return paths, [MEANS] + ([CORR] if corr is not None else [])


def _modality_turns(b: Builder):
    df = b.need(TURNS)
    return df[df["metric"] == "modality"].drop(columns="metric").reset_index(drop=True)


def figure4(b: Builder) -> tuple[list[Path], list[str]]:
    """Figure 4: mean modality before vs from the clinical turn per escalating model."""
    import matplotlib.pyplot as plt

    d = _modality_turns(b).dropna(subset=["before", "after"])
    with style():
        fig, ax = plt.subplots(figsize=(4.6, 4.2))
        for i, r in enumerate(d.itertuples()):
            st = series_style(i)
            ax.plot(
                [0, 1],
                [r.before, r.after],
                color=st["color"],
                ls=st["linestyle"],
                marker=st["marker"],
            )
            ax.annotate(
                short_label(r.model),
                (1, r.after),
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
        paths = b.save(fig, "figure4_modality_turn")
    return paths, [TURNS]


def figure3_table(b: Builder) -> ReportTable:
    """The data of Figure 3, with the Spearman correlation in the note."""
    cols = ["model", "entrainment_mean", "entrainment_sd", "entrainment_n_days", "days_level_b"]
    data = _means(b)[cols]
    disp = display_frame(data, 3).set_axis(
        ["Model", "Mean entrainment", "entrainment sd", "entrainment n days", "Level-B days"],
        axis=1,
    )
    notes, sources = [], [MEANS]
    corr = level_b_correlation(b)
    if corr is not None:
        notes.append(
            f"Spearman ρ of mean entrainment with Level-B days = {fmt_num(corr[0], 3)} "
            f"(p = {fmt_p(corr[1])}), from {CORR}."
        )
        sources.append(CORR)
    title = "Figure 3 data. Mean entrainment per model and Level-B day count"
    return ReportTable("figure3_entrainment_level_b", title, data, disp, sources, notes)


def figure4_table(b: Builder) -> ReportTable:
    """The data of Figure 4: mean modality before vs from each model's clinical turn."""
    cols = ["model", "turn_day", "before", "after", "change", "n_before", "n_after"]
    data = _modality_turns(b)[cols]
    disp = display_frame(data, 3).set_axis(
        [
            "Model",
            "Turn day",
            "Before the turn",
            "From the turn",
            "Change",
            "Days before",
            "Days from",
        ],
        axis=1,
    )
    note = "Turn day: first day of clinical framing in the consensus; '–' = never turned."
    title = "Figure 4 data. Modality (boosters − hedges per sentence) at the clinical turn"
    return ReportTable("figure4_modality_turn", title, data, disp, [TURNS], [note])


FIGURES = (
    (
        "Figure 3.",
        figure3,
        "Mean entrainment per model against its number of Level-B days",
        "figure3_entrainment_level_b.png",
    ),
    (
        "Figure 4.",
        figure4,
        "Mean modality (boosters − hedges per sentence) on naive vs clinical days",
        "figure4_modality_turn.png",
    ),
)


def section_text(b: Builder) -> Section:
    s = Section("text", "Computational measures: entrainment and modality")
    text = b.run.stage("text")
    if not text.ran:
        return s.add(b.not_run("text", "Figures 3 and 4"))
    if text.headline.get("skipped"):
        skipped = text.index.get("skipped") or "no texts in the study"
        reason = (
            skipped
            if isinstance(skipped, str)
            else "; ".join(
                str(x.get("reason", x)) if isinstance(x, dict) else str(x) for x in skipped
            )
        )
        return s.add(Note("notrun", f"The text stage skipped its analyses: {reason}."))
    for title, draw, caption, own in FIGURES:
        made = b.draw(title, caption, lambda draw=draw: draw(b))
        if isinstance(made[0], Note) and text.has(own):  # the stage's own figure instead
            made = [b.stage_figure("text", own, title)]
        else:  # drawn by the report from the stage's table: the stage's copy is not repeated
            b.used.update({f"text/{own}", f"text/{own.replace('.png', '.pdf')}"})
        s.add(*made)
    for what, make in (("Figure 3 data", figure3_table), ("Figure 4 data", figure4_table)):
        s.add(*b.attempt(what, lambda make=make: [b.table(make(b))]))
    for key in (k for k, f in results.FILES.items() if f.stage == "text" and f.kind == "csv"):
        if key not in (MEANS, TURNS):  # the other tables as written (correlations too)
            s.add(*b.attempt(key, lambda key=key: b.generic(key)))
    if b.cfg.include_stage_figures:
        for rel in text.glob("**/*.png"):
            if f"text/{rel}" not in b.used:
                s.add(b.stage_figure("text", rel))
    return s
