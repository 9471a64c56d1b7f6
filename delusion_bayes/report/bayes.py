"""The Bayesian models' section: diagnostics verdicts, the PSIS-LOO comparison, then one
subsection per fitted model (its gate, failing parameters, tables not shown beside the baselines,
its diagnostic plots; not its sensitivity: :mod:`delusion_bayes.report.sensitivity`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from delusion_bayes import results
from delusion_bayes.plotting import style
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.document import FileList, Note, Paragraph, Section
from delusion_bayes.report.sensitivity import FILES as SENSITIVITY_FILES
from delusion_bayes.report.table import ReportTable, display_frame

COMPARISONS = (
    "models/comparison.csv",
    "models/comparison_by_rating.csv",
    "models/comparison_by_model_day.csv",
)
#: what one left-out point of a PSIS-LOO comparison is, by its ``unit`` column
LOO_UNIT_TITLES = {
    "model_day": "per left-out model-day, its latent stage integrated out",
    "rating": "per left-out rating, given the model-day's latent stage",
}
#: failing parameters listed in the document (all of them are in ``diagnostics.csv``)
WORST_PARAMETERS = 15


def comparison_title(df: pd.DataFrame) -> str:
    """``Model comparison (PSIS-LOO ...)`` naming the unit the table's ``unit`` column holds."""
    units = set(df["unit"])
    unit = units.pop() if len(units) == 1 else None
    return f"Model comparison (PSIS-LOO {LOO_UNIT_TITLES.get(unit, 'per ' + str(unit))})"


def comparison_plot(b: Builder) -> tuple[list[Path], list[str]]:
    """ELPD (PSIS-LOO) of the compared models with standard errors, from ``comparison.csv``."""
    import matplotlib.pyplot as plt

    d = b.need(COMPARISONS[0]).sort_values("elpd")
    with style():
        fig, ax = plt.subplots(figsize=(5.0, 0.45 * len(d) + 1.2))
        yy = np.arange(len(d))
        ax.errorbar(d["elpd"], yy, xerr=d["se"], ls="none", marker="o", color="#000000", capsize=3)
        ax.set_yticks(yy, d["model"].tolist())
        ax.set_xlabel("ELPD (PSIS-LOO), ± SE")
        ax.set_title("Model comparison")
        fig.tight_layout()
        return b.save(fig, "figure_model_comparison"), [COMPARISONS[0]]


def verdict_table(b: Builder) -> list[Any]:
    """The gate verdict of every fit as a table, with a warning per failed fit."""
    diag = b.diag
    if not diag.verdicts:
        return [Note("notrun", "No `models/<fit>/gate.json` found: no diagnostics verdict.")]
    vt = pd.DataFrame([vars(v) for v in diag.verdicts])  # model, passed, details, source
    disp = display_frame(vt)
    disp["passed"] = [
        "PASS" if v is True else "FAIL" if v is False else "unknown" for v in vt["passed"]
    ]
    sources = sorted({v.source for v in diag.verdicts})
    title = "Sampling diagnostics per fitted model"
    out: list[Any] = [b.table(ReportTable("diagnostics_verdicts", title, vt, disp, sources))]
    out += [
        Note(
            "warning",
            f"`{v.model}` FAILED its diagnostics: {v.details}. Do not interpret "
            "its posterior summaries.",
            "Diagnostics failed",
        )
        for v in diag.failed
    ]
    if not diag.failed and not diag.unknown:
        out.append(Note("ok", "Every fitted model passed its sampling diagnostics."))
    return out


def section_bayes(b: Builder) -> list[Section]:
    """The Bayesian section and one subsection per fitted model."""
    s = Section("bayes", "Bayesian models")
    models = b.run.stage("models")
    if not models.ran:
        return [s.add(b.not_run("models", "the Bayesian results"))]
    if b.post:
        s.add(
            Paragraph(
                f"The posterior columns beside the baselines (Tables 1, C1, D1, the "
                f"contrasts, Figures 1 and E1) are those of model `{b.post}` "
                f"(`models/{b.post}/`)."
            )
        )
    s.add(*verdict_table(b))
    from delusion_bayes.report.milestones import finite_contrasts

    key = "models/{fit}/contrasts_posterior.csv"
    if b.post and b.run.table(key, b.post) is not None:
        s.add(*b.one_table("contrasts_finite", lambda: finite_contrasts(b), None))
    for key in COMPARISONS:
        if (df := b.run.table(key)) is not None:
            s.add(
                *b.attempt(key, lambda key=key, df=df: b.generic(key, title=comparison_title(df)))
            )
    if b.run.table(COMPARISONS[0]) is not None:
        caption = "ELPD of the compared models"
        s.add(*b.draw("Model comparison.", caption, lambda: comparison_plot(b)))
    if b.cfg.include_stage_figures:
        for rel in models.glob("*.png"):
            s.add(b.stage_figure("models", rel))
    verdicts = {v.model: v for v in b.diag.verdicts}
    return [s] + [fit_section(b, name, verdicts.get(name)) for name in b.run.fits]


