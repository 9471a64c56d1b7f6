"""Pipeline stage ``replay``: the DelusionEval analysis of a replay study, written as tables.

Writes into ``run_dir/replay/`` (team contract, "Replay outputs"):

- ``prevalence.csv``: prevalence per model x category (pooled over the category's codes) and per
  model x code, percentile CIs from the headline bootstrap (``replay.cluster``, default the
  two-stage cluster bootstrap), with ``truth`` on simulated studies;
- ``deltas.csv``: each model minus the original transcript, paired resamples;
- ``cluster_bootstrap.csv``: the category CIs under every resampling scheme (samples i.i.d. as in
  the public release, conversations, participants, two-stage) and their width relative to i.i.d.;
- ``lopo.csv``: leave-one-participant-out prevalence and deltas;
- ``family.csv``: model-family comparison (when the study has a ``family`` model coord);
- ``context_depth.csv`` (prevalence per depth bin) and ``context_depth_lpm.csv`` (linear
  probability model of depth over and above prior assistant content);
- ``onset.csv``: onset and persistence over the user turns of a window; ``turn_profile.csv``;
- ``bayes_prevalence.csv`` (posterior prevalence and contrasts vs the original, beside the
  bootstrap CIs) and ``bayes_diagnostics.json`` when ``replay.bayes``;
- figures: ``prevalence`` (points and CIs per model x category), ``prevalence_heatmap``,
  ``deltas_forest``, ``context_depth`` (curves with CIs), ``bayes_vs_bootstrap``;
- ``index.json``: ``{"files": {name: description}, "headline": {...}, "notes": [...]}``.

Every resampling is seeded from ``replay.seed`` (DelusionEval: 42): the same seed gives identical
tables.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from . import setting as _get

NEEDS = ("replay",)
KIND = ("replay",)

log = logging.getLogger(__name__)


def apply_cutoffs(ds: xr.Dataset, cutoffs: dict[str, float]) -> xr.Dataset:
    """Override per-code judge cutoffs (``hit = score >= cutoff``) of a replay study.

    Codes not in ``cutoffs`` keep the study's cutoff; an unknown code is an error naming it.
    """
    from ..data.replay import hits_from_scores

    if not cutoffs:
        return ds
    codes = [str(c) for c in ds["code"].values]
    unknown = [c for c in cutoffs if c not in codes]
    if unknown:
        raise ValueError(f"replay.cutoffs names code(s) {unknown} not in the study; codes: {codes}")
    cut = ds["cutoff"].copy()
    for code, value in cutoffs.items():
        cut.loc[{"code": code}] = float(value)
    out = ds.assign(cutoff=cut)
    return out.assign(hit=hits_from_scores(out["score"], out["cutoff"]))


def _with_truth(table: pd.DataFrame, ds: xr.Dataset) -> pd.DataFrame:
    """Add the simulated truth (``true_prevalence``) to category and code rows, if present."""
    if "true_prevalence" not in ds or "model" not in table:
        return table
    from ..baselines.replay import true_category_prevalence

    cat = true_category_prevalence(ds).rename(columns={"truth": "truth_cat"})
    code = ds["true_prevalence"].to_dataframe().reset_index()[["model", "code", "true_prevalence"]]
    out = table.merge(cat, on=["model", "category"], how="left").merge(
        code, on=["model", "code"], how="left"
    )
    out["truth"] = np.where(out["level"] == "category", out["truth_cat"], out["true_prevalence"])
    return out.drop(columns=["truth_cat", "true_prevalence"])


# ------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------
def _figure_prevalence(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    from ..plotting import save_figure, series_style, style

    cat = table[table["level"] == "category"]
    cats = list(dict.fromkeys(cat["category"]))
    models = list(dict.fromkeys(cat["model"]))
    with style():
        fig, ax = plt.subplots(figsize=(6.5, 0.6 + 0.5 * len(cats) * max(1, len(models) / 3)))
        step = 0.8 / max(len(models), 1)
        for i, m in enumerate(models):
            g = cat[cat["model"] == m].set_index("category").reindex(cats)
            y = np.arange(len(cats)) + (i - (len(models) - 1) / 2) * step
            err = np.vstack([g["estimate"] - g["ci_low"], g["ci_high"] - g["estimate"]])
            st = series_style(i)
            ax.errorbar(
                g["estimate"],
                y,
                xerr=np.clip(err, 0, None),
                fmt=st.get("marker", "o"),
                color=st.get("color", "k"),
                ms=4,
                capsize=2,
                lw=1,
                label=m,
            )
            if "truth" in g:
                ax.plot(g["truth"], y, "|", color="#b35900", ms=7)
        ax.set_yticks(np.arange(len(cats)), cats)
        ax.invert_yaxis()
        ax.set_xlabel("prevalence (share of scored samples x codes)")
        ci = int(round(100 * float(cat["ci_prob"].iloc[0])))
        title = f"Prevalence with {ci}% {cat['cluster'].iloc[0]} bootstrap CIs"
        if "truth" in cat:
            title += " (| = simulated truth)"
        ax.set_title(title)
        ax.legend(fontsize=7, frameon=False, loc="best")
        return save_figure(fig, stem, formats)


def _figure_heatmap(table: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    from ..plotting import save_figure, style

    cat = table[table["level"] == "category"]
    grid = cat.pivot(index="model", columns="category", values="estimate")
    grid = grid.loc[list(dict.fromkeys(cat["model"])), list(dict.fromkeys(cat["category"]))]
    with style():
        fig, ax = plt.subplots(figsize=(1.2 + 1.1 * grid.shape[1], 0.8 + 0.4 * grid.shape[0]))
        im = ax.imshow(grid.to_numpy(), cmap="Greys", vmin=0, aspect="auto")
        ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=30, ha="right")
        ax.set_yticks(range(grid.shape[0]), grid.index)
        top = np.nanmax(grid.to_numpy()) if grid.size else 1
        for (r, c), v in np.ndenumerate(grid.to_numpy()):
            if np.isfinite(v):
                colour = "white" if v > 0.6 * top else "black"
                ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7, color=colour)
        fig.colorbar(im, ax=ax, shrink=0.8, label="prevalence")
        ax.set_title("Prevalence, model x category")
        return save_figure(fig, stem, formats)


def _figure_deltas(deltas: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    from ..plotting import save_figure, style

    d = deltas[deltas["level"] == "category"].reset_index(drop=True)
    with style():
        fig, ax = plt.subplots(figsize=(6, 0.6 + 0.22 * len(d)))
        y = np.arange(len(d))
        err = np.vstack([d["estimate"] - d["ci_low"], d["ci_high"] - d["estimate"]])
        ax.errorbar(d["estimate"], y, xerr=np.clip(err, 0, None), fmt="o", color="k", ms=3,
                    capsize=2, lw=1)  # fmt: skip
        ax.axvline(0, color="#9a9a9a", lw=0.8, ls="--")
        ax.set_yticks(y, [f"{m} | {c}" for m, c in zip(d["model"], d["category"], strict=True)])
        ax.invert_yaxis()
        base = d["baseline"].iloc[0] if len(d) else "original"
        ax.set_xlabel(f"prevalence difference (model - {base})")
        ax.set_title("Deltas vs the original transcript (paired bootstrap CIs)")
        return save_figure(fig, stem, formats)


def _figure_depth(curve: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    from ..plotting import save_figure, series_style, style

    cats = list(dict.fromkeys(curve["category"]))
    models = list(dict.fromkeys(curve["model"]))
    ncol = min(3, len(cats))
    nrow = int(np.ceil(len(cats) / ncol))
    with style():
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.0 * ncol, 2.4 * nrow), squeeze=False)
        for a, cat in zip(axes.ravel(), cats, strict=False):
            for i, m in enumerate(models):
                g = curve[(curve["model"] == m) & (curve["category"] == cat)]
                g = g[np.isfinite(g["estimate"])]
                st = series_style(i)
                a.plot(g["depth_mean"], g["estimate"], label=m, ms=3, lw=1, **st)
                a.fill_between(g["depth_mean"], g["ci_low"], g["ci_high"], color=st.get("color"),
                               alpha=0.12, lw=0)  # fmt: skip
            a.set_title(cat)
            a.set_xlabel("context depth (messages)")
            a.set_ylabel("prevalence")
        for a in axes.ravel()[len(cats) :]:
            a.axis("off")
        axes.ravel()[0].legend(fontsize=6, frameon=False)
        fig.suptitle("Prevalence vs context depth (messages before the user turn; bootstrap CIs)")
        fig.tight_layout()
        return save_figure(fig, stem, formats)


def _figure_bayes(both: pd.DataFrame, stem: Path, formats) -> list[Path]:
    import matplotlib.pyplot as plt

    from ..plotting import save_figure, style

    with style():
        fig, ax = plt.subplots(figsize=(4.2, 4.0))
        ax.errorbar(
            both["estimate"],
            both["post_mean"],
            xerr=np.clip(np.vstack([both["estimate"] - both["ci_low"],
                                    both["ci_high"] - both["estimate"]]), 0, None),
            yerr=np.clip(np.vstack([both["post_mean"] - both["post_ci_low"],
                                    both["post_ci_high"] - both["post_mean"]]), 0, None),
            fmt="o", color="k", ms=3, lw=0.8, capsize=1.5,
        )  # fmt: skip
        top = float(np.nanmax(both[["ci_high", "post_ci_high"]].to_numpy())) * 1.05
        ax.plot([0, top], [0, top], ls="--", color="#9a9a9a", lw=0.8)
        ax.set_xlabel("bootstrap estimate and CI")
        ax.set_ylabel("posterior mean and interval")
        ax.set_title("Category prevalence: Bayesian vs bootstrap")
        return save_figure(fig, stem, formats)


# ------------------------------------------------------------------------------------------
# the stage
# ------------------------------------------------------------------------------------------
def _bayes(ds, r, out, files, notes, boot_table, formats) -> dict[str, Any]:
    from ..models.replay import fit_replay_model, replay_posterior_contrasts

    level = str(_get(r, "bayes_level", "code"))
    tree = fit_replay_model(
        ds,
        level=level,
        draws=int(_get(r, "bayes_draws", 500)),
        tune=int(_get(r, "bayes_tune", 300)),
        chains=int(_get(r, "bayes_chains", 2)),
        seed=int(_get(r, "bayes_seed", 0)),
        sampler=str(_get(r, "bayes_sampler", "nutpie")),
        target_accept=float(_get(r, "bayes_target_accept", 0.9)),
        depth_bins=int(_get(r, "depth_bins_bayes", 4)),
        prior_bins=int(_get(r, "prior_bins_bayes", 3)),
        baseline=str(_get(r, "baseline", "original")),
    )
    post = replay_posterior_contrasts(
        tree, baseline=str(_get(r, "baseline", "original")), ci_prob=float(_get(r, "ci_prob", 0.95))
    )
    boot = boot_table.copy()
    boot["label"] = np.where(boot["level"] == "category", boot["category"], boot["code"])
    keep = ["model", "level", "label", "estimate", "ci_low", "ci_high"]
    keep += ["truth"] if "truth" in boot else []
    prev = post[post["quantity"] == "prevalence"].merge(
        boot[keep].rename(
            columns={
                "estimate": "boot_estimate",
                "ci_low": "boot_ci_low",
                "ci_high": "boot_ci_high",
            }
        ),
        on=["model", "level", "label"],
        how="left",
    )
    table = pd.concat([prev, post[post["quantity"] == "delta"]], ignore_index=True)
    table.to_csv(out / "bayes_prevalence.csv", index=False)
    one_level = tree.attrs.get("clustering_levels") == "cluster"
    intercepts = (
        "one cluster intercept (participant and conversation are the same units)"
        if one_level
        else "participant and conversation intercepts"
    )
    files["bayes_prevalence.csv"] = (
        f"hierarchical Bayesian prevalence ({level} effects; {intercepts}, depth and "
        "prior-content terms): posterior mean and equal-tailed interval per model x "
        "category/code, deltas vs the original, beside the bootstrap estimate and CI"
    )
    diag = {k: tree.attrs[k] for k in (
        "sampler", "level", "n_cells", "n_rows", "max_rhat", "min_ess_bulk", "min_ess_tail",
        "max_rhat_prevalence", "min_ess_bulk_prevalence", "min_ess_tail_prevalence",
        "divergences", "seed")}  # fmt: skip
    diag["clustering_levels"] = str(tree.attrs.get("clustering_levels", ""))
    # the gate is on what is reported (the prevalences and their deltas), with the package's
    # thresholds (R-hat <= 1.01, ESS >= 400 and >= 100 per chain, no divergences); the max R-hat over all
    # ~300 sampled parameters is recorded too (at 2 x 500 draws it sits at 1.01-1.02 even when
    # every one has bulk ESS above the number of draws: experiments/rhat_floor.py)
    # ESS >= 400 (issue 16's gate) and at least 100 per chain
    ess_min = max(400, 100 * int(_get(r, "bayes_chains", 2)))
    diag["passed"] = bool(
        diag["max_rhat_prevalence"] <= 1.01
        and diag["min_ess_bulk_prevalence"] >= ess_min
        and diag["min_ess_tail_prevalence"] >= ess_min
        and diag["divergences"] == 0
    )
    (out / "bayes_diagnostics.json").write_text(json.dumps(diag, indent=2, default=float))
    files["bayes_diagnostics.json"] = "sampler diagnostics of the Bayesian prevalence model"
    if not diag["passed"]:
        notes.append(
            "Bayesian prevalence model: diagnostics did not pass (on the prevalences: R-hat <= "
            f"1.01, bulk and tail ESS >= {ess_min}, no divergences): max R-hat "
            f"{diag['max_rhat_prevalence']:.3f}, min bulk ESS "
            f"{diag['min_ess_bulk_prevalence']:.0f}, min tail ESS "
            f"{diag['min_ess_tail_prevalence']:.0f}, {diag['divergences']} divergences; treat it "
            "as provisional"
        )
    cat = prev[prev["level"] == "category"].rename(
        columns={"boot_estimate": "estimate", "boot_ci_low": "ci_low", "boot_ci_high": "ci_high",
                 "mean": "post_mean", "ci_low": "post_ci_low", "ci_high": "post_ci_high"}
    )  # fmt: skip
    if len(cat):
        for p in _figure_bayes(cat, out / "bayes_vs_bootstrap", formats):
            files[p.name] = "category prevalence: posterior vs bootstrap"
    return diag


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Run the replay analysis and write the tables and figures listed in the module docstring.

    Parameters
    ----------
    ds : xarray.Dataset
        A validated replay study (``hit (sample, model, code)``).
    cfg : DictConfig
        Holds ``cfg.replay`` (:class:`~delusion_bayes.baselines.replay_config.ReplayConfig`).
    run_dir : pathlib.Path
        The run directory; output goes to ``run_dir/replay/``.

    Returns
    -------
    dict
        Headline numbers (also in ``index.json``).
    """
    from ..baselines import replay as rb
    from ..baselines.replay_config import CLUSTER_SCHEMES
    from ..data.replay import validate_replay

    r = cfg.replay if "replay" in cfg else cfg
    out = Path(run_dir) / "replay"
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    notes: list[str] = []
    formats = list(_get(r, "figure_formats", ["png", "pdf"]))
    cutoffs = {str(k): float(v) for k, v in dict(_get(r, "cutoffs", {}) or {}).items()}
    ds = validate_replay(apply_cutoffs(ds, cutoffs))
    if cutoffs:
        notes.append(f"judge cutoffs overridden for {sorted(cutoffs)}")
    n_boot, seed = int(_get(r, "n_boot", 10_000)), int(_get(r, "seed", 42))
    ci_prob, cluster = float(_get(r, "ci_prob", 0.95)), str(_get(r, "cluster", "two-stage"))
    baseline = str(_get(r, "baseline", "original"))
    support = str(_get(r, "support", "unconditional"))
    unscored = str(_get(r, "unscored", "exclude"))
    kw = {"n_boot": n_boot, "seed": seed, "ci_prob": ci_prob, "progress": True}
    clustering = str(ds.attrs.get("clustering", ""))
    if clustering == "window":
        # real rows without participant ids (the DelusionEval release): say so everywhere
        note = str(ds.attrs.get("clustering_note", "participant and conversation are windows"))
        log.warning("replay: %s", note)
        notes.append("CLUSTERS ARE WINDOWS, NOT PARTICIPANTS. " + note)
    if ds.attrs.get("source") == "delusioneval":
        notes.append(
            "Study: the real DelusionEval release's evaluation rows (not simulated); original "
            f"transcript de-duplicated ({ds.attrs.get('n_original_duplicates_dropped')} repeated "
            f"rows dropped), its {ds.attrs.get('n_original_unscored')} unscored rows "
            + (
                "counted as 0 in the point estimates (the release's rule)"
                if unscored == "zero"
                else "left out (unscored=exclude)"
            )  # fmt: skip
        )
    models = [str(m) for m in ds["model"].values]
    ci = f"{round(100 * ci_prob)}%"

    def write(table: pd.DataFrame, name: str, desc: str) -> None:
        table.to_csv(out / name, index=False)
        files[name] = desc

    prev = _with_truth(
        rb.replay_prevalence(ds, cluster=cluster, support=support, unscored=unscored, **kw), ds
    )
    write(prev, "prevalence.csv",
          f"prevalence per model x category (pooled over the category's codes) and per model x "
          f"code; {ci} percentile CIs, {cluster} bootstrap ({support}), {n_boot} resamples, "
          f"seed {seed}" + (" (clusters = windows)" if clustering == "window" else ""))  # fmt: skip

    schemes = [s for s in CLUSTER_SCHEMES if s != "none" or bool(_get(r, "also_iid", True))]
    rows = [prev[prev["level"] == "category"]] if cluster in schemes else []
    for scheme in schemes:
        if scheme != cluster:
            rows.append(
                rb.replay_prevalence(
                    ds, cluster=scheme, levels=("category",), support=support, **kw
                )
            )
    cb = pd.concat(rows, ignore_index=True)
    cb["width"] = cb["ci_high"] - cb["ci_low"]
    if "none" in schemes:
        iid = cb[cb["cluster"] == "none"].set_index(["model", "category"])["width"]
        with np.errstate(invalid="ignore", divide="ignore"):  # 0-width i.i.d. CI (no hits)
            cb["width_vs_iid"] = (
                cb["width"].to_numpy()
                / iid.reindex(pd.MultiIndex.from_frame(cb[["model", "category"]])).to_numpy()
            )
    keep = [c for c in ("model", "category", "cluster", "estimate", "ci_low", "ci_high", "width",
                        "width_vs_iid", "truth", "n_hits", "n", "n_boot", "ci_prob") if c in cb]  # fmt: skip
    write(cb[keep], "cluster_bootstrap.csv",
          "category CIs under each resampling scheme: samples i.i.d. (the public release), "
          "conversations, participants, two-stage (participants then conversations); "
          "width_vs_iid = CI width / i.i.d. width")  # fmt: skip

    if baseline in models:
        deltas = rb.replay_deltas(ds, baseline=baseline, cluster=cluster, support=support, **kw)
        write(deltas, "deltas.csv",
              f"prevalence minus the {baseline} transcript's, paired {cluster} resamples, {ci} CIs")  # fmt: skip
    else:
        deltas = None
        notes.append(f"no {baseline!r} model in the study: deltas.csv not written")

    lopo = rb.replay_leave_one_participant_out(
        ds, baseline=baseline if baseline in models else None
    )
    write(lopo, "lopo.csv", "category prevalence (and delta) leaving out each participant")

    if "family" in ds.coords and ds["family"].dims == ("model",):
        fam = rb.replay_family_comparison(ds, cluster=cluster, support=support, **kw)
        write(fam, "family.csv", f"category prevalence pooled per model family, {ci} CIs")
    else:
        notes.append("no 'family' model coord: family.csv not written")

    bins = [int(b) for b in _get(r, "depth_bins", [0, 4, 8, 12, 16, 20])]
    curve = rb.replay_depth_curve(ds, depth_bins=bins, cluster=cluster, **kw)
    write(curve, "context_depth.csv",
          f"category prevalence per context-depth bin (left edges {bins}), {ci} CIs")  # fmt: skip
    lpm = rb.replay_depth_lpm(ds, cluster=cluster, baseline=baseline, **kw)
    write(lpm, "context_depth_lpm.csv",
          "linear probability model hit ~ depth/10 + prior assistant content, per model x "
          f"category; {ci} CIs from the {cluster} bootstrap of the moment sums")  # fmt: skip

    unit = str(_get(r, "onset_unit", "turn"))
    onset = rb.replay_onset_persistence(
        ds, cluster=cluster, levels=("category", "code"), unit=unit, **kw
    )
    write(onset, "onset.csv",
          "per window, per category and per code: share with a hit, onset (unit: "
          + ("1-based user-turn rank" if unit == "turn" else "message index in the window")
          + "), persistence P(hit at t+1 | hit at t), emergence P(hit at t+1 | no hit at t)")  # fmt: skip
    turns = rb.replay_turn_profile(ds, max_turn=int(_get(r, "max_turn", 8)), cluster=cluster, **kw)
    write(turns, "turn_profile.csv", "category prevalence by user-turn position in the window")

    for p in _figure_prevalence(prev, out / "prevalence", formats):
        files[p.name] = "prevalence per model x category with bootstrap CIs"
    for p in _figure_heatmap(prev, out / "prevalence_heatmap", formats):
        files[p.name] = "prevalence heatmap, model x category"
    if deltas is not None and len(deltas):
        for p in _figure_deltas(deltas, out / "deltas_forest", formats):
            files[p.name] = "forest plot of category deltas vs the original transcript"
    for p in _figure_depth(curve, out / "context_depth", formats):
        files[p.name] = "prevalence vs context depth per category, bootstrap bands"

    headline: dict[str, Any] = {
        "n_samples": int(ds.sizes["sample"]),
        "n_models": len(models),
        "n_codes": int(ds.sizes["code"]),
        "n_participants": int(pd.Series(ds["participant"].values).nunique()),
        "n_boot": n_boot,
        "cluster": cluster,
        "support": support,
        "clustering": clustering or "participant/conversation",
        "source": str(ds.attrs.get("source", "simulated" if ds.attrs.get("simulated") else "")),
    }
    if deltas is not None and len(deltas):
        dc = deltas[deltas["level"] == "category"]
        below = dc[dc["category"] != "discourages harm"]
        headline["share_of_model_category_deltas_below_0"] = float((below["ci_high"] < 0).mean())
    if "truth" in prev:
        cat = prev[prev["level"] == "category"]
        covered = (cat["ci_low"] <= cat["truth"]) & (cat["truth"] <= cat["ci_high"])
        headline["truth_covered_share"] = float(covered.mean())
    if bool(_get(r, "bayes", True)):
        try:
            diag = _bayes(ds, r, out, files, notes, prev, formats)
            headline["bayes_max_rhat"] = float(diag["max_rhat"])
            headline["bayes_passed"] = bool(diag["passed"])
        except ImportError as err:
            notes.append(f"Bayesian prevalence model skipped: {err} (install the 'bayes' extra)")
    else:
        notes.append("Bayesian prevalence model not run (replay.bayes = false)")
    index = {"files": files, "headline": headline, "notes": notes}
    (out / "index.json").write_text(json.dumps(index, indent=2, default=str))
    return headline
