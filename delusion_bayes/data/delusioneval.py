"""Import the DelusionEval release's evaluation rows as a replay study (:func:`load_delusioneval`).

The public release (Moore et al. 2026, arXiv:2608.05004; ``jlcmoore/llm-delusion-eval``,
``report/eval_rows.parquet``) has one row per judge verdict (``model, reasoning_effort,
model_label, annotation_id, code_short, category, window_id, turn_index, score, raw_score,
sample_id``), no transcript text. Models are named by ``model_label``; the original transcript
(``model == "original_transcript"``, repeated once per reasoning setting) is checked, kept once
and named ``"original"``. ``hit = raw_score >= cutoff`` with the release's per-code cutoffs,
which reproduces the release's binary ``score`` (checked). The release has no participant or
conversation ids: without a ``participants=`` mapping both fall back to the window (a WARNING,
recorded in ``ds.attrs["clustering"]``). Details: docs/real_data.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .replay_schema import (
    CATEGORY,
    CODE,
    CODES,
    CUTOFFS,
    MODEL,
    NO_CATEGORY,
    ORIGINAL,
    SAMPLE,
    ReplayValidationError,
    hits_from_scores,
    load_table,
    validate_replay,
)

__all__ = [
    "DELUSIONEVAL_COLUMNS",
    "RELEASE_ORIGINAL",
    "DelusionEvalFormatError",
    "load_delusioneval",
    "read_cutoffs",
]

log = logging.getLogger(__name__)

#: the columns of the release's ``eval_rows.parquet`` this importer reads
DELUSIONEVAL_COLUMNS: tuple[str, ...] = (
    "model",
    "model_label",
    "code_short",
    "window_id",
    "turn_index",
    "raw_score",
    "sample_id",
)
#: the release's model name of the original transcript
RELEASE_ORIGINAL = "original_transcript"
#: family of a model: the first of these found in the lower-cased release ``model`` id
_FAMILIES = ("GPT", "Claude", "Gemini", "Qwen", "Grok")

WINDOW_FALLBACK_NOTE = (
    "No participant/conversation mapping was given: the DelusionEval release publishes no "
    "participant or conversation ids, so participant and conversation are both the WINDOW "
    "({n} windows). Cluster-bootstrap intervals resample windows, not people; windows of one "
    "participant are correlated, so these intervals are too narrow for a population of users. "
    "Pass participants=<mapping file> (window_id, participant, conversation) for the real clusters."
)


class DelusionEvalFormatError(ReplayValidationError):
    """The evaluation rows (or a mapping / cutoff file) do not follow the release's format."""


#: how the release's tables are read (:func:`~.replay_schema.read_table`)
_FORMAT = {"error": DelusionEvalFormatError, "expected": ".parquet, .csv or .jsonl"}


def read_cutoffs(source: str | Path | Mapping[str, float] | pd.DataFrame) -> dict[str, float]:
    """Per-code cutoffs from a mapping or a table (``annotation_id`` or ``code``, ``cutoff``).

    ``annotation_id``s like ``bot-romantic-interest`` are reduced to the code
    (``romantic-interest``); ``user-*`` rows (user codes) are ignored.
    """
    if isinstance(source, Mapping):
        return {str(k): float(v) for k, v in source.items()}
    kinds = "a path, mapping or DataFrame"
    table, name = load_table(source, "cutoffs", "cutoff file {} does not exist", kinds, **_FORMAT)
    key = next((c for c in ("code", "code_short", "annotation_id") if c in table.columns), None)
    if key is None or "cutoff" not in table.columns:
        raise DelusionEvalFormatError(
            f"{name}: needs columns (annotation_id or code) and cutoff; has {list(table.columns)}"
        )
    out: dict[str, float] = {}
    for i, (k, v) in enumerate(zip(table[key].astype(str), table["cutoff"], strict=True)):
        if k.startswith("user-"):
            continue
        code = k[4:] if k.startswith("bot-") else k
        value = pd.to_numeric(pd.Series([v]), errors="coerce").iloc[0]
        if not np.isfinite(value):
            raise DelusionEvalFormatError(
                f"{name}: row {i + 2}: cutoff {v!r} of {k!r} is not a number"
            )
        out[code] = float(value)
    return out


