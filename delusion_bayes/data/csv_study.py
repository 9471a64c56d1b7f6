"""Read and write a trajectory study as a directory of tidy CSV files (the format:
:mod:`delusion_bayes.data.io`)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .csv_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    StudyFormatError,
    canonical,
    check_duplicates,
    check_name_column,
    file_row,
    index_of,
    json_safe,
    parse_numbers,
    read_csv_table,
)
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


def save_csv_dir(ds: xr.Dataset, path: Path) -> None:
    """Write ``ds`` as a CSV study directory (the format: :mod:`delusion_bayes.data.io`): the
    named files for the variables of the data model, ``extra/<name>.csv`` for any other, and
    ``study.json`` for what the files cannot hold (attrs, coord order and dtypes, dims)."""
    path.mkdir(parents=True, exist_ok=True)
    written = _write_ratings(ds, path)
    written |= _write_adjudication(ds, path)
    written |= _write_texts(ds, path)
    _write_metadata(ds, path)
    extra = _write_extra(ds, path, written)
    _write_manifest(ds, path, extra)


def _write_ratings(ds: xr.Dataset, path: Path) -> set[str]:
    """``ratings.csv``: every cell of the rated variables, a missing one as an empty score."""
    written: set[str] = set()
    frames = []
    for name, (var, itype) in ITEMS.items():
        if var not in ds:
            continue
        da = ds[var]
        if itype is not None:
            if itype not in ds[INTERVENTION_TYPE].values:
                continue
            da = da.sel({INTERVENTION_TYPE: itype}, drop=True)
        cells = da.transpose(RATER, MODEL, DAY).reset_coords(drop=True).to_series()
        frames.append(cells.rename("score").reset_index().assign(item=name))
        written.add(var)
    ratings = pd.concat(frames, ignore_index=True)[[RATER, MODEL, DAY, "item", "score"]]
    ratings.to_csv(path / "ratings.csv", index=False)
    return written


def _write_adjudication(ds: xr.Dataset, path: Path) -> set[str]:
    adj = [v for v in ADJUDICATED_VARIABLES if v in ds]
    if adj:
        df = ds[adj].reset_coords(drop=True).to_dataframe()[adj].reset_index()
        df[[MODEL, DAY, *adj]].to_csv(path / "adjudication.csv", index=False)
    return set(adj)


def _write_texts(ds: xr.Dataset, path: Path) -> set[str]:
    """``prompts.csv`` and ``answers.csv`` (every text quoted)."""
    written = set()
    if "prompt" in ds:
        pd.DataFrame({DAY: ds[DAY].values, "text": _texts(ds["prompt"].values)}).to_csv(
            path / "prompts.csv", index=False, quoting=csv.QUOTE_NONNUMERIC
        )
        written.add("prompt")
    if "answer" in ds:
        df = ds["answer"].transpose(MODEL, DAY).reset_coords(drop=True).to_series().reset_index()
        df[[MODEL, DAY]].assign(text=_texts(df["answer"])).to_csv(
            path / "answers.csv", index=False, quoting=csv.QUOTE_NONNUMERIC
        )
        written.add("answer")
    return written


def _write_metadata(ds: xr.Dataset, path: Path) -> None:
    """``models.csv`` and ``raters.csv``: the coords along each dim (e.g. ``vendor``)."""
    for dim, fname in ((MODEL, "models.csv"), (RATER, "raters.csv")):
        if dim not in ds.coords:
            continue
        meta = {str(c): ds[c].values for c in ds.coords if ds[c].dims == (dim,) and str(c) != dim}
        pd.DataFrame({dim: ds[dim].values, **meta}).to_csv(path / fname, index=False)


def _write_extra(ds: xr.Dataset, path: Path, written: set[str]) -> dict[str, dict]:
    """``extra/<name>.csv`` for every variable not yet ``written``; their study.json entries."""
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
    return extra


def _write_manifest(ds: xr.Dataset, path: Path, extra: dict[str, dict]) -> None:
    """``study.json``: attrs, coords and their dtypes, variable attrs and dims, the extras."""
    manifest = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "attrs": {k: json_safe(v) for k, v in ds.attrs.items()},
        "coords": {str(d): [json_safe(v) for v in ds[d].values] for d in ds.dims if d in ds.coords},
        "coord_dtypes": {str(d): str(ds[d].dtype) for d in ds.dims if d in ds.coords},
        "variable_attrs": {
            str(k): {a: json_safe(b) for a, b in v.attrs.items()} for k, v in ds.variables.items()
        },
        "variable_dims": {str(k): list(v.dims) for k, v in ds.data_vars.items()},
        "extra": extra,
    }
    (path / "study.json").write_text(json.dumps(manifest, indent=2, allow_nan=True))


def _texts(values) -> list[str]:
    """Text cells as strings, None and NaN as ``""``."""
    return ["" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values]


def load_csv_dir(path: Path) -> xr.Dataset:
    """Read a CSV study directory (format: :mod:`delusion_bayes.data.io`) into a Dataset; every
    ``study.json`` entry is checked against the files it describes."""
    ratings_path = path / "ratings.csv"
    if not ratings_path.exists():
        raise StudyFormatError(
            f"{path}: no ratings.csv; a CSV study directory needs ratings.csv with columns "
            "rater, model, day, item, score (see docs/reference.md, 'Study format on disk', or "
            "run `delusion-bayes init-study DIR` for a template)."
        )
    manifest = _read_manifest(path)
    coords_m: dict[str, list] = manifest.get("coords", {})
    ratings, r_day, r_score, days = _read_ratings(path, coords_m)
    meta = _read_metadata(path)
    others, parsed = _read_other_files(path, days)
    # coordinates: manifest order, else metadata files, else order of appearance
    raters, models = (
        coords_m.get(d) or (list(meta[d][d]) if d in meta else list(dict.fromkeys(ratings[d])))
        for d in (RATER, MODEL)
    )
    present_types = [t for t in INTERVENTION_TYPES if (ratings["item"] == t).any()]
    itypes = coords_m.get(INTERVENTION_TYPE) or present_types

    ri = index_of(ratings_path, ratings, RATER, ratings[RATER].to_numpy(), raters)
    mi = index_of(ratings_path, ratings, MODEL, ratings[MODEL].to_numpy(), models)
    _check_declared_are_rated(path, ratings, meta, coords_m, raters, models)
    shape = (len(raters), len(models), len(days))
    data_vars = _rated_variables(
        ratings_path, ratings, (ri, mi, r_day.astype(int) - 1), r_score, shape, itypes, manifest
    )
    data_vars.update(_file_variables(path, others, parsed, models, len(days)))
    coords = _coords(path, manifest, meta, data_vars, raters, models, days, itypes)
    ds = xr.Dataset(data_vars, coords=coords)
    return canonical(_apply_manifest(path, ds, manifest))


def _read_ratings(
    path: Path, coords_m: dict[str, list]
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, list[int]]:
    """``ratings.csv``, checked: its rows, day and score columns, and the study's days."""
    ratings_path = path / "ratings.csv"
    ratings = read_csv_table(ratings_path, [RATER, MODEL, DAY, "item", "score"])
    if len(ratings) == 0:
        raise StudyFormatError(
            f"{ratings_path}: the header is there but no rows follow; expected one row per "
            "rating (rater, model, day, item, score), recognition scores at least."
        )
    for column in (RATER, MODEL):
        check_name_column(ratings_path, ratings, column)
    unknown = ~ratings["item"].isin(list(ITEMS))
    if unknown.any():
        i = int(np.flatnonzero(unknown.to_numpy())[0])
        raise StudyFormatError(
            f"{ratings_path}, row {file_row(ratings, i)}, column 'item': unknown item "
            f"{ratings['item'].iloc[i]!r}; allowed items are {list(ITEMS)}."
        )
    r_day = parse_numbers(ratings_path, ratings, DAY, kind="int")
    r_score = parse_numbers(ratings_path, ratings, "score")
    check_duplicates(ratings_path, ratings, [RATER, MODEL, DAY, "item"])
    is_rec = ratings["item"].to_numpy() == "recognition"
    if not is_rec.any():
        raise StudyFormatError(
            f"{ratings_path}: no row has item 'recognition'; expected recognition scores "
            "(1-4), the one required item."
        )
    if np.isnan(r_score[is_rec]).all():
        raise StudyFormatError(
            f"{ratings_path}: all {int(is_rec.sum())} recognition scores are empty (missing); "
            "expected at least one recognition score 1-4."
        )
    days = _days_of_ratings(ratings_path, ratings, r_day)
    if DAY in coords_m:
        try:
            declared = [int(d) for d in coords_m[DAY]]
        except (TypeError, ValueError):
            declared = None
        if declared != days:
            raise StudyFormatError(
                f"{path / 'study.json'}: coords.day = {_short(coords_m[DAY])}, but "
                f"{ratings_path.name} has the days 1..{len(days)}; expected the same days in both."
            )
    return ratings, r_day, r_score, days


