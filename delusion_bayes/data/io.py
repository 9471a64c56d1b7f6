"""Loading and saving trajectory studies: one netCDF file, or a directory of tidy CSV files.

The CSV format (docs/reference.md, "Study format on disk"): ``ratings.csv`` (``rater, model, day,
item, score``, long, required), optional ``adjudication.csv``, ``prompts.csv``, ``answers.csv``,
``models.csv``, ``raters.csv``, ``study.json`` (attrs, coord order, extra variables) and
``extra/<name>.csv``. An empty (or NA/nan) cell is missing and stays missing, so both formats
round-trip exactly. Nothing is invented on load: names are taken as written, the days are those
of ``ratings.csv`` (1..n, no gap), and a malformed file raises :class:`StudyFormatError` naming
the file, row, column and value.
"""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from ..errors import InputNotFoundError
from .csv_format import NETCDF_SUFFIXES, StudyFormatError, canonical
from .csv_study import load_csv_dir, save_csv_dir
from .validate import StudyValidationError, validate

__all__ = ["StudyFormatError", "canonical", "load_study", "save_study"]


def load_study(path: str | Path, *, check: bool = True) -> xr.Dataset:
    """Load a trajectory study from a netCDF file or a CSV directory (module docstring).

    ``check`` runs :func:`delusion_bayes.data.validate` on the result. Raises FileNotFoundError
    (no ``path``), :class:`StudyFormatError` (a malformed file; names the file, row and column)
    or :class:`StudyValidationError` (content that breaks the data model, e.g. a recognition 5).
    """
    path = Path(path)
    if not path.exists():
        raise InputNotFoundError(f"study {str(path)!r} does not exist (a .nc file or a CSV dir).")
    if path.is_dir():
        try:
            ds = load_csv_dir(path)
        except StudyFormatError:
            raise
        except Exception as err:  # noqa: BLE001 - a case no check above foresaw: still ours
            raise StudyFormatError(
                f"{path}: the study's files cannot be put together ({type(err).__name__}: "
                f"{err}); expected the CSV study format of docs/reference.md ('Study format on "
                "disk')."
            ) from err
    else:
        try:
            ds = xr.load_dataset(path, engine="h5netcdf")
        except Exception as err:  # noqa: BLE001 - re-raised with the file name
            raise StudyFormatError(
                f"{path}: cannot read as netCDF ({type(err).__name__}: {err}); expected a "
                "complete netCDF-4 file as written by save_study (a truncated copy cannot be read)."
            ) from err
        ds = canonical(ds)
    if check:
        try:
            validate(ds)
        except StudyValidationError as err:
            raise StudyValidationError(f"{path}: {err}") from err
    return ds


def save_study(ds: xr.Dataset, path: str | Path) -> Path:
    """Save a study as one netCDF file (``*.nc``) or, for any other path, a CSV directory.

    Both formats round-trip exactly: ``load_study(save_study(ds, p))`` is identical to ``ds``
    (missing ratings and missing answers included).
    """
    path = Path(path)
    ds = canonical(ds)
    if path.suffix.lower() in NETCDF_SUFFIXES:
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_netcdf(path, engine="h5netcdf")
        return path
    save_csv_dir(ds, path)
    return path