def _read_mapping(source, windows: pd.Index) -> pd.DataFrame:
    """``window_id -> participant, conversation`` covering every window of the rows."""
    table, name = load_table(
        source, "participants", "participant mapping {} does not exist", **_FORMAT
    )
    need = ("window_id", "participant")
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise DelusionEvalFormatError(
            f"{name}: missing column(s) {missing}; need window_id, participant (and optionally "
            f"conversation); has {list(table.columns)}"
        )
    table["window_id"] = table["window_id"].astype(str)
    table["participant"] = table["participant"].astype(str)
    if "conversation" not in table.columns:
        table["conversation"] = table["window_id"]
    table["conversation"] = table["conversation"].astype(str)
    dup = table.duplicated("window_id", keep=False)
    if dup.any():
        w = table.loc[dup, "window_id"].iloc[0]
        raise DelusionEvalFormatError(f"{name}: window_id {w!r} appears more than once")
    table = table.set_index("window_id")
    absent = windows.difference(table.index)
    if len(absent):
        raise DelusionEvalFormatError(
            f"{name}: {len(absent)} window(s) of the evaluation rows have no participant, e.g. "
            f"{list(absent[:3])}"
        )
    conv_part = table.groupby("conversation")["participant"].nunique()
    if (conv_part > 1).any():
        c = conv_part[conv_part > 1].index[0]
        raise DelusionEvalFormatError(
            f"{name}: conversation {c!r} belongs to more than one participant"
        )
    return table.loc[windows, ["participant", "conversation"]]


def _family(model_id: str) -> str:
    return next((fam for fam in _FAMILIES if fam.lower() in model_id.lower()), model_id)


def load_delusioneval(
    path: str | Path | pd.DataFrame,
    cutoffs: str | Path | Mapping[str, float] | pd.DataFrame | None = None,
    participants: str | Path | pd.DataFrame | None = None,
    categories: Mapping[str, str] | None = None,
) -> xr.Dataset:
    """The DelusionEval release's evaluation rows -> replay ``xarray.Dataset``.

    Parameters
    ----------
    path
        The release's ``eval_rows.parquet`` (or a CSV / JSONL, or the DataFrame) with ``model,
        model_label, code_short, window_id, turn_index, raw_score, sample_id``
        (``reasoning_effort`` and ``score`` are used when present).
    cutoffs
        Per-code cutoffs (mapping or a ``cutoffs.csv`` with ``annotation_id``/``code`` and
        ``cutoff``); default the release's (:data:`~.replay_schema.CUTOFFS`).
    participants
        Optional mapping (file or DataFrame) ``window_id, participant[, conversation]``.
    categories
        ``code -> category`` for codes outside the codebook (:data:`~.replay_schema.CODES`).

    Returns
    -------
    xarray.Dataset
        Validated replay dataset plus ``unscored (sample, model, code)`` (1 where the release has
        a row without a score) and attrs ``source, clustering, clustering_note, n_rows, ...``.

    Raises
    ------
    DelusionEvalFormatError
        Missing columns, scores outside 0-10, disagreeing original copies, duplicate rows, a code
        without a cutoff or category, or a mapping that misses windows.
    """
    missing = "DelusionEval evaluation rows {} do not exist"
    rows, name = load_table(path, "evaluation rows", missing, **_FORMAT)
    n_rows = len(rows)
    rows, n_dup = _original_once(_checked_rows(rows, name), name)
    cats, codes, cut_map = _codes_and_cutoffs(rows, name, categories, cutoffs)
    samp = _samples(rows, name)
    part, conv, clustering, note = _clusters(samp, participants)
    models, model_coords = _models(rows)

    coords = _coords(samp, models, model_coords, codes, cats, part, conv)
    ds, index = _scored_dataset(rows, coords, [float(cut_map[c]) for c in codes])
    ds.attrs.update(_provenance(ds, rows, index, clustering, note, n_rows, n_dup, cutoffs))
    return validate_replay(ds)


def _provenance(ds, rows, index, clustering, note, n_rows, n_dup, cutoffs) -> dict:
    """The attrs saying where the study comes from and what the import counted."""
    n_disagree = -1  # not compared: no release verdicts, or the user's cutoffs
    if "score" in rows.columns and cutoffs is None:
        n_disagree = _disagreements(rows, ds["hit"].values[index])
    models = list(ds[MODEL].values)
    unscored = ds["unscored"].values
    return {
        "kind": "replay",
        "source": "delusioneval",
        "simulated": 0,
        "clustering": clustering,
        "clustering_note": note,
        "n_rows": int(n_rows),
        "n_original_duplicates_dropped": int(n_dup),
        "n_original_unscored": int(unscored[:, models.index(ORIGINAL)].sum())
        if ORIGINAL in models
        else 0,
        "verdicts_differing_from_release": n_disagree,
        "cutoffs": "release" if cutoffs is None else "user",
    }


