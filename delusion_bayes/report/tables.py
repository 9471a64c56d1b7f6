"""The supplement's tables, each built from the CSVs the stages wrote (never recomputed).

Trajectory paper (``papers/escalating-delusions-trajectories.txt``): Table 1 (milestones),
Table 2 (intervention profiles on stage-4 days), Table C1 (reliability), Table D1 (logistic fits
with rater-bootstrap CIs), the pre-specified contrasts (exact permutation tests) — each with its
Bayesian counterpart beside it where the models stage wrote one: milestone latencies vs their
posterior, least squares + bootstrap CI vs posterior median + credible interval, permutation p vs
the posterior probability of the contrast, alpha/ICC vs posterior reliability.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from delusion_bayes.baselines.config import MILESTONES
from delusion_bayes.report.frames import (
    _ci_cols,
    find_col,
    key_column,
    long_estimates,
    norm,
    ordered_quantities,
    split_labels,
)
from delusion_bayes.report.rundir import RunDir
from delusion_bayes.report.table import ReportTable, display_frame, fmt_interval, fmt_num, fmt_p

log = logging.getLogger(__name__)

LATENCIES = ("first_clinical", "first_stable", "first_level_b")
LOGISTIC = ("L", "k", "t50")

#: readable headers for the quantities shared by all stages
LABELS = {
    "first_clinical": "First clinical framing",
    "first_stable": "First stable framing",
    "first_level_b": "First Level-B",
    "days_stage4": "Days at stage 4",
    "days_level_a": "Level-A days",
    "days_level_b": "Level-B days",
    "L": "L",
    "k": "k",
    "t50": "t50",
    "r2": "R²",
    "n_stage4_days": "Stage-4 days",
    "emotional_support": "Emotional support",
    "education": "Education",
    "psychoeducation": "Psychoeducation",
    "interpretation": "Interpretation",
    "recommendation": "Recommendation",
    "status": "Fit status",
}


def label(q: str) -> str:
    return LABELS.get(q, str(q).replace("_", " "))


#: files whose presence in ``models/<name>/`` marks ``<name>`` as a fitted model
POSTERIOR_FILES = (
    "posterior.nc",
    "summary.csv",
    "t50_posterior.csv",
    "milestones_posterior.csv",
    "diagnostics.csv",
    "gate.json",
)


@dataclass
class Posterior:
    """Where the Bayesian counterparts live: ``models/<name>/`` of the chosen model."""

    name: str | None
    #: run-relative folder of the model (``models/joint``)
    folder: str | None


def choose_posterior(run: RunDir, preferred: Sequence[str]) -> Posterior:
    """The fitted model the side-by-side tables use: the run's primary model, else the first of
    ``preferred`` with a ``posterior.nc`` or ``summary.csv``, else any fitted model."""
    models = run.stage("models")
    if not models.ran:
        return Posterior(None, None)
    primary = run.config_value("model.name")
    names = [n for n in [primary, *preferred] if n]
    fitted = sorted({p.split("/")[0] for pat in POSTERIOR_FILES for p in models.glob(f"*/{pat}")})
    for n in names + fitted:
        if n in fitted:
            return Posterior(n, f"models/{n}")
    return Posterior(None, None)


def models_csv(run: RunDir, post: Posterior, rel: str) -> tuple[pd.DataFrame | None, str | None]:
    """A models-stage table of the chosen model: ``models/<name>/<rel>`` (team contract), else
    ``models/<rel>`` (a table the stage wrote once for all models); (None, None) when absent."""
    models = run.stage("models")
    cands = ([f"{post.name}/{rel}"] if post.name else []) + [rel]
    for c in cands:
        df = models.csv(c)
        if df is not None:
            return df, f"models/{c}"
    return None, None


def _censor(run: RunDir) -> int | None:
    c = run.config_value("baselines.censor_day")
    if c is not None:
        return int(c)
    ds = run.study
    if ds is not None and "day" in ds.dims:
        return int(ds.sizes["day"]) + 1
    return None


def _latency_text(value: object, censor: int | None) -> str:
    if censor is not None and isinstance(value, int | float | np.number) and value == censor:
        return "never"
    return fmt_num(value, 0)


# -------------------------------------------------------------------------------------------
def side_by_side(
    name: str,
    title: str,
    base: pd.DataFrame,
    base_src: str,
    post: pd.DataFrame | None,
    post_src: str | None,
    quantities: Sequence[str],
    base_label: str,
    post_label: str,
    digits: int = 2,
    censor: int | None = None,
    extra_base: Sequence[str] = (),
    notes: Sequence[str] = (),
    post_extra: Sequence[tuple[str, str, str | None]] = (),
) -> ReportTable:
    """Per-model table: for every quantity, the baseline estimate [CI] beside the posterior
    median [credible interval].

    The CSV (``data``) holds the numbers unchanged, as columns ``<q>``, ``<q>_low``, ``<q>_high``
    (baseline) and ``<q>_posterior``, ``<q>_posterior_low``, ``<q>_posterior_high``.
    ``post_extra`` = ``[(column, header, quantity or None for every quantity)]``: posterior
    columns shown after the posterior of that quantity (probabilities, e.g. ``p_censored``), in
    the CSV as ``<q>_<column>``.
    """
    key = key_column(base) or "model"
    bl = long_estimates(base, key, None)
    found = list(dict.fromkeys(bl["quantity"]))
    qs = [
        q for q in ordered_quantities(found, quantities) if norm(q) in {norm(x) for x in quantities}
    ]
    if not qs:
        raise ValueError(
            f"{base_src}: none of the quantities {list(quantities)} among its columns "
            f"{list(base.columns)}"
        )
    pl = None
    if post is not None:
        try:
            pl = long_estimates(post, "model", qs, [c for c, _, _ in post_extra])
            pl = pl.rename(columns={"model": key})
        except ValueError as err:
            log.warning("%s: %s", post_src, err)
            pl = None
    keys = list(dict.fromkeys(base[key]))
    data = pd.DataFrame({key: keys})
    disp = pd.DataFrame({"Model" if norm(key) == "model" else key: keys})
    groups: list[tuple[str, int]] | None = [("", 1)]
    for q in qs:
        b = bl[bl["quantity"] == q].set_index(key).reindex(keys)
        data[q] = b["estimate"].to_numpy()
        has_ci = b["low"].notna().any() or b["high"].notna().any()
        if has_ci:
            data[f"{q}_low"] = b["low"].to_numpy()
            data[f"{q}_high"] = b["high"].to_numpy()
        latency = q in LATENCIES or q.startswith("first_")
        cells = [
            _latency_text(e, censor) if latency and not has_ci else fmt_interval(e, lo, hi, digits)
            for e, lo, hi in zip(b["estimate"], b["low"], b["high"], strict=True)
        ]
        if (
            not latency
            and not has_ci
            and all(float(x).is_integer() for x in b["estimate"].dropna())
            and not has_ci
        ):
            cells = [fmt_num(e, 0) for e in b["estimate"]]
        n = 1
        disp[f"{label(q)} · {base_label}"] = cells
        if pl is not None and (pl["quantity"] == q).any():
            p = pl[pl["quantity"] == q].drop_duplicates(key).set_index(key).reindex(keys)
            data[f"{q}_posterior"] = p["estimate"].to_numpy()
            data[f"{q}_posterior_low"] = p["low"].to_numpy()
            data[f"{q}_posterior_high"] = p["high"].to_numpy()
            disp[f"{label(q)} · {post_label}"] = [
                fmt_interval(e, lo, hi, digits)
                for e, lo, hi in zip(p["estimate"], p["low"], p["high"], strict=True)
            ]
            n = 2
            for col, header, only in post_extra:
                if (only is None or only == q) and p[col].notna().any():
                    data[f"{q}_{col}"] = p[col].to_numpy()
                    disp[f"{label(q)} · {header}"] = [fmt_p(v) for v in p[col]]
                    n += 1
        groups.append((label(q), n))
    for c in extra_base:
        col = find_col(base, c)
        if col is not None:
            vals = base.set_index(key)[col].reindex(keys)
            data[c] = vals.to_numpy()
            disp[label(c)] = [fmt_num(v, digits) for v in vals]
            groups.append(("", 1))
    if all(n == 1 for _, n in groups):
        # no posterior beside any quantity: one header row with the quantity names
        disp.columns = [c.split(" · ")[0] for c in disp.columns]
        groups = None
    else:
        # short headers under the quantity groups
        disp.columns = [c.split(" · ")[-1] if " · " in c else c for c in disp.columns]
    sources = [base_src] + ([post_src] if pl is not None and post_src else [])
    all_notes = list(notes)
    if post is not None and pl is None:
        all_notes.append(f"The posterior table {post_src} could not be matched to these rows.")
    return ReportTable(name, title, data, disp, sources, all_notes, groups)


def _posterior_summary(run: RunDir, post: Posterior) -> tuple[pd.DataFrame | None, str | None]:
    """The chosen model's ``summary.csv`` (labels like ``t50[model]`` split into columns)."""
    if post.folder is None:
        return None, None
    rel = "summary.csv"
    df = run.stage("models").csv(f"{post.name}/{rel}")
    if df is None:
        return None, None
    return split_labels(df), f"{post.folder}/{rel}"


