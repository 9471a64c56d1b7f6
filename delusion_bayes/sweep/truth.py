"""The truth a simulated study was drawn from, in the units the analyses report: the
noise-free ratings and milestones of its latent stage, the logistic parameters it was simulated
with, and the population group difference a contrast estimates (the coverage study scores every
method against these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..data.schema import STAGE_CUTPOINTS
from .coverage_metrics import LATENCIES


def noise_free_rating(stage: xr.DataArray, cutpoints: Sequence[float]) -> xr.DataArray:
    """``1 + sum_j [stage > c_j]``: the rating of a rater without severity or noise (NaN kept)."""
    cuts = np.asarray(cutpoints, dtype=float)
    x = stage.values
    with np.errstate(invalid="ignore"):
        cat = 1.0 + (x[..., None] > cuts).sum(axis=-1)
    return stage.copy(data=np.where(np.isnan(x), np.nan, cat))


def true_milestones(stage: xr.DataArray, ds: xr.Dataset, stable_run: int, censor_day: Any):
    """Milestones of the noise-free rating of ``stage`` (the simulator's cutpoints)."""
    from ..baselines import milestones

    cuts = ds["true_cutpoints"].values if "true_cutpoints" in ds else STAGE_CUTPOINTS
    return milestones(noise_free_rating(stage, cuts), stable_run=stable_run, censor_day=censor_day)


def true_quantities(
    ds: xr.Dataset, *, stable_run: int = 3, censor_day: int | None = None
) -> xr.Dataset:
    """The estimands of a simulated study per model (see the module docstring); ValueError
    when the study carries no truth (``true_L, true_k, true_t50, true_stage``)."""
    missing = [v for v in ("true_L", "true_k", "true_t50", "true_stage") if v not in ds.data_vars]
    if missing:
        raise ValueError(
            f"the study has no truth variables {missing}: the coverage study needs a simulated "
            "study (delusion_bayes.data.simulate_study)"
        )
    ms = true_milestones(ds["true_stage"], ds, stable_run, censor_day)
    out = xr.Dataset(
        {
            "L": ds["true_L"],
            "k": ds["true_k"],
            "t50": ds["true_t50"],
            **{m: ms[m] for m in LATENCIES},
        }
    )
    if "true_regime" in ds:
        out["regime"] = ds["true_regime"]
    return out


def population_truth(ds: xr.Dataset, contrast: Any, quantity: str) -> float:
    """The true population difference ``mu_A - mu_B`` of a simulated study: 0 on the ``null``
    preset (one exchangeable population); with its ``group_shift`` override the shift of
    ``t50`` for a contrast of the shifted group against the rest of its ``by`` (NaN for other
    quantities, whose population difference has no closed form, and for contrasts on another
    attribute); NaN on other presets (their models are fixed, not drawn from populations)."""
    import json

    from ..baselines.permutation import as_contrast

    if ds.attrs.get("preset") != "null":
        return np.nan
    shift = json.loads(ds.attrs["group_shift"]) if "group_shift" in ds.attrs else {}
    if not shift:
        return 0.0
    c = as_contrast(contrast)
    if c.by != shift["by"] or quantity != "t50":
        return np.nan
    level, d = str(shift["level"]), float(shift.get("t50", 0.0))
    a = {str(v) for v in c.a}
    b = {str(v) for v in c.b} if c.b is not None else {str(v) for v in ds[c.by].values} - a
    if a == {level}:
        return d
    if b == {level}:
        return -d
    return np.nan