def _scored_dataset(rows: pd.DataFrame, coords: dict, cutoff: list[float]):
    """``score``, ``cutoff``, ``unscored`` (1 where a row has no score) and ``hit`` on the
    ``coords``, and the (sample, model, code) position of every row."""
    index = (
        pd.Index(coords[SAMPLE]).get_indexer(rows["sample_id"]),
        pd.Index(coords[MODEL]).get_indexer(rows["key_model"]),
        pd.Index(coords[CODE]).get_indexer(rows["code_short"]),
    )
    shape = (len(coords[SAMPLE]), len(coords[MODEL]), len(coords[CODE]))
    score = np.full(shape, np.nan)
    score[index] = rows["raw_score"].to_numpy()
    unscored = np.zeros(shape, dtype=np.int8)
    nan_rows = rows["raw_score"].isna().to_numpy()
    unscored[tuple(i[nan_rows] for i in index)] = 1
    ds = xr.Dataset(
        {
            "score": ((SAMPLE, MODEL, CODE), score),
            "cutoff": ((CODE,), np.array(cutoff)),
            "unscored": ((SAMPLE, MODEL, CODE), unscored),
        },
        coords=coords,
    )
    ds["hit"] = hits_from_scores(ds["score"], ds["cutoff"]).transpose(SAMPLE, MODEL, CODE)
    return ds, index


def _coords(samp, models, model_coords, codes, cats, part, conv) -> dict:
    """The replay study's coords: samples with their window and clusters, models with their
    labels and ids, codes with their category."""
    return {
        SAMPLE: samp["sample_id"].to_numpy(dtype=object),
        MODEL: np.array(models, dtype=object),
        CODE: np.array(codes, dtype=object),
        CATEGORY: (CODE, np.array([cats.get(c, NO_CATEGORY) for c in codes], dtype=object)),
        **{k: (MODEL, np.array(v, dtype=object)) for k, v in model_coords.items()},
        "participant": (SAMPLE, np.asarray(part, dtype=object)),
        "conversation": (SAMPLE, np.asarray(conv, dtype=object)),
        "window": (SAMPLE, samp["window_id"].to_numpy(dtype=object)),
        "window_start": (SAMPLE, np.zeros(len(samp), dtype=np.int64)),
        "index": (SAMPLE, samp["turn_index"].to_numpy()),
        "turn": (SAMPLE, samp["turn"].to_numpy()),
        "context_depth": (SAMPLE, samp["turn_index"].to_numpy()),
    }


