"""The design experiment's rows beyond the coverage study's: the reliability of the recognition
codes (alpha and ICC(2,k) with their CIs) and the never-turner classification per model, in
:data:`~delusion_bayes.sweep.coverage_metrics.REPLICATE_COLUMNS`' format."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from .coverage_metrics import BASELINE

#: the regime whose classification is scored
NEVER = "never"


def reliability_rows(res: Any, ds: xr.Dataset, base: Mapping[str, Any]) -> list[dict]:
    """Krippendorff's alpha (unit-bootstrap CI) and ICC(2,k) (F-based CI) of the recognition."""
    from ..baselines import icc
    from ..data.schema import RATER

    rows = []
    table = res.reliability.summary
    if "recognition" in table.index:
        r = table.loc["recognition"]
        rows.append(
            {
                **base,
                "method": BASELINE,
                "kind": "reliability",
                "quantity": "alpha",
                "item": "recognition",
                "estimate": float(r["alpha"]),
                "low_95": float(r.get("alpha_ci_low", np.nan)),
                "high_95": float(r.get("alpha_ci_high", np.nan)),
                "note": "unit bootstrap",
            }
        )
    rec = ds["recognition"].transpose(RATER, ...).values.reshape(ds.sizes[RATER], -1)
    try:
        with np.errstate(all="ignore"):
            t = icc(rec.T).loc["ICC2k"]
        est, lo, hi = float(t["icc"]), float(t["ci_low"]), float(t["ci_high"])
    except ValueError:
        est = lo = hi = np.nan
    rows.append(
        {
            **base,
            "method": BASELINE,
            "kind": "reliability",
            "quantity": "icc2k",
            "item": "recognition",
            "estimate": est,
            "low_95": lo,
            "high_95": hi,
            "note": "F-based CI (McGraw & Wong)",
        }
    )
    return rows


def classify_rows(
    method: str,
    first_clinical: np.ndarray,
    first_stable: np.ndarray,
    ds: xr.Dataset,
    censor_day: int,
    base: Mapping[str, Any],
) -> list[dict]:
    """One row per model: ``truth`` = 1 for a true never-turner (``true_regime``), ``estimate``
    = 1 when :func:`classify_regime` says ``never``; ``note`` = the regime it gave."""
    from ..data.schema import DAY, MODEL
    from .quantities import classify_regime

    n_days = int(ds[DAY].max())
    regime = ds["true_regime"].values if "true_regime" in ds else [""] * ds.sizes[MODEL]
    rows = []
    for i, m in enumerate(ds[MODEL].values):
        got = classify_regime(
            float(first_clinical[i]), float(first_stable[i]), n_days=n_days, censor_day=censor_day
        )
        rows.append(
            {
                **base,
                "method": method,
                "kind": "classify",
                "quantity": "never",
                "item": str(m),
                "regime": str(regime[i]),
                "truth": float(str(regime[i]) == NEVER),
                "estimate": float(got == NEVER),
                "note": got,
            }
        )
    return rows


__all__ = ["NEVER", "classify_rows", "reliability_rows"]
