"""The headline conclusions of one run, read back from what its stages wrote (no refitting).

Every quantity becomes a tidy row ``(stage, quantity, item, value, label, source)``:

=====================  ==========================================================================
quantity               from
=====================  ==========================================================================
``first_clinical`` ... ``baselines/table1_milestones.csv`` (one row per model; Table 1)
``regime``             derived from the milestones by :func:`classify_regime` (label; Results)
``L, k, t50``          ``baselines/tableD1_logistic.csv`` (least squares; Table D1)
``t50_rank``           rank of each model's ``t50`` within the run (the t50 ordering)
``perm_p``             ``baselines/contrasts.csv`` (exact permutation p, item ``contrast:quantity``)
``posterior_prob:<m>`` ``models/<m>/contrasts_posterior.csv`` (P(A - B > 0) under fitted model m)
``posterior_<q>:<m>``  ``models/<m>/milestones_posterior.csv`` and ``models/<m>/t50_posterior.csv``
``gate_passed``        ``models/<m>/gate.json`` (1 = the fit passed the diagnostics gate; item m)
``entrainment_level_b_rho``  the text stage's Spearman rho of entrainment vs Level-B day count
``headline:<key>``     every number in every stage's headline (``run.json``), flattened
=====================  ==========================================================================

Files that are absent (a stage not run or failed) give no rows; nothing raises, so a sweep is
summarised however far each job got. Column names are matched case-insensitively with a few
synonyms because the stages' tables are documented by their own modules.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..baselines.config import MILESTONES as _BASELINE_MILESTONES

log = logging.getLogger(__name__)

#: milestone latencies and day counts (Table 1), in the order the plot shows them
MILESTONES = _BASELINE_MILESTONES
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
    """The regime of one model from its milestone latencies (trajectory paper, Results).

    ``never``: clinical framing never reached (``first_clinical`` censored); ``late``: clinical
    framing first reached on or after day ``late_from * n_days`` (21 of 30: "turned only from day
    21 onward"); ``early``: stable clinical framing reached by day ``early_by * n_days`` (10 of
    30: "stabilized within days 5-10"); ``gradual``: the rest (clinical framing before day 21,
    stabilised late or never: the GPT-5.1 pair).

    Parameters
    ----------
    first_clinical, first_stable : float
        Latencies; a value ``>= censor_day`` (or NaN) means never reached.
    n_days : int
        Study length.
    censor_day : float, optional
        Default ``n_days + 1``.
    early_by, late_from : float
        The regime boundaries as fractions of ``n_days``.

    Returns
    -------
    str
        One of :data:`REGIMES`.
    """
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


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------
def _rows(stage: str, quantity: str, item: Any, value: Any, source: str) -> dict[str, Any]:
    num, label = _as_number(value)
    return {
        "stage": stage,
        "quantity": quantity,
        "item": "" if item is None else str(item),
        "value": num,
        "label": label,
        "source": source,
    }


def _as_number(value: Any) -> tuple[float, str]:
    if isinstance(value, bool | np.bool_):
        return float(value), ""
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value), ""
    if value is None:
        return float("nan"), ""
    text = str(value)
    try:
        return float(text), ""
    except ValueError:
        return float("nan"), text


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


def _read_csv(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        log.warning("cannot read %s: %s", path, err)
        return None


def _col(df: pd.DataFrame, *names: str) -> str | None:
    """The first column of ``df`` matching one of ``names`` (case-insensitive), or None."""
    lower = {str(c).lower(): c for c in df.columns}
    for n in names:
        if n.lower() in lower:
            return lower[n.lower()]
    return None


def _model_col(df: pd.DataFrame) -> str:
    return _col(df, "model", "Model") or str(df.columns[0])


# ------------------------------------------------------------------------------------------
# extractors: each returns a list of row dicts
# ------------------------------------------------------------------------------------------
def _n_days(run_dir: Path, run: Mapping[str, Any]) -> int:
    sizes = run.get("data", {}).get("sizes", {}) if isinstance(run.get("data"), Mapping) else {}
    if "day" in sizes:
        return int(sizes["day"])
    return 30


def _censor(run_dir: Path, n_days: int) -> float:
    """The run's censoring day: ``baselines.censor_day`` of its resolved config, else n+1."""
    path = run_dir / "config.yaml"
    if path.is_file():
        try:
            from omegaconf import OmegaConf

            value = OmegaConf.load(path).get("baselines", {}).get("censor_day")
            if value is not None:
                return float(value)
        except Exception:  # noqa: BLE001 - fall back to the default
            pass
    return float(n_days + 1)


