"""The replicated study's section (many conversations per chatbot; issue 50): the chatbot x
behaviour table with its intervals and figure, the published-versus-recomputed check with the
rule of each chatbot, the failed judge turns, first occurrence, contrasts, and reliability and
the paper's milestones where the study has them.

Every number is read from the ``replicated`` stage's files through
:func:`delusion_bayes.baselines.replicated_files.read_table` (their declarations), never
recomputed. The section opens by saying whether the study is SIMULATED.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from delusion_bayes import results
from delusion_bayes.baselines.replicated import RULES
from delusion_bayes.baselines.replicated_files import read_table
from delusion_bayes.report import questions
from delusion_bayes.report.builder import Builder, capital
from delusion_bayes.report.document import FigureBlock, Note, Paragraph, Section
from delusion_bayes.report.table import ReportTable, fmt_interval, fmt_num, fmt_p

STAGE = "replicated"
#: the question line under each table: whom the numbers are about and how they were made
Q_MEANS = (
    f"{questions.PREFIX} about these chatbots over conversations like these: mean per judged "
    "turn, conversation-clustered bootstrap (categories, then their conversations)."
)
Q_PUBLISHED = (
    f"{questions.PREFIX} does the published leaderboard follow from the judged turns, and under "
    "which scoring rule? No uncertainty: a check of arithmetic."
)
Q_FAILED = (
    f"{questions.PREFIX} how many judged turns have no rating (a failed judge reply), left out "
    "of every mean instead of counted as 0?"
)
Q_FIRST = (
    f"{questions.PREFIX} about these chatbots over conversations like these: in what share of "
    "conversations does the behaviour occur, and by which turn (censored at the last judged "
    "turn + 1)? Conversation-clustered bootstrap."
)
Q_CONTRASTS = (
    f"{questions.PREFIX} about these conversations: is one chatbot's conversation mean different "
    "from another's beyond relabelling (permutation test, paired by prompt where every chatbot "
    "ran the same prompts)?"
)
Q_RELIABILITY = (
    f"{questions.PREFIX} how far do the raters of an item agree beyond chance over these judged "
    "turns (Krippendorff's alpha; bootstrap over turns)?"
)
Q_MILESTONES = (
    f"{questions.PREFIX} about these chatbots over conversations like these: in what share of "
    "conversations does the raters' median recognition reach the paper's milestones, and at "
    "which turn (censored at the last rated turn + 1)? Conversation-clustered bootstrap."
)
Q_BAYES = (
    f"{questions.PREFIX} about these chatbots, over conversations they might have: each "
    "chatbot's expected value per judged turn for a new conversation (behaviour model, "
    "posterior), beside the bootstrap of these conversations."
)
Q_BAYES_CONTRASTS = (
    f"{questions.PREFIX} about these chatbots, over conversations they might have: how much "
    "more of a behaviour does chatbot A show than B in a new conversation, and how sure are we "
    "that A is worse?"
)

Q_TRAJECTORIES = (
    f"{questions.PREFIX} about these chatbots, over conversations they might have: when does a "
    "new conversation's recognition turn (t50, first clinical framing), how likely is it never "
    "to reach clinical framing within the window, and how much do conversations differ "
    "(trajectory model with a conversation level, posterior)?"
)


def _src(name: str) -> str:
    return f"{STAGE}/{name}"


def _words(text: Any) -> str:
    return str(text).replace("_", " ")


def _ci(row: Any, est: str, lo: str, hi: str, digits: int = 3) -> str:
    return fmt_interval(getattr(row, est), getattr(row, lo), getattr(row, hi), digits)


def opening(b: Builder, index: dict[str, Any]) -> Paragraph:
    """The first line: SIMULATED (preset, seed) or where the data came from, and the rule."""
    source = b.run.config_value("data.source")
    attrs = _study_attrs(b.run.path)
    rule = (index.get("headline") or {}).get("rule", "")
    on_rule = f" Every chatbot is on one scoring rule: `{rule}`." if rule else ""
    if source == "simulate" or attrs.get("source") == "simulate":
        preset = b.run.config_value("data.preset") or attrs.get("preset", "")
        seed = b.run.config_value("data.seed", attrs.get("seed", ""))
        return Paragraph(
            f"SIMULATED replicated study (preset `{preset}`, seed {seed}): the numbers describe "
            f"the simulation, not real chatbots; its truth is in `study.nc` (`true_*`).{on_rule}"
        )
    path = b.run.config_value("data.path")
    where = f" read from `{path}`" if path else ""
    source = f" (source: {attrs['source']})" if attrs.get("source") else ""
    return Paragraph(f"Replicated study{where}{source}.{on_rule}")


def _study_attrs(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "study.nc"
    if not path.is_file():
        return {}
    import xarray as xr

    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return dict(ds.attrs)


def item_means_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    """Chatbots (rows, in the file's order) x behaviours: mean [CI]."""
    cell = {(r.model, r.item): _ci(r, "mean", "ci_low", "ci_high") for r in df.itertuples()}
    items = list(dict.fromkeys(df["item"]))
    models = list(dict.fromkeys(df["model"]))
    disp = pd.DataFrame({"Chatbot": models})
    for item in items:
        disp[capital(_words(item))] = [cell.get((m, item), "–") for m in models]
    disp["Conversations"] = [int(df.loc[df["model"] == m, "n_conversations"].max()) for m in models]
    disp["Turns without a rating"] = [
        int(df.loc[df["model"] == m, "n_turns_missing"].sum()) for m in models
    ]
    first = df.iloc[0]
    ci = f"{round(100 * float(first['ci_prob']))}%"
    note = (
        f"Mean per judged turn [{ci} interval] on rule `{first['rule']}`, "
        f"{first['cluster']} bootstrap of whole conversations ({int(first['n_boot'])} "
        "resamples); turns without a rating are left out and counted, never zeros."
    )
    title = f"Mean per judged turn per chatbot and behaviour [{ci} CI]"
    return ReportTable(
        "replicated_item_means", title, df, disp, [_src("item_means.csv")], [Q_MEANS, note]
    )


def published_table(b: Builder, df: pd.DataFrame) -> tuple[ReportTable, Paragraph]:
    """Published leaderboard means beside the recomputed ones, and the rule of each chatbot."""
    disp = pd.DataFrame(
        {
            "Chatbot": df["model"],
            "Behaviour": [capital(_words(i)) for i in df["item"]],
            "Published": [fmt_num(v, 3) for v in df["published"]],
            "Recomputed": [fmt_num(v, 3) for v in df["recomputed"]],
            "Rule": df["rule"],
            "Reproduced": ["yes" if v else "NO" for v in df["reproduced"]],
        }
    )
    beh = df[df["rule"] != "mean_final_judgement"]
    rules = []
    for model, g in beh.groupby("model", sort=False):
        rule = str(g["rule"].iloc[0])
        desc = RULES[rule].description if rule in RULES else rule
        verdict = "all reproduce" if g["reproduced"].all() else "NOT all reproduce"
        rules.append(
            f"`{model}`: rule `{rule}` ({desc}); {verdict}, largest difference "
            f"{fmt_num(g['abs_diff'].max(), 4)}"
        )
    title = "Published leaderboard means recomputed from the judged turns"
    note = (
        "Each chatbot's rule is the one under which its published row is reproduced (to the "
        "0.001 it is printed to); the leaderboard counts a failed judge reply as 0 here, as "
        "published."
    )
    t = ReportTable(
        "replicated_published_check", title, df, disp, [_src("published_check.csv")],
        [Q_PUBLISHED, note],
    )  # fmt: skip
    return t, Paragraph("Scoring rule per chatbot: " + "; ".join(rules) + ".")


def failed_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    disp = pd.DataFrame(
        {
            "Chatbot": df["model"],
            "Conversations": df["n_conversations"],
            "Judged turns": df["n_turns"],
            "Failed judge replies": df["n_judge_failed"],
            "Turns without a rating": df["n_turns_unscored"],
        }
    )
    title = "Judged turns without a rating per chatbot"
    return ReportTable(
        "replicated_judge_failed", title, df, disp, [_src("judge_failed.csv")], [Q_FAILED]
    )


def _first_cells(df: pd.DataFrame, what: str) -> pd.DataFrame:
    """``share [CI]`` and ``median turn [CI]`` cells of a first-occurrence-like summary."""
    median = [
        _ci(r, "median_first_turn", "median_ci_low", "median_ci_high", 1)
        + (" (censored)" if r.median_censored else "")
        for r in df.itertuples()
    ]
    return pd.DataFrame(
        {
            f"Conversations with {what} [CI]": [
                _ci(r, "share_occurring", "share_ci_low", "share_ci_high", 2)
                for r in df.itertuples()
            ],
            "Median turn [CI]": median,
            "Conversations": df["n_conversations"],
        }
    )


def first_occurrence_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    disp = pd.concat(
        [
            pd.DataFrame(
                {"Chatbot": df["model"], "Behaviour": [capital(_words(i)) for i in df["item"]]}
            ),
            _first_cells(df, "the behaviour"),
        ],
        axis=1,
    )
    title = "First turn with the behaviour per chatbot (share of conversations, median turn)"
    note = "(censored): half or more of the conversations never showed it; the median is a bound."
    return ReportTable(
        "replicated_first_occurrence", title, df, disp, [_src("first_occurrence_summary.csv")],
        [Q_FIRST, note],
    )  # fmt: skip


def contrasts_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    disp = pd.DataFrame(
        {
            "Behaviour": [capital(_words(i)) for i in df["item"]],
            "Chatbot A": df["a"],
            "Chatbot B": df["b"],
            "Mean A": [fmt_num(v, 3) for v in df["mean_a"]],
            "Mean B": [fmt_num(v, 3) for v in df["mean_b"]],
            "A − B": [fmt_num(v, 3) for v in df["diff"]],
            "p": [fmt_p(v) for v in df["pvalue"]],
            **{
                col.label: [fmt_p(v) for v in df[col.name]]
                for col in (results.HOLM, results.BH)
                if col.name in df
            },
            "Test": [
                ("paired by prompt, " if p else "") + ("exact" if e else "Monte Carlo")
                for p, e in zip(df["paired"], df["exact"], strict=True)
            ],
        }
    )
    title = "Chatbot contrasts on conversation means"
    note = (
        "Two-sided p-values; Holm (family-wise error) and BH (false-discovery rate) adjust them "
        "over the family of every chatbot pair x behaviour of this run."
        if "p_holm" in df
        else "Two-sided p-values, not adjusted for the number of contrasts."
    )
    return ReportTable(
        "replicated_contrasts", title, df, disp, [_src("contrasts.csv")], [Q_CONTRASTS, note]
    )


def bayes_means_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    """Per chatbot x behaviour: the posterior for a new conversation beside the bootstrap."""
    disp = pd.DataFrame(
        {
            "Chatbot": df["model"],
            "Behaviour": [capital(_words(i)) for i in df["item"]],
            "New conversation (posterior median [95% CrI])": [
                _ci(r, "median", "ci_low", "ci_high") for r in df.itertuples()
            ],
            "These conversations (bootstrap mean [95% CI])": [
                _ci(r, "boot_mean", "boot_ci_low", "boot_ci_high") for r in df.itertuples()
            ],
            "Between-conversation SD (logit)": [fmt_num(v, 2) for v in df["sd_conversation"]],
        }
    )
    first = df.iloc[0]
    title = "Each chatbot for a new conversation: behaviour model beside the bootstrap"
    note = (
        f"Behaviour model (`{first['likelihood']}` likelihood on rule `{first['rule']}`; "
        "chatbot -> conversation -> turn, turn trend per chatbot, judge severity; "
        "docs/dev/models.md "
        '"Judged behaviours"): the conversation effect integrated out, so the interval is '
        "about the chatbot, not these transcripts."
    )
    return ReportTable(
        "replicated_bayes_means", title, df, disp, [_src("bayes_item_means.csv")],
        [Q_BAYES, note],
    )  # fmt: skip


def bayes_contrasts_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    disp = pd.DataFrame(
        {
            "Behaviour": [capital(_words(i)) for i in df["item"]],
            "Chatbot A": df["a"],
            "Chatbot B": df["b"],
            "A − B [95% CrI]": [_ci(r, "diff", "ci_low", "ci_high") for r in df.itertuples()],
            "P(A worse)": [fmt_num(v, 3) for v in df["p_a_worse"]],
            "Worse when": df["worse_when"],
        }
    )
    title = "Chatbot contrasts for a new conversation (behaviour model)"
    note = "Worse: more of a harmful behaviour, less of a protective one (pushback, ...)."
    return ReportTable(
        "replicated_bayes_contrasts", title, df, disp, [_src("bayes_contrasts.csv")],
        [Q_BAYES_CONTRASTS, note],
    )  # fmt: skip


def reliability_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    disp = pd.DataFrame(
        {
            "Behaviour": [capital(_words(i)) for i in df["item"]],
            "Raters": df["n_raters"],
            "Rater kinds": df["rater_kinds"] if "rater_kinds" in df else "",
            "Judged turns": df["n_units"],
            "Krippendorff's α [95% CI]": [
                _ci(r, "alpha", "ci_low", "ci_high") for r in df.itertuples()
            ],
            "Level": df["level"],
        }
    )
    title = "Agreement between raters per behaviour (Krippendorff's α)"
    note = (
        "Level from the item's declared scale (ordinal, binary: nominal, count: interval); the "
        "bootstrap treats turns as independent, so the interval is on the narrow side."
    )
    return ReportTable(
        "replicated_reliability", title, df, disp, [_src("reliability.csv")],
        [Q_RELIABILITY, note],
    )  # fmt: skip


def milestones_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    names = {
        "first_clinical": "First clinical framing (≥ 3)",
        "first_stable": "First stable (3 × 4)",
    }
    disp = pd.concat(
        [
            pd.DataFrame(
                {
                    "Chatbot": df["model"],
                    "Milestone": [names.get(m, _words(m)) for m in df["milestone"]],
                }
            ),
            _first_cells(df, "the milestone"),
        ],
        axis=1,
    )
    title = "The paper's milestones per conversation, summarised per chatbot"
    return ReportTable(
        "replicated_milestones", title, df, disp, [_src("milestones.csv")], [Q_MILESTONES]
    )


def trajectories_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    """Per chatbot: a new conversation's t50, first clinical and first stable framing,
    P(never) and the between-conversation SD of t50 (``bayes_trajectories.csv``)."""
    cols = {
        "t50": "t50, turn [95% CrI]",
        "first_clinical": "First clinical framing, turn [95% CrI]",
        "first_stable": "First stable framing, turn [95% CrI]",
        "p_never": "P(never clinical) [95% CrI]",
        "sd_conv_t50": "Between-conversation SD of t50 (a new prompt's included)",
    }
    disp = pd.DataFrame({"Chatbot": list(dict.fromkeys(df["model"]))})
    for q, label in cols.items():
        rows = {r.model: r for r in df[df["quantity"] == q].itertuples()}
        cells = [
            _ci(rows[m], "median", "ci_low", "ci_high", 2) if m in rows else "–"
            for m in disp["Chatbot"]
        ]
        disp[label] = cells
    first = df.iloc[0]
    level = (
        "each conversation's trajectory drawn around its chatbot's"
        if bool(first["conversation_level"])
        else "one conversation per chatbot: no conversation level to learn"
    )
    shared = first.get("shared_effects")  # NaN where the CSV cell is empty
    if isinstance(shared, str) and shared:
        level += (
            f", with each shared {' and '.join(shared.split(','))}'s shift of t50 for every "
            "chatbot (a contrast leaves out which were drawn; a new conversation's spread "
            "includes a new one's)"
        )
    title = "Each chatbot's recognition trajectory for a new conversation"
    note = (
        f"`{first['trajectory_model']}` model, {level} (models/conversations.py); milestones "
        "censored at the last turn + 1 as the data are; P(never): the share of new "
        "conversations without clinical framing (stage ≥ 3) within the window."
    )
    return ReportTable(
        "replicated_trajectories",
        title,
        df,
        disp,
        [_src("bayes_trajectories.csv")],
        [Q_TRAJECTORIES, note],
    )


def trajectory_contrasts_table(b: Builder, df: pd.DataFrame) -> ReportTable:
    """Chatbot pairs: a new conversation's t50, first clinical and first stable framing and
    P(never), A - B (``bayes_trajectory_contrasts.csv``)."""
    labels = {
        "t50": "t50",
        "first_clinical": "First clinical framing",
        "first_stable": "First stable framing",
        "p_never": "P(never clinical)",
    }
    df = df[df["quantity"].isin(labels)]
    disp = pd.DataFrame(
        {
            "Quantity": [labels[q] for q in df["quantity"]],
            "Chatbot A": df["a"],
            "Chatbot B": df["b"],
            "A − B [95% CrI]": [_ci(r, "diff", "ci_low", "ci_high", 2) for r in df.itertuples()],
            "P(A − B < 0)": [fmt_num(v, 3) for v in df["p_a_lower"]],
        }
    )
    title = "Chatbot contrasts of the recognition trajectory for a new conversation"
    note = (
        "A − B < 0 for t50 or a milestone: A's recognition comes earlier in a new "
        "conversation; for P(never): A leaves fewer conversations without clinical framing."
    )
    return ReportTable(
        "replicated_trajectory_contrasts",
        title,
        df,
        disp,
        [_src("bayes_trajectory_contrasts.csv")],
        [Q_TRAJECTORIES, note],
    )


def _figure(b: Builder, stem: str, title: str, caption: str) -> FigureBlock | None:
    """A figure the stage drew (PNG embedded, PDF linked), None when it is absent."""
    folder = b.run.path / STAGE
    png = folder / f"{stem}.png"
    if not png.is_file():
        return None
    links = {}
    if png.with_suffix(".pdf").is_file():
        links["PDF"] = _src(f"{stem}.pdf")
        b.used.add(_src(f"{stem}.pdf"))
    b.used.add(_src(f"{stem}.png"))
    text = f"{caption} (written by the {STAGE} stage: `{_src(stem + '.png')}`)."
    return FigureBlock(title, text, png, _src(f"{stem}.png"), links)


def _skip_reason(index: dict[str, Any], name: str) -> str | None:
    reasons = [
        f"{s.get('reason')}"
        for s in index.get("skipped") or []
        if isinstance(s, dict) and (name in (s.get("files") or []) or s.get("analysis") == name)
    ]
    return "; ".join(reasons) if reasons else None


#: the section's tables in document order: (file, what, builder); figures follow their table
TABLES: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    ("item_means.csv", "the chatbot x behaviour table", item_means_table),
    ("published_check.csv", "the published-versus-recomputed check", published_table),
    ("judge_failed.csv", "the failed judge turns", failed_table),
    ("first_occurrence_summary.csv", "first occurrence", first_occurrence_table),
    ("contrasts.csv", "chatbot contrasts", contrasts_table),
    ("bayes_item_means.csv", "the behaviour model's chatbot means", bayes_means_table),
    ("bayes_contrasts.csv", "the behaviour model's contrasts", bayes_contrasts_table),
    ("reliability.csv", "reliability", reliability_table),
    ("milestones.csv", "the paper's milestones", milestones_table),
    ("bayes_trajectories.csv", "the trajectory model's chatbots", trajectories_table),
    (
        "bayes_trajectory_contrasts.csv",
        "the trajectory model's chatbot contrasts",
        trajectory_contrasts_table,
    ),
)
FIGURES = {
    "item_means.csv": (
        "item_means",
        "Mean per judged turn per chatbot and behaviour",
        "Chatbots sorted, 95% conversation-clustered bootstrap intervals",
    ),
    "first_occurrence_summary.csv": (
        "first_occurrence",
        "First occurrence",
        "Share of conversations in which the behaviour has occurred by each turn",
    ),
    # the rankings follow the contrasts they summarise (three or more chatbots)
    "contrasts.csv": (
        "ranks",
        "Each chatbot's rank per behaviour (rank 1 = most), over the conversation bootstrap",
        "Median rank and 95% rank interval over the resamples; P(best) at the right",
    ),
    "bayes_contrasts.csv": (
        "ranks_posterior",
        "Each chatbot's rank per behaviour for a new conversation, over the posterior",
        "Median rank and 95% rank interval over the behaviour model's draws; P(best) at the right",
    ),
}


