"""Validation of a trajectory study: every error (:class:`StudyValidationError`, a ``ValueError``)
names the variable, the offending coordinates and values (the first few, with a count), what was
expected and what to do next."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np
import xarray as xr

from ..errors import UserError
from .schema import (
    DAY,
    INTERVENTION_TYPE,
    INTERVENTION_TYPES,
    MODEL,
    RATER,
    TRUTH_PREFIX,
    VARIABLES,
    VarSpec,
)

#: how many offending cells an error message quotes before summarising
MAX_QUOTED = 5


class StudyValidationError(UserError, ValueError):
    """A trajectory study does not follow the data model (see ``delusion_bayes.data.schema``)."""


def _py(value):
    """A numpy scalar as the plain Python value (so messages read 'R2', not np.str_('R2'))."""
    return value.item() if isinstance(value, np.generic) else value


def _where(da: xr.DataArray, bad: np.ndarray) -> str:
    """Describe the first offending cells of ``da`` (where ``bad`` is true) by their coordinates."""
    idx = np.argwhere(bad)
    parts = []
    for row in idx[:MAX_QUOTED]:
        coords = ", ".join(
            f"{dim}={_py(da[dim].values[i])!r}" if dim in da.coords else f"{dim}[{i}]"
            for dim, i in zip(da.dims, row, strict=True)
        )
        value = _py(da.values[tuple(row)])
        parts.append(f"({coords}) = {value!r}")
    more = f" ... and {len(idx) - MAX_QUOTED} more" if len(idx) > MAX_QUOTED else ""
    return "; ".join(parts) + more


def _check_dims(name: str, da: xr.DataArray, spec: VarSpec) -> None:
    if set(da.dims) != set(spec.dims) or len(da.dims) != len(spec.dims):
        missing = [d for d in spec.dims if d not in da.dims]
        extra = [d for d in da.dims if d not in spec.dims]
        detail = []
        if missing:
            detail.append(f"missing dims {missing}")
        if extra:
            detail.append(f"unexpected dims {extra}")
        raise StudyValidationError(
            f"variable {name!r} has dims {tuple(da.dims)}; expected {spec.dims} "
            f"({', '.join(detail)}). Rename or transpose the variable to the data model "
            "(see delusion_bayes.data.schema)."
        )


def _check_scores(name: str, da: xr.DataArray, spec: VarSpec) -> None:
    values = np.asarray(da.values)
    if not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
        raise StudyValidationError(
            f"variable {name!r} has dtype {values.dtype}; expected numbers on the scale "
            f"{spec.scale} with NaN for missing."
        )
    values = values.astype(float)
    present = ~np.isnan(values)
    non_integer = present & (np.round(values) != values)
    if non_integer.any():
        raise StudyValidationError(
            f"variable {name!r} has non-integer scores at {_where(da, non_integer)}; "
            f"allowed values are {spec.scale} (NaN = missing)."
        )
    assert spec.scale is not None  # text variables never reach here (internal invariant)
    out = present & ((values < spec.scale.low) | (values > spec.scale.high))
    if out.any():
        raise StudyValidationError(
            f"variable {name!r} has out-of-range scores at {_where(da, out)}; "
            f"allowed values are {spec.scale} (NaN = missing)."
        )


def _check_text(name: str, da: xr.DataArray, spec: VarSpec) -> None:
    flat = np.asarray(da.values, dtype=object).ravel()
    bad = np.array([not (isinstance(v, str) or v is None or v != v) for v in flat])
    if bad.any():
        raise StudyValidationError(
            f"text variable {name!r} must hold strings ('' or NaN = missing); found "
            f"{_where(da, bad.reshape(da.shape))}."
        )


def name_problem(value) -> str | None:
    """Why ``value`` cannot be a rater, model or code name, or ``None`` when it can. Refused: a
    missing (NaN/None) or empty name, leading or trailing whitespace ('GPT-4o ' would be a
    phantom second 'GPT-4o'), and control characters (a tab, newline or NUL breaks every table
    and file the name is written to). Everything else (slashes, colons, brackets, dots, unicode,
    HTML, ``$``, any length) is a label like any other: see ``docs/reference.md#names``."""
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "is missing (NaN/None)"
    text = str(value)
    if not text.strip():
        return "is empty"
    if text != text.strip():
        return f"has leading or trailing whitespace (did you mean {text.strip()!r}?)"
    controls = sorted({ch for ch in text if unicodedata.category(ch) == "Cc"})
    if controls:
        shown = ", ".join(f"U+{ord(ch):04X}" for ch in controls)
        return f"holds control character(s) {shown} (a tab, newline or similar)"
    return None


#: what a name must be, for the error messages
NAME_EXPECTED = "a non-empty name without padding or control characters (anything else is fine)"