def fit_section(b: Builder, name: str, verdict) -> Section:
    """Subsection of one fitted model ``models/<name>/``."""
    s = Section(f"bayes-{name}", f"Model `{name}`", level=3)
    if verdict is not None and verdict.passed is False:
        s.add(
            Note(
                "warning",
                f"`{name}` FAILED its diagnostics: {verdict.details}.",
                "Diagnostics failed",
            )
        )
    elif verdict is not None and verdict.passed:
        s.add(Note("ok", f"`{name}` passed its diagnostics: {verdict.details}."))
    s.add(*b.attempt(f"models/{name}/diagnostics.csv", lambda: failing_parameters(b, name)))
    s.add(*loo_summary(b, name))
    shown, raw = [], []
    for key, f in results.FILES.items():
        fname = f.name.split("/")[-1]  # diagnostics and sensitivity: shown elsewhere
        if f.stage != "models" or "{fit}" not in key or f.kind != "csv":
            continue
        src = b.run.source(key, name)
        if fname in ("diagnostics.csv", *SENSITIVITY_FILES) or not (b.run.path / src).is_file():
            continue
        if src in b.used:
            shown.append(src)
            continue
        raw.append((src, f.title.format(fit=name) if f.title else f.meaning))
    if shown:
        listed = ", ".join(f"`{x}`" for x in shown)
        s.add(Paragraph(f"Shown in tables above: {listed}."))
    if raw:  # linked, not printed: each is a full table a reader opens when needed
        s.add(Paragraph(f"The other tables of `{name}` (CSV, one row per model or parameter):"))
        s.add(FileList(raw))
    pngs = [
        p
        for p in b.run.stage("models").glob(f"{name}/**/*.png")
        if f"models/{p}" not in b.used and p.split("/")[-1] not in SENSITIVITY_FILES
    ]
    if b.cfg.include_stage_figures and pngs:
        s.add(
            Paragraph(
                "Diagnostic plots as the models stage drew them (rank plots, posterior "
                "predictive checks, LOO Pareto-k):"
            )
        )
        s.add(*[b.stage_figure("models", rel) for rel in pngs])
    if not s.blocks:
        s.add(Note("notrun", f"`models/{name}/` holds no table or figure the report can show."))
    return s


def loo_summary(b: Builder, name: str) -> list[Any]:
    """One sentence per PSIS-LOO unit of ``models/<name>/loo.csv`` in words, and a warning when
    a left-out point's Pareto k exceeds az.loo's threshold (0.7 at 2,000+ draws, lower with
    fewer): there the importance-sampling estimate is unreliable and the comparison's ELPD for
    that point is not to be trusted."""
    key = "models/{fit}/loo.csv"
    df = b.run.table(key, name)
    if df is None or not len(df):
        return []
    b.used.add(b.run.source(key, name))
    out: list[Any] = []
    for r in df.itertuples():
        unit = LOO_UNIT_TITLES.get(str(r.unit), f"per {r.unit}")
        text = (
            f"Leave-one-out predictive fit ({unit}): expected log predictive density "
            f"{r.elpd_loo:.1f} (SE {r.se:.1f}) over {int(r.n_data_points)} points; effective "
            f"number of parameters {r.p_loo:.1f}."
        )
        bad = int(r.n_k_bad) + int(r.n_k_very_bad)
        if bad:
            out.append(
                Note(
                    "warning",
                    text + f" {bad} of {int(r.n_data_points)} points have Pareto k above "
                    f"{r.k_threshold:.2f} (largest {r.max_k:.2f}): their leave-one-out estimate "
                    "is unreliable (refit without them, or compare by K-fold, before reading "
                    "the ELPD).",
                    "Pareto k",
                )
            )
        else:
            out.append(Paragraph(text + f" Every Pareto k is at most {r.k_threshold:.2f}."))
    return out


def failing_parameters(b: Builder, name: str) -> list[Any]:
    """Per-parameter diagnostics: the failing rows as a table (all rows when short), the file
    linked otherwise."""
    key = "models/{fit}/diagnostics.csv"
    df, src = b.run.table(key, name), b.run.source(key, name)
    if df is None:
        return [b.missing(src, "Diagnostics")]
    if len(df) <= b.cfg.max_inline_rows:
        return b.generic(key, name, f"Per-parameter diagnostics of `{name}`")
    b.used.add(src)
    bad = df[~df["pass"].astype(bool)]
    out: list[Any] = [
        Paragraph(
            f"`{src}`: {len(df)} parameters, {len(bad)} failing the gate "
            "(open the CSV for all rows)."
        )
    ]
    if len(bad):
        worst = bad.sort_values(["r_hat", "ess_bulk"], ascending=[False, True])
        worst = worst.head(WORST_PARAMETERS)
        more = f" (the {len(worst)} worst of {len(bad)})" if len(bad) > len(worst) else ""
        title = f"Parameters of `{name}` failing the diagnostics gate{more}"
        out.append(
            b.table(
                ReportTable(
                    f"models_{name}_diagnostics_failing",
                    title,
                    worst,
                    display_frame(worst, 3),
                    [src],
                )
            )
        )
    return out
