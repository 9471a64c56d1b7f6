"""Prior and likelihood sensitivity: per fit, which parameters the prior dominates ("weak
likelihood") and whether any prior fights the data ("prior-data conflict"), in words, a table
and the models stage's figure.

Sources: ``models/<fit>/sensitivity.csv``/``.png`` (:mod:`delusion_bayes.models.sensitivity`),
``models/<fit>/t50_posterior.csv`` (the never-turners), ``replay/sensitivity.csv``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from delusion_bayes.report.builder import Builder
from delusion_bayes.report.document import Note, Paragraph, Section
from delusion_bayes.report.overview import simulated
from delusion_bayes.report.table import ReportTable, display_frame

KEY = "models/{fit}/sensitivity.csv"
REPLAY = "replay/sensitivity.csv"
REPORTED = "models/{fit}/sensitivity_reported.csv"
REPLAY_REPORTED = "replay/sensitivity_reported.csv"
#: Pareto k above which the power-scaling approximation is unreliable
#: (``delusion_bayes.models.sensitivity_reported.K_RELIABLE``)
K_RELIABLE = 0.7
#: a refit shift of at least this many posterior SDs counts as a number that moved
#: (``delusion_bayes.models.refit.MOVES_SD``)
MOVES_SD = 0.25
#: a reported number whose |prior shift| (the derivative per doubling of the prior's power) is
#: at least this is predicted to move by that much when the prior's power is doubled or halved:
#: the screen the supplement leads with, as it predicted refits at powers 0.5 and 2 better than
#: the CJS flag did (docs/dev/models.md, "The flag's recall")
PROXY_SD = 0.1
T50 = "models/{fit}/t50_posterior.csv"
#: the files of a fit folder this section shows (the per-fit subsections leave them out)
FILES = ("sensitivity.csv", "sensitivity.png", "sensitivity_reported.csv")
CONFLICT, WEAK = "prior-data conflict", "weak likelihood"
#: a model whose posterior puts t50 beyond the last day with at least this probability is
#: called a never-turner here
NEVER_TURNER_P = 0.5
#: parameters named in a sentence before "and N more"
MAX_NAMED = 12
#: fewer posterior draws than the default 4 x 1000: a note says the sensitivities are mostly Monte
#: Carlo noise (``models.sensitivity.noise_floor``)
MIN_DRAWS = 4000


def n_draws(b: Builder) -> int | None:
    """Posterior draws per fit (``sampler.chains x sampler.draws`` of the run's config)."""
    chains, draws = b.run.config_value("sampler.chains"), b.run.config_value("sampler.draws")
    return chains * draws if isinstance(chains, int) and isinstance(draws, int) else None


def _names(params: list[str]) -> str:
    shown = [f"`{p}`" for p in params[:MAX_NAMED]]
    more = len(params) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def never_turners(b: Builder, fit: str) -> list[str]:
    """The models of ``fit`` whose P(t50 beyond the last day) >= :data:`NEVER_TURNER_P`
    (``t50_posterior.csv``), empty when the fit has no t50."""
    df = b.run.table(T50, fit)
    if df is None:
        return []
    return df.loc[df["p_beyond_last_day"] >= NEVER_TURNER_P, "model"].astype(str).tolist()


def fit_sentences(b: Builder, fit: str, df: pd.DataFrame) -> list[str]:
    """What ``sensitivity.csv`` of one fit says, in words."""
    weak = df.loc[df["verdict"] == WEAK, "parameter"].astype(str).tolist()
    conflict = df.loc[df["verdict"] == CONFLICT, "parameter"].astype(str).tolist()
    out = [
        f"`{fit}`: {len(df)} parameters; "
        + (
            f"{len(weak)} prior-dominated (weak likelihood): {_names(weak)}"
            if weak
            else "none prior-dominated (weak likelihood)"
        )
        + "; "
        + (
            f"{len(conflict)} with a potential prior-data conflict: {_names(conflict)}"
            if conflict
            else "no prior-data conflict"
        )
        + "."
    ]
    t50 = df[df["variable"] == "t50"].set_index("parameter")
    rows = [(m, t50.loc[f"t50[{m}]"]) for m in never_turners(b, fit) if f"t50[{m}]" in t50.index]
    if rows:
        parts = [
            f"`{m}`: {r['verdict'] if r['verdict'] != '-' else 'not flagged'} (prior "
            f"{r['prior']:.3f}, likelihood {r['likelihood']:.3f})"
            for m, r in rows
        ]
        seen = [r["verdict"] for _, r in rows]
        n_weak = sum(v == WEAK for v in seen)
        text = (
            f"A never-turner's t50 is expected to be prior-dominated: its ratings say only "
            f"that the curve has not risen by the last day, so the prior on t50 fills in "
            f"how far beyond it the midpoint lies. Never-turners of `{fit}` (P(t50 beyond "
            f"the last day) >= {NEVER_TURNER_P:g}): "
            + "; ".join(parts)
            + ". "
            + (
                "As expected."
                if n_weak == len(seen)
                else f"The expectation holds for {n_weak} of {len(seen)}."
            )
        )
        if CONFLICT in seen:
            text += (
                " Where the likelihood sensitivity is at or above the threshold too, the "
                "ratings still move t50 (they push its lower bound), so the verdict is a "
                "conflict rather than a weak likelihood."
            )
        if "-" in seen:
            text += (
                " Not flagged: the prior sensitivity is below the threshold, i.e. the "
                "t50 prior is wide enough that scaling it barely moves the posterior."
            )
        out.append(text)
    return out


def fit_table(b: Builder, fit: str, df: pd.DataFrame) -> list[Any]:
    """All rows when short, else the flagged rows (the CSV linked for the rest)."""
    src, res = b.run.source(KEY, fit), b.run.result(KEY, fit)
    shown = df if len(df) <= b.cfg.max_inline_rows else df[df["verdict"] != "-"]
    rows = shown[res.used()].reset_index(drop=True)  # the declared columns
    title = res.title + (
        "" if len(shown) == len(df) else f" (the {len(shown)} flagged of {len(df)} parameters)"
    )
    thr = float(df["threshold"].iloc[0]) if len(df) else float("nan")
    note = (
        f"prior, likelihood: CJS-based power-scaling sensitivity; flagged at {thr:g}. "
        f"All {len(df)} rows: `{src}`."
    )
    name = f"models_{fit}_sensitivity"
    return [b.table(ReportTable(name, title, rows, res.display(rows), [src], [note]))]


def method_paragraph() -> Paragraph:
    """What power-scaling sensitivity is and how to read the verdicts."""
    return Paragraph(
        "Power-scaling sensitivity (Kallioinen et al. 2024; ArviZ's `psense`, as R's "
        "priorsense): the prior, or the likelihood, is raised to a power near 1 and the draws "
        "are reweighted by Pareto-smoothed importance sampling, without refitting; the "
        "sensitivity is how fast each parameter's marginal posterior moves (cumulative "
        "Jensen-Shannon distance per log2 of the power). The prior scaled is the models' "
        "top-level priors (the prior table, not the population distributions of the "
        "hierarchy); the likelihood is the one the sampler used (per model-day, the latent "
        "stage integrated out; the onset model's consensus). Threshold 0.05: prior and "
        "likelihood both at or above it is a potential prior-data conflict; prior above and "
        "likelihood below is a weak likelihood (the prior dominates); anything else is not "
        "flagged (-). The estimates carry Monte Carlo noise: at the default 4 x 1,000 draws, "
        "draws sensitive to nothing score a median 0.013 (prior) and 0.031 (likelihood) on the "
        "default study (`docs/dev/models.md`), so a verdict decided within a few hundredths of the "
        "threshold is not firm."
    )


def section_sensitivity(b: Builder) -> Section:
    """The section "Prior and likelihood sensitivity": one paragraph, table and figure per fit."""
    s = Section("sensitivity", "Prior and likelihood sensitivity")
    replay = b.run.table(REPLAY)
    fits = [f for f in b.run.fits if (b.run.path / b.run.source(KEY, f)).is_file()]
    replay_only = not fits and replay is not None  # a replay study: its prevalence model only
    if not replay_only and not b.run.stage("models").ran:
        return s.add(b.not_run("models", "the prior and likelihood sensitivity"))
    if not replay_only and not fits:
        return s.add(
            Note(
                "notrun",
                "No `models/<fit>/sensitivity.csv` in this run: the models "
                "stage predates the sensitivity check or could not compute it (its "
                "notes say why).",
            )
        )
    sim = simulated(b.run)
    if sim:
        s.add(
            Paragraph(
                f"SIMULATED data ({sim}): these sensitivities describe the "
                f"{'model' if replay_only else 'models'} fitted to a simulated study, not "
                "real chatbots."
            )
        )
    # the reported numbers first (what a reader acts on), then the parameter detail
    s.add(*reported_blocks(b, fits))
    s.add(method_paragraph())
    if replay_only:
        return s.add(*replay_part(b, replay))
    s.add(*few_draws_note(b))
    blocks, any_conflict = fit_blocks(b, fits)
    s.add(*blocks)
    s.add(conflict_paragraph(any_conflict))
    if replay is not None:
        s.add(*replay_part(b, replay))
    return s


REPORTED_INTRO = (
    "Which reported numbers depend on the prior. Each number the supplement reports (t50 and "
    "the milestone days per model, the population contrasts and those of these N models, the "
    "consensus mean stage per model-day; for the replay fit its prevalences and deltas) is a "
    "function of the posterior draws, so the power-scaling weights of the parameter detail "
    "below apply to it directly. 'prior shift' is how far the number's posterior mean moves, "
    f"in posterior SDs, when the prior's power is doubled (the derivative at power 1). A number "
    f"is listed when its prior shift is at least {PROXY_SD:g} SD (it is predicted to move that "
    "far when the prior's power is doubled or halved: refits at those powers confirmed the "
    "prediction, docs/dev/models.md), when its CJS sensitivity is at or above 0.05 "
    "(priorsense's flag, which missed most such numbers in those refits), or when the Pareto k "
    "of the weights exceeds 0.7 (the approximation is unreliable: refit instead). 'refit shift' "
    "is a measured shift (experiments/bench/refit_priors.py) where one was run; a number a "
    "refit moved by 0.25 SD or more is listed too."
)


def reported_blocks(b: Builder, fits: list[str]) -> list[Any]:
    """The sensitivity of the reported numbers, per fit (and of the replay model), or a note."""
    out: list[Any] = []
    reported = [(f, b.run.table(REPORTED, f)) for f in fits]
    if (rep := b.run.table(REPLAY_REPORTED)) is not None:
        reported.append(("replay", rep))
    reported = [(f, df) for f, df in reported if df is not None]
    if reported:
        out.append(Paragraph(REPORTED_INTRO))
        for fit, df in reported:
            out.extend(
                b.attempt(
                    f"reported numbers of {fit}", lambda fit=fit, df=df: reported_part(b, fit, df)
                )
            )
    else:
        out.append(
            Note(
                "notrun",
                "No `sensitivity_reported.csv` in this run: the sensitivity of "
                "the reported numbers was not computed (the stage predates it or its notes "
                "say why); the parameter detail follows.",
            )
        )
    return out


def few_draws_note(b: Builder) -> list[Any]:
    """A note when the run drew too few posterior draws for its sensitivities to be read."""
    n = n_draws(b)
    if n is not None and n < MIN_DRAWS:
        return [
            Note(
                "info",
                f"This run drew {n} posterior draws per fit (the default is "
                f"{MIN_DRAWS}). At that size the sensitivities carry Monte Carlo noise of the "
                "order of the threshold (on 2 x 150 draws, draws that are sensitive to "
                "nothing score a median 0.04 for the prior and 0.09 for the likelihood: "
                "`delusion_bayes.models.sensitivity.noise_floor`), so most flags below are "
                "noise; rerun at the default settings before reading them.",
                "Few draws",
            )
        ]
    return []


def fit_blocks(b: Builder, fits: list[str]) -> tuple[list[Any], list[str]]:
    """Per fit: a diagnostics warning, its sentences, table and figure; and the fits with a
    flagged prior-data conflict."""
    out: list[Any] = []
    verdicts = {v.model: v for v in b.diag.verdicts}
    any_conflict = []
    for fit in fits:
        df = b.run.table(KEY, fit)
        v = verdicts.get(fit)
        if v is not None and v.passed is False:
            out.append(
                Note(
                    "warning",
                    f"`{fit}` FAILED its sampling diagnostics ({v.details}); its "
                    "sensitivities are computed from unreliable draws.",
                    "Diagnostics failed",
                )
            )
        out.extend(
            b.attempt(
                f"sensitivity of {fit}",
                lambda fit=fit, df=df: [Paragraph(" ".join(fit_sentences(b, fit, df)))],
            )
        )
        out.extend(b.attempt(b.run.source(KEY, fit), lambda fit=fit, df=df: fit_table(b, fit, df)))
        png = f"{fit}/sensitivity.png"
        if b.cfg.include_stage_figures and b.run.stage("models").has(png):
            out.append(b.stage_figure("models", png, f"Sensitivity of {fit}"))
        if (df["verdict"] == CONFLICT).any():
            any_conflict.append(fit)
    return out, any_conflict


def conflict_paragraph(any_conflict: list[str]) -> Paragraph:
    """Which fits flagged a potential prior-data conflict, or that none did."""
    return Paragraph(
        (
            "A potential prior-data conflict was flagged in "
            + ", ".join(f"`{f}`" for f in any_conflict)
            + ": for those parameters the prior is informative next to the data (both "
            "sensitivities at or above the threshold), which is what a prior that disagrees "
            "with the data looks like; compare the prior (the prior table, "
            "`delusion_bayes/models/priors.py`) with the posterior before relying on them."
        )
        if any_conflict
        else "No prior-data conflict was flagged in any fit."
    )


def reported_part(b: Builder, fit: str, df: pd.DataFrame) -> list[Any]:
    """One fit's ``sensitivity_reported.csv`` in words and the flagged rows as a table."""
    key = REPLAY_REPORTED if fit == "replay" else REPORTED
    src = b.run.source(key) if fit == "replay" else b.run.source(key, fit)
    flagged_rows = df[df["verdict"] != "-"]
    thr = float(df["threshold"].iloc[0]) if len(df) else float("nan")
    counts = flagged_rows["verdict"].value_counts()
    kp, kl = float(df["pareto_k_prior"].max()), float(df["pareto_k_likelihood"].max())
    reliable = "reliable" if max(kp, kl) <= K_RELIABLE else "UNRELIABLE: refit needed"
    proxy = df["prior_mean_shift_sd"].abs() >= PROXY_SD
    text = (
        f"`{fit}`: {int(proxy.sum())} of {len(df)} reported numbers are predicted to move by "
        f"at least {PROXY_SD:g} posterior SD when the prior's power is doubled or halved "
        f"(|prior shift| >= {PROXY_SD:g}); {len(flagged_rows)} are flagged at CJS >= "
        f"{thr:g}"
        + (" (" + ", ".join(f"{n} {v}" for v, n in counts.items()) + ")" if len(counts) else "")
        + "; "
        f"Pareto k of the weights: prior {kp:.2f}, likelihood {kl:.2f} ({reliable}, "
        f"threshold {K_RELIABLE:g})."
    )
    if len(df):
        i = df["prior_mean_shift_sd"].abs().idxmax()
        r = df.loc[i]
        text += (
            f" Largest prior shift: {r['quantity']} ({r['kind']}, {r['item']}), "
            f"{r['prior_mean_shift_sd']:+.2f} posterior SD per doubling of the prior's "
            "power."
        )
    text += population_sentence(df)
    refit = df["refit_shift_sd"].notna()
    if refit.any():
        flag, moved = df["verdict"] != "-", df["refit_shift_sd"].abs() >= MOVES_SD
        n_moved, caught = int(moved.sum()), int((flag & moved).sum())
        text += (
            f" Refitted with the flagged priors' scales doubled and halved: {n_moved} of "
            f"{int(refit.sum())} reported numbers moved by >= {MOVES_SD:g} posterior SD "
            f"(largest {df.loc[refit, 'refit_shift_sd'].abs().max():.2f}); the flag had "
            f"marked {caught} of them ({int((~flag & moved).sum())} moved unflagged, listed "
            f"too), and {int((flag & ~moved).sum())} of its {int(flag.sum())} flags did not "
            "move. These refits change only the flagged parameters' priors, so a number "
            "that did not move is not shown to be prior-robust."
        )
        flagged_rows = df[(df["verdict"] != "-") | moved | proxy]
    else:
        flagged_rows = df[(df["verdict"] != "-") | proxy]
    out: list[Any] = [Paragraph(text)]
    if len(flagged_rows):
        out.append(flagged_table(b, fit, df, flagged_rows, thr, src))
    return out


def population_sentence(df: pd.DataFrame) -> str:
    """What the power-scaling check says of the population contrasts: their rows come from the
    grouped fits, scaled under each fit's own prior (the group hyper-priors are in it)."""
    pop = df[df["kind"] == "contrast, population"]
    if not len(pop):
        return ""
    r = pop.loc[pop["prior_mean_shift_sd"].abs().idxmax()]
    return (
        f" The {len(pop)} population contrasts (difference of population means) are scaled "
        f"under their grouped fits' own priors: {int((pop['verdict'] != '-').sum())} flagged; "
        f"largest prior shift {r['quantity']} ({r['item']}) {r['prior_mean_shift_sd']:+.2f} "
        f"SD, prior Pareto k at most {float(pop['pareto_k_prior'].max()):.2f}."
    )


def flagged_table(
    b: Builder, fit: str, df: pd.DataFrame, flagged_rows: pd.DataFrame, thr: float, src: str
) -> Any:
    """The reported numbers of ``fit`` that were flagged (or moved by a refit), as a table."""
    res = b.run.result(REPLAY_REPORTED) if fit == "replay" else b.run.result(REPORTED, fit)
    rows = flagged_rows[res.used()].reset_index(drop=True)  # the declared columns
    shown = rows.head(b.cfg.max_inline_rows)
    disp = res.display(shown)
    title = res.title + ("" if len(shown) == len(rows) else f" (first {len(shown)} of {len(rows)})")
    note = (
        f"prior, likelihood: CJS power-scaling sensitivity of the reported number; "
        f"flagged at {thr:g}. All {len(df)} rows: `{src}`."
    )
    return b.table(ReportTable(f"{fit}_sensitivity_reported", title, shown, disp, [src], [note]))


def replay_part(b: Builder, df: pd.DataFrame) -> list[Any]:
    """The replay prevalence model's sensitivity (``replay/sensitivity.csv``): a sentence and
    one row per variable (how many of its elements are flagged, median sensitivities); the
    likelihood is all scored cells' binomial, summed per draw."""
    n_conflict = int((df["verdict"] == CONFLICT).sum())
    n_weak = int((df["verdict"] == WEAK).sum())
    src = b.run.source(REPLAY)
    text = (
        f"Replay prevalence model (`{src}`): {len(df)} parameters and prevalences; "
        f"{n_weak} prior-dominated (weak likelihood), {n_conflict} with a potential "
        "prior-data conflict. Here a flag says that the prior on a cell's logit (`theta`) or "
        "on the cluster scale is informative next to the clusters (windows, conversations) "
        "that inform the cell, most for rare and very common codes (a logit far from the "
        "prior's centre); compare the posterior with the bootstrap column of "
        "`replay/bayes_prevalence.csv`, which has no prior, and refit with wider priors "
        "before relying on a flagged cell."
    )
    rows = (
        df.groupby("variable", sort=False)
        .agg(
            n=("parameter", "size"),
            prior_data_conflict=("verdict", lambda v: int((v == CONFLICT).sum())),
            weak_likelihood=("verdict", lambda v: int((v == WEAK).sum())),
            median_prior=("prior", "median"),
            median_likelihood=("likelihood", "median"),
        )
        .reset_index()
    )
    title = "Power-scaling sensitivity of the replay model, per variable"
    table = ReportTable(
        "replay_sensitivity",
        title,
        rows,
        display_frame(rows, 3),
        [src],
        [f"One row per parameter: `{src}`."],
    )
    return [Paragraph(text), b.table(table)]