def check_coord_names(
    ds: xr.Dataset,
    dim: str,
    error: type[Exception] = StudyValidationError,
    label: str = "coordinate",
) -> None:
    """The names along ``dim`` (rater, model, code) are real names (:func:`name_problem`) and
    unique; anything else raises ``error``, naming the ``label``led coordinate and position.
    Trajectory and replay studies both check their names here."""
    if dim not in ds.coords:
        return
    values = [_py(v) for v in ds[dim].values]
    for pos, value in enumerate(values):
        if (problem := name_problem(value)) is None:
            continue
        raise error(
            f"{label} {dim!r} at position {pos} (row {pos + 1} of {dim}): the name {value!r} "
            f"{problem}; expected {NAME_EXPECTED} for every {dim}."
        )
    dupes = list(dict.fromkeys(v for i, v in enumerate(values) if v in values[:i]))
    if dupes:
        raise error(
            f"{label} {dim!r} has duplicate names {dupes}; every {dim} must be named once. "
            f"Rename the duplicates (e.g. add a suffix) before analysis."
        )


def _check_days(ds: xr.Dataset) -> None:
    if DAY not in ds.dims:
        return
    if DAY not in ds.coords:
        raise StudyValidationError(
            f"dim {DAY!r} has no coordinate; expected days 1..n (assign with "
            f"ds.assign_coords({DAY}=range(1, n + 1)))."
        )
    days = np.asarray(ds[DAY].values)
    n = days.size
    expected = np.arange(1, n + 1)
    ok = np.issubdtype(days.dtype, np.number) and np.array_equal(days.astype(float), expected)
    if not ok:
        shown = [_py(d) for d in days[:10]] + (["..."] if n > 10 else [])
        try:
            pos = int(np.flatnonzero(days.astype(float) != expected)[0])
            where = f" (position {pos}: {_py(days[pos])!r}, expected {pos + 1})"
        except (TypeError, ValueError):
            where = ""
        raise StudyValidationError(
            f"coordinate {DAY!r} is {shown}{where}; expected the consecutive days 1..{n} in order "
            "(day is 1-based; the censoring day is n_days + 1)."
        )


def _check_intervention_types(ds: xr.Dataset) -> None:
    if INTERVENTION_TYPE not in ds.coords:
        if INTERVENTION_TYPE in ds.dims:
            raise StudyValidationError(
                f"dim {INTERVENTION_TYPE!r} has no coordinate; expected names from "
                f"{list(INTERVENTION_TYPES)}."
            )
        return
    unknown = [_py(t) for t in ds[INTERVENTION_TYPE].values if t not in INTERVENTION_TYPES]
    if unknown:
        raise StudyValidationError(
            f"coordinate {INTERVENTION_TYPE!r} has unknown types {unknown}; allowed are "
            f"{list(INTERVENTION_TYPES)}."
        )


def _check_level_b_implies_a(ds: xr.Dataset) -> None:
    if "level_b" not in ds or "level_a" not in ds:
        return
    a = ds["level_a"].transpose(*ds["level_b"].dims).values.astype(float)
    b = ds["level_b"].values.astype(float)
    bad = (b == 1) & (a != 1)  # includes A missing while B is 1
    if bad.any():
        raise StudyValidationError(
            "variable 'level_b' is 1 where 'level_a' is not 1 (Level B implies Level A: an "
            f"explicit advice to stop implies a referral) at {_where(ds['level_b'], bad)}. "
            "Fix the adjudication or set level_a = 1 on those model-days."
        )


def validate(ds: xr.Dataset, *, required: Iterable[str] = ("recognition",)) -> xr.Dataset:
    """Check that ``ds`` is a trajectory study following the data model.

    Returns ``ds`` itself (for chaining); ``required`` variables must be present. Raises
    :class:`StudyValidationError` for out-of-range or non-integer scores, wrong or missing dims,
    duplicate, missing (NaN), empty or padded model/rater names, days not 1..n, Level B without
    Level A, text variables of the wrong shape or type, or a missing required variable.
    """
    if not isinstance(ds, xr.Dataset):
        raise StudyValidationError(
            f"expected an xarray.Dataset, got {type(ds).__name__}; load a study with "
            "delusion_bayes.data.load_study(path)."
        )
    for name in required:
        if name not in ds.data_vars:
            raise StudyValidationError(
                f"required variable {name!r} is missing; the study has {sorted(ds.data_vars)}."
            )
    for dim in (MODEL, RATER):
        check_coord_names(ds, dim)
    _check_days(ds)
    _check_intervention_types(ds)
    for name, da in ds.data_vars.items():
        if str(name).startswith(TRUTH_PREFIX):
            continue  # simulated truth: free-form by design
        spec = VARIABLES.get(str(name))
        if spec is None:
            continue  # extra user variables are carried along untouched
        _check_dims(str(name), da, spec)
        if spec.is_text:
            _check_text(str(name), da, spec)
        else:
            _check_scores(str(name), da, spec)
    _check_level_b_implies_a(ds)
    return ds
