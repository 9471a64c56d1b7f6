"""Model specs as data: :class:`ModelSpec` (coords, index arrays of the observed cells, the prior
table, the model's :class:`~delusion_bayes.models.definition.ModelDef`), :class:`SpecData`, the
:class:`CustomGraphSpec` protocol and the array layouts the graphs read. Built from a study by
:func:`delusion_bayes.models.spec.build_spec`; this module reads no study and no registry, so the
model modules and the graph blocks can import it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import xarray as xr

from ..data.schema import DAY, MODEL, RATER, STAGE_CUTPOINTS
from .geometry import MIN_T50_SCALE_TURNERS
from .priors import prior_table

if TYPE_CHECKING:
    from .definition import ModelDef

__all__ = [
    "CustomGraphSpec",
    "ModelSpec",
    "SpecData",
    "model_day_layout",
    "observation_coords",
    "rating_patterns",
]

#: soft lower bound of the onset model's ``k`` (per day; a 10-90% rise over 146 days): without
#: it a model at its plateau from day 1 had a flat-line mode at k -> 0
#: (docs/dev/design-notes.md#modelsspecpy). Not used by the joint models. (The upper bound is
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
#: dim and levels of a population-contrast fit's groups (``SpecData.pop_group``): the contrast's
#: groups A and B and the models in neither (their own population, so they inform neither)
POP_GROUP = "population_group"
POPULATION_GROUPS: tuple[str, ...] = ("A", "B", "neither")
CUT = "cut"


@dataclass(eq=False)
class SpecData(MutableMapping):
    """The arrays of a :class:`ModelSpec`, one typed field each: the fields are the data.

    Every model has the onset geometry (``day_values`` ... ``log_k_centred``) and the observed
    cells (``model_idx``, ``day_idx``, ``y``; the ``onset`` model's ``y`` is the consensus per
    model-day, the others' the 0-based rating of ``rater_idx``). The models that integrate the
    stage out (``ModelDef.marginal``) add the model-day layout
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
    #: a population-contrast fit's group of each model (0 = A, 1 = B, 2 = neither;
    #: :data:`POPULATION_GROUPS`, :mod:`delusion_bayes.models.population`)
    pop_group: np.ndarray | None = None
    #: with a conversation level, per chatbot: whether its conversations show their plateau
    #: (its plateau mean is its own; else the population's: :mod:`delusion_bayes.models.
    #: conversations`)
    plateau_own: np.ndarray | None = None
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
    def definition(self) -> ModelDef: ...

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
    #: a population-contrast fit (:mod:`delusion_bayes.models.population`): ``group`` (hyper-
    #: means and between-model scales per group of ``data.pop_group``), ``shared`` (hyper-means
    #: per group, one scale); ``''``: none, the model of the study as a whole
    population: str = ""
    #: the model's definition (:mod:`delusion_bayes.models.registry`); not hashed: the name is
    definition: ModelDef | None = field(default=None, repr=False, compare=False)

    @property
    def variant(self) -> str:
        """A short label, e.g. ``joint[logistic,rater]``."""
        terms = "+".join(self.group_terms)
        extra = f",{terms}" if terms else ""
        extra += f",population={self.population}" if self.population else ""
        return f"{self.name}[{self.trajectory},{self.cutpoints}{extra}]"

    @property
    def integrates_stage(self) -> bool:
        """Whether the likelihood integrates each model-day's stage out
        (:attr:`ModelDef.marginal <delusion_bayes.models.definition.ModelDef>`)."""
        return self.definition is not None and self.definition.marginal

    def prior_table(self) -> pd.DataFrame:
        """The priors as a DataFrame (one row per parameter)."""
        return prior_table(self.priors)

    def _meta(self) -> dict[str, Any]:
        # ``population`` only when set: a spec without it hashes as before
        pop = {"population": self.population} if self.population else {}
        return {
            **pop,
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