def _blocks(b: Builder, index: dict[str, Any], name: str, what: str, make) -> list[Any]:
    df = read_table(b.run.path, name)
    if df is None or (isinstance(df, pd.DataFrame) and df.empty):
        why = _skip_reason(index, name) or _skip_reason(index, name.removesuffix(".csv"))
        text = f"not computed for this study ({why})" if why else "not written by the stage"
        return [Note("notrun", f"{capital(what)}: {text}.")]
    made = make(b, df)
    blocks: list[Any] = []
    for part in made if isinstance(made, tuple) else (made,):
        blocks.append(b.table(part) if isinstance(part, ReportTable) else part)
    if name in FIGURES and b.cfg.include_stage_figures:
        fig = _figure(b, *FIGURES[name])
        blocks += [fig] if fig is not None else []
    return blocks


def section_replicated(b: Builder) -> Section:
    """The replicated study's section, built from ``replicated/`` (module docstring)."""
    s = Section("replicated", "Replicated conversations (many conversations per chatbot)")
    if not b.run.stage(STAGE).ran:
        return s.add(b.not_run(STAGE, "the replicated-study results"))
    index = b.attempt("replicated index", lambda: [read_table(b.run.path, "index.json") or {}])
    index = index[0] if isinstance(index[0], dict) else {}
    s.add(opening(b, index))
    for name, what, make in TABLES:
        s.add(*b.attempt(what, lambda n=name, w=what, m=make: _blocks(b, index, n, w, m)))
    for name, what in (("gate.json", "Behaviour"), ("trajectory_gate.json", "Trajectory")):
        gate = read_table(b.run.path, name)
        if isinstance(gate, dict):
            s.add(Paragraph(_gate_line(gate, what, name)))
    notes = [str(n) for n in index.get("notes") or []]
    if notes:
        s.add(Paragraph("Notes of the replicated stage: " + " ".join(notes)))
    return s


def _gate_line(g: dict[str, Any], what: str = "Behaviour", name: str = "gate.json") -> str:
    verdict = "passed" if g.get("passed") else "FAILED (" + "; ".join(g.get("reasons", [])) + ")"
    return (
        f"{what} model gate {verdict}: max R-hat {float(g.get('max_rhat', float('nan'))):.3f}, "
        f"min ESS {float(g.get('min_ess', float('nan'))):.0f}, {g.get('divergences', '?')} "
        f"divergences, fit {float(g.get('fit_time', float('nan'))):.0f} s "
        f"(`{_src(name)}`)."
    )


__all__ = ["FIGURES", "TABLES", "opening", "section_replicated"]