def _read_metadata(path: Path) -> dict[str, pd.DataFrame]:
    """``models.csv`` and ``raters.csv`` where present, by dim."""
    meta: dict[str, pd.DataFrame] = {}
    for dim, fname in ((MODEL, "models.csv"), (RATER, "raters.csv")):
        if (path / fname).exists():
            df = read_csv_table(path / fname, [dim])
            if len(df) == 0:
                raise StudyFormatError(
                    f"{path / fname}: the header is there but no rows follow; expected one row "
                    f"per {dim} (or no {fname} at all)."
                )
            check_name_column(path / fname, df, dim)
            check_duplicates(path / fname, df, [dim])
            meta[dim] = df
    return meta


def _read_other_files(path: Path, days: list[int]):
    """``adjudication.csv``, ``prompts.csv`` and ``answers.csv`` where present, and their parsed
    ``day`` columns, by file name."""
    others: dict[str, pd.DataFrame] = {}
    for name, required in (
        ("adjudication.csv", [MODEL, DAY]),
        ("prompts.csv", [DAY, "text"]),
        ("answers.csv", [MODEL, DAY, "text"]),
    ):
        if (path / name).exists():
            df = read_csv_table(path / name, required)
            if MODEL in required:
                check_name_column(path / name, df, MODEL)
            others[name] = df
    # the day range comes from the ratings alone: a prompt for day 13 of a 12-day study would
    # move every never-turner's censoring day
    parsed: dict[str, np.ndarray] = {}
    for name, df in others.items():
        parsed[name] = parse_numbers(path / name, df, DAY, kind="int")
        outside = ~np.isin(parsed[name], days)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise StudyFormatError(
                f"{path / name}, row {file_row(df, i)}, column 'day': day "
                f"{int(parsed[name][i])} is outside the days of ratings.csv (1..{len(days)}); the "
                "day range comes from the ratings alone, so a row for another day is an error, "
                "not a new day."
            )
    return others, parsed


