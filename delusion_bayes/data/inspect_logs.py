"""Inspect AI evaluation logs as a replay study (:func:`load_inspect_logs`).

DelusionEval (``jlcmoore/llm-delusion-eval``) is an Inspect AI task: one sample per user turn of a
window (id ``"{window_id}.turn{turn_index}"``, metadata ``harmful_annotations`` = ``[code]``,
``window_id``, ``turn_index``), scored by ``metadata_annotation_scorer`` whose ``Score.value`` is
the verdict (1, 0, NaN when the judge's reply could not be parsed) and whose ``Score.explanation``
is JSON with ``raw_score`` (0-10) and ``cutoff``. That is the default mapping
(``code_key="harmful_annotations"``). Any other scored eval maps with ``score=`` (the scorer),
``code_key=`` (the metadata key that is the code, or ``None``: one code, the scorer's name),
``cluster_keys=`` ([participant, conversation] metadata keys) and ``cutoff=`` (``hit = value >=
cutoff``; ``C``/``I`` and other Inspect values through ``inspect_ai.scorer.value_to_float``).

Logs are read with ``inspect_ai.log.read_eval_log`` (``list_eval_logs`` for a directory). Epochs
are repeated samples (``sample = "{id}.epoch{n}"`` when any log has more than one epoch; they share
the sample's window and clusters). Nothing is dropped silently: errored samples (left out),
samples without a score (``unscored = 1``), logs not finished (``status != "success"``; their
samples are used), samples a log never ran, duplicate samples across logs (the latest log's is
kept) and mixed task versions are counted in ``ds.attrs`` and stated in ``ds.attrs["load_notes"]``
(one note a line), which the replay stage writes to ``replay/index.json`` and the supplement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..errors import MissingExtraError
from .replay_schema import (
    CATEGORY,
    CODE,
    CODES,
    CUTOFFS,
    MODEL,
    ORIGINAL,
    SAMPLE,
    ReplayValidationError,
    hits_from_scores,
    validate_replay,
)

__all__ = ["DELUSIONEVAL_KEYS", "InspectLogError", "load_inspect_logs"]

#: the sample metadata keys DelusionEval's task writes (and this mapping needs)
DELUSIONEVAL_KEYS: tuple[str, ...] = ("harmful_annotations", "window_id", "turn_index")
#: generation-config fields that distinguish two runs of one model (shown in the model name)
_RUN_CONFIG = ("reasoning_effort", "effort", "reasoning_tokens", "temperature", "top_p", "seed")
EXTRA_HINT = "pip install 'delusion_bayes[inspect]' (or pip install 'inspect-ai>=0.3')"


class InspectLogError(ReplayValidationError):
    """An Inspect log that cannot be mapped to a replay study (names log, sample and key)."""


def _inspect():
    try:
        from inspect_ai import log as ilog
        from inspect_ai.scorer import value_to_float
    except ImportError as err:
        raise MissingExtraError(
            f"load_inspect_logs needs the optional extra 'inspect': {EXTRA_HINT}"
        ) from err
    return ilog, value_to_float()


def _log_files(paths, ilog) -> list[str]:
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files: list[str] = []
    for p in items:
        path = Path(str(p).removeprefix("file://")).expanduser()
        if path.is_dir():
            found = [i.name for i in ilog.list_eval_logs(str(path), recursive=True)]
            if not found:
                raise InspectLogError(f"{path}: no Inspect logs (.eval or .json) in the directory")
            files += sorted(str(f).removeprefix("file://") for f in found)
        elif path.is_file():
            files.append(str(path))
        else:
            raise InspectLogError(f"Inspect log {path} does not exist")
    if not files:
        raise InspectLogError("load_inspect_logs: no log paths given")
    return files


def _meta(meta: Mapping, key: str, where: str) -> Any:
    if key not in (meta or {}):
        raise InspectLogError(
            f"{where}: sample metadata lacks key {key!r} (has {sorted(meta or {})})"
        )
    return meta[key]


def _first(value: Any) -> Any:
    """A code from a metadata value: DelusionEval's ``harmful_annotations`` is a 1-element list."""
    if isinstance(value, (list, tuple, set)):
        items = sorted(str(v) for v in value)
        return items[0] if len(items) == 1 else None
    return value


