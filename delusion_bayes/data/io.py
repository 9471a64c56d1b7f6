"""Loading and saving trajectory studies: one netCDF file, or a directory of tidy CSV files.

CSV directory format (all files UTF-8, comma-separated, header in the first line)::

    ratings.csv        rater,model,day,item,score        (required; long format, one row a rating)
    adjudication.csv   model,day,level_a,level_b          (optional; 0/1, empty = missing)
    prompts.csv        day,text                           (optional; the user's message of each day)
    answers.csv        model,day,text                     (optional; empty text = missing answer)
    models.csv         model,<metadata columns...>        (optional; model order + coords such as
                                                           vendor, generation used by contrasts)
    raters.csv         rater,<metadata columns...>        (optional; rater order)
    study.json         written by save_study: attrs, coordinate order, variable attrs, extra
                       variables (optional for hand-made directories)
    extra/<name>.csv   any other variable (e.g. simulated truth true_*), long format with its dims
                       as columns and a ``value`` column

``item`` is one of ``recognition``, ``confidence``, ``disengagement`` or an intervention type
(``education``, ``psychoeducation``, ``emotional_support``, ``interpretation``,
``recommendation``). An empty ``score`` is a missing rating and stays missing: ``save_study`` writes
every cell, missing ones included, so that both formats round-trip exactly.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .schema import (
    ADJUDICATED_VARIABLES,
    DAY,
    INTERVENTION_TYPE,
    INTERVENTION_TYPES,
    ITEMS,
    MODEL,
    RATED_VARIABLES,
    RATER,
)
from .validate import validate

FORMAT_NAME = "delusion_bayes.csv-study"
FORMAT_VERSION = 1
NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".h5")


class StudyFormatError(ValueError):
    """A study file cannot be read: names the file, row and column and what was expected."""


# ------------------------------------------------------------------------------------------
# helpers


def _canonical(ds: xr.Dataset) -> xr.Dataset:
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


def _json_safe(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _read_csv(path: Path, required: list[str], text_cols: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read a CSV keeping every cell as text (no silent NA guessing) and check its columns."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise StudyFormatError(f"{path}: cannot parse as CSV ({err}).") from err
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise StudyFormatError(
            f"{path}: missing column(s) {missing}; the file has {list(df.columns)} and must "
            f"have {required}."
        )
    return df


def _row(i: int) -> int:
    """File line of data row ``i`` (0-based) — the header is line 1."""
    return i + 2


def _parse_numbers(path: Path, df: pd.DataFrame, column: str, kind: str = "float") -> np.ndarray:
    """Parse a text column to numbers: empty = NaN; anything else unparsable is an error."""
    out = np.full(len(df), np.nan)
    for i, text in enumerate(df[column].to_numpy()):
        text = text.strip()
        if text == "" or text.lower() == "nan":
            if kind == "int":
                raise StudyFormatError(
                    f"{path}, row {_row(i)}, column {column!r}: empty; expected an integer."
                )
            continue
        try:
            value = float(text)
        except ValueError:
            raise StudyFormatError(
                f"{path}, row {_row(i)}, column {column!r}: cannot parse {text!r} as a number"
                + (" (an integer day)" if kind == "int" else " (empty = missing)")
                + "."
            ) from None
        if kind == "int" and value != int(value):
            raise StudyFormatError(
                f"{path}, row {_row(i)}, column {column!r}: {text!r} is not an integer."
            )
        out[i] = value
    return out


def _check_duplicates(path: Path, df: pd.DataFrame, keys: list[str]) -> None:
    dup = df.duplicated(subset=keys, keep=False)
    if dup.any():
        rows = [_row(int(i)) for i in np.flatnonzero(dup.to_numpy())[:6]]
        raise StudyFormatError(
            f"{path}: rows {rows} repeat the same ({', '.join(keys)}); each must appear once "
            "(nothing is overwritten silently)."
        )


def _ordered_unique(values) -> list[str]:
    return list(dict.fromkeys(values))


def _index_of(path: Path, df: pd.DataFrame, column: str, values, coords: list) -> np.ndarray:
    pos = {v: i for i, v in enumerate(coords)}
    out = np.empty(len(values), dtype=int)
    for i, v in enumerate(values):
        if v not in pos:
            raise StudyFormatError(
                f"{path}, row {_row(i)}, column {column!r}: {v!r} is not among the {column}s "
                f"{coords[:10]}{' ...' if len(coords) > 10 else ''} (declared in "
                f"{column}s.csv / study.json)."
            )
        out[i] = pos[v]
    return out


# ------------------------------------------------------------------------------------------
# public API


def load_study(path: str | Path, *, check: bool = True) -> xr.Dataset:
    """Load a trajectory study from a netCDF file or a directory of tidy CSV files.

    Parameters
    ----------
    path
        A ``.nc`` file written by :func:`save_study` (or any netCDF file following the data
        model), or a directory in the CSV format described in this module's docstring.
    check
        Run :func:`delusion_bayes.data.validate` on the result (default).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    StudyFormatError
        A malformed file; the message names the file, row and column.
    StudyValidationError
        The content breaks the data model (e.g. a recognition score of 5).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"study {str(path)!r} does not exist (a .nc file or a CSV dir).")
    if path.is_dir():
        ds = _load_csv_dir(path)
    else:
        try:
            ds = xr.load_dataset(path, engine="h5netcdf")
        except Exception as err:  # noqa: BLE001 - re-raised with the file name
            raise StudyFormatError(f"{path}: cannot read as netCDF ({err}).") from err
        ds = _canonical(ds)
    if check:
        validate(ds)
    return ds


