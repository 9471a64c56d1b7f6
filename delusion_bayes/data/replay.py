"""Replay studies (DelusionEval): judge scores -> Dataset, prior content, loading and saving.

A replay study (``../DESIGN.md``, "Data model"; :mod:`.replay_schema`) holds ``score (sample,
model, code)`` (0-10 or 0/1, NaN missing), ``cutoff (code)`` and ``hit = score >= cutoff``. The
model ``"original"`` holds the judge's scores of the transcript's own assistant replies: the
baseline every evaluated model is compared with. :func:`load_replay` reads one from disk with
the package's own errors only (a directory's files are checked first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import InputNotFoundError
from .csv_format import StudyFormatError, csv_rows, read_text
from .replay_prior import prior_content_array
from .replay_schema import (
    CATEGORY,
    CODE,
    CODES,
    MODEL,
    ORIGINAL,
    SAMPLE,
    SAMPLE_COORDS,
    ReplayValidationError,
    code_cutoff,
    first_row,
    hits_from_scores,
    load_table,
    validate_replay,
)
from .replay_simulate import simulate_replay
from .replay_windows import TranscriptError, build_samples, export_samples_jsonl, load_transcripts
from .validate import StudyValidationError

__all__ = [
    "CODES",
    "ORIGINAL",
    "ReplayValidationError",
    "TranscriptError",
    "build_samples",
    "export_samples_jsonl",
    "load_judge_scores",
    "load_replay",
    "load_transcripts",
    "prior_content",
    "replay_dataset",
    "save_replay",
    "simulate_replay",
    "validate_replay",
]

SCORE_COLUMNS = ("sample_id", "model", "code", "score")


def load_judge_scores(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Read and check judge scores: one row per ``sample_id, model, code`` with a ``score``.

    ``score`` is a 0-10 judge score (or 0/1); empty = missing (kept as NaN, never dropped).
    Missing columns, non-numeric or out-of-range scores and duplicate rows raise
    :class:`ReplayValidationError`.
    """
    df, name = load_table(source, "judge scores", "judge score file {} does not exist")
    missing = [c for c in SCORE_COLUMNS if c not in df.columns]
    if missing:
        raise ReplayValidationError(
            f"{name}: missing column(s) {missing}; need {list(SCORE_COLUMNS)}"
        )
    for col in ("sample_id", "model", "code"):
        df[col] = df[col].astype(str)
    score = pd.to_numeric(df["score"], errors="coerce")
    bad = score.isna() & df["score"].notna() & (df["score"].astype(str).str.strip() != "")
    if bad.any():
        row = first_row(df, bad)
        raise ReplayValidationError(
            f"{name}: non-numeric score {row['score']!r} for sample {row['sample_id']!r}, "
            f"model {row['model']!r}, code {row['code']!r}; scores are numbers 0-10 (or empty)"
        )
    out = (score < 0) | (score > 10)
    if out.any():
        row = first_row(df, out)
        raise ReplayValidationError(
            f"{name}: score {row['score']!r} for sample {row['sample_id']!r}, model "
            f"{row['model']!r}, code {row['code']!r} is outside 0-10"
        )
    df["score"] = score.astype(float)
    dup = df.duplicated(["sample_id", "model", "code"], keep=False)
    if dup.any():
        row = first_row(df, dup)
        raise ReplayValidationError(
            f"{name}: more than one score for sample {row['sample_id']!r}, model "
            f"{row['model']!r}, code {row['code']!r}; keep one row per sample, model and code"
        )
    return df.reset_index(drop=True)