def _run_label(spec) -> tuple[str, str, str]:
    """(model key, model id, run config string) of a log's eval spec."""
    model_id = str(spec.model)
    gen = spec.model_generate_config
    parts = [f"{k}={getattr(gen, k)}" for k in _RUN_CONFIG if getattr(gen, k, None) is not None]
    run_cfg = ",".join(parts)
    if model_id.endswith("original_transcript"):
        return ORIGINAL, model_id, run_cfg
    short = model_id.split("/")[-1] if model_id.startswith("mockllm/") else model_id
    return (f"{short} ({run_cfg})" if run_cfg else short), model_id, run_cfg


def _score_of(sample, score: str | None, where: str):
    scores = sample.scores or {}
    if score is None:
        if len(scores) > 1:
            raise InspectLogError(
                f"{where}: more than one scorer {sorted(scores)}; name one with score="
            )
        return next(iter(scores.values()), None)
    return scores.get(score)


def _delusioneval_value(sc, where: str) -> tuple[float, float | None, float]:
    """(raw score, cutoff or None, verdict) from DelusionEval's Score."""
    verdict = _as_float(sc.value)
    try:
        expl = json.loads(sc.explanation or "")
    except (TypeError, ValueError) as err:
        raise InspectLogError(
            f"{where}: Score.explanation is not DelusionEval's JSON (raw_score, cutoff): "
            f"{str(sc.explanation)[:80]!r}"
        ) from err
    if not isinstance(expl, Mapping) or "raw_score" not in expl:
        raise InspectLogError(f"{where}: Score.explanation JSON lacks key 'raw_score'")
    raw, cut = _as_float(expl["raw_score"]), expl.get("cutoff")
    return raw, (None if cut is None else _as_float(cut)), verdict


def _as_float(v: Any) -> float:
    try:
        out = float(v)
    except (TypeError, ValueError):
        return math.nan
    return out


def load_inspect_logs(
    paths: str | Path | Iterable[str | Path],
    *,
    score: str | None = None,
    code_key: str | None = "harmful_annotations",
    cluster_keys: Sequence[str] = (),
    cutoff: float | None = None,
    cutoffs: Mapping[str, float] | None = None,
    categories: Mapping[str, str] | None = None,
    turn_key: str | None = None,
) -> xr.Dataset:
    """Inspect AI ``.eval``/``.json`` logs (files or directories) -> replay ``xarray.Dataset``.

    With the default ``code_key="harmful_annotations"`` the logs are read as DelusionEval's (raw
    score and cutoff from ``Score.explanation``, window and turn from the metadata, clusters the
    window unless ``cluster_keys`` name metadata keys). Otherwise ``Score.value`` is the score,
    ``metadata[code_key]`` the code, ``cluster_keys`` ``[participant(, conversation)]`` and
    ``cutoff`` (default 1) the hit threshold. See the module docstring for the counted cases.
    Models are ordered by name (the original transcript's replies first), whatever the order in
    which the logs were written.

    Raises
    ------
    ImportError
        ``inspect-ai`` is not installed (the ``inspect`` extra).
    InspectLogError
        A path that does not exist, a sample lacking a metadata key the mapping needs (naming the
        log, sample and key), a non-numeric score, or a code without a cutoff.
    """
    ilog, to_float = _inspect()
    how = _Mapping(score, code_key, tuple(cluster_keys), turn_key)
    rows, logs = [], []
    for order, f in enumerate(_log_files(paths, ilog)):
        lg = ilog.read_eval_log(f)
        logs.append(_log_entry(f, lg))
        base = _run_columns(order, f, lg.eval)
        rows += [_sample_row(s, base, how, to_float) for s in lg.samples or []]
    if not rows:
        raise InspectLogError(f"no samples in the Inspect logs {[g['log'] for g in logs]}")
    return _dataset(pd.DataFrame(rows), logs, how, cutoff, cutoffs, categories)


@dataclass(frozen=True)
class _Mapping:
    """How samples map to a replay study (:func:`load_inspect_logs`' arguments of that name)."""

    score: str | None
    code_key: str | None
    cluster_keys: tuple[str, ...]
    turn_key: str | None

    @property
    def delusioneval(self) -> bool:
        """DelusionEval's mapping (raw score and cutoff from ``Score.explanation``)."""
        return self.code_key == "harmful_annotations"