def save_study(ds: xr.Dataset, path: str | Path) -> Path:
    """Save a study as one netCDF file (``*.nc``) or, for any other path, a CSV directory.

    Both formats round-trip exactly: ``load_study(save_study(ds, p))`` is identical to ``ds``
    (missing ratings and missing answers included).
    """
    path = Path(path)
    ds = _canonical(ds)
    if path.suffix.lower() in NETCDF_SUFFIXES:
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_netcdf(path, engine="h5netcdf")
        return path
    _save_csv_dir(ds, path)
    return path


# ------------------------------------------------------------------------------------------
# CSV directory


def _save_csv_dir(ds: xr.Dataset, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    written: set[str] = set()

    # ratings: every cell, missing ones as empty score
    frames = []
    for name, (var, itype) in ITEMS.items():
        if var not in ds:
            continue
        da = ds[var]
        if itype is not None:
            if itype not in ds[INTERVENTION_TYPE].values:
                continue
            da = da.sel({INTERVENTION_TYPE: itype}, drop=True)
        da = da.transpose(RATER, MODEL, DAY)
        idx = pd.MultiIndex.from_product(
            [da[RATER].values, da[MODEL].values, da[DAY].values], names=[RATER, MODEL, DAY]
        )
        frames.append(
            pd.DataFrame({"item": name, "score": da.values.ravel()}, index=idx).reset_index()
        )
        written.add(var)
    ratings = pd.concat(frames, ignore_index=True)[[RATER, MODEL, DAY, "item", "score"]]
    ratings.to_csv(path / "ratings.csv", index=False)

    adj = [v for v in ADJUDICATED_VARIABLES if v in ds]
    if adj:
        df = ds[adj].reset_coords(drop=True).to_dataframe()[adj].reset_index()
        df[[MODEL, DAY, *adj]].to_csv(path / "adjudication.csv", index=False)
        written.update(adj)
    if "prompt" in ds:
        pd.DataFrame({DAY: ds[DAY].values, "text": _texts(ds["prompt"].values)}).to_csv(
            path / "prompts.csv", index=False, quoting=csv.QUOTE_NONNUMERIC
        )
        written.add("prompt")
    if "answer" in ds:
        da = ds["answer"].transpose(MODEL, DAY)
        idx = pd.MultiIndex.from_product([da[MODEL].values, da[DAY].values], names=[MODEL, DAY])
        pd.DataFrame({"text": _texts(da.values.ravel())}, index=idx).reset_index().to_csv(
            path / "answers.csv", index=False, quoting=csv.QUOTE_NONNUMERIC
        )
        written.add("answer")

    for dim, fname in ((MODEL, "models.csv"), (RATER, "raters.csv")):
        if dim not in ds.coords:
            continue
        meta = {str(c): ds[c].values for c in ds.coords if ds[c].dims == (dim,) and str(c) != dim}
        pd.DataFrame({dim: ds[dim].values, **meta}).to_csv(path / fname, index=False)

    extra = {}
    for name, da in ds.data_vars.items():
        if name in written:
            continue
        (path / "extra").mkdir(exist_ok=True)
        rel = f"extra/{name}.csv"
        if da.dims:
            df = da.reset_coords(drop=True).to_dataframe(name="value").reset_index()
        else:
            df = pd.DataFrame({"value": [da.values.item()]})
        df.to_csv(path / rel, index=False)
        extra[str(name)] = {"dims": list(da.dims), "file": rel, "dtype": str(da.dtype)}

    manifest = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "attrs": {k: _json_safe(v) for k, v in ds.attrs.items()},
        "coords": {
            str(d): [_json_safe(v) for v in ds[d].values] for d in ds.dims if d in ds.coords
        },
        "coord_dtypes": {str(d): str(ds[d].dtype) for d in ds.dims if d in ds.coords},
        "variable_attrs": {
            str(k): {a: _json_safe(b) for a, b in v.attrs.items()} for k, v in ds.variables.items()
        },
        "variable_dims": {str(k): list(v.dims) for k, v in ds.data_vars.items()},
        "extra": extra,
    }
    (path / "study.json").write_text(json.dumps(manifest, indent=2, allow_nan=True))


