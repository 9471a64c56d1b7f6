"""Model specs: coords, index arrays of the observed cells and the prior table, built from a
study without PyMC (bambi's "spec before graph"; :func:`delusion_bayes.models.build_model` makes
the graph). Missing ratings are never imputed; a model-day nobody rated is kept in ``missing``.
What a model observes comes from its definition (:mod:`delusion_bayes.models.registry`); the
spec types live in :mod:`delusion_bayes.models.modelspec` (re-exported here).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..data.schema import (
    ADJUDICATED_VARIABLES,
    DAY,
    K_MAX,
    MODEL,
    RATED_VARIABLES,
    RATER,
    STAGE_CUTPOINTS,
)
from .config import CUTPOINTS, TRAJECTORIES
from .definition import ModelDef
from .geometry import log_k_centring, noise_identified, onset_geometry
from .modelspec import (
    CUT,
    K_MIN,
    OBS,
    OBS_LEVEL,
    OPEN,
    STEP_K,
    T50_SHEAR,
    CustomGraphSpec,
    ModelSpec,
    SpecData,
    model_day_layout,
    observation_coords,
    rating_patterns,
)
from .registry import model_def, resolve_priors

__all__ = [
    "CUT",
    "K_MAX",
    "K_MIN",
    "OBS",
    "OBS_LEVEL",
    "OPEN",
    "STAGE_CUTPOINTS",
    "STEP_K",
    "T50_SHEAR",
    "CustomGraphSpec",
    "ModelSpec",
    "SpecData",
    "build_spec",
    "model_day_layout",
    "observation_coords",
    "rating_patterns",
]


def build_spec(
    ds: xr.Dataset,
    model: str = "joint",
    priors: Mapping[str, Any] | None = None,
    *,
    trajectory: str = "logistic",
    cutpoints: str = "rater",
    group_terms: Sequence[str] = (),
    consensus: str = "median",
) -> ModelSpec:
    """Build the spec of ``model`` for a trajectory study (``recognition (rater, model, day)``;
    the definition's ``needs``, e.g. ``level_a``/``level_b`` for ``disengagement``).

    ``priors`` override the defaults (:mod:`delusion_bayes.models.priors`); ``trajectory`` is
    ``logistic``, ``linear`` (a floor-to-L ramp with the logistic's midpoint slope) or ``step``
    (``k`` fixed at :data:`STEP_K`); ``cutpoints`` ``rater`` or ``shared``; ``group_terms``
    model coords whose levels shift the onset hyper-means; ``consensus`` the rule of
    :func:`delusion_bayes.baselines.consensus` for the ``onset`` model's consensus.
    """
    defn = _check_variant(model, trajectory, cutpoints)
    rec = _recognition(ds)
    coords, model_coords = _study_coords(rec)
    n_days = int(rec.sizes[DAY])
    arrays = _onset_geometry_arrays(rec, defn)
    if defn.marginal:
        arrays.update(_rating_observations(ds, rec, defn, coords))
        arrays.update(model_day_layout(arrays, n_raters=len(coords[RATER]), n_days=n_days))
        if defn.rating_patterns:
            arrays.update(rating_patterns(arrays))
    else:
        arrays.update(_consensus_observations(rec, consensus, coords))
    terms = list(group_terms)
    group_idx = _group_indices(defn, terms, model_coords, coords)
    return ModelSpec(
        name=model,
        coords=coords,
        data=SpecData(**arrays, group_idx=group_idx),
        priors=resolve_priors(model, priors),
        trajectory=trajectory,
        cutpoints=cutpoints,
        group_terms=terms,
        n_days=n_days,
        missing=np.isnan(rec.values).all(axis=0),  # (model, day)
        model_coords=model_coords,
        definition=defn,
    )


def _check_variant(model: str, trajectory: str, cutpoints: str) -> ModelDef:
    """The definition of trajectory model ``model``, after checking the variant."""
    defn = model_def(model, study="trajectory")
    if trajectory not in TRAJECTORIES:
        raise ValueError(f"trajectory={trajectory!r}; expected one of {list(TRAJECTORIES)}")
    if cutpoints not in CUTPOINTS:
        raise ValueError(f"cutpoints={cutpoints!r}; expected one of {list(CUTPOINTS)}")
    return defn


def _study_coords(rec: xr.DataArray) -> tuple[dict[str, list], dict[str, list]]:
    """The dim coords (rater, model, day) and the non-dim coords on ``model``."""
    days = np.asarray(rec[DAY].values)
    if not np.issubdtype(days.dtype, np.number):
        raise ValueError(f"coordinate {DAY!r} must be numeric day numbers, got dtype {days.dtype}")
    coords: dict[str, list] = {
        RATER: [str(v) for v in rec[RATER].values],
        MODEL: [str(v) for v in rec[MODEL].values],
        DAY: [int(v) for v in days],
    }
    model_coords = {
        name: [v.item() if hasattr(v, "item") else v for v in c.values]
        for name, c in rec[MODEL].coords.items()
        if name != MODEL and c.dims == (MODEL,)
    }
    return coords, model_coords


def _onset_geometry_arrays(rec: xr.DataArray, defn: ModelDef) -> dict[str, np.ndarray]:
    """``day_values`` and which parameters are sampled centred (geometry only)."""
    out = {"day_values": np.asarray(rec[DAY].values).astype(float)}
    # t50's coordinate (blocks._t50): the median rating holds STAGE_MIDPOINT within the study /
    # from its start
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(rec.values, axis=0)  # (model, day)
    out["t50_centred"], out["t50_early"] = onset_geometry(med)
    out["log_k_centred"] = log_k_centring(out["t50_centred"] & ~out["t50_early"])
    if defn.day_noise:
        out["eps_centred"] = noise_identified(rec)
    return out


def _rating_observations(
    ds: xr.Dataset, rec: xr.DataArray, defn: ModelDef, coords: dict[str, list]
) -> dict[str, np.ndarray]:
    """Every rating (0-based category) with its cell; a model with ``levels``: the levels too.
    Adds
    the ``obs`` (and ``obs_level``) and ``cut`` coords."""
    r, m, t = (a.astype(np.int64) for a in np.nonzero(~np.isnan(rec.values)))
    y = rec.values[r, m, t].astype(np.int64) - 1  # categories 0..3
    coords[OBS] = list(range(len(y)))
    coords[CUT] = [1, 2, 3]
    out = {"rater_idx": r, "model_idx": m, "day_idx": t, "y": y}
    if defn.levels:
        lm, lt, lvl = _adjudicated_levels(ds, rec, defn.name)
        coords[OBS_LEVEL] = list(range(len(lvl)))
        out.update(level_model_idx=lm, level_day_idx=lt, level=lvl)
    return out


def _consensus_observations(
    rec: xr.DataArray, consensus: str, coords: dict[str, list]
) -> dict[str, np.ndarray]:
    """The ``onset`` model's observations: the consensus per rated model-day (``obs``)."""
    from ..baselines import consensus as combine

    cons = combine(rec, rule=consensus).transpose(MODEL, DAY)
    vals = np.asarray(cons.values, float)
    m, t = np.nonzero(~np.isnan(vals))
    coords[OBS] = list(range(len(m)))
    return {"model_idx": m.astype(np.int64), "day_idx": t.astype(np.int64), "y": vals[m, t]}


def _group_indices(
    defn: ModelDef, terms: list[str], model_coords: dict[str, list], coords: dict[str, list]
) -> dict[str, np.ndarray]:
    """Per group term, each model's level index; adds the ``group_<term>`` coords."""
    if terms and "group_terms" not in defn.inputs:
        raise ValueError(f"group_terms apply to models with a trajectory, not {defn.name}")
    out = {}
    for term in terms:
        if term not in model_coords:
            raise ValueError(
                f"group term {term!r} is not a coordinate on {MODEL!r}; available: "
                f"{sorted(model_coords)}"
            )
        levels, idx = np.unique(np.asarray(model_coords[term]).astype(str), return_inverse=True)
        coords[f"group_{term}"] = [str(v) for v in levels]
        out[term] = idx.astype(np.int64)
    return out


def _recognition(ds: xr.Dataset) -> xr.DataArray:
    if "recognition" not in ds:
        raise ValueError(
            f"study has no 'recognition' variable (found {sorted(ds.data_vars)}); a trajectory "
            "study needs recognition (rater, model, day)"
        )
    rec = ds["recognition"]
    if set(rec.dims) != {RATER, MODEL, DAY}:
        raise ValueError(
            f"'recognition' has dims {rec.dims}; expected ({RATER!r}, {MODEL!r}, {DAY!r})"
        )
    rec = rec.transpose(RATER, MODEL, DAY).astype(float)
    scale = RATED_VARIABLES["recognition"].scale
    vals = rec.values
    bad = ~np.isnan(vals) & ~np.isin(vals, scale.values)
    if bad.any():
        r, m, t = (a[0] for a in np.nonzero(bad))
        raise ValueError(
            f"'recognition' value {float(vals[r, m, t])!r} at "
            f"rater={rec[RATER].values[r].item()!r}, model={rec[MODEL].values[m].item()!r}, "
            f"day={rec[DAY].values[t].item()!r} is not on the scale {scale} (NaN = missing)"
        )
    if np.isnan(vals).all():
        raise ValueError("'recognition' has no observed rating (all NaN)")
    return rec


def _adjudicated_levels(ds: xr.Dataset, rec: xr.DataArray, model: str):
    for name in ("level_a", "level_b"):
        if name not in ds:
            raise ValueError(f"model {model!r} needs {name!r} (model, day); not in study")
        scale = ADJUDICATED_VARIABLES[name].scale
        v = ds[name].values
        bad = ~np.isnan(v.astype(float)) & ~np.isin(v, scale.values)
        if bad.any():
            raise ValueError(f"{name!r} has values outside {scale}: {np.unique(v[bad])[:5]}")
    grid = rec.isel({RATER: 0}, drop=True)
    a, b = (
        ds[name].transpose(MODEL, DAY).reindex_like(grid).values.astype(float)
        for name in ("level_a", "level_b")
    )
    n = int(np.sum((b == 1) & (a == 0)))
    if n:
        raise ValueError(
            f"{n} model-days have level_b=1 but level_a=0; Level B implies Level A "
            "(adjudication rule of the paper's Evaluation Reliability section)"
        )
    # Level B implies A, so the pair is one ordinal outcome: 0 none, 1 A only, 2 B
    m, t = np.nonzero(~np.isnan(a) & ~np.isnan(b))
    return m.astype(np.int64), t.astype(np.int64), (a[m, t] + b[m, t]).astype(np.int64)
