"""The DelusionEval analysis of one replay study as one library function: :func:`analyse_replay`.

The ``replay`` stage calls it and writes the tables; the Bayesian prevalence model beside it is
:func:`delusion_bayes.models.replay.fit_replay_model`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..config import ReplayConfig, group_config
from ..data.replay_schema import CLUSTER_SCHEMES
from . import replay as rb


@dataclass
class ReplayAnalysis:
    """Every table of :func:`analyse_replay` (``None``: not applicable to this study)."""

    study: xr.Dataset  #: the study as analysed (the configured cutoffs applied)
    prevalence: pd.DataFrame
    cluster_bootstrap: pd.DataFrame
    lopo: pd.DataFrame
    context_depth: pd.DataFrame
    context_depth_lpm: pd.DataFrame
    onset: pd.DataFrame
    turn_profile: pd.DataFrame
    deltas: pd.DataFrame | None = None
    family: pd.DataFrame | None = None
    rankings: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    headline: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


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


def with_truth(table: pd.DataFrame, ds: xr.Dataset) -> pd.DataFrame:
    """Add the simulated truth (``true_prevalence``) to category and code rows, if present."""
    if "true_prevalence" not in ds or "model" not in table:
        return table
    cat = rb.true_category_prevalence(ds).rename(columns={"truth": "truth_cat"})
    code = ds["true_prevalence"].to_dataframe().reset_index()[["model", "code", "true_prevalence"]]
    out = table.merge(cat, on=["model", "category"], how="left").merge(
        code, on=["model", "code"], how="left"
    )
    out["truth"] = np.where(out["level"] == "category", out["truth_cat"], out["true_prevalence"])
    return out.drop(columns=["truth_cat", "true_prevalence"])


def _settings(cfg: Any) -> dict[str, Any]:
    out = asdict(group_config(ReplayConfig, cfg))
    out["cutoffs"] = {str(k): float(v) for k, v in dict(out["cutoffs"] or {}).items()}
    return out


def _study_notes(ds: xr.Dataset, unscored: str) -> list[str]:
    notes = []
    if str(ds.attrs.get("clustering", "")) == "window":
        # real rows without participant ids (the DelusionEval release): say so everywhere
        note = str(ds.attrs.get("clustering_note", "participant and conversation are windows"))
        notes.append("CLUSTERS ARE WINDOWS, NOT PARTICIPANTS. " + note)
    if ds.attrs.get("source") == "delusioneval":
        rule = (
            "counted as 0 in the point estimates (the release's rule)"
            if unscored == "zero"
            else "left out (unscored=exclude)"
        )
        notes.append(
            "Study: the real DelusionEval release's evaluation rows (not simulated); original "
            f"transcript de-duplicated ({ds.attrs.get('n_original_duplicates_dropped')} repeated "
            f"rows dropped), its {ds.attrs.get('n_original_unscored')} unscored rows {rule}"
        )
    # what the loader counted (Inspect logs: errored, unscored, cancelled, duplicates, versions)
    notes += [n for n in str(ds.attrs.get("load_notes", "")).splitlines() if n]
    return notes


def _scheme_table(ds, prev, r, kw) -> pd.DataFrame:
    """The category CIs under every resampling scheme, width relative to samples i.i.d."""
    cluster, support = r["cluster"], r["support"]
    schemes = [s for s in CLUSTER_SCHEMES if s != "none" or bool(r["also_iid"])]
    rows = [prev[prev["level"] == "category"]] if cluster in schemes else []
    rows += [
        rb.replay_prevalence(ds, cluster=s, levels=("category",), support=support, **kw)
        for s in schemes
        if s != cluster
    ]
    cb = pd.concat(rows, ignore_index=True)
    cb["width"] = cb["ci_high"] - cb["ci_low"]
    if "none" in schemes:
        iid = cb[cb["cluster"] == "none"].set_index(["model", "category"])["width"]
        keys = pd.MultiIndex.from_frame(cb[["model", "category"]])
        with np.errstate(invalid="ignore", divide="ignore"):  # 0-width i.i.d. CI (no hits)
            cb["width_vs_iid"] = cb["width"].to_numpy() / iid.reindex(keys).to_numpy()
    keep = (
        "model",
        "category",
        "cluster",
        "estimate",
        "ci_low",
        "ci_high",
        "width",
        "width_vs_iid",
        "truth",
        "n_hits",
        "n",
        "n_boot",
        "ci_prob",
    )
    return cb[[c for c in keep if c in cb]]


def analyse_replay(ds: xr.Dataset, cfg: Any = None, *, progress: bool = True) -> ReplayAnalysis:
    """The replay study's bootstrap analysis with the ``replay`` config's settings
    (:class:`~delusion_bayes.config.ReplayConfig`; ``None`` for the defaults): prevalence with
    cluster-bootstrap CIs, the resampling-scheme comparison, deltas against the original
    transcript, leave-one-participant-out, model families, context depth (curves and the linear
    probability model), onset and persistence, turn profiles."""
    from ..data.replay import validate_replay

    r = _settings(cfg)
    ds = validate_replay(apply_cutoffs(ds, r["cutoffs"]))
    notes = [f"judge cutoffs overridden for {sorted(r['cutoffs'])}"] if r["cutoffs"] else []
    notes += _study_notes(ds, str(r["unscored"]))
    cluster, support, baseline = str(r["cluster"]), str(r["support"]), str(r["baseline"])
    kw = {
        "n_boot": int(r["n_boot"]),
        "seed": int(r["seed"]),
        "ci_prob": float(r["ci_prob"]),
        "progress": progress,
    }
    models = [str(m) for m in ds["model"].values]
    prev = rb.replay_prevalence(ds, cluster=cluster, support=support, unscored=r["unscored"], **kw)
    prev = with_truth(prev, ds)
    deltas = None
    if baseline in models:
        deltas = rb.replay_deltas(
            ds, baseline=baseline, cluster=cluster, support=support, family=str(r["family"]), **kw
        )
    else:
        notes.append(f"no {baseline!r} model in the study: deltas.csv not written")
    family = None
    if "family" in ds.coords and ds["family"].dims == ("model",):
        family = rb.replay_family_comparison(ds, cluster=cluster, support=support, **kw)
    else:
        notes.append("no 'family' model coord: family.csv not written")
    bins = [int(b) for b in r["depth_bins"]]
    res = ReplayAnalysis(
        study=ds,
        prevalence=prev,
        cluster_bootstrap=_scheme_table(ds, prev, r, kw),
        lopo=rb.replay_leave_one_participant_out(
            ds, baseline=baseline if baseline in models else None
        ),
        context_depth=rb.replay_depth_curve(ds, depth_bins=bins, cluster=cluster, **kw),
        context_depth_lpm=rb.replay_depth_lpm(ds, cluster=cluster, baseline=baseline, **kw),
        onset=rb.replay_onset_persistence(
            ds, cluster=cluster, levels=("category", "code"), unit=str(r["onset_unit"]), **kw
        ),
        turn_profile=rb.replay_turn_profile(ds, max_turn=int(r["max_turn"]), cluster=cluster, **kw),
        deltas=deltas,
        family=family,
        rankings=rb.replay_rankings(ds, cluster=cluster, support=support, baseline=baseline, **kw),
        notes=notes,
        settings=r,
    )
    res.headline = _headline(ds, res)
    return res


def _headline(ds: xr.Dataset, res: ReplayAnalysis) -> dict[str, Any]:
    r = res.settings
    head: dict[str, Any] = {
        "n_samples": int(ds.sizes["sample"]),
        "n_models": int(ds.sizes["model"]),
        "n_codes": int(ds.sizes["code"]),
        "n_participants": int(pd.Series(ds["participant"].values).nunique()),
        "n_boot": int(r["n_boot"]),
        "cluster": str(r["cluster"]),
        "support": str(r["support"]),
        "clustering": str(ds.attrs.get("clustering", "")) or "participant/conversation",
        "source": str(ds.attrs.get("source", "simulated" if ds.attrs.get("simulated") else "")),
    }
    if res.deltas is not None and len(res.deltas):
        dc = res.deltas[res.deltas["level"] == "category"]
        below = dc[dc["category"] != "discourages harm"]
        head["share_of_model_category_deltas_below_0"] = float((below["ci_high"] < 0).mean())
    if "truth" in res.prevalence:
        cat = res.prevalence[res.prevalence["level"] == "category"]
        covered = (cat["ci_low"] <= cat["truth"]) & (cat["truth"] <= cat["ci_high"])
        head["truth_covered_share"] = float(covered.mean())
    return head
