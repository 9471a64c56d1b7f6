"""The first screen of the supplement: what the study found, then the diagnostics state.

Both as the stages recorded them: the findings from each stage's ``headline`` (a key a stage did
not write is left out), the diagnostics from ``models/<fit>/gate.json`` and
``replay/bayes_diagnostics.json``.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

from delusion_bayes.report.document import Bullets, Note, Paragraph
from delusion_bayes.report.provenance import Diagnostics, gate_numbers
from delusion_bayes.report.sources import RunDir
from delusion_bayes.report.table import label

REPLAY_GATE = "replay/bayes_diagnostics.json"


def headline(run: RunDir, stage: str) -> dict[str, Any]:
    """The stage's headline as ``run.json`` recorded it (else its ``index.json``'s)."""
    return dict(run.stage_status(stage).get("headline") or run.stage(stage).headline or {})


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return None if math.isnan(v) else float(v)


def _p(p: float) -> str:
    return f"p = {p:.1g}" if p < 0.001 else f"p = {p:.3f}"


def _rho(v: float) -> str:
    return f"{v:.2f}".replace("-", "−")


def _trajectory_findings(run: RunDir) -> list[str]:
    out: list[str] = []
    h = headline(run, "baselines")
    reliability = {
        "Krippendorff's α": _num(h.get("alpha_recognition")),
        "ICC(2,k)": _num(h.get("icc2k_recognition")),
    }
    parts = [f"{name} = {v:.2f}" for name, v in reliability.items() if v is not None]
    if parts:
        out.append(f"Reliability of the raters' recognition codes: {', '.join(parts)} (Table C1).")
    n_models, never = _num(h.get("n_models")), _num(h.get("n_never_clinical"))
    med = _num(h.get("median_first_clinical"))
    of = f" of {n_models:g}" if n_models is not None else ""
    text = [f"Median first clinical framing (consensus): day {med:g}"] if med is not None else []
    if never is not None:
        text.append(
            f"{never:g}{of} models never framed the user clinically within the observation window"
        )
    if text:
        out.append("; ".join(text) + " (Table 1).")
    ok, no_turn = _num(h.get("n_fits_ok")), _num(h.get("n_fits_no_turn"))
    if ok is not None:
        text = f"Least-squares logistic fits (Table D1): a curve for {ok:g}{of} models"
        if no_turn:
            text += f"; {no_turn:g} never turned (no curve to fit, not a failed fit)"
        rest = (n_models or 0) - ok - no_turn if no_turn is not None else 0
        out.append(text + (f"; {rest:g} flat or unidentified" if rest > 0 else "") + ".")
    m = _num(h.get("n_contrast_tests"))
    if m:
        holm, bh = _num(h.get("n_contrast_holm_05")), _num(h.get("n_contrast_bh_05"))
        out.append(
            f"Pre-specified group contrasts (exact permutation tests, section E): {holm:g} of "
            f"{m:g} tests have p below 0.05 after Holm's adjustment (family-wise error), {bh:g} at "
            "a false-discovery rate of 0.05 (Benjamini-Hochberg)."
        )
    t = headline(run, "text")
    rho, rp = _num(t.get("entrainment_level_b_rho")), _num(t.get("entrainment_level_b_p"))
    if rho is not None:
        out.append(
            f"Entrainment against Level-B days across models: Spearman ρ = {_rho(rho)}"
            + (f", {_p(rp)}" if rp is not None else "")
            + " (Figure 3)."
        )
    lo, hi = _num(t.get("entrainment_at_lowest_stage")), _num(t.get("entrainment_at_highest_stage"))
    if lo is not None and hi is not None:
        within = _num(t.get("entrainment_within_median_rho"))
        out.append(
            f"Mean entrainment {lo:.3f} at the lowest consensus stage and {hi:.3f} at "
            "the highest"
            + (
                f"; median within-model ρ with the consensus {_rho(within)}"
                if within is not None
                else ""
            )
            + "."
        )
    return out


def _replay_findings(run: RunDir) -> list[str]:
    h = headline(run, "replay")
    out = []
    sizes = [
        (h.get(k), w)
        for k, w in (
            ("n_samples", "samples"),
            ("n_models", "models"),
            ("n_codes", "codes"),
            ("n_participants", "participants"),
        )
        if _num(h.get(k)) is not None
    ]
    if sizes:
        out.append("Replay study: " + ", ".join(f"{v:g} {w}" for v, w in sizes) + ".")
    below = _num(h.get("share_of_model_category_deltas_below_0"))
    if below is not None:
        out.append(
            f"{below:.0%} of the model-by-category differences from the original "
            "transcript (every category but 'discourages harm') have a 95% interval "
            "entirely below 0."
        )
    deltas = run.table("replay/deltas.csv")
    if deltas is not None and "p_bh" in deltas:
        for level, part in deltas.groupby("level", sort=False):
            n, m = int((part["p_bh"] < 0.05).sum()), int(part["p_bh"].notna().sum())
            holm = int((part["p_holm"] < 0.05).sum())
            out.append(
                f"Differences from the original transcript ({level} level): {n} of {m} survive "
                f"a false-discovery rate of 0.05 (Benjamini-Hochberg), {holm} Holm's "
                "family-wise 5%."
            )
    covered = _num(h.get("truth_covered_share"))
    if covered is not None:
        out.append(
            f"The bootstrap intervals cover the simulated true prevalence in {covered:.0%} "
            "of the categories."
        )
    return out


def _posterior_findings(run: RunDir) -> list[str]:
    """One sentence per fitted trajectory model, read from its tables: where the models' t50
    lie and how many have probably not turned within the window; the rater model's posterior
    reliability. A fit that failed its gate says so instead."""
    out = []
    for fit in run.fits:
        gate = run.table("models/{fit}/gate.json", fit=fit) or {}
        if not gate.get("passed", True):
            out.append(f"`{fit}`: failed its diagnostics gate; its numbers are not reported here.")
            continue
        t50 = run.table("models/{fit}/t50_posterior.csv", fit=fit)
        if t50 is not None and len(t50) and "t50_median" in t50:
            beyond = t50["p_beyond_last_day"] > 0.5
            turned = t50.loc[~beyond, "t50_median"]
            span = (
                f"from day {turned.min():.1f} to {turned.max():.1f} across the {len(turned)} "
                "models that more probably turned"
                if len(turned)
                else "beyond the last day for every model"
            )
            out.append(
                f"`{fit}`: posterior median t50 {span}; for {int(beyond.sum())} the midpoint "
                "more probably lies beyond the last day (not yet turned; their t50 is mostly "
                "the prior's) (Table D1, posterior column)."
            )
        out += population_findings(run, fit)
        rel = run.table("models/{fit}/reliability_posterior.csv", fit=fit)
        if rel is not None and "quantity" in rel:
            rows = rel.set_index("quantity")
            parts = [
                f"{what} {r['median']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                for key, what in (
                    ("reliability_single", "one rater"),
                    ("reliability_consensus", "the consensus"),
                )  # fmt: skip
                if key in rows.index and (r := rows.loc[key]) is not None
            ]
            if parts:
                out.append(
                    f"`{fit}`: posterior reliability of {', of '.join(parts)} (Table C1; an "
                    "upper value on short studies)."
                )
    return out


def population_findings(run: RunDir, fit: str) -> list[str]:
    """The population contrasts of ``fit`` (difference of population means): how many were
    formed and how many intervals exclude 0, and the one farthest from 0 beside its test."""
    pop = run.table("models/{fit}/contrasts_population.csv", fit=fit)
    if pop is None or "median" not in pop:
        return []
    ok = pop[pop["median"].notna()]
    if not len(ok):
        why = sorted({str(v) for v in pop.get("note", []) if isinstance(v, str) and v})
        return [f"`{fit}`: no population contrast reported ({why[0] if why else 'none formed'})."]
    excl = ok[(ok["ci_low"] > 0) | (ok["ci_high"] < 0)]
    r = ok.loc[(ok["median"] / (ok["ci_high"] - ok["ci_low"])).abs().idxmax()]
    tests = run.table("baselines/contrasts.csv")
    test = ""
    if tests is not None and {"contrast", "quantity", "pvalue"} <= set(tests):
        hit = tests[(tests["contrast"] == r["name"]) & (tests["quantity"] == r["quantity"])]
        if len(hit):
            h = hit.iloc[0]
            test = f"; permutation {_p(float(h['pvalue']))}"
            if "p_holm" in h:
                test += f", Holm {_p(float(h['p_holm']))}"
    return [
        f"`{fit}`, population contrasts (difference of the groups' population means, section "
        f"E): {len(excl)} of {len(ok)} 95% intervals exclude 0; the clearest, "
        f"{r['name']} on {label(str(r['quantity'])).lower()}: {r['median']:.1f} "
        f"[{r['ci_low']:.1f}, "
        f"{r['ci_high']:.1f}]{test}."
    ]


def findings(run: RunDir) -> list[str]:
    """One sentence per headline number the stages recorded (empty when none ran), then the
    Bayesian models' findings."""
    out = _trajectory_findings(run) if run.kind == "trajectory" else []
    if run.kind == "trajectory" and run.stage("models").ran:
        out += _posterior_findings(run)
    if run.stage("replay").ran:
        out += _replay_findings(run)
    return out


