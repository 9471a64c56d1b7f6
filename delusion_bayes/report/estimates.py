"""Per-model tables that set a baseline estimate [CI] beside the posterior median [CrI].

Used by Table 1 (milestones) and Table D1 (logistic fits). Every number is copied unchanged from
the stage tables; only the display cells are rounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from delusion_bayes.report.table import ReportTable, fmt_interval, fmt_num, fmt_p

#: readable headers for the quantities shared by all stages
LABELS = {
    "first_clinical": "First clinical framing",
    "first_stable": "First stable framing",
    "first_level_b": "First Level-B",
    "days_stage4": "Days at stage 4",
    "days_level_a": "Level-A days",
    "days_level_b": "Level-B days",
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


@dataclass
class Estimate:
    """One quantity for every row: point estimate and (optional) interval bounds, plus extra
    columns shown after it (``{column: (header, values)}``, probabilities)."""

    est: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    extra: dict[str, tuple[str, Sequence[float]]] = field(default_factory=dict)


def _cell_text(est, low, high, digits, censor: int | None) -> list[str]:
    if low is not None:
        return [fmt_interval(e, lo, hi, digits) for e, lo, hi in zip(est, low, high, strict=True)]
    if censor is not None:  # a latency: the censoring day reads "never"
        return ["never" if e == censor else fmt_num(e, 0) for e in est]
    whole = all(float(e).is_integer() for e in est if not pd.isna(e))
    return [fmt_num(e, 0 if whole else digits) for e in est]


def side_by_side(
    name: str,
    title: str,
    keys: Sequence[str],
    base: dict[str, Estimate],
    post: dict[str, Estimate] | None,
    labels: tuple[str, str],
    sources: list[str],
    notes: Sequence[str] = (),
    digits: int = 2,
    censor: int | None = None,
    extra_base: dict[str, Sequence[object]] | None = None,
) -> ReportTable:
    """Per-model table: for every quantity of ``base``, the baseline estimate [CI] beside the
    posterior's (when ``post`` has that quantity).

    The CSV (``data``) holds the numbers unchanged, as columns ``<q>``, ``<q>_low``, ``<q>_high``
    (baseline), ``<q>_posterior``, ``<q>_posterior_low``, ``<q>_posterior_high`` and
    ``<q>_<extra>``. ``censor``: baseline latencies equal to it read "never".
    """
    data = pd.DataFrame({"model": list(keys)})
    disp = pd.DataFrame({"Model": list(keys)})
    groups: list[tuple[str, int]] = [("", 1)]
    for q, b in base.items():
        data[q] = np.asarray(b.est)
        if b.low is not None:
            data[f"{q}_low"], data[f"{q}_high"] = np.asarray(b.low), np.asarray(b.high)
        is_latency = censor is not None and q.startswith("first_")
        disp[f"{label(q)} · {labels[0]}"] = _cell_text(
            b.est, b.low, b.high, digits, censor if is_latency else None
        )
        n = 1
        p = (post or {}).get(q)
        if p is not None:
            data[f"{q}_posterior"] = np.asarray(p.est)
            data[f"{q}_posterior_low"] = np.asarray(p.low)
            data[f"{q}_posterior_high"] = np.asarray(p.high)
            disp[f"{label(q)} · {labels[1]}"] = _cell_text(p.est, p.low, p.high, digits, None)
            for col, (header, values) in p.extra.items():
                data[f"{q}_{col}"] = np.asarray(values)
                disp[f"{label(q)} · {header}"] = [fmt_p(v) for v in values]
            n += 1 + len(p.extra)
        groups.append((label(q), n))
    for col, values in (extra_base or {}).items():
        data[col] = list(values)
        disp[label(col)] = [fmt_num(v, digits) for v in values]
        groups.append(("", 1))
    if all(n == 1 for _, n in groups):  # no posterior beside any quantity: one header row
        disp.columns = [c.split(" · ")[0] for c in disp.columns]
        return ReportTable(name, title, data, disp, sources, list(notes))
    disp.columns = [c.split(" · ")[-1] for c in disp.columns]
    return ReportTable(name, title, data, disp, sources, list(notes), groups)