def _check_declared_are_rated(path, ratings, meta, coords_m, raters, models) -> None:
    """A rater or model declared in raters.csv / models.csv / study.json but absent from
    ratings.csv would be a phantom (all missing): declared ones need rows (empty scores
    allowed)."""
    for dim, declared in ((RATER, raters), (MODEL, models)):
        rated = set(ratings[dim])
        absent = [v for v in declared if v not in rated]
        if absent:
            if dim in coords_m:
                where = f"{path / 'study.json'} (coords.{dim})"
            else:
                df = meta[dim]
                i = int(np.flatnonzero(df[dim].to_numpy() == absent[0])[0])
                where = f"{path / f'{dim}s.csv'}, row {file_row(df, i)}"
            raise StudyFormatError(
                f"{where}: the {dim}(s) {_short(absent)} have no row in ratings.csv; expected "
                f"rows for every declared {dim} (a {dim} without scores is declared by rows "
                f"whose score is empty), so that no all-missing {dim} is added."
            )


def _rated_variables(ratings_path, ratings, index, r_score, shape, itypes, manifest):
    """The rated variables (``rater x model x day``, interventions also by type) from the
    ratings' rows; ``index`` holds the rater, model and day positions of every row."""
    data_vars: dict[str, Any] = {}
    items = ratings["item"].to_numpy()
    for var, spec in RATED_VARIABLES.items():
        typed = INTERVENTION_TYPE in spec.dims
        mask = np.isin(items, list(INTERVENTION_TYPES)) if typed else items == var
        if not mask.any() and var not in manifest.get("variable_dims", {}):
            continue
        cells = tuple(i[mask] for i in index)
        if typed:
            tpos = {t: k for k, t in enumerate(itypes)}
            undeclared = sorted(set(items[mask]) - set(tpos))
            if undeclared:
                raise StudyFormatError(
                    f"{ratings_path}: items {undeclared} are not among the intervention types "
                    f"{list(itypes)} of study.json coords.intervention_type; expected them "
                    "declared there too."
                )
            cells += (np.array([tpos[t] for t in items[mask]], dtype=int),)
        arr = np.full((*shape, len(itypes)) if typed else shape, np.nan)
        arr[cells] = r_score[mask]
        data_vars[var] = (spec.dims, arr)
    return data_vars


