"""Interventions: Table 2, Figure 2 and the naive-stage profiles (section F), from the baselines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from delusion_bayes.plotting import series_style, style
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.document import Section
from delusion_bayes.report.table import ReportTable, display_frame, fmt_num, fmt_p, label

T2 = "baselines/table2_interventions.csv"
F2 = "baselines/figure2_intensity_by_stage.csv"
F1 = "baselines/sectionF_naive_profiles.csv"


def table2(b: Builder) -> ReportTable | None:
    """Table 2: intervention profiles on stabilized-clinical (stage-4) days."""
    df = b.run.table(T2)
    if df is None:
        return None
    disp = display_frame(df, 2).set_axis(["Model", *map(label, df.columns[1:])], axis=1)
    note = "Mean intensity on the 1 (absent) – 3 (frequent) scale over each model's stage-4 days."
    title = "Table 2. Intervention profiles on stabilized-clinical (stage-4) days"
    return ReportTable("table2_interventions", title, df, disp, [T2], [note])


def figure2(b: Builder) -> tuple[list[Path], list[str]]:
    """Figure 2: mean intervention intensity by consensus stage, one line per intervention type
    (descriptive; model-days are serially dependent)."""
    import matplotlib.pyplot as plt

    df = b.need(F2)
    wide = df.pivot_table(index="stage", columns="intervention_type", values="mean", sort=False)
    rhos = df.dropna(subset=["rho"]).drop_duplicates("intervention_type")
    rhos = dict(zip(rhos["intervention_type"], rhos["rho"], strict=True))
    with style():
        fig, ax = plt.subplots(figsize=(5.6, 3.4))
        for i, col in enumerate(wide.columns):
            lab = label(col) + (f" (ρ = {rhos[col]:.2f})" if col in rhos else "")
            ax.plot(wide.index, wide[col].values, label=lab, **series_style(i))
        ax.set_xlabel("consensus recognition stage")
        ax.set_ylabel("mean intensity (1 absent – 3 frequent)")
        ax.set_xticks(sorted(set(np.round(wide.index))))
        ax.set_ylim(0.9, 3.1)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
        fig.tight_layout()
        return b.save(fig, "figure2_intensity_by_stage"), [F2]


def section_f_table(b: Builder) -> ReportTable | None:
    """Section F: Spearman rho of each intervention type with day in the never-turning models,
    one row per model and one column per type (``ρ (p)``); the CSV keeps the long table."""
    df = b.run.table(F1)
    if df is None:
        return None
    title = "Table F1. Naive-stage profiles: Spearman ρ of intervention intensity with day"
    if df.empty:
        note = "No model stayed naive for the whole study."
        return ReportTable("sectionF_naive_profiles", title, df, display_frame(df), [F1], [note])
    cell = {
        (r.model, r.intervention_type): fmt_num(r.rho, 2)
        + (f" ({fmt_p(r.pvalue)})" if pd.notna(r.pvalue) else "")
        for r in df.itertuples()
    }
    models = list(dict.fromkeys(df["model"]))
    disp = pd.DataFrame({"Model": models})
    for ty in dict.fromkeys(df["intervention_type"]):
        disp[label(ty)] = [cell.get((m, ty), "–") for m in models]
    note = (
        "Cells: ρ (p) over the days of each model that never reached clinical framing; "
        "descriptive (days are serially dependent)."
    )
    return ReportTable("sectionF_naive_profiles", title, df, disp, [F1], [note])


FIGURE2_CAPTION = (
    "Mean intervention intensity by consensus recognition stage (descriptive: "
    "model-days are serially dependent)"
)


def section_f(b: Builder) -> Section:
    s = Section("F", "F. Naive-stage profiles")
    if not b.run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "the naive-stage profiles"))
    return s.add(*b.one_table("Table F1", lambda: section_f_table(b), b.missing(F1, "Table F1")))
