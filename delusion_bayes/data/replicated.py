"""Replicated studies: many conversations per chatbot, each rated turn by turn (issue 50).

A replicated study is an ``xarray.Dataset`` with a ``conversation`` dimension::

    score (rater, model, conversation, turn, item)   float, NaN = missing / not judged
    has_conversation (model, conversation)           bool: the chatbot ran this conversation
    prompt, category, persona, seed (model, conversation)   2-D coords (where present)
    rater_kind (rater)                               'human' | 'judge'
    item_scale, item_min, item_max, item_cap (item)  each item declares its scale

``turn`` is the trajectory paper's ``day`` (1-based, the real time axis: 1, 4, 7, ... is a
schedule, not a gap to fill). Conversation coordinate values are per-chatbot local ids (the
prompt id when every chatbot ran the same prompts), so ``has_conversation`` says which cells of
the ``model x conversation`` grid exist. ``attrs``: ``kind = "replicated"``, ``source``. The
paper's study is the case of one conversation per chatbot.

Loaders: :func:`~delusion_bayes.data.replicated_io.load_replicated` (a netCDF file or a CSV
folder, :mod:`delusion_bayes.data.replicated_csv`), :func:`~delusion_bayes.data.spiral_bench.
load_spiral_bench` (Spiral-Bench result files).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import UserError
from .validate import check_coord_names

# dimension names ---------------------------------------------------------------------------
RATER = "rater"
MODEL = "model"
CONVERSATION = "conversation"
TURN = "turn"
ITEM = "item"
SCORE_DIMS: tuple[str, ...] = (RATER, MODEL, CONVERSATION, TURN, ITEM)
CONVERSATION_DIMS: tuple[str, ...] = (MODEL, CONVERSATION)

#: ``attrs["kind"]`` of a replicated study
KIND = "replicated"
#: who rated: people or an LLM judge
RATER_KINDS: tuple[str, ...] = ("human", "judge")
#: how an item is scored: ordinal levels ``min..max``, 0/1, or non-negative integer counts
#: (``item_max`` NaN = unbounded; ``item_cap``: the value analyses cap a score at, NaN = none)
ITEM_SCALES: tuple[str, ...] = ("ordinal", "binary", "count")
#: per-conversation metadata (2-D coords on model x conversation), text unless noted
CONVERSATION_COORDS: tuple[str, ...] = ("prompt", "category", "persona", "seed")
#: coords on ``item`` every replicated study has
ITEM_COORDS: tuple[str, ...] = ("item_scale", "item_min", "item_max", "item_cap")

#: the tidy CSV columns of a replicated study (``replicated_csv``)
RATINGS_COLUMNS: tuple[str, ...] = ("rater", "model", "conversation", "turn", "item", "score")
CONVERSATIONS_COLUMNS: tuple[str, ...] = ("model", "conversation")
ITEMS_COLUMNS: tuple[str, ...] = ("item", "scale", "min", "max")

MAX_QUOTED = 5


class ReplicatedValidationError(UserError, ValueError):
    """A replicated study does not follow its data model (this module's docstring)."""


def _where(da: xr.DataArray, bad: np.ndarray) -> str:
    """The first few coordinates of the ``bad`` cells of ``da`` and their values."""
    idx = np.argwhere(bad)[:MAX_QUOTED]
    out = []
    for pos in idx:
        label = ", ".join(
            f"{d}={da[d].values[i].item() if d in da.coords else int(i)!r}"
            for d, i in zip(da.dims, pos, strict=True)
        )
        out.append(f"({label}): {da.values[tuple(pos)]!r}")
    more = f" and {int(bad.sum()) - len(out)} more" if bad.sum() > len(out) else ""
    return "; ".join(out) + more


def _check_structure(ds: xr.Dataset) -> None:
    if not isinstance(ds, xr.Dataset):
        raise ReplicatedValidationError(
            f"expected an xarray.Dataset (a replicated study), got {type(ds).__name__}"
        )
    if ds.attrs.get("kind") != KIND:
        raise ReplicatedValidationError(
            f"attrs['kind'] is {ds.attrs.get('kind')!r}; expected {KIND!r} for a replicated "
            "study (load it with load_replicated or load_spiral_bench)"
        )
    if "score" not in ds:
        raise ReplicatedValidationError(
            f"variable 'score' is missing; expected score{SCORE_DIMS} (NaN = not judged)"
        )
    if tuple(ds["score"].dims) != SCORE_DIMS:
        raise ReplicatedValidationError(
            f"variable 'score' has dims {tuple(ds['score'].dims)}; expected {SCORE_DIMS}"
        )
    for dim in (RATER, MODEL, CONVERSATION, ITEM):
        if dim not in ds.coords:
            raise ReplicatedValidationError(f"dim {dim!r} has no coordinate; expected names")
        check_coord_names(ds, dim, ReplicatedValidationError)
    for name, dims in (("has_conversation", CONVERSATION_DIMS), ("rater_kind", (RATER,))):
        if name not in ds.variables or tuple(ds[name].dims) != dims:
            found = tuple(ds[name].dims) if name in ds.variables else "absent"
            raise ReplicatedValidationError(f"{name!r} has dims {found}; expected {dims}")
    for name in ITEM_COORDS:
        if name not in ds.coords or tuple(ds[name].dims) != (ITEM,):
            raise ReplicatedValidationError(
                f"coord {name!r} on 'item' is missing; every item declares its scale "
                f"({', '.join(ITEM_COORDS)}; item_scale one of {list(ITEM_SCALES)})"
            )
    for name in CONVERSATION_COORDS:
        if name in ds.coords and tuple(ds[name].dims) != CONVERSATION_DIMS:
            raise ReplicatedValidationError(
                f"coord {name!r} has dims {tuple(ds[name].dims)}; expected {CONVERSATION_DIMS} "
                "(per-conversation metadata)"
            )


def _check_turns(ds: xr.Dataset) -> None:
    turn = np.asarray(ds[TURN].values) if TURN in ds.coords else None
    if turn is None or not np.issubdtype(turn.dtype, np.number):
        raise ReplicatedValidationError(
            f"coord 'turn' is {None if turn is None else turn.dtype}; expected integer turns "
            "(1-based, the real time axis)"
        )
    bad = (turn < 1) | (turn != np.round(turn))
    if bad.any():
        raise ReplicatedValidationError(
            f"coord 'turn' holds {turn[bad][:MAX_QUOTED].tolist()}; expected integers >= 1"
        )
    if (np.diff(turn) <= 0).any():
        raise ReplicatedValidationError(
            f"coord 'turn' is {turn.tolist()[:20]}; expected strictly increasing turns "
            "(gaps are allowed: a schedule such as 1, 4, 7 is data)"
        )


def _check_raters(ds: xr.Dataset) -> None:
    kinds = [str(v) for v in ds["rater_kind"].values]
    for rater, kind in zip(ds[RATER].values, kinds, strict=True):
        if kind not in RATER_KINDS:
            raise ReplicatedValidationError(
                f"rater_kind of rater {rater!r} is {kind!r}; expected one of {list(RATER_KINDS)}"
            )


def _check_item_scales(ds: xr.Dataset) -> None:
    for i, item in enumerate(ds[ITEM].values):
        scale = str(ds["item_scale"].values[i])
        lo, hi = float(ds["item_min"].values[i]), float(ds["item_max"].values[i])
        where = f"item {item!r}"
        if scale not in ITEM_SCALES:
            raise ReplicatedValidationError(
                f"{where}: item_scale {scale!r}; expected one of {list(ITEM_SCALES)}"
            )
        if not np.isfinite(lo) or (scale != "count" and not np.isfinite(hi)):
            raise ReplicatedValidationError(
                f"{where}: item_min={lo}, item_max={hi}; expected finite bounds for a {scale} "
                "item (a count item may leave item_max NaN = unbounded)"
            )
        if scale == "binary" and (lo, hi) != (0.0, 1.0):
            raise ReplicatedValidationError(
                f"{where}: binary with bounds {lo}..{hi}; expected 0..1"
            )
        if np.isfinite(hi) and hi < lo:
            raise ReplicatedValidationError(f"{where}: item_max {hi} < item_min {lo}")


def _check_scores(ds: xr.Dataset) -> None:
    score = ds["score"]
    for i, item in enumerate(ds[ITEM].values):
        da = score.isel({ITEM: i})
        v = da.values
        lo, hi = float(ds["item_min"].values[i]), float(ds["item_max"].values[i])
        ok = np.isnan(v) | ((v >= lo) & (v <= (hi if np.isfinite(hi) else np.inf)))
        ok &= np.isnan(v) | (v == np.round(v))
        if not ok.all():
            scale = str(ds["item_scale"].values[i])
            bound = f"{lo:g}..{hi:g}" if np.isfinite(hi) else f">= {lo:g}"
            raise ReplicatedValidationError(
                f"variable 'score', item {item!r} ({scale}, integers {bound}): out of scale at "
                f"{_where(da, ~ok)}; expected integers {bound} or NaN (missing)"
            )
    present = ds["has_conversation"].values.astype(bool)
    outside = ~np.isnan(score.values).all(axis=(0, 3, 4)) & ~present
    if outside.any():
        raise ReplicatedValidationError(
            f"variable 'score' holds ratings for conversations the chatbot did not run "
            f"(has_conversation False) at {_where(ds['has_conversation'], outside)}; expected "
            "NaN there, or has_conversation True"
        )


def validate_replicated(ds: xr.Dataset) -> xr.Dataset:
    """Check that ``ds`` is a replicated study (module docstring); return it unchanged.

    Raises :class:`ReplicatedValidationError` naming the variable, the coordinates, the value
    and what was expected.
    """
    _check_structure(ds)
    _check_turns(ds)
    _check_raters(ds)
    _check_item_scales(ds)
    _check_scores(ds)
    return ds


def is_replicated(ds: xr.Dataset) -> bool:
    """Whether ``ds`` claims to be a replicated study (``attrs['kind']``)."""
    return isinstance(ds, xr.Dataset) and ds.attrs.get("kind") == KIND


def item_scale_coords(
    scales: list[str], lows: list[float], highs: list[float], caps: list[float] | None = None
) -> dict[str, tuple[str, np.ndarray]]:
    """The ``item_*`` coords of a study's items (``caps`` None: no cap)."""
    n = len(scales)
    caps = [np.nan] * n if caps is None else caps
    return {
        "item_scale": (ITEM, np.array(scales, dtype=object)),
        "item_min": (ITEM, np.asarray(lows, dtype=float)),
        "item_max": (ITEM, np.asarray(highs, dtype=float)),
        "item_cap": (ITEM, np.asarray(caps, dtype=float)),
    }


__all__ = [
    "CONVERSATION",
    "CONVERSATIONS_COLUMNS",
    "CONVERSATION_COORDS",
    "CONVERSATION_DIMS",
    "ITEM",
    "ITEMS_COLUMNS",
    "ITEM_COORDS",
    "ITEM_SCALES",
    "KIND",
    "MODEL",
    "RATER",
    "RATER_KINDS",
    "RATINGS_COLUMNS",
    "ReplicatedValidationError",
    "SCORE_DIMS",
    "TURN",
    "is_replicated",
    "item_scale_coords",
    "validate_replicated",
]