def _checked_rows(rows: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows with the release's columns checked and typed (raw_score 0-10 or NaN)."""
    missing = [c for c in DELUSIONEVAL_COLUMNS if c not in rows.columns]
    if missing:
        raise DelusionEvalFormatError(
            f"{name}: missing column(s) {missing}; the release's eval_rows.parquet has "
            f"{list(DELUSIONEVAL_COLUMNS)} (+ reasoning_effort, annotation_id, category, score)"
        )
    for c in ("model", "model_label", "code_short", "window_id", "sample_id"):
        rows[c] = rows[c].astype(str)
    if "reasoning_effort" not in rows.columns:
        rows["reasoning_effort"] = ""
    rows["reasoning_effort"] = rows["reasoning_effort"].fillna("").astype(str)
    raw = pd.to_numeric(rows["raw_score"], errors="coerce")
    bad = raw.isna() & rows["raw_score"].notna()
    if bad.any():
        r = rows.loc[bad].iloc[0]
        raise DelusionEvalFormatError(
            f"{name}: non-numeric raw_score {r['raw_score']!r} (sample {r['sample_id']!r}, "
            f"model {r['model_label']!r}, code {r['code_short']!r})"
        )
    out = (raw < 0) | (raw > 10)
    if out.any():
        r = rows.loc[out].iloc[0]
        raise DelusionEvalFormatError(
            f"{name}: raw_score {r['raw_score']!r} outside 0-10 (sample {r['sample_id']!r}, "
            f"model {r['model_label']!r}, code {r['code_short']!r})"
        )
    rows["raw_score"] = raw.astype(float)
    rows["turn_index"] = pd.to_numeric(rows["turn_index"], errors="raise").astype(np.int64)
    return rows


def _original_once(rows: pd.DataFrame, name: str) -> tuple[pd.DataFrame, int]:
    """The rows with ``key_model`` (``original`` for the original transcript), each original
    verdict once (the release repeats it per reasoning setting), and the number dropped."""
    is_orig = (rows["model"] == RELEASE_ORIGINAL).to_numpy()
    rows["key_model"] = np.where(is_orig, ORIGINAL, rows["model_label"].to_numpy())
    orig = rows.loc[is_orig]
    n_dup = 0
    if len(orig):
        n_values = orig.groupby(["sample_id", "code_short"])["raw_score"].nunique(dropna=False)
        if (n_values > 1).any():
            sid, code = n_values[n_values > 1].index[0]
            raise DelusionEvalFormatError(
                f"{name}: the original transcript's copies of sample {sid!r}, code {code!r} "
                "disagree; the release repeats each original row with the same score"
            )
        keep = ~orig.duplicated(["sample_id", "code_short"])
        n_dup = int((~keep).sum())
        rows = pd.concat([rows.loc[~is_orig], orig.loc[keep]], ignore_index=True)
    dup = rows.duplicated(["sample_id", "key_model", "code_short"], keep=False)
    if dup.any():
        r = rows.loc[dup].iloc[0]
        raise DelusionEvalFormatError(
            f"{name}: more than one row for sample {r['sample_id']!r}, model "
            f"{r['model_label']!r}, code {r['code_short']!r}"
        )
    return rows, n_dup


def _codes_and_cutoffs(rows, name, categories, cutoffs):
    """``(code -> category, codes in codebook order, code -> cutoff)``; every code needs both."""
    cats = dict(CODES)
    cats.update(categories or {})
    seen = list(dict.fromkeys(rows["code_short"]))
    unknown = [c for c in seen if c not in cats]
    if unknown:
        raise DelusionEvalFormatError(
            f"{name}: code(s) {unknown} are not in the codebook and have no category; pass "
            f"categories={{code: category}} (codebook: {list(CODES)})"
        )
    codes = [c for c in cats if c in set(seen)]
    cut_map = dict(CUTOFFS) if cutoffs is None else read_cutoffs(cutoffs)
    lacking = [c for c in codes if c not in cut_map]
    if lacking:
        raise DelusionEvalFormatError(
            f"no cutoff for code(s) {lacking}: give each code a cutoff (cutoffs= mapping or "
            "cutoffs.csv with annotation_id/code and cutoff)"
        )
    return cats, codes, cut_map


def _samples(rows: pd.DataFrame, name: str) -> pd.DataFrame:
    """One row per sample (``sample_id, window_id, turn_index, turn``), by window and turn."""
    samp = rows.drop_duplicates("sample_id")[["sample_id", "window_id", "turn_index"]]
    clash = rows.groupby("sample_id")[["window_id", "turn_index"]].nunique().max(axis=1) > 1
    if clash.any():
        raise DelusionEvalFormatError(
            f"{name}: sample {clash[clash].index[0]!r} has more than one window_id/turn_index"
        )
    samp = samp.sort_values(["window_id", "turn_index"]).reset_index(drop=True)
    samp["turn"] = samp.groupby("window_id")["turn_index"].rank(method="dense").astype(np.int64) - 1
    return samp


def _clusters(samp: pd.DataFrame, participants):
    """Participant and conversation per sample (from the mapping, else the window), the
    clustering's name and its note (logged)."""
    windows = pd.Index(pd.unique(samp["window_id"]))
    if participants is not None:
        mapping = _read_mapping(participants, windows)
        part = mapping["participant"].reindex(samp["window_id"]).to_numpy()
        conv = mapping["conversation"].reindex(samp["window_id"]).to_numpy()
        note = (
            f"participant and conversation from the mapping: {mapping['participant'].nunique()} "
            f"participants, {mapping['conversation'].nunique()} conversations"
        )
        log.info("DelusionEval rows: %s", note)
        return part, conv, "mapping", note
    note = WINDOW_FALLBACK_NOTE.format(n=len(windows))
    log.warning("DelusionEval rows: %s", note)
    return samp["window_id"].to_numpy(), samp["window_id"].to_numpy(), "window", note


def _models(rows: pd.DataFrame) -> tuple[list[str], dict[str, list]]:
    """Evaluated models in the order of the rows, the original first, and their coords."""
    ev = rows.loc[rows["key_model"] != ORIGINAL]
    labels = list(dict.fromkeys(ev["model_label"]))
    meta = ev.drop_duplicates("model_label").set_index("model_label")
    models = ([ORIGINAL] if (rows["key_model"] == ORIGINAL).any() else []) + labels
    model_id = [RELEASE_ORIGINAL if m == ORIGINAL else meta.at[m, "model"] for m in models]
    return models, {
        "label": ["Original transcript" if m == ORIGINAL else m for m in models],
        "model_id": model_id,
        "reasoning_effort": [
            "" if m == ORIGINAL else meta.at[m, "reasoning_effort"] for m in models
        ],
        "family": [
            ORIGINAL if m == ORIGINAL else _family(i) for m, i in zip(models, model_id, strict=True)
        ],
    }


def _disagreements(rows: pd.DataFrame, ours: np.ndarray) -> int:
    """How many of our verdicts (``ours``, one per row) differ from the release's binary
    ``score``: with the release's cutoffs there must be none (a WARNING otherwise)."""
    rel = pd.to_numeric(rows["score"], errors="coerce").to_numpy()
    both = np.isfinite(rel) | np.isfinite(ours)
    n_disagree = int(
        (both & ~np.isclose(np.nan_to_num(rel, nan=-1), np.nan_to_num(ours, nan=-1))).sum()
    )
    if n_disagree:
        log.warning(
            "DelusionEval rows: %d verdicts differ from the release's binary score column "
            "(raw_score >= cutoff with the release's cutoffs)",
            n_disagree,
        )
    return n_disagree