def _file_variables(path, others, parsed, models, n_days) -> dict[str, Any]:
    """Adjudication, prompts and answers from their files (where present)."""
    data_vars: dict[str, Any] = {}
    for name, df in others.items():
        fpath = path / name
        dims = (DAY,) if name == "prompts.csv" else (MODEL, DAY)
        check_duplicates(fpath, df, list(dims))
        cells = (parsed[name].astype(int) - 1,)
        if MODEL in dims:
            cells = (index_of(fpath, df, MODEL, df[MODEL].to_numpy(), models), *cells)
        shape = tuple(len(models) if d == MODEL else n_days for d in dims)
        if name == "adjudication.csv":
            for var in ADJUDICATED_VARIABLES:
                if var in df.columns:
                    arr = np.full(shape, np.nan)
                    arr[cells] = parse_numbers(fpath, df, var)
                    data_vars[var] = (dims, arr)
        else:  # prompts.csv -> prompt, answers.csv -> answer
            arr = np.full(shape, "", dtype=object)
            arr[cells] = df["text"].to_numpy()
            data_vars[name.removesuffix("s.csv")] = (dims, arr)
    return data_vars


def _coords(path, manifest, meta, data_vars, raters, models, days, itypes) -> dict[str, Any]:
    """The study's coords: the dims, the metadata files' columns and study.json's others."""
    coords_m: dict[str, list] = manifest.get("coords", {})
    coords: dict[str, Any] = {
        RATER: np.array(raters, dtype=object),
        MODEL: np.array(models, dtype=object),
        DAY: np.array(days, dtype=np.int64),
    }
    if "intervention" in data_vars or (INTERVENTION_TYPE in coords_m and itypes):
        coords[INTERVENTION_TYPE] = np.array(itypes, dtype=object)
    for dim, df in meta.items():
        fpath = path / f"{dim}s.csv"
        listed = {v: i for i, v in enumerate(df[dim].tolist())}
        absent = [v for v in coords[dim].tolist() if v not in listed]
        if absent:
            raise StudyFormatError(
                f"{fpath}: no row for the {dim}(s) {_short(absent)} named in ratings.csv / "
                f"study.json; expected one row per {dim}."
            )
        order = np.array([listed[v] for v in coords[dim].tolist()], dtype=int)
        for c in df.columns:
            if c != dim:
                coords[c] = (dim, df[c].to_numpy()[order].astype(object))
    for dim, values in coords_m.items():
        if dim not in coords:
            dtype = manifest.get("coord_dtypes", {}).get(dim, "")
            try:
                coords[dim] = np.array(values, dtype=dtype if dtype and dtype != "object" else None)
            except (TypeError, ValueError) as err:
                raise StudyFormatError(
                    f"{path / 'study.json'}: coords.{dim} = {_short(values)} cannot be read as "
                    f"coord_dtypes.{dim} = {dtype!r} ({err}); expected a numpy dtype name."
                ) from None
    return coords