def simulated(run: RunDir) -> str | None:
    """How the data were simulated (``preset `x``` / ``seed n``), None for a real study. A study
    given in Python (``db.analyse(ds)``) counts as simulated when the simulator's attrs say so."""
    source = run.config_value("data.source")
    if source == "dataset":
        attrs = run.study.attrs if run.study is not None else {}
        if attrs.get("synthetic") or attrs.get("simulated"):
            what = attrs.get("preset") or attrs.get("scale")
            return (
                f"a simulated study given in Python (preset `{what}`)"
                if what
                else ("a simulated study given in Python")
            )
        return None
    if source != "simulate":
        return None
    if run.kind in ("trajectory", "replicated"):
        return f"preset `{run.config_value('data.preset')}`"
    return f"seed {run.config_value('data.seed')}"


def _gate_numbers(gate: dict[str, Any]) -> str:
    gate = dict(gate)
    if _num(gate.get("min_ess")) is None:  # the replay gate records bulk and tail ESS
        both = [v for k in ("min_ess_bulk", "min_ess_tail") if (v := _num(gate.get(k))) is not None]
        gate["min_ess"] = min(both) if both else None
    return gate_numbers(gate, ("max_rhat", "min_ess", "divergences"))


def _thresholds(t: dict[str, Any]) -> str:
    parts = []
    for key, fmt in (
        ("rhat_max", "R-hat ≤ {:g}"),
        ("ess_min", "ESS ≥ {:g}"),
        ("max_divergences", "divergences ≤ {:g}"),
        ("ebfmi_min", "E-BFMI ≥ {:g}"),
    ):
        v = _num(t.get(key))
        if v is not None:
            parts.append("no divergences" if key == "max_divergences" and v == 0 else fmt.format(v))
    return ", ".join(parts)