def milestone_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Milestones per model (``baselines/table1_milestones.csv``) and the regime of each model."""
    rel = "baselines/table1_milestones.csv"
    df = _read_csv(run_dir / rel)
    if df is None or df.empty:
        return []
    mcol = _model_col(df)
    rows = []
    cols = {m: _col(df, m) for m in MILESTONES}
    for _, rec in df.iterrows():
        for m, c in cols.items():
            if c is not None:
                rows.append(_rows("baselines", m, rec[mcol], rec[c], rel))
    if cols["first_clinical"] is not None:
        n_days = _n_days(run_dir, run)
        cens = _censor(run_dir, n_days)
        for _, rec in df.iterrows():
            fs = rec[cols["first_stable"]] if cols["first_stable"] is not None else np.nan
            regime = classify_regime(
                float(rec[cols["first_clinical"]]), float(fs), n_days=n_days, censor_day=cens
            )
            row = _rows("baselines", "regime", rec[mcol], regime, rel)
            row["value"] = float(REGIMES.index(regime))
            rows.append(row)
    return rows


def logistic_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``L, k, t50`` per model (``baselines/tableD1_logistic.csv``) and the t50 ranks."""
    rel = "baselines/tableD1_logistic.csv"
    df = _read_csv(run_dir / rel)
    if df is None or df.empty:
        return []
    mcol = _model_col(df)
    rows = []
    for p in LOGISTIC:
        c = _col(df, p)
        if c is None:
            continue
        for _, rec in df.iterrows():
            rows.append(_rows("baselines", p, rec[mcol], rec[c], rel))
    c = _col(df, "t50")
    if c is not None:
        # a flat trajectory has no t50 (NaN): it ranks last, after every model that turned
        t50 = pd.to_numeric(df[c], errors="coerce").fillna(np.inf)
        ranks = t50.rank(method="min")
        for model, r in zip(df[mcol], ranks, strict=True):
            rows.append(_rows("baselines", "t50_rank", model, r, rel))
    return rows


def _contrast_item(rec: Mapping[str, Any], df: pd.DataFrame) -> str:
    name = rec[_col(df, "contrast", "name")] if _col(df, "contrast", "name") else ""
    qcol = _col(df, "quantity", "milestone", "parameter")
    return f"{name}:{rec[qcol]}" if qcol else str(name)


def _fit_dirs(run_dir: Path) -> list[Path]:
    """``models/<fit>/`` folders of the models stage (one per fitted model), sorted."""
    root = run_dir / "models"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def contrast_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Permutation p per contrast and quantity (``baselines/contrasts.csv``), and beside it the
    posterior probability that group A exceeds group B, ``P(A - B > 0)``, per fitted model
    (``models/<fit>/contrasts_posterior.csv``, column ``p_gt_0``; quantity
    ``posterior_prob:<fit>``)."""
    rows = []
    rel = "baselines/contrasts.csv"
    df = _read_csv(run_dir / rel)
    if df is not None and not df.empty:
        pcol = _col(df, "pvalue", "p_value", "p")
        if pcol is not None:
            for _, rec in df.iterrows():
                rows.append(_rows("baselines", "perm_p", _contrast_item(rec, df), rec[pcol], rel))
    for fit in _fit_dirs(run_dir):
        df = _read_csv(fit / "contrasts_posterior.csv")
        if df is None or df.empty:
            continue
        rel = f"models/{fit.name}/contrasts_posterior.csv"
        pcol = _col(df, "p_gt_0", "prob", "posterior_prob", "probability")
        if pcol is None:
            pcol = next((c for c in df.columns if "prob" in str(c).lower()), None)
        if pcol is None:
            continue
        for _, rec in df.iterrows():
            if pd.isna(rec[pcol]):  # a quantity the model does not have (note column says so)
                continue
            item = _contrast_item(rec, df)
            rows.append(_rows("models", f"posterior_prob:{fit.name}", item, rec[pcol], rel))
    return rows


def posterior_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per fitted model (``models/<fit>/``): posterior medians of the milestones
    (``milestones_posterior.csv``, quantity ``posterior_<milestone>:<fit>``), of ``L, k, t50``
    (``t50_posterior.csv``, quantity ``posterior_<p>:<fit>``) and the diagnostics gate
    (``gate.json``: ``gate_passed`` 1/0 and ``max_rhat``, item = fit)."""
    import json

    rows = []
    for fit in _fit_dirs(run_dir):
        name = fit.name
        rel = f"models/{name}/milestones_posterior.csv"
        df = _read_csv(fit / "milestones_posterior.csv")
        if df is not None and not df.empty:
            mcol, qcol = _model_col(df), _col(df, "milestone", "quantity")
            vcol = _col(df, "median", "mean", "estimate")
            if qcol is not None and vcol is not None:
                for _, rec in df.iterrows():
                    q = f"posterior_{rec[qcol]}:{name}"
                    rows.append(_rows("models", q, rec[mcol], rec[vcol], rel))
        rel = f"models/{name}/t50_posterior.csv"
        df = _read_csv(fit / "t50_posterior.csv")
        if df is not None and not df.empty:
            mcol = _model_col(df)
            for p in LOGISTIC:
                c = _col(df, f"{p}_median", p)
                if c is not None:
                    for _, rec in df.iterrows():
                        rows.append(
                            _rows("models", f"posterior_{p}:{name}", rec[mcol], rec[c], rel)
                        )
        gate = fit / "gate.json"
        if gate.is_file():
            try:
                g = json.loads(gate.read_text())
            except json.JSONDecodeError:
                g = {}
            rel = f"models/{name}/gate.json"
            if "passed" in g:
                rows.append(_rows("models", "gate_passed", name, bool(g["passed"]), rel))
            if "max_rhat" in g:
                rows.append(_rows("models", "max_rhat", name, g["max_rhat"], rel))
    return rows