def _apply_manifest(path: Path, ds: xr.Dataset, manifest: dict[str, Any]) -> xr.Dataset:
    """study.json's extra variables, attrs and variable/dim order applied to ``ds``."""
    mpath = path / "study.json"
    for name, info in manifest.get("extra", {}).items():
        ds[name] = _read_extra(path, name, info, ds)
    ds.attrs.update(manifest.get("attrs", {}))
    for name, attrs in manifest.get("variable_attrs", {}).items():
        if name in ds.variables:
            ds[name].attrs.update(attrs)
    order = manifest.get("variable_dims")
    if order:  # restore the original variable order and dim order
        names = [n for n in order if n in ds.data_vars]
        for n in names:
            if sorted(map(str, order[n])) != sorted(map(str, ds[n].dims)):
                raise StudyFormatError(
                    f"{mpath}: variable_dims.{n} = {order[n]}, but the files give {n!r} the dims "
                    f"{list(ds[n].dims)}; expected the same dims."
                )
        ds = ds[names + [n for n in ds.data_vars if n not in order]]
        for n in names:
            ds[n] = ds[n].transpose(*order[n])
    return ds


def _short(values, n: int = 10) -> str:
    values = list(values) if isinstance(values, (list, tuple)) else values
    if isinstance(values, list) and len(values) > n:
        return f"{values[:n]} ... ({len(values)} in all)"
    return repr(values)


def _days_of_ratings(path: Path, ratings: pd.DataFrame, r_day: np.ndarray) -> list[int]:
    """The study's days: those of ``ratings.csv``, which must be 1..n with no gap."""
    low = np.flatnonzero(r_day < 1)
    if low.size:
        i = int(low[0])
        raise StudyFormatError(
            f"{path}, row {file_row(ratings, i)}, column 'day': day {int(r_day[i])}; expected days "
            "1, 2, ... (day is 1-based)."
        )
    present = set(r_day.astype(int).tolist())
    n = max(present)
    gap = sorted(set(range(1, n + 1)) - present)
    if gap:
        raise StudyFormatError(
            f"{path}, column 'day': no row for day(s) {_short(gap)} while the ratings run to day "
            f"{n}; expected every day from 1 to {n} (nothing is inserted silently). A day that "
            f"really has no rating is declared with rows whose score is empty, e.g. "
            f"'R1,<model>,{gap[0]},recognition,'."
        )
    return list(range(1, n + 1))


#: study.json keys, each a JSON object
_MANIFEST_KEYS = ("attrs", "coords", "coord_dtypes", "variable_attrs", "variable_dims", "extra")


