"""Replay studies (DelusionEval): judge scores -> Dataset, validation, prior content, saving.

A replay study (``../DESIGN.md``, "Data model"; :mod:`.replay_schema`) holds ``score (sample,
model, code)`` (0-10 or 0/1, NaN missing), ``cutoff (code)`` and ``hit = score >= cutoff``. The
model ``"original"`` holds the judge's scores of the transcript's own assistant replies: the
baseline every evaluated model is compared with. On disk: :func:`~.replay_load.load_replay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

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
    read_table,
)
from .replay_simulate import simulate_replay
from .replay_windows import (
    TranscriptError,
    build_samples,
    export_samples_jsonl,
    load_transcripts,
)

__all__ = [
    "CODES",
    "ORIGINAL",
    "ReplayValidationError",
    "TranscriptError",
    "build_samples",
    "export_samples_jsonl",
    "load_judge_scores",
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

    Raises
    ------
    ReplayValidationError
        Missing columns, non-numeric or out-of-range scores, duplicate rows.
    """
    name = "judge scores"
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"judge score file {path} does not exist")
        df = read_table(path)
        name = str(path)
    elif isinstance(source, pd.DataFrame):
        df = source.copy()
    else:
        raise TypeError(f"expected a path or DataFrame of judge scores, got {type(source)!r}")
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
        Per-code cutoffs (``score >= cutoff`` is a hit). Codes not listed get the codebook's
        cutoff (:data:`~.replay_schema.CUTOFFS`: the release's 7 or 9), codes outside the
        codebook ``default_cutoff`` (default 7); all get 1 when every score is 0/1.
    categories
        ``code -> category`` for codes outside the 18 DelusionEval codes (:data:`CODES`).
    model_coords
        Table with a ``model`` column and coords to attach (e.g. ``family``).
    """
    scores = load_judge_scores(scores)
    sid = samples["sample_id"].astype(str).to_numpy()
    if len(set(sid)) != len(sid):
        dup = pd.Series(sid)[pd.Series(sid).duplicated()].iloc[0]
        raise ReplayValidationError(f"samples: sample_id {dup!r} appears twice")
    pos = pd.Index(sid)
    s_idx = pos.get_indexer(scores["sample_id"])
    if (s_idx < 0).any():
        unknown = scores.loc[s_idx < 0, "sample_id"].iloc[0]
        raise ReplayValidationError(
            f"judge scores: sample_id {unknown!r} is not among the {len(sid)} samples; "
            "build samples with the same window/context/stride used for the evaluation"
        )
    cats = dict(CODES)
    cats.update(categories or {})
    seen_codes = list(dict.fromkeys(scores["code"]))
    unknown_codes = [c for c in seen_codes if c not in cats]
    if unknown_codes:
        raise ReplayValidationError(
            f"judge scores: code(s) {unknown_codes} have no category; pass categories="
            f"{{code: category}} (known codes: {list(CODES)})"
        )
    code_order = [c for c in cats if c in set(seen_codes)]
    models = list(dict.fromkeys(scores["model"]))
    if ORIGINAL in models:
        models = [ORIGINAL] + [m for m in models if m != ORIGINAL]
    m_idx = pd.Index(models).get_indexer(scores["model"])
    k_idx = pd.Index(code_order).get_indexer(scores["code"])
    arr = np.full((len(sid), len(models), len(code_order)), np.nan)
    arr[s_idx, m_idx, k_idx] = scores["score"].to_numpy()
    finite = arr[np.isfinite(arr)]
    binary = finite.size > 0 and np.isin(finite, (0.0, 1.0)).all()
    given = dict(cutoffs or {})
    if binary:
        default = 1.0 if default_cutoff is None else float(default_cutoff)
        cut = np.array([float(given.get(c, default)) for c in code_order])
    else:
        cut = np.array(
            [float(given[c]) if c in given else code_cutoff(c, default_cutoff) for c in code_order]
        )
    coords = {
        SAMPLE: sid,
        MODEL: models,
        CODE: code_order,
        CATEGORY: (CODE, np.array([cats[c] for c in code_order], dtype=object)),
    }
    for c in SAMPLE_COORDS:
        if c in samples.columns:
            values = samples[c].to_numpy()
            if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
                values = values.astype(str).astype(object)
            coords[c] = (SAMPLE, values)
    if model_coords is not None:
        mc = model_coords.set_index("model")
        for col in mc.columns:
            coords[col] = (MODEL, np.array([mc[col].get(m, m) for m in models], dtype=object))
    ds = xr.Dataset(
        {
            "score": ((SAMPLE, MODEL, CODE), arr),
            "cutoff": ((CODE,), cut),
        },
        coords=coords,
    )
    ds["hit"] = hits_from_scores(ds["score"], ds["cutoff"])
    ds.attrs["kind"] = "replay"
    return validate_replay(ds)


def validate_replay(ds: xr.Dataset) -> xr.Dataset:
    """Check a replay Dataset against the data model and return it.

    Raises
    ------
    ReplayValidationError
        Missing variables/coords, wrong dims, scores outside 0-10, ``hit`` inconsistent with
        ``score >= cutoff``.
    """
    if not isinstance(ds, xr.Dataset):
        raise ReplayValidationError(f"a replay study is an xarray.Dataset, got {type(ds)!r}")
    for var, dims in (("score", (SAMPLE, MODEL, CODE)), ("cutoff", (CODE,))):
        if var not in ds:
            raise ReplayValidationError(f"replay dataset lacks variable {var!r} with dims {dims}")
        if set(ds[var].dims) != set(dims):
            raise ReplayValidationError(
                f"replay variable {var!r} has dims {ds[var].dims}, expected {dims}"
            )
    if CATEGORY not in ds.coords:
        raise ReplayValidationError(f"replay dataset lacks the code coord {CATEGORY!r}")
    missing = [c for c in ("participant", "conversation") if c not in ds.coords]
    if missing:
        raise ReplayValidationError(
            f"replay dataset lacks sample coord(s) {missing}; the cluster bootstrap needs them"
        )
    score = ds["score"].values
    finite = score[np.isfinite(score)]
    if finite.size and (finite.min() < 0 or finite.max() > 10):
        raise ReplayValidationError(
            f"replay 'score' has values in [{finite.min()}, {finite.max()}], expected 0-10 or 0/1"
        )
    if "hit" not in ds:
        ds = ds.assign(hit=hits_from_scores(ds["score"], ds["cutoff"]))
    else:
        expect = hits_from_scores(ds["score"], ds["cutoff"]).transpose(*ds["hit"].dims)
        same = (expect.values == ds["hit"].values) | (
            np.isnan(expect.values) & np.isnan(ds["hit"].values)
        )
        if not same.all():
            n_bad = int((~same).sum())
            raise ReplayValidationError(
                f"replay 'hit' disagrees with score >= cutoff in {n_bad} cells; recompute it with "
                "hits_from_scores(ds.score, ds.cutoff)"
            )
    return ds


def prior_content(ds: xr.Dataset, baseline: str = ORIGINAL) -> xr.DataArray:
    """Share of the earlier assistant turns in each sample's prompt that the baseline hit.

    For sample ``s`` (user message at transcript ``index``, prompt starting ``context_depth``
    messages earlier) and code ``k``: the mean of the baseline's hits on the user turns in
    ``[index - context_depth, index)`` of the same conversation, i.e. of the original
    assistant replies the model sees in its context (DelusionEval, "Context length effects":
    accumulated prior assistant content). 0 when the prompt holds no scored earlier turn.

    Returns
    -------
    xarray.DataArray
        ``(sample, code)`` in [0, 1].
    """
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
