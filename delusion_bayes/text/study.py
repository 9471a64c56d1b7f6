"""The text analysis of one trajectory study (what the ``text`` stage writes): entrainment and
modality per model-day and the paper's analyses of them, :func:`analyse_text`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..config import group_config
from ..data.schema import DAY, MODEL
from . import analyses as an
from .config import TextConfig
from .texts import model_coords


@dataclass
class TextAnalysis:
    """Every table of :func:`analyse_text` (one DataFrame each, as the text stage writes them)."""

    metrics: dict[str, xr.DataArray]  #: entrainment (canonical), modality, entrainment_configN
    by_model_day: pd.DataFrame
    model_means: pd.DataFrame
    correlations: pd.DataFrame
    by_stage: pd.DataFrame
    within_model: pd.DataFrame
    turn_contrast: pd.DataFrame
    config: int  #: the canonical entrainment configuration
    embedding_model: str
    headline: dict[str, Any] = field(default_factory=dict)


def turn_days(cons: xr.DataArray, clinical_at: float) -> pd.Series:
    """Each model's first clinical day (the baselines' milestone rule; NaN = never turned)."""
    from ..baselines import milestones

    ms = milestones(cons, clinical_at=clinical_at)
    first = ms["first_clinical"].to_series().astype(float).rename("turn_day")
    first[first >= ms.attrs["censor_day"]] = np.nan  # censored = never turned
    return first


def compute_metrics(ds: xr.Dataset, cfg: Any = None, embedder: Any = None, cache_dir: Any = None):
    """``({name: DataArray (model, day)}, modality Dataset, embedder)``: entrainment for the
    canonical ``text.config`` (and the others with ``text.all_configs``) and modality."""
    from . import entrainment, make_embedder, modality

    c = group_config(TextConfig, cfg)
    progress, canonical = c.progress, c.config
    configs = [canonical]
    if c.all_configs:
        configs += [c for c in (1, 2, 3) if c != canonical]
    if embedder is None:
        embedder = make_embedder(
            c.embedding_model,
            cache_dir=c.cache_dir or cache_dir,
            device=c.device,
            batch_size=c.batch_size,
            backend=c.backend,
            allow_hub=c.allow_hub,
            progress=progress,
        )
    ent = {
        k: entrainment(ds, config=k, embedder=embedder, top_k=c.top_k, progress=progress)
        for k in configs
    }
    mod = modality(
        ds,
        spacy_model=c.spacy_model,
        batch_size=c.spacy_batch_size,
        progress=progress,
    )
    metrics = {"entrainment": ent[canonical], "modality": mod}
    metrics.update({f"entrainment_config{c}": ent[c] for c in configs if c != canonical})
    return metrics, mod, embedder


def analyse_text(
    ds: xr.Dataset,
    cons: xr.DataArray,
    cfg: Any = None,
    *,
    clinical_at: float = 3.0,
    embedder: Any = None,
    cache_dir: Any = None,
) -> TextAnalysis:
    """Text metrics of a study and their analyses against the consensus stage ``cons``. ``cfg``:
    a :class:`~delusion_bayes.text.config.TextConfig`, DictConfig or dict; ``clinical_at``:
    ``baselines.clinical_at``; ``cache_dir``: the cache root when ``cfg`` has none."""
    metrics, mod, embedder = compute_metrics(ds, cfg, embedder, cache_dir)
    cons = cons.transpose(MODEL, DAY)
    turn = turn_days(cons, clinical_at)
    counts = {
        f"modality_{n}": mod[f"n_{n}"] for n in ("boosters", "hedges", "questions", "sentences")
    }
    by_day = (
        xr.Dataset(
            {
                k: v.reset_coords(drop=True)
                for k, v in {**metrics, **counts, "consensus": cons}.items()
            }
        )
        .to_dataframe()
        .reset_index()
    )
    has_b = "level_b" in ds
    means = [
        an.model_means(v)[["mean", "sd", "n_days"]].add_prefix(f"{k}_") for k, v in metrics.items()
    ]
    table = pd.concat(means, axis=1)
    if has_b:
        table["days_level_b"] = an._level_b_days(ds["level_b"])
    table["mean_consensus"] = cons.mean(DAY).values
    table["turn_day"] = turn.reindex(table.index).values
    table = table.assign(**{k: v.values for k, v in model_coords(ds).items()})
    rows = []
    for k, v in metrics.items():
        if has_b:
            rows.append(
                {"metric": k, "against": "days_level_b", **an.level_b_correlation(v, ds["level_b"])}
            )
        rows.append(
            {"metric": k, "against": "mean_consensus", **an.model_level_correlation(v, cons)}
        )
    corr = pd.DataFrame(rows)

    def per_metric(fn) -> pd.DataFrame:
        return pd.concat({k: fn(v) for k, v in metrics.items()}, names=["metric"]).reset_index()

    by_stage = per_metric(lambda v: an.mean_by_stage(v, cons))
    within = per_metric(lambda v: an.within_model(v, cons, clinical_at=clinical_at))
    turns = per_metric(lambda v: an.turn_contrast(v, turn_day=turn.reindex(v[MODEL].values)))
    canonical = group_config(TextConfig, cfg).config
    res = TextAnalysis(
        metrics,
        by_day,
        table.reset_index(),
        corr,
        by_stage,
        within,
        turns,
        canonical,
        embedder.name,
    )
    res.headline = _headline(res, has_b)
    return res


def _headline(res: TextAnalysis, has_b: bool) -> dict[str, Any]:
    e_within = res.within_model[res.within_model["metric"] == "entrainment"]
    e_stage = res.by_stage[res.by_stage["metric"] == "entrainment"]["mean"]
    corr = res.correlations.set_index(["metric", "against"])
    head = {
        "entrainment_config": res.config,
        "embedding_model": res.embedding_model,
        "entrainment_model_mean_min": float(res.model_means["entrainment_mean"].min()),
        "entrainment_model_mean_max": float(res.model_means["entrainment_mean"].max()),
        "entrainment_at_lowest_stage": float(e_stage.iloc[0]),
        "entrainment_at_highest_stage": float(e_stage.iloc[-1]),
        "entrainment_within_median_rho": float(e_within["rho"].median()),
        "modality_vs_consensus_rho": float(corr.loc[("modality", "mean_consensus"), "rho"]),
    }
    if has_b:
        r = corr.loc[("entrainment", "days_level_b")]
        head["entrainment_level_b_rho"] = float(r["rho"])
        head["entrainment_level_b_p"] = float(r["p"])
    return {
        k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in head.items()
    }
