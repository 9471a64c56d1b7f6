"""Input checks shared by the baselines (a ValueError naming the input, the bad value and the
options)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import xarray as xr


def check_option(name: str, value: Any, options: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``options``, else raise a ValueError listing them."""
    if value not in options:
        raise ValueError(f"{name}={value!r} is not valid; expected one of {list(options)}")
    return value


def as_float_array(x: Any, name: str, ndim: int | None = None) -> np.ndarray:
    """``x`` as a float ndarray (DataArray values, lists, pandas) with an optional ndim check."""
    if isinstance(x, xr.DataArray):
        x = x.values
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{name} must be numeric (NaN for missing); got {type(x).__name__}"
        ) from err
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; got shape {arr.shape}")
    return arr


def check_dims(da: xr.DataArray, required: Iterable[str], name: str) -> None:
    """Raise if ``da`` lacks any of the ``required`` dims."""
    missing = [d for d in required if d not in da.dims]
    if missing:
        raise ValueError(
            f"{name} lacks dim(s) {missing}; it has dims {list(da.dims)}. "
            "Name dims with the constants of delusion_bayes.data.schema."
        )


def check_values_in(arr: np.ndarray, allowed: Sequence[float], name: str) -> None:
    """Raise if a non-NaN value of ``arr`` is not in ``allowed``."""
    vals = np.unique(arr[~np.isnan(arr)])
    bad = vals[~np.isin(vals, np.asarray(allowed, dtype=float))]
    if bad.size:
        raise ValueError(
            f"{name} has value(s) {bad[:10].tolist()} outside the domain {list(allowed)}; "
            "pass domain= (or labels=) covering every value, or fix the data"
        )