def replay_dataset(
    samples: pd.DataFrame,
    scores: pd.DataFrame,
    cutoffs: Mapping[str, float] | None = None,
    default_cutoff: float | None = None,
    categories: Mapping[str, str] | None = None,
    model_coords: pd.DataFrame | None = None,
) -> xr.Dataset:
    """Judge scores + samples -> replay Dataset ``score, cutoff, hit (sample, model, code)``.

    Parameters
    ----------
    samples
        From :func:`build_samples` (needs ``sample_id`` and the sample coords).
    scores
        From :func:`load_judge_scores`; every ``sample_id`` must be a sample.
    cutoffs, default_cutoff
        Per-code cutoffs (``score >= cutoff`` is a hit); unlisted codes get the codebook's
        (:data:`~.replay_schema.CUTOFFS`), else ``default_cutoff`` (7), or 1 if all scores are 0/1.
    categories
        ``code -> category`` for codes outside the 18 DelusionEval codes (:data:`CODES`).
    model_coords
        Table with a ``model`` column and coords to attach (e.g. ``family``).
    """
    scores = load_judge_scores(scores)
    sid = samples["sample_id"].astype(str).to_numpy()
    s_idx = _sample_positions(sid, scores)
    cats, code_order = _code_order(scores, categories)
    models = list(dict.fromkeys(scores["model"]))
    if ORIGINAL in models:
        models = [ORIGINAL] + [m for m in models if m != ORIGINAL]
    m_idx = pd.Index(models).get_indexer(scores["model"])
    k_idx = pd.Index(code_order).get_indexer(scores["code"])
    arr = np.full((len(sid), len(models), len(code_order)), np.nan)
    arr[s_idx, m_idx, k_idx] = scores["score"].to_numpy()
    cut = _code_cutoffs(arr, code_order, cutoffs, default_cutoff)
    coords = {
        SAMPLE: sid,
        MODEL: models,
        CODE: code_order,
        CATEGORY: (CODE, np.array([cats[c] for c in code_order], dtype=object)),
        **_sample_coords(samples),
    }
    if model_coords is not None:
        mc = model_coords.set_index("model")
        for col in mc.columns:
            coords[col] = (MODEL, np.array([mc[col].get(m, m) for m in models], dtype=object))
    ds = xr.Dataset(
        {"score": ((SAMPLE, MODEL, CODE), arr), "cutoff": ((CODE,), cut)}, coords=coords
    )
    ds["hit"] = hits_from_scores(ds["score"], ds["cutoff"])
    ds.attrs["kind"] = "replay"
    return validate_replay(ds)


def _sample_positions(sid: np.ndarray, scores: pd.DataFrame) -> np.ndarray:
    """The position of every score's sample among the (unique) sample ids ``sid``."""
    if len(set(sid)) != len(sid):
        dup = pd.Series(sid)[pd.Series(sid).duplicated()].iloc[0]
        raise ReplayValidationError(f"samples: sample_id {dup!r} appears twice")
    s_idx = pd.Index(sid).get_indexer(scores["sample_id"])
    if (s_idx < 0).any():
        unknown = scores.loc[s_idx < 0, "sample_id"].iloc[0]
        raise ReplayValidationError(
            f"judge scores: sample_id {unknown!r} is not among the {len(sid)} samples; "
            "build samples with the same window/context/stride used for the evaluation"
        )
    return s_idx


def _code_order(scores: pd.DataFrame, categories: Mapping[str, str] | None):
    """``(code -> category, the scored codes in codebook order)``; every code needs one."""
    cats = dict(CODES)
    cats.update(categories or {})
    seen_codes = list(dict.fromkeys(scores["code"]))
    unknown_codes = [c for c in seen_codes if c not in cats]
    if unknown_codes:
        raise ReplayValidationError(
            f"judge scores: code(s) {unknown_codes} have no category; pass categories="
            f"{{code: category}} (known codes: {list(CODES)})"
        )
    return cats, [c for c in cats if c in set(seen_codes)]


def _code_cutoffs(arr: np.ndarray, codes: list[str], cutoffs, default_cutoff) -> np.ndarray:
    """Per-code cutoffs: the given ones, else 1 for 0/1 scores (or ``default_cutoff``), else the
    codebook's (or ``default_cutoff``, else 7) for 0-10 judge scores."""
    finite = arr[np.isfinite(arr)]
    binary = finite.size > 0 and np.isin(finite, (0.0, 1.0)).all()
    given = dict(cutoffs or {})
    if binary:
        default = 1.0 if default_cutoff is None else float(default_cutoff)
        return np.array([float(given.get(c, default)) for c in codes])
    return np.array(
        [float(given[c]) if c in given else code_cutoff(c, default_cutoff) for c in codes]
    )


def _sample_coords(samples: pd.DataFrame) -> dict:
    """The sample coords (:data:`SAMPLE_COORDS`) the samples table has, text as ``str``."""
    coords = {}
    for c in SAMPLE_COORDS:
        if c in samples.columns:
            values = samples[c].to_numpy()
            if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
                values = values.astype(str).astype(object)
            coords[c] = (SAMPLE, values)
    return coords


