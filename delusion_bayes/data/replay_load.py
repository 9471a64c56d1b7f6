"""Load a replay study from disk (:func:`load_replay`) with the package's own errors only: a
directory's files are checked first, and any remaining library exception from a malformed file
becomes a :class:`~delusion_bayes.data.StudyFormatError` naming the file and what is expected."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import xarray as xr

from .csv_format import StudyFormatError, csv_rows, decode_utf8
from .replay import load_judge_scores, replay_dataset, validate_replay
from .replay_schema import ReplayValidationError
from .replay_windows import TranscriptError, build_samples, load_transcripts
from .validate import StudyValidationError

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
            text = _text_of(f, "a header line and one row per record")
            if f.suffix == ".jsonl":
                _check_jsonl(f, text)
            else:
                _check_csv(f, text, stem)
    wpath = path / "windows.json"
    if wpath.is_file():
        _check_windows_json(wpath)


def _text_of(f: Path, expected: str) -> str:
    """The text of ``f``: neither empty nor other than UTF-8."""
    raw = f.read_bytes()
    if not raw.strip():
        raise StudyFormatError(f"{f}: the file is empty; expected {expected}.")
    return decode_utf8(f, raw)


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
    text = _text_of(wpath, 'a JSON object such as {"window": 20, "context": 0}')
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
    ours = (StudyFormatError, StudyValidationError, ReplayValidationError, TranscriptError,
            FileNotFoundError)  # fmt: skip
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
        raise FileNotFoundError(f"replay study {path} does not exist")
    if path.is_file() and path.suffix.lower() in (".parquet", ".pq", ".csv", ".jsonl"):
        # one table: the DelusionEval release's evaluation rows
        from .delusioneval import load_delusioneval

        return load_delusioneval(path)
    if path.is_file():
        ds = xr.load_dataset(path, engine="h5netcdf")
        return validate_replay(ds)
    tpath = _find(path, "transcripts")
    spath = _find(path, "judge_scores")
    if tpath is None or spath is None:
        raise FileNotFoundError(
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