# Table 1 -----------------------------------------------------------------------------------
def table1(run: RunDir, post: Posterior, ci_label: str = "95% CrI") -> ReportTable | None:
    """Table 1: milestone latencies and day counts per model, consensus beside posterior.

    Paper, "Statistical Analysis": latencies from the consensus trajectory censored at 31; the
    posterior columns are the models stage's ``milestones_posterior.csv`` (median [interval]).
    """
    b = run.stage("baselines")
    base = b.csv("table1_milestones.csv")
    if base is None:
        return None
    post_df, post_src = models_csv(run, post, "milestones_posterior.csv")
    censor = _censor(run)
    notes = []
    if censor is not None:
        notes.append(f"'never' = not reached in the conversation (censored at day {censor}).")
    if post_df is not None:
        notes.append(f"Posterior: median [{ci_label}] of the latency under the fitted model.")
    return side_by_side(
        "table1_milestones",
        "Table 1. Milestones per model: consensus trajectory beside the posterior",
        base,
        "baselines/table1_milestones.csv",
        post_df,
        post_src,
        MILESTONES,
        "consensus",
        "posterior",
        digits=1,
        censor=censor,
        notes=notes,
        post_extra=[("p_censored", "P(never)", None)],
    )


# Table 2 -----------------------------------------------------------------------------------
def table2(run: RunDir) -> ReportTable | None:
    """Table 2: intervention profiles on stabilized-clinical (stage-4) days (baselines only)."""
    base = run.stage("baselines").csv("table2_interventions.csv")
    if base is None:
        return None
    disp = display_frame(base, 2)
    disp.columns = [label(c) if c not in ("model",) else "Model" for c in base.columns]
    return ReportTable(
        "table2_interventions",
        "Table 2. Intervention profiles on stabilized-clinical (stage-4) days",
        base,
        disp,
        ["baselines/table2_interventions.csv"],
        ["Mean intensity on the 1 (absent) – 3 (frequent) scale over each model's stage-4 days."],
    )


