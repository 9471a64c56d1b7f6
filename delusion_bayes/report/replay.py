"""The replay study's section (DelusionEval): prevalence and deltas per model x category, the
Bayesian prevalence beside the bootstrap, then every other replay table and the stage's figures.
"""

from __future__ import annotations

import pandas as pd

from delusion_bayes import results
from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder, capital
from delusion_bayes.report.document import Note, Section
from delusion_bayes.report.table import ReportTable, fmt_interval, fmt_num

PREVALENCE = "replay/prevalence.csv"
DELTAS = "replay/deltas.csv"
BAYES = "replay/bayes_prevalence.csv"
GATE = "replay/bayes_diagnostics.json"
#: titles of the replay tables, in document order
TITLES = {
    PREVALENCE: "Prevalence per model × category and code (cluster bootstrap CIs)",
    BAYES: "Posterior prevalence beside the bootstrap CIs (Bayesian model)",
    DELTAS: "Each model minus the original transcript (paired resamples)",
    "replay/cluster_bootstrap.csv": (
        "Category CIs under every resampling scheme, width relative to i.i.d."
    ),
    "replay/lopo.csv": "Leave-one-participant-out prevalence and deltas",
    "replay/family.csv": "Model-family comparison",
    "replay/context_depth.csv": "Prevalence per context-depth bin",
    "replay/context_depth_lpm.csv": "Linear probability model of context depth",
    "replay/onset.csv": "Onset and persistence over the user turns of a window",
    "replay/turn_profile.csv": "Prevalence by user turn",
}


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


def bayes_table(b: Builder) -> ReportTable | None:
    """Posterior prevalence beside the bootstrap estimate, category level."""
    df = b.run.table(BAYES)
    if df is None:
        return None
    rows = df[df["quantity"] == "prevalence"]
    if (rows["level"] == "category").any():
        rows = rows[rows["level"] == "category"]
    rows = rows.reset_index(drop=True)
    disp = pd.DataFrame(
        {
            "Model": rows["model"],
            "Category": rows["label"].str.replace("_", " "),
            "Bootstrap [95% CI]": [
                fmt_interval(e, lo, hi, 3)
                for e, lo, hi in zip(
                    rows["boot_estimate"], rows["boot_ci_low"], rows["boot_ci_high"], strict=True
                )
            ],
            "Posterior [CrI]": [
                fmt_interval(e, lo, hi, 3)
                for e, lo, hi in zip(rows["mean"], rows["ci_low"], rows["ci_high"], strict=True)
            ],
        }
    )
    if "truth" in rows and rows["truth"].notna().any():
        disp["Truth (simulated)"] = [fmt_num(v, 3) for v in rows["truth"]]
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
        ("Bayesian prevalence", lambda: bayes_table(b)),
    )
    for what, make in headline:
        made = b.attempt(f"replay {what}", lambda make=make: [make()])
        if made[0] is not None:
            s.add(made[0] if isinstance(made[0], Note) else b.table(made[0]))
    declared = [k for k, f in results.FILES.items() if f.stage == "replay" and f.kind == "csv"]
    for key in sorted(declared, key=lambda k: list(TITLES).index(k) if k in TITLES else 99):
        if key not in b.used and (b.run.path / key).is_file():
            s.add(*b.attempt(key, lambda key=key: b.generic(key, title=TITLES.get(key))))
    missing = [k for k in TITLES if not (b.run.path / k).is_file()]
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