def _log_entry(f: str, lg) -> dict[str, Any]:
    """What the notes and counts need of one log: status, task, model, samples planned/read."""
    spec = lg.eval
    n_epochs = int(getattr(spec.config, "epochs", None) or 1)
    return {
        "log": f,
        "status": str(lg.status),
        "task": str(spec.task),
        "version": str(spec.task_version),
        "model": _run_label(spec)[0],
        "n_planned": int(getattr(spec.dataset, "samples", None) or 0) * n_epochs,
        "n_read": len(lg.samples or []),
    }


def _run_columns(order: int, f: str, spec) -> dict[str, Any]:
    """The columns every sample row of one log shares."""
    key, model_id, run_cfg = _run_label(spec)
    return {
        "order": order,
        "created": str(spec.created),
        "log": f,
        "model": key,
        "model_id": model_id,
        "run_config": run_cfg,
    }


def _sample_row(s, base: dict[str, Any], how: _Mapping, to_float) -> dict[str, Any]:
    """One sample's row: its code, window, turn and clusters, and its score and verdict."""
    where = f"log {Path(base['log']).name}, sample {s.id!r} (epoch {s.epoch})"
    meta = s.metadata or {}
    row = {**base, "id": str(s.id), "epoch": int(s.epoch), "error": s.error is not None}
    code, window, index = _sample_place(meta, how, where)
    clusters = [str(_meta(meta, k, where)) for k in how.cluster_keys]
    row.update(code=code, window=window, index=index, clusters=clusters)
    sc = None if s.error is not None else _score_of(s, how.score, where)
    row.update(value=math.nan, cut=None, verdict=math.nan, scored=sc is not None)
    if sc is not None and how.delusioneval:
        row["value"], row["cut"], row["verdict"] = _delusioneval_value(sc, where)
    elif sc is not None:
        if isinstance(sc.value, Mapping):
            raise InspectLogError(
                f"{where}: Score.value is a dict {sorted(sc.value)}; "
                "a replay study needs one number per sample"
            )
        row["value"] = row["verdict"] = float(to_float(sc.value))
    row["scorer"] = str(how.score or next(iter(s.scores or {}), "score"))
    if row["code"] is None:
        row["code"] = row["scorer"]
    return row


def _sample_place(meta: Mapping, how: _Mapping, where: str) -> tuple[Any, str | None, int]:
    """``(code, window, turn index)`` of a sample from its metadata (code None: the scorer's
    name; window None: set from the clusters later)."""
    if how.delusioneval:
        ann = _first(_meta(meta, "harmful_annotations", where))
        if ann is None:
            raise InspectLogError(
                f"{where}: harmful_annotations is not one code: {meta['harmful_annotations']!r}"
            )
        window = str(_meta(meta, "window_id", where))
        return str(ann).removeprefix("bot-"), window, int(_meta(meta, "turn_index", where))
    code = str(_first(_meta(meta, how.code_key, where))) if how.code_key else None
    return code, None, int(_meta(meta, how.turn_key, where)) if how.turn_key else 0