# Table C1 ----------------------------------------------------------------------------------
def table_c1(run: RunDir) -> ReportTable | None:
    """Table C1: reliability (Krippendorff's alpha [CI], quadratic-weighted kappa over rater
    pairs, percent agreement, ICC(2,1)/ICC(2,k)) as the baselines wrote it."""
    base = run.stage("baselines").csv("tableC1_reliability.csv")
    if base is None:
        return None
    return ReportTable(
        "tableC1_reliability",
        "Table C1. Inter-rater reliability",
        base,
        _c1_display(base),
        ["baselines/tableC1_reliability.csv"],
        [
            "α: Krippendorff's alpha [bootstrap CI]; κ: quadratic-weighted kappa, mean (min–max) "
            "over rater pairs; ICC: two-way random effects (Shrout–Fleiss ICC(2,1), ICC(2,k))."
        ],
    )


def _c1_display(df: pd.DataFrame) -> pd.DataFrame:
    """Readable columns for the known reliability statistics, the rest shown as they are."""
    out = pd.DataFrame(index=df.index)
    used: set[str] = set()

    def col(*names: str) -> str | None:
        c = find_col(df, *names)
        if c is not None:
            used.add(c)
        return c

    var = col("variable", "item", "measure")
    if var is not None:
        out["Variable"] = [str(v).replace("_", " ") for v in df[var]]
    a, lo, hi = col("alpha"), col("alpha_ci_low"), col("alpha_ci_high")
    if a is not None:
        out["α [95% CI]"] = [
            fmt_interval(x, df[lo][i] if lo else None, df[hi][i] if hi else None, 3)
            for i, x in zip(df.index, df[a], strict=True)
        ]
    k, kmin, kmax = (
        col("kappa_q_mean", "kappa_mean", "kappa"),
        col("kappa_q_min"),
        col("kappa_q_max"),
    )
    if k is not None:
        out["κ mean (min–max)"] = [
            fmt_num(x, 3)
            + (f" ({fmt_num(df[kmin][i], 2)}–{fmt_num(df[kmax][i], 2)})"
               if kmin and kmax and not pd.isna(df[kmin][i]) else "")
            for i, x in zip(df.index, df[k], strict=True)
        ]  # fmt: skip
    pa = col("pct_agreement")
    if pa is not None:
        out["% agreement"] = [fmt_num(x, 1) for x in df[pa]]
    for names, header in ((("icc2_1", "icc2"), "ICC(2,1)"), (("icc2_k", "icc2k"), "ICC(2,k)")):
        c = col(*names)
        if c is not None:
            out[header] = [fmt_num(x, 3) for x in df[c]]
    rest = [c for c in df.columns if c not in used]
    if rest:
        extra = display_frame(df[rest], 3)
        for c in rest:
            out[str(c).replace("_", " ")] = extra[c]
    return out


#: reliability levels: (key, label, baseline statistics of Table C1 shown for that level)
RELIABILITY_LEVELS = (
    ("single", "One rater", (("alpha", "α"), ("icc2_1", "ICC(2,1)"))),
    ("consensus", "Consensus of the k raters", (("icc2_k", "ICC(2,k)"),)),
)