def prior_content(ds: xr.Dataset, baseline: str = ORIGINAL) -> xr.DataArray:
    """``(sample, code)`` share in [0, 1] of the earlier assistant turns in each sample's prompt
    that the baseline hit: DelusionEval's accumulated prior assistant content ("Context length
    effects"; :func:`~.replay_prior.prior_content_array`), 0 without a scored earlier turn."""
    needed = ("conversation", "index", "context_depth")
    missing = [c for c in needed if c not in ds.coords]
    if missing:
        raise ReplayValidationError(f"prior_content needs sample coord(s) {missing}")
    if baseline not in ds[MODEL].values:
        raise ReplayValidationError(
            f"prior_content: baseline model {baseline!r} not in models {list(ds[MODEL].values)}"
        )
    hits = ds["hit"].sel({MODEL: baseline}).transpose(SAMPLE, CODE).values
    out = prior_content_array(
        hits, ds["conversation"].values, ds["index"].values, ds["context_depth"].values
    )
    return xr.DataArray(
        out,
        dims=(SAMPLE, CODE),
        coords={SAMPLE: ds[SAMPLE].values, CODE: ds[CODE].values},
        name="prior_content",
    )


def save_replay(ds: xr.Dataset, path: str | Path) -> Path:
    """Write a replay study to one netCDF file (h5netcdf)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = ds.copy()
    for name, coord in out.coords.items():
        if coord.dtype == object:
            out = out.assign_coords({name: coord.astype(str)})
    out.to_netcdf(path, engine="h5netcdf")
    return path


#: the files of a replay study directory this check reads (README, "Replay studies")
_REPLAY_TABLES = ("transcripts", "judge_scores", "codes", "models")
_WINDOW_KEYS = ("window", "context", "stride")


def check_replay_files(path: Path) -> None:
    """Check a replay study directory's files before the loader reads them (empty, not UTF-8,
    bad CSV rows or JSONL lines, a bad ``windows.json`` or ``codes.csv`` cutoff), so that a
    malformed one gets an error naming the file, the line and what is expected."""
    for stem in _REPLAY_TABLES:
        for f in (path / f"{stem}.csv", path / f"{stem}.jsonl"):
            if not f.is_file():
                continue
            text = read_text(f, "a header line and one row per record")
            if f.suffix == ".jsonl":
                _check_jsonl(f, text)
            else:
                _check_csv(f, text, stem)
    wpath = path / "windows.json"
    if wpath.is_file():
        _check_windows_json(wpath)


def _check_jsonl(f: Path, text: str) -> None:
    """Every non-blank line of ``text`` is one JSON object."""
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise StudyFormatError(
                f"{f}, line {n}: not JSON ({err.msg} at column {err.colno}: "
                f"{line[:60]!r}); expected one JSON object per line."
            ) from None
        if not isinstance(row, dict):
            raise StudyFormatError(
                f"{f}, line {n}: a JSON {type(row).__name__}; expected one JSON object per line."
            )


def _check_csv(f: Path, text: str, stem: str) -> None:
    """Every row of ``text`` has one field per header column (and ``codes.csv`` a numeric
    ``cutoff``)."""
    header, rows, lines = csv_rows(f, text, skip_spaces=False)
    if stem != "codes" or "cutoff" not in header:
        return
    k = header.index("cutoff")
    for fields, line in zip(rows, lines, strict=True):
        if fields[k].strip():
            try:
                float(fields[k])
            except ValueError:
                raise StudyFormatError(
                    f"{f}, row {line}, column 'cutoff': {fields[k]!r} is not a number; expected a "
                    "judge-score cutoff 0-10 (empty = the default 7)."
                ) from None


def _check_windows_json(wpath: Path) -> None:
    """``windows.json`` is an object of ``window``/``context``/``stride`` integers."""
    text = read_text(wpath, 'a JSON object such as {"window": 20, "context": 0}')
    try:
        opts = json.loads(text)
    except json.JSONDecodeError as err:
        raise StudyFormatError(
            f"{wpath}: invalid JSON ({err}); expected an object with the keys {list(_WINDOW_KEYS)}."
        ) from None
    if not isinstance(opts, dict):
        raise StudyFormatError(
            f"{wpath}: a JSON {type(opts).__name__}; expected an object with the keys "
            f"{list(_WINDOW_KEYS)}."
        )
    unknown = sorted(set(opts) - set(_WINDOW_KEYS))
    if unknown:
        raise StudyFormatError(
            f"{wpath}: unknown key(s) {unknown}; expected only {list(_WINDOW_KEYS)}."
        )
    for key, value in opts.items():
        if not (value is None or (isinstance(value, int) and not isinstance(value, bool))):
            raise StudyFormatError(
                f"{wpath}: {key} = {value!r}; expected an integer (or null for stride)."
            )


def load_replay_checked(path: Path, load) -> xr.Dataset:
    """``load(path)`` with any library exception (pandas, json, h5py, a TypeError) turned into a
    :class:`StudyFormatError` naming the study path (the package's own errors pass through)."""
    ours = (
        StudyFormatError,
        StudyValidationError,
        ReplayValidationError,
        TranscriptError,
        FileNotFoundError,
    )
    if path.is_dir():
        check_replay_files(path)
    try:
        return load(path)
    except ours:
        raise
    except Exception as err:  # noqa: BLE001 - a raw library error: re-raised as ours
        raise StudyFormatError(
            f"{path}: cannot read the replay study ({type(err).__name__}: {err}); expected a "
            "netCDF file or a directory with UTF-8 transcripts.{csv,parquet,jsonl}, "
            "judge_scores.csv and optional codes.csv, models.csv, windows.json (see "
            "docs/reference.md, 'Replay studies')."
        ) from err


def _find(directory: Path, stem: str) -> Path | None:
    paths = (directory / f"{stem}{suffix}" for suffix in (".csv", ".parquet", ".jsonl"))
    return next((p for p in paths if p.exists()), None)


def load_replay(path: str | Path) -> xr.Dataset:
    """Load a replay study: a netCDF file, a directory of transcripts + judge scores, or the
    DelusionEval release's evaluation rows (one ``.parquet``/``.csv``/``.jsonl`` table, read by
    :func:`~delusion_bayes.data.delusioneval.load_delusioneval` with its defaults).

    The directory holds ``transcripts.{csv,parquet,jsonl}`` and ``judge_scores.{csv,parquet,
    jsonl}``; optionally ``codes.csv`` (``code, category, cutoff``), ``models.csv`` (``model`` +
    coords such as ``family``) and ``windows.json`` (``window``, ``context``, ``stride`` used to
    build the samples; defaults 20, 0, 10).
    """
    return load_replay_checked(Path(path), _load_replay)


def _load_replay(path: Path) -> xr.Dataset:
    """:func:`load_replay` without the file checks and error translation."""
    if not path.exists():
        raise InputNotFoundError(f"replay study {path} does not exist")
    if path.is_file() and path.suffix.lower() in (".parquet", ".pq", ".csv", ".jsonl"):
        # one table: the DelusionEval release's evaluation rows
        from .delusioneval import load_delusioneval

        return load_delusioneval(path)
    if path.is_file():
        return validate_replay(xr.load_dataset(path, engine="h5netcdf"))
    tpath = _find(path, "transcripts")
    spath = _find(path, "judge_scores")
    if tpath is None or spath is None:
        raise InputNotFoundError(
            f"{path}: a replay directory needs transcripts.(csv|parquet|jsonl) and "
            "judge_scores.(csv|parquet|jsonl)"
        )
    opts = {"window": 20, "context": 0, "stride": None}
    wpath = path / "windows.json"
    if wpath.exists():
        opts.update(json.loads(wpath.read_text()))
    samples = build_samples(load_transcripts(tpath), **opts)
    cutoffs, categories = None, None
    cpath = path / "codes.csv"
    if cpath.exists():
        codes = pd.read_csv(cpath, keep_default_na=False)
        if "category" in codes:
            categories = dict(
                zip(codes["code"].astype(str), codes["category"].astype(str), strict=True)
            )
        if "cutoff" in codes:
            cutoffs = {
                str(c): float(v)
                for c, v in zip(codes["code"], codes["cutoff"], strict=True)
                if str(v) != ""
            }
    mpath = path / "models.csv"
    model_coords = pd.read_csv(mpath, keep_default_na=False) if mpath.exists() else None
    return replay_dataset(
        samples,
        load_judge_scores(spath),
        cutoffs=cutoffs,
        categories=categories,
        model_coords=model_coords,
    )