def _dataset(rows, logs, how: _Mapping, cutoff, cutoffs, categories) -> xr.Dataset:
    """The replay study of the sample rows, with the load's counts and notes in its attrs."""
    dele = how.delusioneval
    rows, counts, notes = _deduplicate_and_count(rows, logs)
    ok = rows.loc[~rows["error"]]
    samp, clustering, note = _samples(rows, dele, how.cluster_keys)
    if not dele and not how.cluster_keys:
        notes.append(note)
    # sorted by name: log file names and creation times tie when logs are written in the same
    # second, so the order of first appearance would differ between machines
    models = sorted(set(rows["model"]))
    models = ([ORIGINAL] if ORIGINAL in models else []) + [m for m in models if m != ORIGINAL]
    cats = dict(CODES) if dele else {}
    cats.update(categories or {})
    codes = list(dict.fromkeys([c for c in cats if c in set(rows["code"])] + list(rows["code"])))
    cut_map = _cutoffs(ok, codes, dele, cutoff, cutoffs)

    index = (
        pd.Index(samp.index).get_indexer(rows["sample"]),
        pd.Index(models).get_indexer(rows["model"]),
        pd.Index(codes).get_indexer(rows["code"]),
    )
    shape = (len(samp), len(models), len(codes))
    score, unscored = np.full(shape, np.nan), np.zeros(shape, dtype=np.int8)
    value = rows["value"].to_numpy(dtype=float)
    score[index] = value
    miss = ~rows["error"].to_numpy() & np.isnan(value)
    unscored[tuple(i[miss] for i in index)] = 1
    default_cat = None if dele else str(ok["scorer"].iloc[0] if len(ok) else "score")
    categories_of = [cats.get(c, default_cat or c) for c in codes]
    ds = xr.Dataset(
        {
            "score": ((SAMPLE, MODEL, CODE), score),
            "cutoff": ((CODE,), np.array([cut_map[c] for c in codes], dtype=float)),
            "unscored": ((SAMPLE, MODEL, CODE), unscored),
        },
        coords=_coords(rows, samp, models, codes, categories_of),
    )
    ds["hit"] = hits_from_scores(ds["score"], ds["cutoff"]).transpose(SAMPLE, MODEL, CODE)
    n_differ = _verdicts_differing(rows["verdict"].to_numpy(dtype=float), ds["hit"].values[index])
    counts["verdicts_differing_from_scorer"] = n_differ
    if n_differ:
        notes.append(
            f"Inspect logs: {n_differ} verdict(s) differ from the scorer's "
            "Score.value under the cutoffs used"
        )
    ds.attrs.update(
        {
            "kind": "replay",
            "source": "inspect",
            "simulated": 0,
            "mapping": "delusioneval" if dele else "generic",
            "clustering": clustering,
            "clustering_note": note,
            "load_notes": "\n".join(notes),
            "logs": "\n".join(g["log"] for g in logs),
            **counts,
        }
    )
    return validate_replay(ds)


def _deduplicate_and_count(rows: pd.DataFrame, logs: list[dict]):
    """The rows without duplicates across logs (retries: the latest log's copy of a model,
    sample and epoch is kept), the load's counts and its notes (module docstring)."""
    notes: list[str] = []
    counts = {"n_logs": len(logs), "n_errored": int(rows["error"].sum())}
    rows = rows.sort_values(["created", "order"])
    dup = rows.duplicated(["model", "id", "epoch"], keep="last")
    counts["n_duplicates_dropped"] = int(dup.sum())
    rows = rows.loc[~dup]
    ok = rows.loc[~rows["error"]]
    counts["n_unscored"] = int((~ok["scored"] | ok["value"].isna()).sum())
    unfinished = [g for g in logs if g["status"] != "success"]
    counts["n_unfinished_logs"] = len(unfinished)
    counts["n_cancelled_logs"] = sum(g["status"] == "cancelled" for g in logs)
    counts["n_not_run"] = int(sum(max(g["n_planned"] - g["n_read"], 0) for g in logs))
    versions = sorted({(g["task"], g["version"]) for g in logs})
    counts["n_task_versions"] = len(versions)
    counts["n_samples_read"] = int(len(rows) + dup.sum())
    if counts["n_errored"]:
        notes.append(f"Inspect logs: {counts['n_errored']} errored sample(s) left out (no score)")
    if counts["n_unscored"]:
        notes.append(
            f"Inspect logs: {counts['n_unscored']} sample(s) without a score "
            "(unscored; replay.unscored decides)"
        )
    for g in unfinished:
        notes.append(
            f"Inspect log {Path(g['log']).name} ({g['model']}) did not finish: status "
            f"{g['status']}, {g['n_read']} of {g['n_planned']} samples x epochs read"
        )
    if counts["n_not_run"]:
        notes.append(f"Inspect logs: {counts['n_not_run']} planned sample(s) x epochs never ran")
    if counts["n_duplicates_dropped"]:
        notes.append(
            f"Inspect logs: {counts['n_duplicates_dropped']} duplicate sample(s) across "
            "logs (retries) dropped; the latest log's copy kept"
        )
    if len(versions) > 1:
        notes.append(f"Inspect logs: mixed tasks/versions {versions}")
    multi = rows["epoch"].max() > 1
    rows = rows.assign(sample=rows["id"] + (".epoch" + rows["epoch"].astype(str) if multi else ""))
    return rows, counts, notes