def _reliability_level(name: object) -> str | None:
    """``single``/``consensus`` for a posterior reliability quantity name, None if unknown."""
    n = norm(name)
    if "single" in n or "one_rater" in n or n in ("icc2_1", "icc_1", "icc21") or n.endswith("_1"):
        return "single"
    if any(w in n for w in ("consensus", "average", "mean_rater", "k_rater")) or n in (
        "icc2_k",
        "icc_k",
        "icc2k",
    ):
        return "consensus"
    return None


def _find_reliability_posterior(
    run: RunDir, post: Posterior
) -> tuple[pd.DataFrame | None, str | None]:
    models = run.stage("models")
    cands = [f"{post.name}/reliability_posterior.csv"] if post.name else []
    cands += models.glob("*/reliability_posterior.csv") + ["reliability_posterior.csv"]
    cands += models.glob("*/reliability*.csv") + models.glob("reliability*.csv")
    for rel in dict.fromkeys(cands):
        df = models.csv(rel)
        if df is not None:
            return df, f"models/{rel}"
    return None, None


def posterior_reliability(run: RunDir, post: Posterior | None = None) -> ReportTable | None:
    """α/ICC (Table C1) beside the rater model's posterior reliability.

    Reads ``models/<name>/reliability_posterior.csv`` (the chosen model's, else any model's):
    one row per quantity (``quantity``/``parameter`` column, e.g. ``reliability_single``,
    ``reliability_consensus``) with ``median``, ``ci_low``, ``ci_high`` and optionally a
    ``variable`` column. Single-rater reliability is set beside α and ICC(2,1), the k-rater
    consensus reliability beside ICC(2,k). Rows the report cannot match are listed after.
    Returns None when the models stage wrote no reliability table.
    """
    pdf, psrc = _find_reliability_posterior(run, post or Posterior(None, None))
    if pdf is None:
        return None
    title = "Table C1 (Bayesian). Inter-rater reliability: α and ICC beside the posterior"
    qcol = find_col(pdf, "quantity", "parameter", "param", "statistic", "measure", "var_name")
    item = find_col(pdf, "variable", "item")
    if qcol is None and item is not None:
        qcol, item = item, None
    est = find_col(pdf, "median", "estimate", "mean", "value")
    if qcol is None or est is None:  # an unknown layout: shown as written
        return ReportTable("tableC1_posterior_reliability", title, pdf, display_frame(pdf, 3),
                           [psrc])  # fmt: skip
    low, high = _ci_cols(pdf.drop(columns=[est]), None)
    base = run.stage("baselines").csv("tableC1_reliability.csv")
    bvar = find_col(base, "variable", "item", "measure") if base is not None else None
    rows = []
    for _, r in pdf.iterrows():
        variable = str(r[item]) if item else "recognition"
        level = _reliability_level(r[qcol])
        row: dict[str, object] = {"variable": variable, "level": level or "other",
                                  "posterior_quantity": r[qcol]}  # fmt: skip
        brow = None
        if base is not None and level is not None:
            match = base[base[bvar].astype(str) == variable] if bvar else base.iloc[:0]
            brow = match.iloc[0] if len(match) else (base.iloc[0] if bvar is None else None)
        cells = []
        for lev, _, stats in RELIABILITY_LEVELS:
            if lev != level or brow is None:
                continue
            for stat, sym in stats:
                c = find_col(base, stat)
                if c is None:
                    continue
                row[stat] = brow[c]
                lo, hi = _ci_cols(base, c)
                if lo and hi:
                    row[f"{stat}_low"], row[f"{stat}_high"] = brow[lo], brow[hi]
                cells.append(f"{sym} = " + fmt_interval(brow[c], brow[lo] if lo else None,
                                                        brow[hi] if hi else None, 3))  # fmt: skip
        row["posterior"] = r[est]
        row["posterior_low"] = r[low] if low else float("nan")
        row["posterior_high"] = r[high] if high else float("nan")
        row["_baseline"] = "; ".join(cells) if cells else "–"
        rows.append(row)
    order = {lev: i for i, (lev, _, _) in enumerate(RELIABILITY_LEVELS)}
    data = pd.DataFrame(rows)
    data["_o"] = [order.get(x, 99) for x in data["level"]]
    data = data.sort_values(["variable", "_o"], kind="stable").drop(columns="_o")
    data = data.reset_index(drop=True)
    labels = {lev: lab for lev, lab, _ in RELIABILITY_LEVELS}
    disp = pd.DataFrame(
        {
            "Variable": [str(v).replace("_", " ") for v in data["variable"]],
            "Reliability of": [labels.get(x, "–") for x in data["level"]],
            "Baseline (Table C1) [95% CI]": data["_baseline"],
            "Posterior quantity": [str(x) for x in data["posterior_quantity"]],
            "Posterior median [CrI]": [
                fmt_interval(e, lo, hi, 3)
                for e, lo, hi in zip(
                    data["posterior"], data["posterior_low"], data["posterior_high"], strict=True
                )
            ],
        }
    )
    data = data.drop(columns="_baseline")
    sources = (["baselines/tableC1_reliability.csv"] if base is not None else []) + [psrc]
    notes = [
        "Posterior reliability of the rater model on the latent scale (ICC analogue): one rater "
        "= between-model-day variance over total variance; consensus = the same for the mean of "
        "the k raters. Set beside α and ICC(2,1), and beside ICC(2,k)."
    ]
    if base is None:
        notes.append("Table C1 (baselines) is not in this run.")
    return ReportTable("tableC1_posterior_reliability", title, data, disp, sources, notes)


