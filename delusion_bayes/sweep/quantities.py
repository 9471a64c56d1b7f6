"""The headline conclusions of one run, read back from what its stages wrote (no refitting).

Every quantity becomes a tidy row ``(stage, quantity, item, value, label, source)``; one
extractor per source file (each names the file it reads): milestone latencies (Table 1) and
``regime`` (:func:`classify_regime`); ``L, k, t50`` (Table D1) and ``t50_rank``; ``perm_p`` and
``posterior_prob:<fit>`` (P(A - B > 0)) per contrast; posterior medians ``posterior_<q>:<fit>``,
``gate_passed`` and ``max_rhat``; ``entrainment_level_b_rho``; every number of every stage's
headline (``headline:<key>``, flattened). Files are read through :mod:`delusion_bayes.results`;
an absent file gives no rows (a sweep is summarised however far each job got), a broken one is
logged.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import results
from ..baselines.config import MILESTONES

log = logging.getLogger(__name__)

LOGISTIC: tuple[str, ...] = ("L", "k", "t50")
#: the four regimes of the paper's Results, in order of turning
REGIMES: tuple[str, ...] = ("early", "gradual", "late", "never")
COLUMNS: tuple[str, ...] = ("stage", "quantity", "item", "value", "label", "source")


def classify_regime(
    first_clinical: float,
    first_stable: float,
    *,
    n_days: int = 30,
    censor_day: float | None = None,
    early_by: float = 1 / 3,
    late_from: float = 0.7,
) -> str:
    """The regime (one of :data:`REGIMES`) of one model from its milestone latencies (``>=
    censor_day``, default ``n_days + 1``, or NaN: never reached), as the trajectory paper's
    Results define them: ``never``: clinical framing never reached; ``late``: first reached on or
    after day ``late_from * n_days`` (21 of 30); ``early``: stable clinical framing by day
    ``early_by * n_days`` (10 of 30: "stabilized within days 5-10"); ``gradual``: the rest."""
    cens = float(n_days + 1 if censor_day is None else censor_day)

    def reached(x: float) -> bool:
        return x is not None and not (isinstance(x, float) and math.isnan(x)) and x < cens

    if not reached(first_clinical):
        return "never"
    if first_clinical >= late_from * n_days:
        return "late"
    if reached(first_stable) and first_stable <= early_by * n_days:
        return "early"
    return "gradual"


def _rows(stage: str, quantity: str, item: Any, value: Any, source: str) -> dict[str, Any]:
    item = "" if item is None else str(item)
    return dict(zip(COLUMNS, (stage, quantity, item, *_as_number(value), source), strict=True))


def _as_number(value: Any) -> tuple[float, str]:
    """``(value, "")`` for a number (NaN for None), ``(NaN, text)`` for a label."""
    if value is None or isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
        return (float("nan") if value is None else float(value)), ""
    try:
        return float(str(value)), ""
    except ValueError:
        return float("nan"), str(value)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}, "c": [2, 3]}`` -> ``{"a.b": 1, "c.0": 2, "c.1": 3}``."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif isinstance(value, list | tuple):
            if all(not isinstance(v, Mapping | list | tuple) for v in value) and len(value) > 20:
                out[name] = ";".join(map(str, value))
            else:
                for i, v in enumerate(value):
                    if isinstance(v, Mapping):
                        out.update(flatten(v, f"{name}.{i}."))
                    else:
                        out[f"{name}.{i}"] = v
        else:
            out[name] = value
    return out


def _read(run_dir: Path, key: str, fit: str | None = None) -> pd.DataFrame | None:
    """A declared results file (:mod:`delusion_bayes.results`), None when absent or empty."""
    df = results.read(run_dir, key, fit=fit)
    return None if df is None or (isinstance(df, pd.DataFrame) and df.empty) else df


def study_length(run_dir: Path) -> tuple[int, float]:
    """``(n_days, censor_day)`` the baselines stage used (its ``index.json`` config)."""
    index = results.read(run_dir, "baselines/index.json") or {}
    config = index.get("config", {})
    if "n_days" not in config or "censor_day" not in config:
        raise results.ResultFileError(
            f"{run_dir}/baselines/index.json does not record n_days and censor_day"
        )
    return int(config["n_days"]), float(config["censor_day"])


def milestone_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Milestones per model (``baselines/table1_milestones.csv``) and the regime of each model."""
    key = "baselines/table1_milestones.csv"
    df = _read(run_dir, key)
    if df is None:
        return []
    rows = [
        _rows("baselines", m, rec["model"], rec[m], key)
        for _, rec in df.iterrows()
        for m in MILESTONES
    ]
    n_days, cens = study_length(run_dir)
    for _, rec in df.iterrows():
        regime = classify_regime(
            rec["first_clinical"], rec["first_stable"], n_days=n_days, censor_day=cens
        )
        row = _rows("baselines", "regime", rec["model"], regime, key)
        rows.append({**row, "value": float(REGIMES.index(regime))})
    return rows


