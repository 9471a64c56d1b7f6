"""Pipeline stage ``text``: entrainment and modality per model-day, and their analyses.

Writes into ``run_dir/text/`` the tables behind the paper's "Recognition Stage (Entrainment)",
"Interpretative Confidence (Modality)" and their Results paragraphs: the metrics per model-day,
per-model means, Spearman correlations with Level-B days (Figure 3) and the consensus stage, means
by consensus stage, within-model correlations, the contrast at each model's clinical turn
(Figure 4), both figures and ``index.json``. Without texts, or with ``text.enabled = false``, it
logs one line and writes only ``index.json`` saying why.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import xarray as xr

from .. import results
from ..baselines.config import BaselinesConfig
from ..config import group_config
from ..text.config import TextConfig
from ..text.study import analyse_text
from . import Outputs

#: ``cache_dir``: ``text.cache_dir`` interpolates it, also in the masked config the pipeline passes
NEEDS = ("text", "baselines", "cache_dir")
KIND = ("trajectory",)

log = logging.getLogger(__name__)


def _consensus(ds: xr.Dataset, b: Any, run_dir: Path) -> tuple[xr.DataArray, str]:
    """Consensus recognition stage: the baselines stage's file, else computed with its rule."""
    from ..baselines import consensus

    saved = results.read(run_dir, "baselines/consensus.nc")
    if saved is not None and "recognition" in saved:
        rule = saved.attrs.get("consensus", "median")
        return saved["recognition"], f"baselines/consensus.nc ({rule})"
    rule, half = b.consensus, b.half_rule
    cons = consensus(ds["recognition"], rule, half, min_raters=b.min_raters)
    return cons, f"{rule} over raters, half rule {half}"


def _synthetic_label(ds: xr.Dataset) -> str | None:
    """``"SYNTHETIC texts: ..."`` when the prompt or answer attrs flag them synthetic, else None."""
    flags = [str(ds[v].attrs.get("synthetic", "")).strip() for v in ("prompt", "answer")]
    flags = [f for f in flags if f and not f.lower().startswith("no")]
    return f"SYNTHETIC texts: {'; '.join(flags)}" if flags else None


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Compute the text metrics of a trajectory study (texts in ``prompt (day)`` / ``answer
    (model, day)``) with ``cfg.text`` (:class:`~delusion_bayes.text.config.TextConfig`) and
    ``cfg.baselines`` (consensus rule, ``clinical_at``); write ``run_dir/text/`` and return the
    headline (also in ``index.json``)."""
    from ..data.schema import DAY, MODEL
    from ..text.texts import has_texts

    t = group_config(TextConfig, cfg.text if "text" in cfg else cfg)
    b = group_config(BaselinesConfig, cfg.baselines if "baselines" in cfg else None)
    run_dir = Path(run_dir)
    out = Outputs(run_dir, "text")
    out.path.mkdir(parents=True, exist_ok=True)

    enabled = t.enabled
    if not enabled or not has_texts(ds):
        reason = (
            "the study has no prompt/answer texts (add prompts.csv and answers.csv, or "
            "simulate with texts=True)"
            if enabled
            else "text.enabled = false"
        )
        what = "text stage (entrainment, modality, Figures 3-4)"
        return out.index({"skipped": True}, skipped=[{"analysis": what, "reason": reason}])

    cons, cons_source = _consensus(ds, b, run_dir)
    clinical_at = b.clinical_at
    res = analyse_text(ds, cons, t, clinical_at=clinical_at, cache_dir=cfg.get("cache_dir"))
    synthetic = _synthetic_label(ds)
    _write_tables(res, out, clinical_at)
    if t.figures:
        _figures(ds, res, out, bool(synthetic))
    headline = res.headline
    note = "descriptive statistics (model-days are serially dependent), as in the paper"
    out.index(headline, consensus=cons_source, synthetic=synthetic, note=note)
    log.info(
        "stage text: entrainment (config %d, %s) and modality for %d models x %d days%s",
        res.config,
        res.embedding_model,
        ds.sizes[MODEL],
        ds.sizes[DAY],
        " (SYNTHETIC texts)" if synthetic else "",
    )
    return headline


def _write_tables(res: Any, out: Outputs, clinical_at: float) -> None:
    """The text stage's tables (metrics per model-day, model means, correlations, by consensus
    stage, within model, around the clinical turn)."""
    write = out.write

    write(
        "metrics_by_model_day.csv",
        res.by_model_day,
        f"entrainment (config {res.config} canonical; others as entrainment_configN), modality "
        "and its marker counts, consensus stage per model-day "
        "(NaN = missing answer)",
    )
    write(
        "model_means.csv",
        res.model_means,
        "per-model mean/sd/n_days of every metric over available days",
    )
    write(
        "correlations.csv",
        res.correlations,
        "model-level Spearman rho (two-sided p) of each metric's model means with Level-B day "
        "count (Figure 3) and with mean consensus stage",
    )
    write(
        "by_consensus_stage.csv",
        res.by_stage,
        "metric mean/sd/n over model-days at each consensus stage",
    )
    write(
        "within_model.csv",
        res.within_model,
        f"within-model Spearman rho with consensus (descriptive), mean on naive "
        f"(< {clinical_at:g}) vs clinical days",
    )
    write(
        "turn_contrast.csv",
        res.turn_contrast,
        "metric means before vs from each model's first clinical framing day (Figure 4 data)",
    )


def _figures(ds: xr.Dataset, res: Any, out: Outputs, synthetic: bool) -> None:
    """Figures 3 (entrainment against Level-B days, with Level B) and 4 (modality around the
    clinical turn)."""
    from ..text import analyses as an

    if "level_b" in ds:
        lb_table = an.level_b_table(res.metrics["entrainment"], ds["level_b"])
        stem = out.path / "figure3_entrainment_level_b"
        for p in an.plot_level_b(lb_table, stem, synthetic=synthetic):
            out.files[p.name] = "Figure 3: model mean entrainment vs Level-B days"
    modality = res.turn_contrast[res.turn_contrast["metric"] == "modality"]
    modality = modality.drop(columns="metric").set_index("model")
    stem = out.path / "figure4_modality_turn"
    for p in an.plot_turn_contrast(modality, stem, synthetic=synthetic):
        out.files[p.name] = "Figure 4: modality before vs from the clinical turn"