# Table D1 ----------------------------------------------------------------------------------
def table_d1(run: RunDir, post: Posterior, ci_prob: float = 0.95) -> ReportTable | None:
    """Table D1: least-squares logistic fits with rater-bootstrap CIs beside the posterior."""
    base = run.stage("baselines").csv("tableD1_logistic.csv")
    if base is None:
        return None
    post_df, post_src = models_csv(run, post, "t50_posterior.csv") if post.name else (None, None)
    if post_df is None:
        post_df, post_src = _posterior_summary(run, post)
    if post_df is None and post.folder is not None:
        post_df, post_src = posterior_quantiles(run, post, LOGISTIC, ci_prob)
    notes = ["m(t) = 1 + (L − 1) / (1 + exp(−k (t − t50))); least squares on the consensus."]
    if post_df is not None:
        notes.append(f"Posterior: median [credible interval] of model `{post.name}`.")
        if find_col(post_df, "p_beyond_last_day") is not None:
            notes.append("P(> last day): posterior probability that t50 lies beyond the "
                         "observed days.")  # fmt: skip
    return side_by_side(
        "tableD1_logistic",
        "Table D1. Logistic trajectory fits: least squares [bootstrap CI] beside the posterior",
        base,
        "baselines/tableD1_logistic.csv",
        post_df,
        post_src,
        LOGISTIC,
        "LS",
        "posterior",
        digits=2,
        extra_base=("r2", "status"),
        notes=notes,
        post_extra=[("p_beyond_last_day", "P(> last day)", "t50")],
    )


def posterior_quantiles(
    run: RunDir, post: Posterior, variables: Sequence[str], ci_prob: float
) -> tuple[pd.DataFrame | None, str | None]:
    """Median and equal-tailed interval of ``variables`` (dim ``model``) from ``posterior.nc``.

    Used only when the models stage wrote no ``summary.csv``: summarising saved draws, no refit.
    """
    rel = f"{post.name}/posterior.nc"
    path = run.stage("models").path / rel
    if not path.is_file():
        return None, None
    tree = open_posterior(path)
    if tree is None:
        return None, None
    rows = []
    a = (1 - ci_prob) / 2
    for v in variables:
        if v not in tree:
            continue
        da = tree[v]
        sample = [d for d in ("chain", "draw") if d in da.dims]
        q = da.quantile([0.5, a, 1 - a], dim=sample)
        for m in da["model"].values:
            vals = q.sel(model=m).values
            rows.append(
                {"model": m, "quantity": v, "median": vals[0], "low": vals[1], "high": vals[2]}
            )
    if not rows:
        return None, None
    return pd.DataFrame(rows), f"models/{rel}"


def open_posterior(path) -> object | None:
    """The ``posterior`` group of a saved DataTree as an ``xr.Dataset`` (None if unreadable)."""
    import xarray as xr

    try:
        tree = xr.open_datatree(path)
        node = tree["posterior"] if "posterior" in tree.children else tree
        return node.to_dataset().load()
    except Exception as err:  # a damaged file must not stop the report
        log.warning("cannot read posterior %s: %s", path, err)
        return None


# contrasts ---------------------------------------------------------------------------------
#: contrast columns kept in the CSV but not shown in the document (they repeat the contrast
#: definition or describe the method, which the table note states once)
CONTRAST_HIDDEN = {"by", "a", "b", "dropped", "expected", "n_arrangements", "exact", "method"}


