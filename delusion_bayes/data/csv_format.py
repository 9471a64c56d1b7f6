"""The CSV-directory study format: its constants, its error, and the checked readers every
file of it goes through (a malformed file raises :class:`StudyFormatError` naming the file, row,
column and value). The format itself is documented in :mod:`delusion_bayes.data.io`."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import UserError
from .validate import NAME_EXPECTED, name_problem

FORMAT_NAME = "delusion_bayes.csv-study"
FORMAT_VERSION = 1
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".h5")


class StudyFormatError(UserError, ValueError):
    """A study file cannot be read: names the file, row and column and what was expected."""


def new_study_folder(target: str | Path, *, force: bool = False) -> Path:
    """``target`` made ready for a template study (``init-study``): created when absent;
    ``FileExistsError`` when it is a file, or a folder holding files and ``force`` is false."""
    target = Path(target).expanduser()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} is a file; expected a new or empty folder.")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise FileExistsError(
            f"{target} is not empty; choose a new folder, or pass --force to overwrite the "
            "template's files in it."
        )
    target.mkdir(parents=True, exist_ok=True)
    return target


def canonical(ds: xr.Dataset) -> xr.Dataset:
    """Store every string array as ``object`` (netCDF, CSV and simulation then agree exactly)."""
    out = ds.copy()
    for name, var in list(out.variables.items()):
        if var.dtype.kind in "US":
            values = var.values.astype(str).astype(object)
            if name in out.coords:
                out = out.assign_coords({name: (var.dims, values, var.attrs)})
            else:
                out[name] = (var.dims, values, var.attrs)
    return out


def json_safe(value: Any) -> Any:
    return value.tolist() if isinstance(value, (np.generic, np.ndarray)) else value


def decode_utf8(path: Path, raw: bytes) -> str:
    """``raw`` (the bytes of ``path``) as text; a StudyFormatError names the first byte that is
    not UTF-8 and its line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise StudyFormatError(
            f"{path}, line {line}: byte {raw[err.start : err.start + 1]!r} is not UTF-8; "
            "expected a UTF-8 text file (re-save it as UTF-8)."
        ) from None


def read_text(path: Path, expected: str) -> str:
    """The UTF-8 text of ``path``; an unreadable, non-UTF-8 or empty file is a StudyFormatError
    (saying what is ``expected`` instead of an empty file)."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise StudyFormatError(f"{path}: cannot read the file ({err}).") from err
    text = decode_utf8(path, raw)
    if not text.strip():
        raise StudyFormatError(f"{path}: the file is empty; expected {expected}.")
    return text


def csv_rows(
    path: Path, text: str, skip_spaces: bool = True
) -> tuple[list[str], list[list[str]], list[int]]:
    """The header, the rows and their file lines of the CSV ``text`` of ``path``; blank lines
    (and lines of spaces, unless not ``skip_spaces``) are skipped. A row with the wrong number
    of fields, or an open quote, is a StudyFormatError naming its line."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        header = next(reader)
        for fields in reader:
            if not fields or (skip_spaces and len(fields) == 1 and not fields[0].strip()):
                continue
            if len(fields) != len(header):
                raise StudyFormatError(
                    f"{path}, row {reader.line_num}: {len(fields)} field(s) {fields[:8]}; "
                    f"expected {len(header)}, one per column of the header {header}."
                )
            rows.append(fields)
            lines.append(reader.line_num)
    except csv.Error as err:
        raise StudyFormatError(
            f"{path}, row {reader.line_num}: cannot parse as CSV ({err}); expected "
            "comma-separated fields, text with commas or quotes in double quotes."
        ) from None
    return header, rows, lines