def logistic_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``L, k, t50`` per model (``baselines/tableD1_logistic.csv``) and the t50 ranks."""
    key = "baselines/tableD1_logistic.csv"
    df = _read(run_dir, key)
    if df is None:
        return []
    rows = [
        _rows("baselines", p, rec["model"], rec[p], key)
        for p in LOGISTIC
        for _, rec in df.iterrows()
    ]
    # a flat trajectory has no t50 (NaN): it ranks last, after every model that turned
    ranks = df["t50"].fillna(np.inf).rank(method="min")
    rows += [
        _rows("baselines", "t50_rank", m, r, key) for m, r in zip(df["model"], ranks, strict=True)
    ]
    return rows


def contrast_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Permutation p per contrast and quantity (``baselines/contrasts.csv``) and, per fitted
    model, ``P(A - B > 0)`` (``models/<fit>/contrasts_posterior.csv``: ``posterior_prob:<fit>``)."""
    rows = []
    key = "baselines/contrasts.csv"
    df = _read(run_dir, key)
    if df is not None:
        rows += [
            _rows("baselines", "perm_p", f"{r['contrast']}:{r['quantity']}", r["pvalue"], key)
            for _, r in df.iterrows()
        ]
    key = "models/{fit}/contrasts_posterior.csv"
    for fit in results.fits(run_dir):
        df = _read(run_dir, key, fit)
        if df is None:
            continue
        src = key.format(fit=fit)
        # a NaN row: a quantity the model does not have (its note says so)
        rows += [
            _rows(
                "models", f"posterior_prob:{fit}", f"{r['name']}:{r['quantity']}", r["p_gt_0"], src
            )
            for _, r in df.iterrows()
            if pd.notna(r["p_gt_0"])
        ]
    return rows


def posterior_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per fitted model: posterior medians ``posterior_<q>:<fit>`` of the milestones and of ``L,
    k, t50`` (``models/<fit>/milestones_posterior.csv``, ``t50_posterior.csv``) and the gate
    (``gate.json``: ``gate_passed`` 1/0 and ``max_rhat``, item = fit)."""
    rows = []
    for fit in results.fits(run_dir):
        key = "models/{fit}/milestones_posterior.csv"
        df = _read(run_dir, key, fit)
        if df is not None:
            rows += [
                _rows(
                    "models",
                    f"posterior_{r['milestone']}:{fit}",
                    r["model"],
                    r["median"],
                    key.format(fit=fit),
                )
                for _, r in df.iterrows()
            ]
        key = "models/{fit}/t50_posterior.csv"
        df = _read(run_dir, key, fit)
        if df is not None:
            rows += [
                _rows(
                    "models",
                    f"posterior_{p}:{fit}",
                    r["model"],
                    r[f"{p}_median"],
                    key.format(fit=fit),
                )
                for p in LOGISTIC
                for _, r in df.iterrows()
            ]
        key = "models/{fit}/gate.json"
        gate = results.read(run_dir, key, fit)
        if gate is not None:
            src = key.format(fit=fit)
            rows.append(_rows("models", "gate_passed", fit, bool(gate["passed"]), src))
            rows.append(_rows("models", "max_rhat", fit, gate["max_rhat"], src))
    return rows


def entrainment_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Spearman rho of entrainment vs Level-B days (paper: -.69; ``text/correlations.csv``)."""
    key = "text/correlations.csv"
    df = _read(run_dir, key)
    if df is None:
        return []
    row = df[(df["metric"] == "entrainment") & (df["against"] == "days_level_b")]
    return [_rows("text", "entrainment_level_b_rho", "", r["rho"], key) for _, r in row.iterrows()]


def headline_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every scalar of every stage's headline, flattened (``headline:<key>``): the pipeline's
    record in ``run.json``, else ``<stage>/index.json``."""
    rows = []
    stages = run.get("stages", {}) if isinstance(run.get("stages"), Mapping) else {}
    names = list(stages) or [p.name for p in run_dir.iterdir() if (p / "index.json").is_file()]
    for stage in names:
        rec = stages.get(stage, {}) if isinstance(stages.get(stage), Mapping) else {}
        if "seconds" in rec:
            rows.append(_rows(stage, "seconds", "", rec["seconds"], "run.json"))
        head = rec.get("headline")
        if not (isinstance(head, Mapping) and head):
            key = f"{stage}/index.json"
            index = results.read(run_dir, key) if key in results.FILES else None
            head = (index or {}).get("headline") or {}
        for key, value in flatten(dict(head)).items():
            rows.append(_rows(stage, f"headline:{key}", "", value, "run.json"))
    return rows


EXTRACTORS = (
    milestone_rows,
    logistic_rows,
    contrast_rows,
    posterior_rows,
    entrainment_rows,
    headline_rows,
)


def run_quantities(run_dir: str | Path, run: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """All quantities of a run directory of :func:`delusion_bayes.pipeline.run` as a tidy
    frame with columns :data:`COLUMNS` (``run``: its ``run.json``, read when omitted)."""
    run_dir = Path(run_dir)
    if run is None:
        path = run_dir / "run.json"
        run = json.loads(path.read_text()) if path.is_file() else {}
    rows: list[dict[str, Any]] = []
    for extract in EXTRACTORS:
        try:
            rows += extract(run_dir, run)
        except Exception as err:  # noqa: BLE001 - one odd table must not hide the others
            log.warning("%s: %s could not be read: %s", run_dir, extract.__name__, err)
    return pd.DataFrame(rows, columns=list(COLUMNS))