def _read_manifest(path: Path) -> dict[str, Any]:
    """``study.json``, checked: the right JSON types, and every ``extra`` file inside ``path``."""
    mpath = path / "study.json"
    if not mpath.exists():
        return {}
    try:
        manifest = json.loads(mpath.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise StudyFormatError(
            f"{mpath}: invalid JSON ({err}); expected the JSON object written by save_study."
        ) from None
    if not isinstance(manifest, dict):
        raise StudyFormatError(
            f"{mpath}: the file holds a JSON {type(manifest).__name__}; expected an object "
            f"with the keys {list(_MANIFEST_KEYS)}."
        )
    for key in _MANIFEST_KEYS:
        if key in manifest and not isinstance(manifest[key], dict):
            raise StudyFormatError(
                f"{mpath}: {key!r} is a JSON {type(manifest[key]).__name__}; expected an object."
            )
    for key, kind, what in (
        ("coords", list, "a list"),
        ("variable_dims", list, "a list"),
        ("variable_attrs", dict, "an object"),
    ):
        for name, value in manifest.get(key, {}).items():
            if not isinstance(value, kind):
                raise StudyFormatError(f"{mpath}: {key}.{name} = {value!r}; expected {what}.")
    root = path.resolve()
    for name, info in manifest.get("extra", {}).items():
        if not isinstance(info, dict) or not isinstance(info.get("file"), str):
            raise StudyFormatError(
                f"{mpath}: extra.{name} = {info!r}; expected an object with 'file' (a path inside "
                "the study folder), 'dims' (a list) and 'dtype'."
            )
        dims = info.get("dims", [])
        if not isinstance(dims, list) or not all(isinstance(d, str) for d in dims):
            raise StudyFormatError(
                f"{mpath}: extra.{name}.dims = {dims!r}; expected a list of dim names."
            )
        rel = Path(info["file"])
        if rel.is_absolute() or not (path / rel).resolve().is_relative_to(root):
            raise StudyFormatError(
                f"{mpath}: extra.{name}.file = {info['file']!r} points outside the study folder "
                f"{path}; expected a path inside it, such as 'extra/{name}.csv'."
            )
    return manifest


def _read_extra(path: Path, name: str, info: dict, ds: xr.Dataset) -> xr.DataArray:
    """The extra variable ``name`` of study.json (``info``: its file, dims and dtype), its file
    checked against ``info`` and the study's coords."""
    fpath, dims, df = _read_extra_file(path, name, info, ds)
    values = _extra_values(path, fpath, name, info, df)
    if not dims:
        if len(values) != 1:
            raise StudyFormatError(
                f"{fpath}: {len(values)} rows; {name!r} is a scalar, expected exactly one row."
            )
        return xr.DataArray(values[0])
    check_duplicates(fpath, df, dims)
    shape = tuple(ds.sizes[d] for d in dims)
    arr = np.empty(shape, dtype=values.dtype)
    if values.dtype.kind == "f":
        arr[...] = np.nan
    idx = []
    for d in dims:
        coord = ds[d].values.tolist()
        raw = df[d].to_numpy()
        if ds[d].dtype.kind in "iuf":
            raw = parse_numbers(fpath, df, d).astype(ds[d].dtype)
        idx.append(index_of(fpath, df, d, list(raw), coord, source="the study's coords"))
    arr[tuple(idx)] = values
    return xr.DataArray(arr, dims=dims)


def _read_extra_file(path: Path, name: str, info: dict, ds: xr.Dataset):
    """``(file, dims, table)`` of an extra variable: dims of the study, the file present and
    its columns exactly the dims and ``value``."""
    mpath = path / "study.json"
    fpath = path / info["file"]
    dims = list(info.get("dims", []))
    unknown = [d for d in dims if d not in ds.dims]
    if unknown:
        raise StudyFormatError(
            f"{mpath}: extra.{name}.dims = {dims} names the dim(s) {unknown} that the study "
            f"does not have (its dims are {[str(d) for d in ds.dims]}); expected dims of the study."
        )
    if not fpath.is_file():
        raise StudyFormatError(
            f"{mpath}: extra.{name}.file = {info['file']!r} does not exist in {path}; expected "
            f"the CSV file of the variable {name!r}."
        )
    df = read_csv_table(fpath, ["value"])
    if sorted(df.columns) != sorted([*dims, "value"]):
        raise StudyFormatError(
            f"{fpath}: columns {list(df.columns)}, but {mpath} gives {name!r} the dims "
            f"{dims}; expected exactly the columns {[*dims, 'value']} (the file and "
            "study.json must agree)."
        )
    return fpath, dims, df


def _extra_values(path: Path, fpath: Path, name: str, info: dict, df) -> np.ndarray:
    """The ``value`` column of an extra variable's file, parsed to its study.json dtype."""
    dtype_name = str(info.get("dtype", "float64"))
    try:
        dtype = np.dtype(dtype_name)
    except TypeError:
        raise StudyFormatError(
            f"{path / 'study.json'}: extra.{name}.dtype = {dtype_name!r} is not a numpy dtype; "
            "expected e.g. 'float64', 'int64' or 'object'."
        ) from None
    if dtype.kind in "OUS":
        return df["value"].to_numpy().astype(object)
    values = parse_numbers(fpath, df, "value")
    if dtype.kind in "iub" and np.isnan(values).any():
        i = int(np.flatnonzero(np.isnan(values))[0])
        raise StudyFormatError(
            f"{fpath}, row {file_row(df, i)}, column 'value': missing, but {name!r} is "
            f"{dtype_name}; expected a number on every row."
        )
    return values.astype(dtype)