def read_csv_table(path: Path, required: list[str]) -> pd.DataFrame:
    """Read a CSV keeping every cell as text (no silent NA guessing) and check its columns.

    Read with the :mod:`csv` module rather than pandas so that a row with too few or too many
    fields is an error naming its line (pandas pads short rows and, with a longer row, can
    silently turn the first column into an index). ``df.attrs["lines"]`` holds the file line of
    every data row, for messages.
    """
    expected = f"a header line with the columns {required} followed by one row per record"
    header, rows, lines = csv_rows(path, read_text(path, expected))
    header = [h.strip() if h.strip() in required else h for h in header]
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise StudyFormatError(f"{path}: the header repeats the column(s) {dup}; each once.")
    missing = [c for c in required if c not in header]
    if missing:
        raise StudyFormatError(
            f"{path}: missing column(s) {missing}; the file has {header} and must have {required}."
        )
    df = pd.DataFrame(rows, columns=header, dtype=object)
    df.attrs["lines"] = lines
    return df


def file_row(df: pd.DataFrame, i: int) -> int:
    """File line of data row ``i`` (0-based) of ``df`` (the header is line 1)."""
    lines = df.attrs.get("lines")
    return int(lines[i]) if lines is not None and i < len(lines) else i + 2


#: score/value cells read as missing, in every column parsed as numbers (case-insensitive):
#: the same words pandas' own reader and R write for a missing number
MISSING_TOKENS = ("", "na", "nan", "n/a", "null", "none")


def parse_numbers(path: Path, df: pd.DataFrame, column: str, kind: str = "float") -> np.ndarray:
    """Parse a text column to numbers: empty/NA/nan = NaN; anything else unparsable is an error."""
    out = np.full(len(df), np.nan)
    for i, text in enumerate(df[column].to_numpy()):
        text = text.strip()
        where = f"{path}, row {file_row(df, i)}, column {column!r}"
        if text.lower() in MISSING_TOKENS:
            if kind == "int":
                raise StudyFormatError(f"{where}: {text!r} is missing; expected an integer.")
            continue
        try:
            value = float(text)
        except ValueError:
            raise StudyFormatError(
                f"{where}: cannot parse {text!r} as a number"
                + (" (an integer day)" if kind == "int" else " (empty, NA or nan = missing)")
                + "."
            ) from None
        if not math.isfinite(value):
            raise StudyFormatError(
                f"{where}: {text!r} is not a finite number; "
                "expected a number (empty, NA or nan = missing)."
            )
        if kind == "int" and value != int(value):
            raise StudyFormatError(f"{where}: {text!r} is not an integer.")
        out[i] = value
    return out


def check_name_column(path: Path, df: pd.DataFrame, column: str) -> None:
    """Every cell of a name column (rater, model) is a non-empty name without padding: a
    trailing space or an empty cell would otherwise become a phantom rater or model."""
    for i, name in enumerate(df[column].to_numpy()):
        if not name.strip():
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column {column!r}: the {column} name is empty "
                f"({name!r}); expected the name of a {column} on every row."
            )
        if name != name.strip():
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column {column!r}: the {column} name {name!r} has "
                f"leading or trailing whitespace; expected a name written exactly the same in "
                f"every row and file (did you mean {name.strip()!r}?)."
            )
        if (problem := name_problem(name)) is not None:  # control characters
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column {column!r}: the {column} name {name!r} "
                f"{problem}; expected {NAME_EXPECTED}."
            )


def check_duplicates(path: Path, df: pd.DataFrame, keys: list[str]) -> None:
    dup = df.duplicated(subset=keys, keep=False)
    if dup.any():
        rows = [file_row(df, int(i)) for i in np.flatnonzero(dup.to_numpy())[:6]]
        raise StudyFormatError(
            f"{path}: rows {rows} repeat the same ({', '.join(keys)}); each must appear once "
            "(nothing is overwritten silently)."
        )


def index_of(
    path: Path, df: pd.DataFrame, column: str, values, coords: list, source: str | None = None
) -> np.ndarray:
    pos = {v: i for i, v in enumerate(coords)}
    out = np.empty(len(values), dtype=int)
    for i, v in enumerate(values):
        if v not in pos:
            raise StudyFormatError(
                f"{path}, row {file_row(df, i)}, column {column!r}: {v!r} is not among the "
                f"{column}s {coords[:10]}{' ...' if len(coords) > 10 else ''} (declared in "
                f"{source or f'{column}s.csv / study.json'})."
            )
        out[i] = pos[v]
    return out
