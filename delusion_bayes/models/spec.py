"""Model specs: coords, index arrays of the observed cells and the prior table, built from a
study without PyMC (bambi's "spec before graph"; :func:`delusion_bayes.models.build_model` makes
the graph). Missing ratings are never imputed; a model-day nobody rated is kept in ``missing``.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
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
from .config import CUTPOINTS, DAY_NOISE_MODELS, MARGINAL_MODELS, MODEL_NAMES, TRAJECTORIES
from .geometry import MIN_T50_SCALE_TURNERS, log_k_centring, noise_identified, onset_geometry
from .priors import prior_table, resolve_priors

__all__ = [
    "K_MAX",
    "STAGE_CUTPOINTS",
    "CustomGraphSpec",
    "ModelSpec",
    "SpecData",
    "build_spec",
    "model_day_layout",
    "observation_coords",
    "rating_patterns",
]

#: soft lower bound of the onset model's ``k`` (per day; a 10-90% rise over 146 days): without
#: it a model at its plateau from day 1 had a flat-line mode at k -> 0
#: (docs/design-notes.md#modelsspecpy). Not used by the joint models. (The upper bound is
#: :data:`delusion_bayes.data.schema.K_MAX`.)
K_MIN: float = 0.03
#: steepness of the ``step`` trajectory variant (per day; Claude Opus 4.1's k ~ 10 in the paper)
STEP_K: float = 10.0
#: logit distance ``c`` of a never-turner's wall ``t50 > T + c / k``, the shear of its t50
#: coordinate (``blocks._t50``; any value gives the same model)
T50_SHEAR: float = 2.0
#: stands in for the open end of an ordinal category (a cutpoint at -inf or +inf)
OPEN: float = 1.0e4
OBS = "obs"
OBS_LEVEL = "obs_level"
CUT = "cut"


@dataclass(eq=False)
class SpecData(MutableMapping):
    """The arrays of a :class:`ModelSpec`, one typed field each: the fields are the data.

    Every model has the onset geometry (``day_values`` ... ``log_k_centred``) and the observed
    cells (``model_idx``, ``day_idx``, ``y``; the ``onset`` model's ``y`` is the consensus per
    model-day, the others' the 0-based rating of ``rater_idx``). The models that integrate the
    stage out (:data:`~delusion_bayes.models.config.MARGINAL_MODELS`) add the model-day layout
    (``md_*``, ``n_interior``: :func:`model_day_layout`), those with day noise ``eps_centred``,
    ``disengagement`` the levels, ``rater`` its distinct rating patterns (``pat_*``:
    :func:`rating_patterns`); a field a model does not have is ``None``. ``group_idx`` maps
    each group term to the group index of every model.

    Item access (``spec.data["y"]``, ``spec.data["group_vendor_idx"]``, assignment too) reads
    and writes the same fields, for old callers and tests; iteration yields the keys that are
    set, in field order (:meth:`ModelSpec.hash` hashes them sorted).
    """

    day_values: np.ndarray
    #: t50's coordinate (blocks._t50): the median rating reaches STAGE_MIDPOINT within the
    #: study (centred) / from its start (early): :func:`onset_geometry`
    t50_centred: np.ndarray
    t50_early: np.ndarray
    #: :func:`log_k_centring`
    log_k_centred: np.ndarray
    model_idx: np.ndarray
    day_idx: np.ndarray
    y: np.ndarray
    rater_idx: np.ndarray | None = None
    #: :func:`noise_identified` (``joint``, ``disengagement``)
    eps_centred: np.ndarray | None = None
    level_model_idx: np.ndarray | None = None
    level_day_idx: np.ndarray | None = None
    level: np.ndarray | None = None
    md_model: np.ndarray | None = None
    md_day: np.ndarray | None = None
    md_lo: np.ndarray | None = None
    md_hi: np.ndarray | None = None
    md_rating: np.ndarray | None = None
    md_end: np.ndarray | None = None
    md_level: np.ndarray | None = None
    n_interior: np.ndarray | None = None
    #: the rater model's distinct rating patterns (:func:`rating_patterns`)
    pat_lo: np.ndarray | None = None
    pat_hi: np.ndarray | None = None
    pat_rating: np.ndarray | None = None
    pat_end: np.ndarray | None = None
    pat_count: np.ndarray | None = None
    group_idx: dict[str, np.ndarray] = field(default_factory=dict)

    @staticmethod
    def _term(key: str) -> str | None:
        """The group term of a ``group_<term>_idx`` key, else None."""
        if key.startswith("group_") and key.endswith("_idx") and len(key) > len("group__idx"):
            return key[len("group_") : -len("_idx")]
        return None

    def __getitem__(self, key: str) -> np.ndarray:
        if (term := self._term(key)) is not None and term in self.group_idx:
            return self.group_idx[term]
        value = getattr(self, key, None) if key in _ARRAY_FIELDS else None
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: np.ndarray) -> None:
        if key in _ARRAY_FIELDS:
            setattr(self, key, value)
        elif (term := self._term(key)) is not None:
            self.group_idx[term] = value
        else:
            raise KeyError(f"{key!r} is not a field of SpecData ({', '.join(_ARRAY_FIELDS)})")

    def __delitem__(self, key: str) -> None:
        if key in _REQUIRED_FIELDS:
            raise KeyError(f"{key!r} is a field every spec has; it cannot be deleted")
        self[key]  # KeyError if not set
        if key in _ARRAY_FIELDS:
            setattr(self, key, None)
        else:
            del self.group_idx[self._term(key)]

    def __iter__(self) -> Iterator[str]:
        yield from (k for k in _ARRAY_FIELDS if getattr(self, k) is not None)
        yield from (f"group_{term}_idx" for term in self.group_idx)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"SpecData({', '.join(f'{k}{np.shape(v)}' for k, v in self.items())})"


_ARRAY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SpecData) if f.name != "group_idx")
_REQUIRED_FIELDS = frozenset(
    f.name for f in fields(SpecData) if f.name != "group_idx" and f.default is not None
)


@runtime_checkable
class CustomGraphSpec(Protocol):
    """A spec that brings its own graph and post-processing (the replay model's
    :class:`~delusion_bayes.models.replay.ReplayModelSpec`): :func:`delusion_bayes.models.fit`
    calls ``build()`` instead of :func:`~delusion_bayes.models.build_model` and ``finish()``
    instead of the trajectory models' latent groups and :func:`finish_fit`."""

    name: str
    priors: dict[str, dict[str, Any]]

    @property
    def variant(self) -> str: ...

    def hash(self) -> str: ...

    def build(self) -> Any: ...

    def finish(self, tree: xr.DataTree, seed: int = 0, log_likelihood: bool = True) -> Any: ...


@dataclass
class ModelSpec:
    """Everything a model needs, inspectable and testable without sampling.

    ``data`` holds 0-based index arrays into ``coords`` and the observations
    (:class:`SpecData`); ``priors`` the resolved prior table; ``n_days`` the study length (the
    unit of the ``t50`` hyper-priors); ``missing`` the ``(model, day)`` cells nobody rated;
    ``model_coords`` the non-dim coordinates of ``model`` (vendor, generation, ...).
    """

    name: str
    coords: dict[str, list]
    data: SpecData
    priors: dict[str, dict[str, Any]]
    trajectory: str = "logistic"
    cutpoints: str = "rater"
    group_terms: list[str] = field(default_factory=list)
    n_days: int = 0
    missing: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    model_coords: dict[str, list] = field(default_factory=dict)

    @property
    def variant(self) -> str:
        """A short label, e.g. ``joint[logistic,rater]``."""
        terms = "+".join(self.group_terms)
        extra = f",{terms}" if terms else ""
        return f"{self.name}[{self.trajectory},{self.cutpoints}{extra}]"

    @property
    def integrates_stage(self) -> bool:
        """Whether the likelihood integrates each model-day's stage out
        (:data:`~delusion_bayes.models.config.MARGINAL_MODELS`)."""
        return self.name in MARGINAL_MODELS

    def prior_table(self) -> pd.DataFrame:
        """The priors as a DataFrame (one row per parameter)."""
        return prior_table(self.priors)

    def _meta(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trajectory": self.trajectory,
            "cutpoints": self.cutpoints,
            "group_terms": list(self.group_terms),
            "priors": self.priors,
            "coords": {k: [str(x) for x in v] for k, v in self.coords.items()},
            "n_days": self.n_days,
        }

    def hash(self) -> str:
        """Hash of everything the fit depends on (data values, priors, variant)."""
        h = hashlib.sha256()
        h.update(json.dumps(self._meta(), sort_keys=True, default=str).encode())
        for k in sorted(self.data):
            h.update(k.encode())
            h.update(np.ascontiguousarray(self.data[k]).tobytes())
        return h.hexdigest()[:16]

    @property
    def t50_scale_sampled(self) -> bool:
        """Whether the graph samples the t50 population scale ``sigma_t50``: at least
        :data:`MIN_T50_SCALE_TURNERS` models whose ratings pin their t50 (turned, not from the
        first day); else it is fixed at its prior's root mean square
        (:func:`delusion_bayes.models.blocks.onset_trajectory`)."""
        turned = np.asarray(self.data.t50_centred, bool) & ~np.asarray(self.data.t50_early, bool)
        return bool(int(turned.sum()) >= MIN_T50_SCALE_TURNERS)

    def structure_key(self) -> str:
        """Hash of what shapes the compiled graph but not the data's values: the variant, the
        priors, the coords, every data field's shape and dtype, and whether the t50 population
        scale is sampled (:data:`MIN_T50_SCALE_TURNERS`). Specs with equal keys share one
        compiled log-density (the data are graph inputs: :func:`delusion_bayes.models.model_for`).

        The number of distinct rating patterns (``pat_*``'s first axis) is left out: it varies
        between simulated studies of one design, no parameter's shape depends on it, and a
        ``pm.Data`` takes arrays of another length (nutpie's ``with_data`` checks the rank only).
        """
        shapes = {
            k: [list(np.shape(v)[1:] if k.startswith("pat_") else np.shape(v)), str(v.dtype)]
            for k, v in ((k, np.asarray(v)) for k, v in self.data.items())
        }
        meta = {**self._meta(), "shapes": shapes, "t50_scale_sampled": self.t50_scale_sampled}
        return hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode()).hexdigest()[
            :16
        ]

    def __repr__(self) -> str:
        dims = ", ".join(f"{k}={len(v)}" for k, v in self.coords.items())
        return f"ModelSpec({self.variant}; {dims}; {len(self.priors)} priors)"


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
    ``level_a``/``level_b`` for ``disengagement``).

    ``priors`` override the defaults (:mod:`delusion_bayes.models.priors`); ``trajectory`` is
    ``logistic``, ``linear`` (a floor-to-L ramp with the logistic's midpoint slope) or ``step``
    (``k`` fixed at :data:`STEP_K`); ``cutpoints`` ``rater`` or ``shared``; ``group_terms``
    model coords whose levels shift the onset hyper-means; ``consensus`` the rule of
    :func:`delusion_bayes.baselines.consensus` for the ``onset`` model's consensus.
    """
    _check_variant(model, trajectory, cutpoints)
    rec = _recognition(ds)
    coords, model_coords = _study_coords(rec)
    n_days = int(rec.sizes[DAY])
    arrays = _onset_geometry_arrays(rec, model)
    if model in MARGINAL_MODELS:
        arrays.update(_rating_observations(ds, rec, model, coords))
        arrays.update(model_day_layout(arrays, n_raters=len(coords[RATER]), n_days=n_days))
        if model == "rater":
            arrays.update(rating_patterns(arrays))
    else:
        arrays.update(_consensus_observations(rec, consensus, coords))
    terms = list(group_terms)
    group_idx = _group_indices(model, terms, model_coords, coords)
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
    )


def _check_variant(model: str, trajectory: str, cutpoints: str) -> None:
    if model not in MODEL_NAMES:
        raise ValueError(f"unknown model {model!r}; expected one of {list(MODEL_NAMES)}")
    if trajectory not in TRAJECTORIES:
        raise ValueError(f"trajectory={trajectory!r}; expected one of {list(TRAJECTORIES)}")
    if cutpoints not in CUTPOINTS:
        raise ValueError(f"cutpoints={cutpoints!r}; expected one of {list(CUTPOINTS)}")


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


def _onset_geometry_arrays(rec: xr.DataArray, model: str) -> dict[str, np.ndarray]:
    """``day_values`` and which parameters are sampled centred (geometry only)."""
    out = {"day_values": np.asarray(rec[DAY].values).astype(float)}
    # t50's coordinate (blocks._t50): the median rating holds STAGE_MIDPOINT within the study /
    # from its start
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(rec.values, axis=0)  # (model, day)
    out["t50_centred"], out["t50_early"] = onset_geometry(med)
    out["log_k_centred"] = log_k_centring(out["t50_centred"] & ~out["t50_early"])
    if model in DAY_NOISE_MODELS:
        out["eps_centred"] = noise_identified(rec)
    return out


def _rating_observations(
    ds: xr.Dataset, rec: xr.DataArray, model: str, coords: dict[str, list]
) -> dict[str, np.ndarray]:
    """Every rating (0-based category) with its cell; ``disengagement``: the levels too. Adds
    the ``obs`` (and ``obs_level``) and ``cut`` coords."""
    r, m, t = (a.astype(np.int64) for a in np.nonzero(~np.isnan(rec.values)))
    y = rec.values[r, m, t].astype(np.int64) - 1  # categories 0..3
    coords[OBS] = list(range(len(y)))
    coords[CUT] = [1, 2, 3]
    out = {"rater_idx": r, "model_idx": m, "day_idx": t, "y": y}
    if model == "disengagement":
        lm, lt, lvl = _disengagement_levels(ds, rec)
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
    model: str, terms: list[str], model_coords: dict[str, list], coords: dict[str, list]
) -> dict[str, np.ndarray]:
    """Per group term, each model's level index; adds the ``group_<term>`` coords."""
    if model == "rater" and terms:
        raise ValueError(
            "group_terms apply to onset models (joint, onset, disengagement), not rater"
        )
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


def observation_coords(spec: ModelSpec) -> dict[str, dict[str, tuple]]:
    """Per observation dim, the coords naming each observation's cell: ``obs_rater``,
    ``obs_model``, ``obs_day`` on ``obs``; ``obs_level_model``, ``obs_level_day`` on
    ``obs_level``."""
    d, c = spec.data, {k: np.asarray(spec.coords[k]) for k in (RATER, MODEL, DAY)}
    out: dict[str, dict[str, tuple]] = {OBS: {}, OBS_LEVEL: {}}
    if d.rater_idx is not None:
        out[OBS]["obs_rater"] = (OBS, c[RATER][d.rater_idx])
    out[OBS]["obs_model"] = (OBS, c[MODEL][d.model_idx])
    out[OBS]["obs_day"] = (OBS, c[DAY][d.day_idx])
    if d.level_model_idx is not None:
        out[OBS_LEVEL]["obs_level_model"] = (OBS_LEVEL, c[MODEL][d.level_model_idx])
        out[OBS_LEVEL]["obs_level_day"] = (OBS_LEVEL, c[DAY][d.level_day_idx])
    return out


def model_day_layout(data: Mapping[str, np.ndarray], n_raters: int, n_days: int) -> dict:
    """The ratings (and levels) grouped by model-day for
    :func:`delusion_bayes.models.blocks.marginal_ratings`: model-days ``u`` with a rating or
    level, in (model, day) order: ``md_model``/``md_day``
    ``(U,)``. Per model-day and rater ``(U, R)``: ``md_lo``/``md_hi``, the observed category's
    cutpoints (``-OPEN``/``+OPEN`` at an open end, both where the rater gave no rating);
    ``md_rating`` (1-4, 0 if missing) and ``md_end`` (1 at an end of the scale) for the
    proposal. ``md_level`` ``(U,)``, -1 if none; ``n_interior`` ``(R,)``, each rater's ratings
    in an interior category.
    """
    r, m, t, y = (np.asarray(data[k]) for k in ("rater_idx", "model_idx", "day_idx", "y"))
    keys = m * n_days + t
    lv_keys = np.empty(0, np.int64)
    if "level" in data:
        lv_keys = np.asarray(data["level_model_idx"]) * n_days + np.asarray(data["level_day_idx"])
    md = np.unique(np.concatenate([keys, lv_keys]))
    u = np.searchsorted(md, keys)
    cuts = np.asarray(STAGE_CUTPOINTS, float)
    n_cut = cuts.size
    lo = np.full((md.size, n_raters), -OPEN)
    hi = np.full((md.size, n_raters), OPEN)
    rating = np.zeros((md.size, n_raters))
    lo[u, r] = np.where(y > 0, cuts[np.clip(y - 1, 0, n_cut - 1)], -OPEN)
    hi[u, r] = np.where(y < n_cut, cuts[np.clip(y, 0, n_cut - 1)], OPEN)
    rating[u, r] = y + 1.0
    end = np.zeros_like(rating)
    end[u, r] = ((y == 0) | (y == n_cut)).astype(float)
    level = np.full(md.size, -1, np.int64)
    if "level" in data:
        level[np.searchsorted(md, lv_keys)] = np.asarray(data["level"], np.int64)
    interior = (y > 0) & (y < n_cut)
    return {
        "md_model": (md // n_days).astype(np.int64),
        "md_day": (md % n_days).astype(np.int64),
        "md_lo": lo,
        "md_hi": hi,
        "md_rating": rating,
        "md_end": end,
        "md_level": level,
        "n_interior": np.bincount(r[interior], minlength=n_raters).astype(float),
    }


def rating_patterns(layout: Mapping[str, np.ndarray]) -> dict:
    """The distinct rows of a :func:`model_day_layout` and how many model-days have each: the
    rater model's likelihood.

    In the rater model every model-day's latent score has the same prior ``N(mu_theta,
    sigma_theta)``, so a model-day's marginal likelihood depends on its ratings alone, and
    model-days rated alike contribute the same factor:
    ``sum_u log p(y_u) = sum_p n_p log p(y_p)``. paper_like's 449 model-days have 52 patterns;
    the sampler's rating terms shrink by as much. ``pat_lo``/``pat_hi``/``pat_rating``/
    ``pat_end`` ``(P, R)`` are rows of the ``md_*`` arrays (sorted), ``pat_count`` ``(P,)``
    (float: it multiplies log-likelihoods) sums to ``U``. The joint and disengagement models
    give each model-day its own prior (its trajectory), so they keep one row per model-day.
    """
    lo, hi = np.asarray(layout["md_lo"]), np.asarray(layout["md_hi"])
    # the category bounds determine the rating, and the rating whether it is at an end
    _, first, count = np.unique(
        np.concatenate([lo, hi], axis=1), axis=0, return_index=True, return_counts=True
    )
    return {
        "pat_lo": lo[first],
        "pat_hi": hi[first],
        "pat_rating": np.asarray(layout["md_rating"])[first],
        "pat_end": np.asarray(layout["md_end"])[first],
        "pat_count": count.astype(float),
    }


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


def _disengagement_levels(ds: xr.Dataset, rec: xr.DataArray):
    for name in ("level_a", "level_b"):
        if name not in ds:
            raise ValueError(f"model 'disengagement' needs {name!r} (model, day); not in study")
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
