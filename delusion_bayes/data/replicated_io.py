"""Replicated studies on disk: one netCDF file (:func:`save_replicated`) or a folder of tidy CSV
files (:mod:`delusion_bayes.data.replicated_csv`), read back by :func:`load_replicated`."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from .replicated import validate_replicated
from .replicated_csv import read_replicated_csv


def save_replicated(ds: xr.Dataset, path: str | Path) -> Path:
    """Write a (validated) replicated study to one netCDF file (h5netcdf); string arrays are
    stored as text, booleans as they are."""
    validate_replicated(ds)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = ds.copy()
    for name, var in list(out.variables.items()):
        if var.dtype == object:
            values = var.values.astype(str)
            if name in out.coords:
                out = out.assign_coords({name: (var.dims, values, var.attrs)})
            else:
                out[name] = (var.dims, values, var.attrs)
    out.to_netcdf(path, engine="h5netcdf")
    return path


def load_replicated(path: str | Path) -> xr.Dataset:
    """A replicated study from a netCDF file (:func:`save_replicated`) or a folder of tidy CSV
    files (:func:`~delusion_bayes.data.replicated_csv.read_replicated_csv`), validated."""
    path = Path(path)
    if path.is_dir():
        return read_replicated_csv(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file or folder; expected a replicated study (.nc file, or a "
            "folder with ratings.csv and items.csv: `delusion-bayes init-study DIR --replicated`)"
        )
    ds = xr.load_dataset(path, engine="h5netcdf")
    for name, var in list(ds.variables.items()):
        if var.dtype.kind in "US":
            values = var.values.astype(object)
            if name in ds.coords:
                ds = ds.assign_coords({name: (var.dims, values, var.attrs)})
            else:
                ds[name] = (var.dims, values, var.attrs)
    return validate_replicated(ds)


__all__ = ["load_replicated", "save_replicated"]
