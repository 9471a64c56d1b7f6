"""How should I size my next study? Power and precision of one study design, on simulated studies.

A *cell* is a number of raters, chatbot models and days and a rater noise level. ``n_sims``
studies of a cell (``paper_like``, its roster scaled to ``n_models``) are analysed with the
coverage study's code plus reliability (alpha, ICC(2,k)) and regime classification: the
baselines on all, the Bayesian ``design.model`` on the first ``n_sims_bayes``; every table says
its numbers are simulated. One job per cell (``experiments/design.yaml``)::

    delusion-bayes -m experiment=design
    delusion-bayes-summarize multirun/design   # design_table.csv/.md, power.png/.pdf, headline
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..baselines.config import BaselinesConfig
from ..config import group_config
from .config import DesignConfig
from .coverage import (
    POPULATION,
    baseline_estimates,
    baseline_rows,
    fit_rows,
    seconds_row,
    setup_replicate,
)
from .coverage_metrics import BASELINE, REPLICATE_COLUMNS, markdown_table
from .design_rows import classify_rows, reliability_rows
from .grouped import grouped_population_rows

#: what makes a cell of the design (the sweep's factors)
CELL: tuple[str, ...] = ("n_raters", "n_models", "n_days", "discrimination_mean")
#: columns of a design replicate row: the cell, the replicate number, the coverage row columns
DESIGN_COLUMNS: tuple[str, ...] = (*CELL, "replicate", *REPLICATE_COLUMNS)
#: columns of the per-cell metrics
METRIC_COLUMNS: tuple[str, ...] = (
    "data",
    *CELL,
    "method",
    "metric",
    "item",
    "value",
    "se",
    "n",
    "n_sims",
)
#: rated variables the design study does not score (dropped before the baselines run)
UNSCORED: tuple[str, ...] = ("confidence", "intervention", "disengagement")


def cell_of(design: Any) -> dict[str, Any]:
    """``{n_raters, n_models, n_days, discrimination_mean}`` of a ``design`` node."""
    d = group_config(DesignConfig, design)
    types = {**dict.fromkeys(CELL, int), "discrimination_mean": float}
    return {k: types[k](getattr(d, k)) for k in CELL}


def simulate_cell(
    cell: Mapping[str, Any],
    seed: int,
    *,
    preset: str = "paper_like",
    overrides: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """One simulated study of ``cell`` (``overrides``: further ``simulate_study`` overrides,
    below the cell's; no texts)."""
    from ..data import simulate_study

    kw = {**dict(overrides or {}), "texts": False, **{k: cell[k] for k in CELL}}
    return simulate_study(preset=preset, seed=int(seed), **kw)


def analyse_study(
    ds: xr.Dataset,
    *,
    baselines: Any,
    method: str | None = None,
    fit_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    fit_fn: Callable[..., Any] | None = None,
    population: str | None = None,
) -> pd.DataFrame:
    """Analyse one simulated study with the baselines and ``method`` (``onset``/``joint``) when
    given: the coverage study's rows plus ``reliability`` and ``classify`` rows. ``seed`` is
    added to ``baselines.seed`` and ``fit_kwargs["seed"]``; unlike the coverage study,
    ``baselines.stable_run = 0`` is passed on as it is.

    The Bayesian power is the population contrast's (the permutation test's question):
    ``population="grouped"`` (default) from ``method`` refitted with each contrast's grouping
    (:func:`~delusion_bayes.sweep.grouped.grouped_population_rows`, the main job's column);
    ``"two_stage"`` from the earlier second stage on the ungrouped fit (the only choice with a
    ``fit_fn`` that is not a model fit, e.g. a stand-in posterior). ``None``: grouped unless a
    ``fit_fn`` is given."""
    if population is None:
        population = "grouped" if fit_fn is None else "two_stage"
    if population not in ("grouped", "two_stage"):
        raise ValueError(f"population={population!r}; expected 'grouped' or 'two_stage'")
    from ..baselines import analyse_trajectory
    from ..data.schema import MODEL

    stable_run = group_config(BaselinesConfig, baselines).stable_run
    cens, contrasts, truth, base, boot_seed = setup_replicate(ds, baselines, seed, stable_run)
    t0 = time.perf_counter()
    # the other rated variables are dropped before the baselines run: nothing scored here uses
    # them, and every resampling of a variable is seeded on its own (docs/dev/design-notes.md)
    unscored = [v for v in UNSCORED if v in ds.data_vars]
    res = analyse_trajectory(
        ds.drop_vars(unscored), baselines, seed=boot_seed, milestone_replicates=True
    )
    est, con = baseline_estimates(res, ds)
    rows = baseline_rows(est, con, ds, truth, contrasts, base)
    rows += reliability_rows(res, ds, base)
    ms = res.milestones.reindex({MODEL: ds[MODEL].values})
    rows += classify_rows(
        BASELINE, ms["first_clinical"].values, ms["first_stable"].values, ds, cens, base
    )
    rows.append(seconds_row(base, BASELINE, t0))
    if method:
        new, pest = fit_rows(
            method,
            ds,
            truth,
            contrasts,
            base,
            fit_fn=fit_fn,
            seed=seed,
            fit_kwargs=fit_kwargs,
            stable_run=stable_run,
            cens=cens,
        )
        # the Bayesian power is the population contrast's (the permutation test's question: do
        # the groups' populations differ?), not that of these models' group means
        if population == "grouped":
            run = stable_run or BaselinesConfig.stable_run
            new = [r for r in new if r["method"] != f"{method}{POPULATION}"]
            kw = dict(fit_kwargs=fit_kwargs, seed=seed, stable_run=run, cens=cens)
            new += grouped_population_rows(method, ds, contrasts, base, **kw)
        rows += [
            _as_method(r, method)
            for r in new
            if not (r["kind"] == "contrast" and r["method"] == method)
        ]
        rows += classify_rows(
            method, pest["first_clinical"][0], pest["first_stable"][0], ds, cens, base
        )
    return pd.DataFrame(rows).reindex(columns=list(REPLICATE_COLUMNS))


def _as_method(row: dict[str, Any], method: str) -> dict[str, Any]:
    """A population-contrast row of ``method`` (``<method>_population``) as ``method``'s."""
    return {**row, "method": method} if row["method"] == f"{method}{POPULATION}" else row


def run_cell(
    cell: Mapping[str, Any],
    *,
    baselines: Any,
    n_sims: int,
    n_sims_bayes: int = 0,
    method: str | None = "onset",
    fit_kwargs: Mapping[str, Any] | None = None,
    preset: str = "paper_like",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    fit_fn: Callable[..., Any] | None = None,
    progress: Callable[[int, float], None] | None = None,
) -> pd.DataFrame:
    """Simulate and analyse ``n_sims`` studies of ``cell`` (seeds ``seed, seed + 1, ...``); the
    first ``n_sims_bayes`` also with ``method``. Rows with :data:`DESIGN_COLUMNS`."""
    if n_sims < 1 or not 0 <= n_sims_bayes <= n_sims:
        raise ValueError(
            f"design: n_sims = {n_sims}, n_sims_bayes = {n_sims_bayes}; expected n_sims >= 1 "
            "and 0 <= n_sims_bayes <= n_sims"
        )
    frames = []
    for i in range(int(n_sims)):
        t0 = time.perf_counter()
        ds = simulate_cell(cell, seed + i, preset=preset, overrides=overrides)
        bayes = method if (method and i < n_sims_bayes) else None
        rows = analyse_study(
            ds, baselines=baselines, method=bayes, fit_kwargs=fit_kwargs, seed=i, fit_fn=fit_fn
        )
        frames.append(rows.assign(replicate=i, **{k: cell[k] for k in CELL}))
        if progress is not None:
            progress(i, time.perf_counter() - t0)
    return pd.concat(frames, ignore_index=True).reindex(columns=list(DESIGN_COLUMNS))


def binomial_se(p: float, n: int) -> float:
    """``sqrt(p (1 - p) / n)`` (NaN for n = 0)."""
    return math.sqrt(p * (1.0 - p) / n) if n > 0 and np.isfinite(p) else np.nan


def _over_studies(values: pd.Series, by: pd.Series) -> tuple[float, float, int]:
    """Mean of the per-study means and its SE (sd over studies / sqrt(n studies))."""
    per = values.groupby(by).mean().dropna()
    n = len(per)
    se = float(per.std(ddof=1) / math.sqrt(n)) if n > 1 else np.nan
    return float(per.mean()), se, n


def cell_metrics(reps: pd.DataFrame, *, data: str = "simulated") -> pd.DataFrame:
    """Per cell x method: ``power`` of each contrast x quantity (the type-I error under
    ``null``); ``t50_width``/``t50_coverage`` of the 95% t50 interval of the turning models;
    ``alpha``, ``icc2k`` and their ``*_ci_width``; ``never_correct`` (true never-turners
    classified ``never``), ``never_false`` (other models classified ``never``); ``seconds``.
    ``value`` is the estimate, ``se`` its Monte Carlo standard error (binomial for power, else
    over studies: the models of one study are not independent), ``n`` what it is over (studies,
    or model-studies for the t50 coverage), ``n_sims`` the studies of the cell for that method.
    """
    out: list[dict[str, Any]] = []
    if reps.empty:
        return pd.DataFrame(columns=list(METRIC_COLUMNS))
    for key, g in reps.groupby(list(CELL), sort=True):
        cell = dict(zip(CELL, key, strict=True))
        for method, gm in g.groupby("method", sort=False):
            n_sims = int(gm["replicate"].nunique())

            def add(metric, item, value, se, n, _cell=cell, _method=method, _n=n_sims):
                out.append(
                    {
                        "data": data,
                        **_cell,
                        "method": _method,
                        "metric": metric,
                        "item": item,
                        "value": value,
                        "se": se,
                        "n": n,
                        "n_sims": _n,
                    }
                )

            con = gm[gm["kind"] == "contrast"]
            for (item, q), gc in con.groupby(["item", "quantity"], sort=False):
                rej = pd.to_numeric(gc["reject"].astype(object), errors="coerce").dropna()
                p = float(rej.mean()) if len(rej) else np.nan
                add("power", f"{item}: {q}", p, binomial_se(p, len(rej)), len(rej))
            iv = gm[(gm["kind"] == "interval") & (gm["quantity"] == "t50")]
            iv = iv[iv["truth"].astype(float) <= int(cell["n_days"])]
            if not iv.empty:
                lo, hi = iv["low_95"].astype(float), iv["high_95"].astype(float)
                ok = np.isfinite(lo) & np.isfinite(hi)
                width = (hi - lo).where(ok)
                cover = ((lo <= iv["truth"]) & (iv["truth"] <= hi)).astype(float).where(ok)
                add("t50_width", "t50 (turning models)", *_over_studies(width, iv["replicate"]))
                v, se, _ = _over_studies(cover, iv["replicate"])
                add("t50_coverage", "t50 (turning models)", v, se, int(ok.sum()))
            rel = gm[gm["kind"] == "reliability"]
            for q, gr in rel.groupby("quantity", sort=False):
                w = gr["high_95"].astype(float) - gr["low_95"].astype(float)
                add(f"{q}_ci_width", "recognition", *_over_studies(w, gr["replicate"]))
                add(q, "recognition", *_over_studies(gr["estimate"].astype(float), gr["replicate"]))
            cl = gm[gm["kind"] == "classify"]
            never = cl["truth"].astype(float) == 1.0
            for metric, sub in (("never_correct", cl[never]), ("never_false", cl[~never])):
                if not sub.empty:
                    est = sub["estimate"].astype(float)
                    add(metric, "regime = never", *_over_studies(est, sub["replicate"]))
            fit = gm[gm["kind"] == "fit"]
            if not fit.empty:
                seconds = fit["seconds"].astype(float)
                add("seconds", "per study", *_over_studies(seconds, fit["replicate"]))
    return pd.DataFrame(out).reindex(columns=list(METRIC_COLUMNS))


#: methods as the table and figure name them
METHOD_LABELS = {
    BASELINE: "permutation test",
    "onset": "onset (posterior)",
    "joint": "joint (posterior)",
}
#: the contrast the headline sentence is about (cohort contrast on first stable framing)
HEADLINE_ITEM = "late-2025 vs earlier cohort: first_stable"
TARGET_POWER = 0.8


def design_table(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per cell x method; each power item and metric as ``<column>``, ``<column> (se)``."""
    if cells.empty:
        return pd.DataFrame()
    idx = ["data", *CELL, "method", "n_sims"]
    c = cells.copy()
    c["column"] = np.where(c["metric"] == "power", "power: " + c["item"], c["metric"])
    wide = c.pivot_table(index=idx, columns="column", values="value", aggfunc="first")
    se = c.pivot_table(index=idx, columns="column", values="se", aggfunc="first")
    se.columns = [f"{col} (se)" for col in se.columns]
    order = [x for col in wide.columns for x in (col, f"{col} (se)")]
    return wide.join(se)[order].reset_index()


def headline(
    cells: pd.DataFrame,
    item: str = HEADLINE_ITEM,
    target: float = TARGET_POWER,
    method: str = BASELINE,
) -> str:
    """The sentence "to detect <item> with 80% power you need >= N models (...)" per setting."""
    power = cells[cells["metric"] == "power"]
    sub = power[(power["item"] == item) & (power["method"] == method)]
    what = item.replace(": ", " contrast on ").replace("first_stable", "first stable framing")
    how = (
        "permutation test, p < .05"
        if method == BASELINE
        else f"{method} posterior, 95% interval of the population difference excludes 0"
    )
    source = str(cells["data"].iloc[0]) if "data" in cells and len(cells) else "simulated"
    if sub.empty:
        return f"Simulated design study: no cell scored {item!r} ({how})."
    parts = []
    others = [k for k in ("n_raters", "n_days", "discrimination_mean") if sub[k].nunique() > 1]
    groups = sub.groupby(others, sort=True) if others else [((), sub)]

    def pm(r: pd.Series) -> str:
        return f"{r['value']:.2f} +/- {r['se']:.2f}"

    for _, g in groups:
        g = g.sort_values("n_models")
        r0, hit = g.iloc[0], g[g["value"] >= target]
        tag = (
            f"{r0['n_raters']:g} raters, {r0['n_days']:g} days, rater discrimination "
            f"{r0['discrimination_mean']:g}"
        )
        if hit.empty:
            best = g.loc[g["value"].idxmax()]
            parts.append(
                f"with {tag}, {target:.0%} power is not reached with up to "
                f"{int(g['n_models'].max())} models (best: {pm(best)} at "
                f"{int(best['n_models'])})"
            )
            continue
        first = hit.iloc[0]
        n_first = int(first["n_models"])
        got = f"power {pm(first)}, {int(first['n'])} simulated studies"
        below = g[g["n_models"] < first["n_models"]]
        if below.empty:
            parts.append(f"with {tag} the fewest models tried, {n_first}, already suffice ({got})")
        else:
            prev = below.iloc[-1]
            parts.append(
                f"with {tag} you need >= {n_first} models ({got}; "
                f"{int(prev['n_models'])} models: {pm(prev)})"
            )
    return (
        f"{source.capitalize()} studies: to detect the {what} with {target:.0%} power "
        f"({how}): " + "; ".join(parts) + "."
    )


def plot_power(cells: pd.DataFrame, items: Sequence[str] | None = None):
    """Power vs number of models: one panel per contrast x quantity, one line per design
    setting (raters, days, rater noise; colour) and method (line style: solid = permutation
    test, dashed = posterior), error bars = binomial SE; titled as simulated."""
    import matplotlib.pyplot as plt

    pw = cells[cells["metric"] == "power"].copy()
    if items is not None:
        pw = pw[pw["item"].isin(items)]
    keys = ["n_raters", "n_days", "discrimination_mean"]
    settings = sorted({tuple(r) for r in pw[keys].itertuples(index=False)})
    n = len(settings)
    cmap = plt.get_cmap("viridis" if n > 10 else "tab10")
    color = {st: cmap(i / max(n - 1, 1) if n > 10 else i) for i, st in enumerate(settings)}
    styles = {BASELINE: "-", "onset": "--", "joint": ":"}
    panels = list(pw.groupby("item", sort=True))
    ncol = min(max(len(panels), 1), 4)
    nrow = math.ceil(max(len(panels), 1) / ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(3.3 * ncol, 2.7 * nrow + 1.2), squeeze=False, sharey=True
    )
    for ax, (item, g) in zip(axes.flat, panels, strict=False):
        for (method, *st), gl in g.groupby(["method", *keys], sort=True):
            gl = gl.sort_values("n_models")
            label = (
                f"{st[0]:g} raters, {st[1]:g} days, discr. {st[2]:g} "
                f"[{METHOD_LABELS.get(method, method)}]"
            )
            ax.errorbar(
                gl["n_models"],
                gl["value"],
                yerr=gl["se"],
                marker="o",
                ms=3,
                capsize=2,
                ls=styles.get(method, "-."),
                color=color[tuple(st)],
                lw=1.1,
                label=label,
            )
        ax.axhline(TARGET_POWER, color="grey", lw=0.8, ls=":")
        contrast, _, quantity = str(item).partition(": ")
        ax.set_title(f"{contrast}\n{quantity}", fontsize=8)
        ax.set_xticks(sorted(pw["n_models"].unique()))
        ax.tick_params(labelsize=7)
        ax.set_ylim(-0.03, 1.03)
    for ax in axes[-1, :]:
        ax.set_xlabel("number of chatbot models", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("power", fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    seen: dict[str, Any] = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    fig.legend(
        list(seen.values()), list(seen), loc="lower center", fontsize=6.5, ncol=2, frameon=False
    )
    fig.suptitle(
        "Power of the pre-specified contrasts on SIMULATED studies (paper_like "
        "scaled); p < .05 or posterior 95% interval excluding 0; bars: binomial SE",
        fontsize=9,
    )
    bottom = min(0.5, (0.16 * math.ceil(len(seen) / 2) + 0.1) / (2.7 * nrow + 1.2))
    fig.tight_layout(rect=(0, bottom, 1, 0.96))
    return fig


def has_design(sweep_dir: str | Path) -> bool:
    """True when a multirun directory holds design jobs (``*/design/cell.csv``)."""
    return any(Path(sweep_dir).glob("**/design/cell.csv"))


def summarize_design(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    formats: Sequence[str] = ("png", "pdf"),
) -> pd.DataFrame:
    """Gather every design job's ``design/cell.csv`` (through the results contract) into
    ``design_cells.csv`` (tidy), ``design_table.csv``/``.md`` (wide, one row per cell x
    method), ``power.png``/``.pdf`` and ``design_headline.md``; print the headline."""
    from .. import results
    from ..plotting import save_figure
    from .jobs import find_job_dirs

    sweep_dir = Path(sweep_dir)
    out = Path(out_dir) if out_dir is not None else sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    frames = [results.read(job, "design/cell.csv") for job in find_job_dirs(sweep_dir)]
    frames = [df for df in frames if df is not None and not df.empty]
    if not frames:
        raise ValueError(f"{sweep_dir} holds no design/cell.csv (run experiment=design first)")
    cells = pd.concat(frames, ignore_index=True)
    cells.to_csv(out / "design_cells.csv", index=False)
    table = design_table(cells)
    table.to_csv(out / "design_table.csv", index=False)
    note = (
        "SIMULATED studies (generative preset paper_like, roster scaled to n_models); "
        "values are Monte Carlo estimates, `(se)` their standard errors (binomial for "
        "power). Power: permutation p < .05 (baselines) or posterior P(diff > 0) > .975 "
        "or < .025."
    )
    text = headline(cells)
    (out / "design_table.md").write_text(
        "# Study design (SIMULATED studies)\n\n"
        + note
        + "\n\n"
        + text
        + "\n\n"
        + "## Power (rejection rate +/- binomial SE)\n\n"
        + markdown_table(_pm(cells, power=True), _g)
        + "\n\n## Precision and classification (mean +/- SE over studies)\n\n"
        + markdown_table(_pm(cells, power=False), _g)
        + "\n\nEvery column with its SE: "
        "design_table.csv; tidy: design_cells.csv.\n"
    )
    (out / "design_headline.md").write_text(text + "\n")
    print(text)
    if plot:
        import matplotlib.pyplot as plt

        fig = plot_power(cells)
        save_figure(fig, out / "power", tuple(formats))
        plt.close(fig)
    return table


#: the precision columns of the Markdown table, in order
PRECISION = (
    "t50_width",
    "t50_coverage",
    "alpha_ci_width",
    "icc2k_ci_width",
    "never_correct",
    "never_false",
    "seconds",
)


def _pm(cells: pd.DataFrame, *, power: bool) -> pd.DataFrame:
    """One row per cell x method, ``value +/- se`` per power item (or precision metric)."""
    sub = cells[cells["metric"] == "power"] if power else cells[cells["metric"].isin(PRECISION)]
    if sub.empty:
        return pd.DataFrame()
    sub = sub.assign(
        column=sub["item"] if power else sub["metric"],
        text=[
            f"{v:.3g} +/- {e:.2g}" if np.isfinite(e) else f"{v:.3g}"
            for v, e in zip(sub["value"], sub["se"], strict=True)
        ],
    )
    idx = [*CELL, "method", "n_sims"]
    wide = sub.pivot_table(index=idx, columns="column", values="text", aggfunc="first")
    cols = [c for c in PRECISION if c in wide.columns] if not power else sorted(wide.columns)
    wide = wide[cols].reset_index()
    return wide.rename(
        columns={
            "n_raters": "raters",
            "n_models": "models",
            "n_days": "days",
            "discrimination_mean": "discrimination",
        }
    )


def _g(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return f"{v:g}" if np.isfinite(v) else ""
    return "" if v is None else str(v)
