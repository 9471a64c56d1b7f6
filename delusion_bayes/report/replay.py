"""The replay study's section (DelusionEval): prevalence and deltas per model x category, the
Bayesian prevalence beside the bootstrap, then every other replay table and the stage's figures.
"""

from __future__ import annotations

import pandas as pd

from delusion_bayes import results
from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder, capital
from delusion_bayes.report.document import Note, Section
from delusion_bayes.report.table import ReportTable, fmt_interval

PREVALENCE = "replay/prevalence.csv"
DELTAS = "replay/deltas.csv"
BAYES = "replay/bayes_prevalence.csv"
GATE = "replay/bayes_diagnostics.json"
#: the replay tables in document order (their titles: the results contract's)
ORDER = (
    PREVALENCE,
    BAYES,
    DELTAS,
    "replay/cluster_bootstrap.csv",
    "replay/lopo.csv",
    "replay/family.csv",
    "replay/context_depth.csv",
    "replay/context_depth_lpm.csv",
    "replay/onset.csv",
    "replay/turn_profile.csv",
)


def pivot(b: Builder, key: str, name: str, title: str, note: str) -> ReportTable | None:
    """A replay table's category rows as model × category, cells ``estimate [CI]``."""
    df = b.run.table(key)
    if df is None or not (df["level"] == "category").any():
        return None
    rows = df[df["level"] == "category"].reset_index(drop=True)
    cell = {
        (r.model, r.category): fmt_interval(r.estimate, r.ci_low, r.ci_high, 3)
        for r in rows.itertuples()
    }
    models = list(dict.fromkeys(rows["model"]))
    disp = pd.DataFrame({"Model": models})
    for c in dict.fromkeys(rows["category"]):
        disp[c.replace("_", " ")] = [cell.get((m, c), "–") for m in models]
    desc = b.run.stage("replay").describe(key.split("/", 1)[1])
    notes = [note] + ([capital(desc) + "."] if desc else [])
    return ReportTable(name, title, rows, disp, [key], notes)


def deltas_family(b: Builder) -> ReportTable | None:
    """The category deltas as one family of comparisons (issue 51): the pointwise and max-T
    simultaneous intervals, the raw bootstrap p, Holm's and BH's adjustments and the pooled
    P(sign error), with what each controls."""
    res = b.run.result(DELTAS)
    if res is None or "p_holm" not in res.frame or not (res.frame["level"] == "category").any():
        return None
    rows = res.frame[res.frame["level"] == "category"].reset_index(drop=True)
    disp = res.display(rows)
    m = int(rows["family_size"].max())
    notes = [
        f"{questions.PREFIX} simultaneous interval: where do all {m} deltas of the family lie at "
        "once (95% jointly, bootstrap max-T)? Holm: which deltas differ from 0 with a family-wise "
        "error of 5%? BH: which, with a false-discovery rate of 5%? P(sign error), pooled: after "
        "shrinking the family's deltas toward their common centre by their learned spread "
        "(partial pooling), how probable is it that the sign one would declare is wrong "
        "(declare where below 0.025)?",
        f"Family: the {m} category-level deltas of this run (replay.family="
        f"{rows['family'].iloc[0]}); the code-level deltas form their own family in the CSV.",
    ]
    title = "Replay: the deltas as one family of comparisons (category level)"
    return ReportTable("replay_deltas_family", title, rows, disp, [DELTAS], notes)


def bayes_table(b: Builder) -> ReportTable | None:
    """Posterior prevalence beside the bootstrap estimate, category level."""
    res = b.run.result(BAYES)
    if res is None:
        return None
    df = res.frame
    rows = df[df["quantity"] == "prevalence"]
    if (rows["level"] == "category").any():
        rows = rows[rows["level"] == "category"]
    rows = rows.reset_index(drop=True)
    simulated = "truth" in rows and rows["truth"].notna().any()
    disp = res.display(rows if simulated else rows.drop(columns="truth", errors="ignore"))
    title = "Replay: Bayesian prevalence beside the cluster bootstrap (category level)"
    note = "Posterior: mean [credible interval] of the hierarchical prevalence model."
    notes = [questions.replay_prevalence(), note]
    return ReportTable("replay_bayes_vs_bootstrap", title, rows, disp, [BAYES], notes)


def gate_note(b: Builder) -> Note | None:
    """The verdict of the Bayesian prevalence model (``replay/bayes_diagnostics.json``)."""
    d = b.run.table(GATE)
    if d is None:
        return None
    facts = ", ".join(
        f"{k.replace('_', ' ')} {v:.3g}"
        for k, v in d.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    )
    if not d["passed"]:
        return Note(
            "warning",
            "The Bayesian prevalence model FAILED its sampling diagnostics "
            f"({facts}); `bayes_prevalence.csv` is provisional.",
            "Diagnostics failed",
        )
    return Note("ok", f"The Bayesian prevalence model passed its diagnostics ({facts}).")


def section_replay(b: Builder) -> Section:
    s = Section("replay", "Replay study (DelusionEval)")
    rp = b.run.stage("replay")
    if not rp.ran:
        return s.add(b.not_run("replay", "the replay-study results"))
    gate = b.attempt("replay gate", lambda: [gate_note(b)])
    s.add(*[n for n in gate if n is not None])
    headline = (
        (
            "prevalence",
            lambda: pivot(
                b,
                PREVALENCE,
                "replay_prevalence_by_category",
                "Replay: prevalence per model and category [95% CI]",
                "Share of samples the judge flagged, pooled over each category's codes.",
            ),
        ),
        (
            "deltas",
            lambda: pivot(
                b,
                DELTAS,
                "replay_deltas_by_category",
                "Replay: each model minus the original transcript [95% CI]",
                "Differences in prevalence, paired resamples.",
            ),
        ),
        ("deltas family", lambda: deltas_family(b)),
        ("Bayesian prevalence", lambda: bayes_table(b)),
    )
    for what, make in headline:
        made = b.attempt(f"replay {what}", lambda make=make: [make()])
        if made[0] is not None:
            s.add(made[0] if isinstance(made[0], Note) else b.table(made[0]))
    declared = [k for k, f in results.FILES.items() if f.stage == "replay" and f.kind == "csv"]
    for key in sorted(declared, key=lambda k: ORDER.index(k) if k in ORDER else 99):
        if key not in b.used and (b.run.path / key).is_file():
            title = results.spec(key).title if key in ORDER else None
            s.add(*b.attempt(key, lambda key=key, title=title: b.generic(key, title=title)))
    missing = [k for k in ORDER if not (b.run.path / k).is_file()]
    if missing:
        s.add(
            Note(
                "notrun",
                "Not written by the replay stage in this run: "
                + ", ".join(f"`{k}`" for k in missing)
                + ".",
            )
        )
    if b.cfg.include_stage_figures:
        s.add(*[b.stage_figure("replay", rel) for rel in rp.glob("**/*.png")])
    return s