def contrasts(run: RunDir, posterior: Posterior | None = None) -> ReportTable | None:
    """Pre-specified contrasts: exact permutation p beside the posterior probability."""
    base = run.stage("baselines").csv("contrasts.csv")
    post, post_src = models_csv(run, posterior or Posterior(None, None), "contrasts_posterior.csv")
    if base is None and post is None:
        return None
    notes = []
    if base is not None:
        exact = find_col(base, "exact")
        if exact is not None and base[exact].astype(str).str.lower().eq("true").all():
            notes.append("Permutation p-values are exact (full enumeration of the rank-sum "
                         "distribution, midranks for ties) over models.")  # fmt: skip
        elif exact is not None:
            notes.append("Rows with exact = False used Monte Carlo permutations (see the CSV).")
        if all(find_col(base, col) is not None for col in ("a", "b", "by")):
            defs = base.drop_duplicates(find_col(base, "contrast", "name") or base.columns[0])
            notes.append("Groups: " + "; ".join(
                f"{r[find_col(base, 'contrast', 'name')]}: {r[find_col(base, 'by')]} = "
                f"{r[find_col(base, 'a')]} vs {r[find_col(base, 'b')]}"
                for _, r in defs.iterrows()) + ".")  # fmt: skip
    keys: list[str] = []
    if base is not None:
        keys = [c for c in (find_col(base, "contrast", "name"), find_col(base, "quantity")) if c]
    if base is not None and post is not None and len(keys) == 2:
        pkeys = [find_col(post, "contrast", "name"), find_col(post, "quantity")]
        if all(pkeys):
            p = post.rename(columns=dict(zip(pkeys, keys, strict=True)))
            data = base.merge(p, on=keys, how="outer", suffixes=("", "_posterior"))
            shown_b = [c for c in base.columns if c not in keys and norm(c) not in CONTRAST_HIDDEN]
            shown_p = [c for c in data.columns if c not in base.columns]
            disp = _contrast_display(data[keys + shown_b])
            pdisp = _posterior_contrast_display(data[shown_p])
            disp = pd.concat([disp, pdisp], axis=1)
            ncol = find_col(post, "note")
            if ncol is not None:
                why = sorted({str(v).strip() for v in post[ncol] if not pd.isna(v)} - {""})
                if why:
                    notes.append("Posterior '–': " + "; ".join(why) + ".")
            notes.append("Posterior: median [credible interval] of the group difference a − b "
                         "and its posterior probability of being > 0 (a probability, not a "
                         "p-value; for alternative 'less' compare the p-value with "
                         "1 − P(Δ > 0)).")  # fmt: skip
            return ReportTable(
                "contrasts",
                "Pre-specified contrasts: exact permutation tests beside posterior contrasts",
                data,
                disp,
                ["baselines/contrasts.csv", post_src or "models/contrasts_posterior.csv"],
                notes,
                [
                    ("", len(keys)),
                    ("Permutation test", len(shown_b)),
                    (
                        f"Posterior ({posterior.name})"
                        if posterior and posterior.name
                        else "Posterior",
                        pdisp.shape[1],
                    ),
                ],  # fmt: skip
            )
    df, src = (base, "baselines/contrasts.csv") if base is not None else (
        post, post_src or "models/contrasts_posterior.csv")  # fmt: skip
    shown = [c for c in df.columns if norm(c) not in CONTRAST_HIDDEN or src.startswith("models")]
    if base is None or post is None:
        notes.append(
            "The posterior contrasts (models stage) are not in this run."
            if post is None
            else "The permutation tests (baselines stage) are not in this run."
        )
    return ReportTable("contrasts", "Pre-specified contrasts", df, _contrast_display(df[shown]),
                       [src], notes)  # fmt: skip


#: posterior contrast columns kept in the CSV but not shown (the note states the method)
POSTERIOR_CONTRAST_HIDDEN = {"mean", "ci_prob", "ci_kind", "n_a", "n_b", "alternative"}


def _posterior_contrast_display(df: pd.DataFrame) -> pd.DataFrame:
    """Posterior contrast columns for display: ``Δ [CrI]`` in one cell when median and bounds
    exist, probabilities as ``P(Δ > 0)``; other columns as they are."""
    out = pd.DataFrame(index=df.index)
    est = find_col(df, "median", "diff_median", "estimate", "mean", "diff_mean")
    low, high = _ci_cols(df, None)
    used = set()
    if est is not None:
        used |= {est, low, high}
        out["Δ [CrI]"] = [
            fmt_interval(e, df[low][i] if low else None, df[high][i] if high else None, 2)
            for i, e in zip(df.index, df[est], strict=True)
        ]
    for c in df.columns:
        n = norm(c)
        if c in used or n in POSTERIOR_CONTRAST_HIDDEN or n.endswith("_posterior"):
            continue  # kept in the CSV: repeats the baseline's columns or the method
        if n == "note":  # stated once under the table (contrast_notes), not in every row
            continue
        if n in ("p_gt_0", "p_gt0", "prob_gt_0", "p_positive"):
            out["P(Δ > 0)"] = [fmt_p(v) for v in df[c]]
        elif n.startswith(("p_", "prob")) and pd.api.types.is_numeric_dtype(df[c]):
            out[str(c).replace("_", " ")] = [fmt_p(v) for v in df[c]]
        else:
            out[str(c).replace("_", " ")] = display_frame(df[[c]], 2)[c]
    return out


def _contrast_display(df: pd.DataFrame) -> pd.DataFrame:
    out = display_frame(df, 2)
    for c in df.columns:
        n = norm(c)
        if n in ("p", "pvalue", "p_value") or n.startswith(("p_", "prob")) or n.endswith("_p"):
            if pd.api.types.is_numeric_dtype(df[c]):
                out[c] = [fmt_p(v) for v in df[c]]
    out.columns = [str(c).replace("_", " ") for c in df.columns]
    return out


