"""Reliability (section C): Table C1 and the rater model's posterior reliability beside it."""

from __future__ import annotations

import pandas as pd

from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.document import Note, Section
from delusion_bayes.report.table import ReportTable, display_frame, fmt_interval

C1 = "baselines/tableC1_reliability.csv"


def table_c1(b: Builder) -> ReportTable | None:
    """Table C1: Krippendorff's alpha [CI], quadratic-weighted kappa over rater pairs, percent
    agreement, ICC(2,1)/ICC(2,k), as the baselines wrote it (columns, headers and formats as
    the results contract declares them; any further column as written)."""
    res = b.run.result(C1)
    if res is None:
        return None
    df = res.frame
    disp = res.display()
    rest = [c for c in df.columns if c not in res.used()]
    if rest:
        extra = display_frame(df[rest], 3)
        disp[[res.header(c, c.replace("_", " ")) for c in rest]] = extra.to_numpy()
    note = (
        "α: Krippendorff's alpha [bootstrap CI]; κ: quadratic-weighted kappa, mean (min–max) "
        "over rater pairs; ICC: two-way random effects (Shrout–Fleiss ICC(2,1), ICC(2,k))."
    )
    return ReportTable("tableC1_reliability", res.title, df, disp, [C1], [note])


#: posterior quantity -> (level, label, baseline statistics of Table C1 beside it)
LEVELS = {
    "reliability_single": ("single", "One rater", (("alpha", "α"), ("icc2_1", "ICC(2,1)"))),
    "reliability_consensus": ("consensus", "Consensus of the k raters", (("icc2_k", "ICC(2,k)"),)),
}


def posterior_reliability(b: Builder) -> ReportTable | None:
    """α/ICC (Table C1, recognition) beside the chosen model's posterior reliability."""
    res, src = b.posterior_result("reliability_posterior.csv")
    if res is None:
        return None
    post, est = res.frame, res.column("median")
    base = b.run.table(C1)
    brow = None if base is None else base.set_index("variable").loc["recognition"]
    rows, cells = [], []
    for r in post.itertuples():
        level, _, stats = LEVELS[r.quantity]
        row = {"variable": "recognition", "level": level, "posterior_quantity": r.quantity}
        shown = []
        for stat, sym in stats if brow is not None else ():
            row[stat] = brow[stat]
            if stat == "alpha" and "alpha_ci_low" in brow:
                row["alpha_low"], row["alpha_high"] = brow["alpha_ci_low"], brow["alpha_ci_high"]
            lo, hi = (
                (row.get("alpha_low"), row.get("alpha_high")) if stat == "alpha" else (None, None)
            )
            shown.append(f"{sym} = " + fmt_interval(brow[stat], lo, hi, 3))
        row.update(
            posterior=getattr(r, est.name),
            posterior_low=getattr(r, est.low),
            posterior_high=getattr(r, est.high),
        )
        rows.append(row)
        cells.append("; ".join(shown) or "–")
    data = pd.DataFrame(rows)
    disp = pd.DataFrame(
        {
            "Variable": data["variable"],
            "Reliability of": [LEVELS[q][1] for q in data["posterior_quantity"]],
            "Baseline (Table C1) [95% CI]": cells,
            res.header("quantity"): data["posterior_quantity"],
            est.label: [
                fmt_interval(e, lo, hi, est.digits)
                for e, lo, hi in zip(
                    data["posterior"], data["posterior_low"], data["posterior_high"], strict=True
                )
            ],
        }
    )
    notes = [
        questions.table_c1(),
        "Posterior reliability of the rater model on the latent scale (ICC analogue): one "
        "rater = between-model-day variance over total variance; consensus = the same for "
        "the mean of the k raters. Set beside α and ICC(2,1), and beside ICC(2,k).",
        questions.reliability_bias_note(),
    ]
    if base is None:
        notes.append("Table C1 (baselines) is not in this run.")
    title = "Table C1 (Bayesian). Inter-rater reliability: α and ICC beside the posterior"
    sources = ([C1] if base is not None else []) + [src]
    return ReportTable("tableC1_posterior_reliability", title, data, disp, sources, notes)


def section_c(b: Builder) -> Section:
    s = Section("C", "C. Reliability")
    if not b.run.stage("baselines").ran:
        s.add(b.not_run("baselines", "Table C1"))
    else:
        s.add(*b.one_table("Table C1", lambda: table_c1(b), b.missing(C1, "Table C1")))
    if not b.run.stage("models").ran:
        return s.add(b.not_run("models", "the posterior reliability of the rater model"))
    missing = Note(
        "notrun",
        "The chosen model wrote no posterior reliability table "
        "(`models/<fit>/reliability_posterior.csv`).",
    )
    return s.add(*b.one_table("posterior reliability", lambda: posterior_reliability(b), missing))