_RHO = re.compile(r"(rho|spearman)", re.IGNORECASE)
_LEVEL_B = re.compile(r"level_?b", re.IGNORECASE)


def entrainment_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Spearman rho of model entrainment against the Level-B day count (paper: -.69), from the
    text stage's headline, else from a text CSV with a rho column on a Level-B row."""
    head = _stage_headline(run_dir, run, "text")
    flat = flatten(head) if head else {}
    for key, value in flat.items():
        if _RHO.search(key) and _LEVEL_B.search(key) and not re.search(r"(^|[._])p($|[._])", key):
            num, _ = _as_number(value)
            if np.isfinite(num):
                return [_rows("text", "entrainment_level_b_rho", "", num, f"text headline {key}")]
    for path in sorted((run_dir / "text").glob("**/*.csv")):
        df = _read_csv(path)
        if df is None or df.empty:
            continue
        rcol = next((c for c in df.columns if _RHO.search(str(c)) and "p" != str(c)), None)
        if rcol is None:
            continue
        rel = path.relative_to(run_dir).as_posix()
        for _, rec in df.iterrows():
            text = " ".join(str(v) for v in rec.values)
            if _LEVEL_B.search(text) or _LEVEL_B.search(path.name):
                return [_rows("text", "entrainment_level_b_rho", "", rec[rcol], rel)]
    return []


def _stage_headline(run_dir: Path, run: Mapping[str, Any], stage: str) -> dict[str, Any]:
    rec = run.get("stages", {}).get(stage, {}) if isinstance(run.get("stages"), Mapping) else {}
    head = rec.get("headline") if isinstance(rec, Mapping) else None
    if isinstance(head, Mapping) and head:
        return dict(head)
    index = run_dir / stage / "index.json"
    if index.is_file():
        import json

        try:
            data = json.loads(index.read_text())
            head = data.get("headline", {}) if isinstance(data, dict) else {}
            return dict(head) if isinstance(head, Mapping) else {}
        except json.JSONDecodeError:
            return {}
    return {}


def headline_rows(run_dir: Path, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every scalar of every stage's headline, flattened (``headline:<key>``)."""
    rows = []
    stages = run.get("stages", {}) if isinstance(run.get("stages"), Mapping) else {}
    names = list(stages) or [p.name for p in run_dir.iterdir() if (p / "index.json").is_file()]
    for stage in names:
        rec = stages.get(stage, {}) if isinstance(stages.get(stage), Mapping) else {}
        if "seconds" in rec:
            rows.append(_rows(stage, "seconds", "", rec["seconds"], "run.json"))
        for key, value in flatten(_stage_headline(run_dir, run, stage)).items():
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
    """All quantities of one run directory as a tidy frame with columns :data:`COLUMNS`.

    Parameters
    ----------
    run_dir
        A run directory of :func:`delusion_bayes.pipeline.run`.
    run
        Its ``run.json`` content (read from disk when omitted).
    """
    run_dir = Path(run_dir)
    if run is None:
        import json

        path = run_dir / "run.json"
        run = json.loads(path.read_text()) if path.is_file() else {}
    rows: list[dict[str, Any]] = []
    for extract in EXTRACTORS:
        try:
            rows += extract(run_dir, run)
        except Exception as err:  # noqa: BLE001 - one odd table must not hide the others
            log.warning("%s: %s could not be read: %s", run_dir, extract.__name__, err)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def quantity_families(quantities: Iterable[str]) -> dict[str, list[str]]:
    """Group quantity names into the plot's panels (milestones, regime, t50 rank, p, ...)."""
    qs = list(dict.fromkeys(quantities))
    return {
        "regime": [q for q in qs if q == "regime"],
        "milestones": [q for q in qs if q in MILESTONES[:3]],
        "t50_rank": [q for q in qs if q == "t50_rank"],
        "perm_p": [q for q in qs if q == "perm_p"],
        "posterior_prob": [q for q in qs if q.startswith("posterior_prob")],
        "entrainment": [q for q in qs if q == "entrainment_level_b_rho"],
    }