# Section F ---------------------------------------------------------------------------------
def section_f(run: RunDir) -> ReportTable | None:
    """Section F: Spearman rho of each intervention type with day in the never-turning models,
    one row per model and one column per type (``ρ (p)``); the CSV keeps the long table."""
    rel = "sectionF_naive_profiles.csv"
    df = run.stage("baselines").csv(rel)
    if df is None:
        return None
    title = "Table F1. Naive-stage profiles: Spearman ρ of intervention intensity with day"
    m, t, r = find_col(df, "model"), find_col(df, "intervention_type"), find_col(df, "rho")
    p = find_col(df, "pvalue", "p_value", "p")
    if df.empty:
        return ReportTable(
            "sectionF_naive_profiles",
            title,
            df,
            display_frame(df),
            [f"baselines/{rel}"],
            ["No model stayed naive for the whole study."],
        )
    if m is None or t is None or r is None:
        return ReportTable(
            "sectionF_naive_profiles", title, df, display_frame(df, 3), [f"baselines/{rel}"]
        )
    models = list(dict.fromkeys(df[m]))
    types = list(dict.fromkeys(df[t]))
    disp = pd.DataFrame({"Model": models})
    for ty in types:
        cells = []
        for mo in models:
            row = df[(df[m] == mo) & (df[t] == ty)]
            if row.empty:
                cells.append("–")
                continue
            cell = fmt_num(row[r].iloc[0], 2)
            if p is not None and not pd.isna(row[p].iloc[0]):
                cell += f" ({fmt_p(row[p].iloc[0])})"
            cells.append(cell)
        disp[label(str(ty))] = cells
    return ReportTable(
        "sectionF_naive_profiles",
        title,
        df,
        disp,
        [f"baselines/{rel}"],
        [
            "Cells: ρ (p) over the days of each model that never reached clinical framing; "
            "descriptive (days are serially dependent)."
        ],
    )


# text stage --------------------------------------------------------------------------------
def figure3_table(run: RunDir) -> ReportTable | None:
    """The data of Figure 3: mean entrainment per model and its Level-B day count (text stage),
    with the Spearman correlation of the two from ``text/correlations.csv`` in the note."""
    from delusion_bayes.report.figures import (
        FIG3_FILES,
        _entrainment_col,
        per_model_text,
        text_correlation,
    )

    found = per_model_text(run, FIG3_FILES, lambda d: _entrainment_col(d) is not None)
    if found is None:
        return None
    df, src = found
    cols = [find_col(df, "model"), _entrainment_col(df)]
    cols += [c for c in (find_col(df, "entrainment_sd"), find_col(df, "entrainment_n_days"),
                         find_col(df, "days_level_b")) if c is not None]  # fmt: skip
    data = df[cols].reset_index(drop=True)
    disp = display_frame(data, 3)
    disp.columns = [label(c) if c not in cols[:2] else ("Model", "Mean entrainment")[i]
                    for i, c in enumerate(data.columns)]  # fmt: skip
    disp.columns = [str(c).replace("_", " ") for c in disp.columns]
    notes, sources = [], [src]
    corr = text_correlation(run, "entrainment", "days_level_b")
    if corr is not None:
        notes.append(f"Spearman ρ of mean entrainment with Level-B days = {fmt_num(corr[0], 3)} "
                     f"(p = {fmt_p(corr[1])}), from text/correlations.csv.")  # fmt: skip
        sources.append("text/correlations.csv")
    return ReportTable("figure3_entrainment_level_b", "Figure 3 data. Mean entrainment per model "
                       "and Level-B day count", data, disp, sources, notes)  # fmt: skip


def figure4_table(run: RunDir) -> ReportTable | None:
    """The data of Figure 4: mean modality before vs from each model's clinical turn."""
    from delusion_bayes.report.figures import FIG4_FILES, _turn_cols, per_model_text

    found = per_model_text(run, FIG4_FILES, lambda d: None not in _turn_cols(d), "modality")
    if found is None:
        return None
    df, src = found
    before, after = _turn_cols(df)
    cols = [find_col(df, "model"), find_col(df, "turn_day"), before, after]
    cols += [find_col(df, "change"), find_col(df, "n_before"), find_col(df, "n_after")]
    data = df[[c for c in cols if c is not None]].reset_index(drop=True)
    disp = display_frame(data, 3)
    names = {"model": "Model", "turn_day": "Turn day", "change": "Change", "n_before": "Days before",
             "n_after": "Days from", before: "Before the turn", after: "From the turn"}  # fmt: skip
    disp.columns = [names.get(c, str(c).replace("_", " ")) for c in data.columns]
    return ReportTable(
        "figure4_modality_turn",
        "Figure 4 data. Modality (boosters − hedges per sentence) at the clinical turn",
        data,
        disp,
        [src],
        ["Turn day: first day of clinical framing in the consensus; '–' = never turned."],
    )


