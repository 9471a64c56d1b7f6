"""Milestone latencies and day counts of consensus trajectories (trajectory paper, Table 1).

One rule set, used by the frequentist baseline (on the median consensus) and by the posterior
milestones (on draws of the latent stage): the function is vectorised over any extra dims
(``chain``, ``draw``, ``resample``, ...) and loops only over days.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL
from ..data.schema import censor_day as default_censor_day
from ._validate import check_dims, check_option
from .config import MILESTONES, MISSING_RULES


def _first_day(hit: np.ndarray, days: np.ndarray, censor: float) -> np.ndarray:
    """First day (last axis) where ``hit``; ``censor`` where never."""
    return np.where(hit.any(axis=-1), days[np.argmax(hit, axis=-1)], censor).astype(float)


def _run_start(hit: np.ndarray, observed: np.ndarray, run: int, missing: str) -> np.ndarray:
    """Boolean: day starts a run of >= ``run`` hits (last axis), under the missing-day rule."""
    length = np.zeros(hit.shape, dtype=np.int64)
    carry = np.zeros(hit.shape[:-1], dtype=np.int64)
    for i in range(hit.shape[-1] - 1, -1, -1):  # backward scan over days only
        h, o = hit[..., i], observed[..., i]
        if missing == "skip":
            # a missing day carries the run through without counting
            carry = np.where(o, np.where(h, carry + 1, 0), carry)
        else:
            carry = np.where(o & h, carry + 1, 0)
        length[..., i] = carry
    return hit & observed & (length >= run)


def milestones(
    stage: xr.DataArray,
    level_b: xr.DataArray | None = None,
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    clinical_at: float = 3,
    stable_at: float = 4,
    level_a: xr.DataArray | None = None,
    missing: str = "skip",
) -> xr.Dataset:
    """Milestone latencies and day counts per model (and per draw / replicate).

    ``stage``: consensus recognition over ``model``, ``day`` (the study days 1..n_days) and any
    extra dims (``chain``, ``draw``, ``resample``); NaN = missing day. ``level_b``, ``level_a``:
    adjudicated codes over ``model``, ``day`` (0/1, NaN missing; given when ``>= 0.5``).
    Returns a Dataset of those computable from the inputs: ``first_clinical`` (first day at
    ``>= clinical_at``), ``first_stable`` (first day of the first run of ``stable_run`` days at
    ``>= stable_at``), ``first_level_b``, and the day counts ``days_stage4``, ``days_level_a``,
    ``days_level_b``; a milestone never reached is ``censor_day`` (default ``n_days + 1``).

    A NaN day is never a hit (never a first day, not counted). For runs, ``missing="skip"``
    steps over it (days 20, 21, [22 missing], 23 at stage 4 are a run of 3 from day 20);
    ``"break"`` ends the run. A run cut by the end of the study counts only with ``stable_run``
    observed days. Trajectory paper, Table 1: "first clinical framing (Moment >= 3), first
    stable clinical framing (first run of >= 3 consecutive days at 4), and first Level-B
    recommendation", censored at 31.
    """
    check_dims(stage, [MODEL, DAY], "stage")
    check_option("missing", missing, MISSING_RULES)
    if stable_run < 1:
        raise ValueError(f"stable_run must be >= 1; got {stable_run}")
    days = np.asarray(stage[DAY].values)
    if not np.issubdtype(days.dtype, np.number):
        raise ValueError(f"stage's {DAY!r} coords must be day numbers; got {days.dtype}")
    if np.any(np.diff(days) <= 0):
        raise ValueError(f"stage's {DAY!r} coords must be increasing; got {days.tolist()}")
    cens = censor_day if censor_day is not None else default_censor_day(int(np.max(days)))
    if cens <= days.max():
        raise ValueError(f"censor_day={cens} must exceed the last day {int(days.max())}")
    st = stage.transpose(..., DAY)
    x = st.values.astype(float)
    observed = ~np.isnan(x)
    with np.errstate(invalid="ignore"):
        clinical = observed & (x >= clinical_at)
        at4 = observed & (x >= stable_at)
    template = st.isel({DAY: 0}, drop=True)
    out: dict[str, xr.DataArray] = {}

    def _wrap(values: np.ndarray, src: xr.DataArray = template) -> xr.DataArray:
        return src.copy(data=values)

    out["first_clinical"] = _wrap(_first_day(clinical, days, cens))
    out["first_stable"] = _wrap(
        _first_day(_run_start(at4, observed, stable_run, missing), days, cens)
    )
    for name, codes in (("level_b", level_b), ("level_a", level_a)):
        if codes is None:
            continue
        check_dims(codes, [MODEL, DAY], name)
        codes_c = codes.transpose(..., DAY)
        if not np.array_equal(codes_c[DAY].values, days):
            raise ValueError(f"{name} day coords differ from stage's")
        c = codes_c.values.astype(float)
        with np.errstate(invalid="ignore"):
            hit = ~np.isnan(c) & (c >= 0.5)
        tmpl = codes_c.isel({DAY: 0}, drop=True)
        if name == "level_b":
            out["first_level_b"] = _wrap(_first_day(hit, days, cens), tmpl)
        out[f"days_{name}"] = _wrap(hit.sum(axis=-1).astype(float), tmpl)
    out["days_stage4"] = _wrap(at4.sum(axis=-1).astype(float))
    ds = xr.Dataset({k: out[k] for k in MILESTONES if k in out})
    ds.attrs.update(
        censor_day=int(cens),
        stable_run=int(stable_run),
        clinical_at=float(clinical_at),
        stable_at=float(stable_at),
        missing=missing,
    )
    return ds