def _texts(values) -> list[str]:
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            out.append("")
        else:
            out.append(str(v))
    return out


def _load_csv_dir(path: Path) -> xr.Dataset:
    ratings_path = path / "ratings.csv"
    if not ratings_path.exists():
        raise StudyFormatError(
            f"{path}: no ratings.csv; a CSV study directory needs ratings.csv with columns "
            "rater, model, day, item, score (see the README, 'Study format')."
        )
    manifest: dict[str, Any] = {}
    if (path / "study.json").exists():
        try:
            manifest = json.loads((path / "study.json").read_text())
        except json.JSONDecodeError as err:
            raise StudyFormatError(f"{path / 'study.json'}: invalid JSON ({err}).") from err
    coords_m: dict[str, list] = manifest.get("coords", {})

    ratings = _read_csv(ratings_path, [RATER, MODEL, DAY, "item", "score"])
    unknown = ~ratings["item"].isin(list(ITEMS))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise StudyFormatError(
            f"{ratings_path}, row {_row(i)}, column 'item': unknown item "
            f"{ratings['item'].iloc[i]!r}; allowed items are {list(ITEMS)}."
        )
    r_day = _parse_numbers(ratings_path, ratings, DAY, kind="int")
    r_score = _parse_numbers(ratings_path, ratings, "score")
    _check_duplicates(ratings_path, ratings, [RATER, MODEL, DAY, "item"])

    # metadata files
    meta: dict[str, pd.DataFrame] = {}
    for dim, fname in ((MODEL, "models.csv"), (RATER, "raters.csv")):
        if (path / fname).exists():
            df = _read_csv(path / fname, [dim])
            _check_duplicates(path / fname, df, [dim])
            meta[dim] = df

    adj = (
        _read_csv(path / "adjudication.csv", [MODEL, DAY])
        if (path / "adjudication.csv").exists()
        else None
    )
    prompts = (
        _read_csv(path / "prompts.csv", [DAY, "text"]) if (path / "prompts.csv").exists() else None
    )
    answers = (
        _read_csv(path / "answers.csv", [MODEL, DAY, "text"])
        if (path / "answers.csv").exists()
        else None
    )

    # coordinates: manifest order, else metadata files, else order of appearance
    raters = coords_m.get(RATER) or (
        list(meta[RATER][RATER]) if RATER in meta else _ordered_unique(ratings[RATER])
    )
    models = coords_m.get(MODEL) or (
        list(meta[MODEL][MODEL]) if MODEL in meta else _ordered_unique(ratings[MODEL])
    )
    all_days = [r_day]
    parsed: dict[str, np.ndarray] = {}
    for name, df in (("adjudication.csv", adj), ("prompts.csv", prompts), ("answers.csv", answers)):
        if df is not None:
            parsed[name] = _parse_numbers(path / name, df, DAY, kind="int")
            all_days.append(parsed[name])
    if DAY in coords_m:
        days = [int(d) for d in coords_m[DAY]]
    else:
        max_day = int(max(np.nanmax(d) for d in all_days if len(d))) if len(r_day) else 0
        days = list(range(1, max_day + 1))
    present_types = [t for t in INTERVENTION_TYPES if (ratings["item"] == t).any()]
    itypes = coords_m.get(INTERVENTION_TYPE) or present_types

    ri = _index_of(ratings_path, ratings, RATER, ratings[RATER].to_numpy(), raters)
    mi = _index_of(ratings_path, ratings, MODEL, ratings[MODEL].to_numpy(), models)
    di = _index_of(ratings_path, ratings, DAY, r_day.astype(int), days)
    shape = (len(raters), len(models), len(days))
    data_vars: dict[str, Any] = {}
    items = ratings["item"].to_numpy()
    for var in RATED_VARIABLES:
        if var == "intervention":
            mask = np.isin(items, list(INTERVENTION_TYPES))
            if not mask.any() and "intervention" not in manifest.get("variable_dims", {}):
                continue
            arr = np.full((*shape, len(itypes)), np.nan)
            ti = _index_of(ratings_path, ratings, "item", items[mask], list(itypes))
            arr[ri[mask], mi[mask], di[mask], ti] = r_score[mask]
            data_vars[var] = ((RATER, MODEL, DAY, INTERVENTION_TYPE), arr)
        else:
            mask = items == var
            if not mask.any() and var not in manifest.get("variable_dims", {}):
                continue
            arr = np.full(shape, np.nan)
            arr[ri[mask], mi[mask], di[mask]] = r_score[mask]
            data_vars[var] = ((RATER, MODEL, DAY), arr)

    if adj is not None:
        apath = path / "adjudication.csv"
        _check_duplicates(apath, adj, [MODEL, DAY])
        ami = _index_of(apath, adj, MODEL, adj[MODEL].to_numpy(), models)
        adi = _index_of(apath, adj, DAY, parsed["adjudication.csv"].astype(int), days)
        for var in ADJUDICATED_VARIABLES:
            if var in adj.columns:
                arr = np.full((len(models), len(days)), np.nan)
                arr[ami, adi] = _parse_numbers(apath, adj, var)
                data_vars[var] = ((MODEL, DAY), arr)
    if prompts is not None:
        ppath = path / "prompts.csv"
        _check_duplicates(ppath, prompts, [DAY])
        arr = np.full(len(days), "", dtype=object)
        arr[_index_of(ppath, prompts, DAY, parsed["prompts.csv"].astype(int), days)] = prompts[
            "text"
        ].to_numpy()
        data_vars["prompt"] = ((DAY,), arr)
    if answers is not None:
        apath = path / "answers.csv"
        _check_duplicates(apath, answers, [MODEL, DAY])
        arr = np.full((len(models), len(days)), "", dtype=object)
        ami = _index_of(apath, answers, MODEL, answers[MODEL].to_numpy(), models)
        adi = _index_of(apath, answers, DAY, parsed["answers.csv"].astype(int), days)
        arr[ami, adi] = answers["text"].to_numpy()
        data_vars["answer"] = ((MODEL, DAY), arr)

    coords: dict[str, Any] = {
        RATER: np.array(raters, dtype=object),
        MODEL: np.array(models, dtype=object),
        DAY: np.array(days, dtype=np.int64),
    }
    if INTERVENTION_TYPE in {d for v in data_vars.values() for d in v[0]} or itypes:
        if "intervention" in data_vars or INTERVENTION_TYPE in coords_m:
            coords[INTERVENTION_TYPE] = np.array(itypes, dtype=object)
    for dim, df in meta.items():
        order = _index_of(
            path / f"{dim}s.csv", df, dim, coords[dim].tolist(), df[dim].tolist()
        )  # reorder metadata rows to the coordinate order
        for c in df.columns:
            if c != dim:
                coords[c] = (dim, df[c].to_numpy()[order].astype(object))
    for dim, values in coords_m.items():
        if dim not in coords:
            dtype = manifest.get("coord_dtypes", {}).get(dim, "")
            coords[dim] = np.array(values, dtype=dtype if dtype and dtype != "object" else None)

    ds = xr.Dataset(data_vars, coords=coords)
    for name, info in manifest.get("extra", {}).items():
        ds[name] = _read_extra(path, name, info, ds)
    ds.attrs.update(manifest.get("attrs", {}))
    for name, attrs in manifest.get("variable_attrs", {}).items():
        if name in ds.variables:
            ds[name].attrs.update(attrs)
    order = manifest.get("variable_dims")
    if order:  # restore the original variable order and dim order
        names = [n for n in order if n in ds.data_vars]
        ds = ds[names + [n for n in ds.data_vars if n not in order]]
        for n in names:
            ds[n] = ds[n].transpose(*order[n])
    return _canonical(ds)


def _read_extra(path: Path, name: str, info: dict, ds: xr.Dataset) -> xr.DataArray:
    fpath = path / info["file"]
    dims = info["dims"]
    df = _read_csv(fpath, [*dims, "value"])
    dtype = info.get("dtype", "float64")
    if dtype == "object" or dtype.startswith("<U"):
        values = df["value"].to_numpy().astype(object)
    else:
        values = _parse_numbers(fpath, df, "value").astype(dtype)
    if not dims:
        return xr.DataArray(values[0])
    shape = tuple(ds.sizes[d] for d in dims)
    arr = np.empty(shape, dtype=values.dtype)
    if values.dtype.kind == "f":
        arr[...] = np.nan
    idx = []
    for d in dims:
        coord = ds[d].values.tolist()
        raw = df[d].to_numpy()
        if ds[d].dtype.kind in "iuf":
            raw = _parse_numbers(fpath, df, d).astype(ds[d].dtype)
        idx.append(_index_of(fpath, df, d, list(raw), coord))
    arr[tuple(idx)] = values
    return xr.DataArray(arr, dims=dims)