# replay stage ------------------------------------------------------------------------------
def replay_pivot(run: RunDir, rel: str, name: str, title: str, note: str) -> ReportTable | None:
    """A replay table's category-level rows as model × category, cells ``estimate [CI]``.

    Reads ``replay/<rel>`` (``prevalence.csv``, ``deltas.csv``: columns ``model, level,
    category, estimate, ci_low, ci_high``); the CSV keeps those rows unchanged. None when the file
    is absent or has no category-level rows.
    """
    df = run.stage("replay").csv(rel)
    if df is None:
        return None
    m, lev, cat = find_col(df, "model"), find_col(df, "level"), find_col(df, "category")
    est, lo, hi = find_col(df, "estimate"), find_col(df, "ci_low"), find_col(df, "ci_high")
    if None in (m, cat, est):
        return None
    rows = df[df[lev].astype(str) == "category"] if lev is not None else df
    if rows.empty:
        return None
    rows = rows.reset_index(drop=True)
    models = list(dict.fromkeys(rows[m]))
    cats = list(dict.fromkeys(rows[cat]))
    disp = pd.DataFrame({"Model": models})
    for c in cats:
        cells = []
        for mo in models:
            r = rows[(rows[m] == mo) & (rows[cat] == c)]
            if r.empty:
                cells.append("–")
                continue
            r = r.iloc[0]
            cells.append(fmt_interval(r[est], r[lo] if lo else None, r[hi] if hi else None, 3))
        disp[str(c).replace("_", " ")] = cells
    desc = run.stage("replay").describe(rel)
    notes = [note] + ([desc[:1].upper() + desc[1:] + "."] if desc else [])
    return ReportTable(name, title, rows, disp, [f"replay/{rel}"], notes)


def replay_bayes(run: RunDir) -> ReportTable | None:
    """Posterior prevalence beside the bootstrap estimate, category level, from
    ``replay/bayes_prevalence.csv`` (``boot_estimate``/``boot_ci_*`` beside the posterior)."""
    df = run.stage("replay").csv("bayes_prevalence.csv")
    if df is None:
        return None
    m, lab = find_col(df, "model"), find_col(df, "label", "category")
    q, lev = find_col(df, "quantity"), find_col(df, "level")
    est = find_col(df, "median", "mean", "estimate")
    lo, hi = find_col(df, "ci_low"), find_col(df, "ci_high")
    be, bl, bh = (
        find_col(df, "boot_estimate"),
        find_col(df, "boot_ci_low"),
        find_col(df, "boot_ci_high"),
    )
    if None in (m, lab, est):
        return None
    rows = df
    if q is not None:
        rows = rows[rows[q].astype(str) == "prevalence"]
    if lev is not None and (rows[lev].astype(str) == "category").any():
        rows = rows[rows[lev].astype(str) == "category"]
    rows = rows.reset_index(drop=True)
    if rows.empty:
        return None
    disp = pd.DataFrame(
        {
            "Model": rows[m].astype(str),
            "Category": rows[lab].astype(str).str.replace("_", " "),
            "Bootstrap [95% CI]": [
                fmt_interval(r[be], r[bl] if bl else None, r[bh] if bh else None, 3) if be else "–"
                for _, r in rows.iterrows()
            ],
            "Posterior [CrI]": [
                fmt_interval(r[est], r[lo] if lo else None, r[hi] if hi else None, 3)
                for _, r in rows.iterrows()
            ],
        }
    )
    truth = find_col(rows, "truth")
    if truth is not None and rows[truth].notna().any():
        disp["Truth (simulated)"] = [fmt_num(v, 3) for v in rows[truth]]
    return ReportTable(
        "replay_bayes_vs_bootstrap",
        "Replay: Bayesian prevalence beside the cluster bootstrap (category level)",
        rows,
        disp,
        ["replay/bayes_prevalence.csv"],
        [f"Posterior: {est} [credible interval] of the hierarchical prevalence model."],
    )


# generic -----------------------------------------------------------------------------------
def generic(
    run: RunDir, stage: str, rel: str, title: str | None = None, digits: int = 3
) -> ReportTable | None:
    """Any stage CSV as a table (used for tables the report has no special layout for)."""
    df = run.stage(stage).csv(rel)
    if df is None:
        return None
    desc = run.stage(stage).describe(rel)
    name = f"{stage}_{rel}".replace("/", "_").removesuffix(".csv")
    caption = title or (desc[:1].upper() + desc[1:] if desc else rel)
    disp = display_frame(df, digits)
    # a CSV written with its (unnamed) index: no "Unnamed: 0" header in the document
    disp.columns = ["" if str(c).startswith("Unnamed: ") else c for c in disp.columns]
    return ReportTable(name, caption, df, disp, [f"{stage}/{rel}"])


def is_number(x: object) -> bool:
    try:
        return not math.isnan(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