def refit_text(gate: dict[str, Any]) -> str:
    """`` (refitted automatically: ...)`` naming each automatic refit and what prompted it when
    the gate records one (:func:`delusion_bayes.inference.refits.fit_with_refits`), else ``""``."""
    attempts = gate.get("attempts") or []
    steps = []
    for before, after in pairwise(attempts):
        if after.get("target_accept") != before.get("target_accept"):
            steps.append(
                f"at target_accept {after.get('target_accept', 0):g} after "
                f"{before.get('divergences')} divergences at "
                f"{before.get('target_accept', 0):g}"
            )
        else:
            steps.append(
                f"with {after.get('draws')} draws per chain after R-hat "
                f"{before.get('max_rhat', float('nan')):.3f} / ESS "
                f"{before.get('min_ess', float('nan')):.0f} at {before.get('draws')}"
            )
    return f" (refitted automatically {'; then '.join(steps)})" if steps else ""


def diagnostics_note(run: RunDir, diag: Diagnostics) -> Note | None:
    """One line per Bayesian fit (passed/FAILED, max R-hat, min ESS, divergences): a warning
    when any failed, ``ok`` when all passed, None when nothing was fitted."""
    lines, thresholds, failed, unknown = [], "", False, False
    for v in diag.verdicts:
        gate = run.table("models/{fit}/gate.json", v.model) if v.passed is not None else None
        if gate is None:
            unknown = True
            lines.append(f"`{v.model}`: no verdict ({v.details})")
            continue
        thresholds = thresholds or _thresholds(gate.get("thresholds") or {})
        refit = refit_text(gate)
        if v.passed:
            lines.append(f"`{v.model}`: passed — {_gate_numbers(gate)}{refit}")
        else:
            failed = True
            reasons = "; ".join(map(str, gate.get("reasons") or []))
            advice = "; ".join(map(str, gate.get("advice") or []))
            lines.append(
                f"`{v.model}`: FAILED — {_gate_numbers(gate)}"
                + (f" ({reasons})" if reasons else "")
                + refit
                + f"; its posterior results are not trustworthy, see `{v.source}`"
                + (f". What to try: {advice}" if advice else "")
            )
    rg = run.table(REPLAY_GATE) if run.stage("replay").ran else None
    if isinstance(rg, dict) and "passed" in rg:
        ok = bool(rg["passed"])
        failed |= not ok
        thresholds = thresholds or _thresholds(rg.get("thresholds") or {})
        reasons = "" if ok else "; ".join(map(str, rg.get("reasons") or []))
        # the gate judges the prevalences (``*_prevalence``) when the file records them
        judged = {
            k: rg.get(f"{k}_prevalence", rg.get(k))
            for k in ("max_rhat", "min_ess_bulk", "min_ess_tail")
        }
        judged["divergences"] = rg.get("divergences")
        lines.append(
            f"replay prevalence model: {'passed' if ok else 'FAILED'} — "
            f"{_gate_numbers(judged)}"
            + (f" ({reasons})" if reasons else "")
            + ("" if ok else "; `replay/bayes_prevalence.csv` is provisional")
        )
    if not lines:
        return None
    text = "\n".join(([f"Gate: {thresholds}."] if thresholds else []) + lines)
    if failed:
        return Note("warning", text, "Diagnostics failed")
    return Note("notrun" if unknown else "ok", text, "Diagnostics")