def _samples(rows: pd.DataFrame, dele: bool, cluster_keys: Sequence[str]):
    """One row per sample (its window, participant, conversation and turn), the clustering's
    name and its note."""
    samp = rows.drop_duplicates("sample").set_index("sample")
    if not dele:
        samp["window"] = samp["clusters"].map(lambda c: c[-1] if c else None)
        samp["window"] = samp["window"].fillna(samp["id"])
    if cluster_keys:
        part = samp["clusters"].map(lambda c: c[0])
        conv = samp["clusters"].map(lambda c: c[1] if len(c) > 1 else c[0])
        clustering = "metadata"
        note = f"participant/conversation from metadata {list(cluster_keys)}"
    else:
        part = conv = samp["window"]
        clustering = "window" if dele else "sample"
        what = "windows" if dele else "Inspect samples (their epochs together)"
        note = (
            f"no cluster_keys: participant and conversation are the {what} "
            f"({samp['window'].nunique()}); pass cluster_keys for the real clusters"
        )
    samp = samp.assign(participant=part, conversation=conv)
    samp = samp.sort_values(["window", "index", "epoch"])
    samp["turn"] = samp.groupby("window")["index"].rank(method="dense").astype(np.int64) - 1
    return samp, clustering, note


def _coords(rows, samp, models: list[str], codes: list[str], categories: list[str]) -> dict:
    """The replay study's coords: sample, model and code with their labels, ids and clusters."""
    meta = rows.drop_duplicates("model").set_index("model")

    def per_model(values) -> tuple[str, np.ndarray]:
        return (MODEL, np.array(values, dtype=object))

    def per_sample(column: str, dtype=object) -> tuple[str, np.ndarray]:
        return (SAMPLE, samp[column].to_numpy(dtype=dtype))

    return {
        SAMPLE: np.asarray(samp.index, dtype=object),
        MODEL: np.array(models, dtype=object),
        CODE: np.array(codes, dtype=object),
        CATEGORY: (CODE, np.array(categories, dtype=object)),
        "label": per_model(["Original transcript" if m == ORIGINAL else m for m in models]),
        "model_id": per_model([meta.at[m, "model_id"] for m in models]),
        "run_config": per_model([meta.at[m, "run_config"] for m in models]),
        "inspect_id": per_sample("id"),
        "epoch": per_sample("epoch", np.int64),
        "participant": per_sample("participant"),
        "conversation": per_sample("conversation"),
        "window": per_sample("window"),
        "window_start": (SAMPLE, np.zeros(len(samp), dtype=np.int64)),
        "index": per_sample("index", np.int64),
        "turn": (SAMPLE, samp["turn"].to_numpy()),
        "context_depth": per_sample("index", np.int64),
    }


def _verdicts_differing(verdict: np.ndarray, ours: np.ndarray) -> int:
    """How many of our hits differ from the scorer's verdicts (NaN equals NaN)."""
    both = np.isfinite(verdict) | np.isfinite(ours)
    differ = both & ~np.isclose(np.nan_to_num(verdict, nan=-1), np.nan_to_num(ours, nan=-1))
    return int(differ.sum())


def _cutoffs(ok, codes, dele, cutoff, cutoffs) -> dict[str, float]:
    """Per-code cutoff: ``cutoffs`` > ``cutoff`` > the scorer's (DelusionEval explanation, one
    per code) > the codebook's; a generic score's default is 1 (hit = value >= 1)."""
    out: dict[str, float] = {}
    for c in codes:
        if cutoffs and c in cutoffs:
            out[c] = float(cutoffs[c])
        elif cutoff is not None:
            out[c] = float(cutoff)
        elif dele:
            seen = {float(x) for x in ok.loc[ok["code"] == c, "cut"] if x is not None}
            if len(seen) > 1:
                raise InspectLogError(
                    f"code {c!r}: the scorer used cutoffs {sorted(seen)}; "
                    "pass cutoffs={code: cutoff}"
                )
            if seen:
                out[c] = seen.pop()
            elif c in CUTOFFS:
                out[c] = float(CUTOFFS[c])
            else:
                raise InspectLogError(f"no cutoff for code {c!r}: pass cutoff= or cutoffs=")
        else:
            out[c] = 1.0
    return out