def skipped_analyses(run: RunDir) -> list[str]:
    """One line per analysis a stage skipped because the study lacks its input (each stage's
    ``index.json`` ``skipped`` entries), in stage order."""
    lines = []
    for name in ("baselines", "text", "models", "replay"):
        for s in run.stage(name).index.get("skipped") or []:
            if isinstance(s, dict):
                lines.append(f"{s.get('analysis', '?')}: {s.get('reason', '')}")
            else:  # an older run's text stage wrote one string
                lines.append(f"{name} stage: {s}")
    return lines


def skipped_note(run: RunDir) -> Note | None:
    """The overview's list of analyses not run for want of input (None when there are none)."""
    lines = skipped_analyses(run)
    if not lines:
        return None
    text = (
        "Not run: this study does not have what these analyses need (a skip is not a "
        "failure; add the input named to switch one on):\n" + "\n".join(lines)
    )
    return Note("notrun", text, "Analyses skipped")


def opening(run: RunDir, diag: Diagnostics) -> list[Any]:
    """The blocks the overview opens with: the findings, then the diagnostics block."""
    blocks: list[Any] = []
    sim, found = simulated(run), findings(run)
    if found:
        lead = "What this run found"
        lead += (
            (f" (SIMULATED data, {sim}: the numbers describe the simulation, not real chatbots):")
            if sim
            else ":"
        )
        blocks += [Paragraph(lead), Bullets(found)]
    elif sim:
        blocks.append(Paragraph(f"SIMULATED data ({sim})."))
    for note in (skipped_note(run), diagnostics_note(run, diag)):
        if note is not None:
            blocks.append(note)
    return blocks
