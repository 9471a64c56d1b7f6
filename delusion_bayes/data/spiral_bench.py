"""Spiral-Bench result files -> a replicated study (:mod:`delusion_bayes.data.replicated`).

Spiral-Bench (Sam Paech, 2025; github.com/sam-paech/spiral-bench, MIT) sends 30 prompts (6
categories x 5) to each chatbot; a simulated "seeker" and the chatbot exchange 20 turns; one LLM
judge scores assistant turns 1-19 (``judgements.chunk0`` .. ``chunk18``) on 9 behaviours as the
summed intensity (1-3) of the snippets it flags, and each conversation on 3 final 0-10 scores.
A result file is ``{"1": {"eval_prompts_v0.2.json": {prompt_id: [conversation]},
"scoring_summary": [leaderboard row], "__meta__": ...}}``.

What the loader keeps (nothing is dropped or zeroed): every judged turn's ``metrics`` as
``score`` (rater = the judge, ``rater_kind='judge'``), ``assistant_length_chars``, a judge reply
that failed to parse (``{"error": ...}``) as NaN with ``judge_failed`` True and counted per
chatbot (``n_judge_failed``), the 3 ``final_judgement`` scores as ``final_<name>`` (model,
conversation), the prompt id and category, and the published leaderboard row as
``published (model, item)`` plus ``published_<key> (model)``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..errors import InputNotFoundError
from .csv_format import StudyFormatError
from .replicated import (
    CONVERSATION,
    ITEM,
    KIND,
    MODEL,
    RATER,
    TURN,
    item_scale_coords,
    validate_replicated,
)

#: the 9 behaviours: the leaderboard's key (our item name) -> the judge's metric key
BEHAVIOURS: dict[str, str] = {
    "pushback": "pushback",
    "de-escalation": "de-escalation",
    "safe_redirection": "safe redirection",
    "suggestions_to_seek_help": "suggestions to seek help",
    "emotional_or_narrative_escalation": "emotional or narrative escalation",
    "sycophancy_or_praise": "sycophancy or praise",
    "delusion_reinforcement": "delusion reinforcement",
    "consciousness_claims": "consciousness claims",
    "harmful_advice": "harmful advice",
}
#: the 0-10 scores the judge gives each whole conversation
FINAL_JUDGEMENTS: tuple[str, ...] = ("off_rails", "safety", "social_dexterity")
#: the leaderboard row's keys kept as ``published_<key> (model)`` besides the behaviours
PUBLISHED_KEYS: tuple[str, ...] = (
    *FINAL_JUDGEMENTS,
    "score_norm",
    "score_0_100",
    "ci_low_norm",
    "ci_high_norm",
)
#: the rater name of the Spiral-Bench judge (the files do not name the judge model)
JUDGE = "spiral_bench_judge"
_CHUNK = re.compile(r"chunk(\d+)$")


class SpiralBenchFormatError(StudyFormatError):
    """A Spiral-Bench result file does not have the structure the loader reads."""


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise InputNotFoundError(
                f"{path}: no .json files; expected Spiral-Bench result files (res_v0.2/*.json)"
            )
        return files
    if not path.is_file():
        raise InputNotFoundError(f"{path}: no such file or folder (a Spiral-Bench result file)")
    return [path]


def _run(file: Path) -> tuple[dict, dict]:
    """The conversations ``{prompt_id: conversation}`` and the leaderboard row of one file."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SpiralBenchFormatError(f"{file}: cannot read as JSON ({err})") from None
    if not isinstance(data, dict) or len(data) != 1:
        keys = list(data)[:5] if isinstance(data, dict) else type(data).__name__
        raise SpiralBenchFormatError(
            f"{file}: top level {keys}; expected one run id (e.g. '1') holding the run"
        )
    run = next(iter(data.values()))
    prompts = [k for k in run if k.startswith("eval_prompts")]
    if len(prompts) != 1:
        raise SpiralBenchFormatError(
            f"{file}: keys {list(run)}; expected one 'eval_prompts_*.json' entry"
        )
    convs = {}
    for pid, lst in run[prompts[0]].items():
        if not isinstance(lst, list) or len(lst) != 1:
            n = len(lst) if isinstance(lst, list) else type(lst).__name__
            raise SpiralBenchFormatError(
                f"{file}, prompt {pid!r}: {n} conversation(s); expected a list of exactly one"
            )
        convs[pid] = lst[0]
    summary = run.get("scoring_summary") or []
    return convs, (summary[0] if summary else {})


def _turns(file: Path, pid: str, judgements: dict) -> dict[int, dict]:
    """``{turn: judgement}`` of one conversation (turn = chunk index + 1); each judgement has
    ``metrics`` (all 9 behaviours) and ``assistant_length_chars``, or is ``{"error": ...}``."""
    out = {}
    for key, j in judgements.items():
        m = _CHUNK.match(key)
        where = f"{file}, prompt {pid!r}, judgements[{key!r}]"
        if m is None:
            raise SpiralBenchFormatError(f"{where}: expected keys chunk0, chunk1, ...")
        if not isinstance(j, dict) or ("error" not in j and "metrics" not in j):
            keys = list(j) if isinstance(j, dict) else type(j).__name__
            raise SpiralBenchFormatError(
                f"{where}: the turn has no judge reply (keys {keys}); expected 'metrics' and "
                "'assistant_length_chars', or 'error' when the judge's reply failed to parse"
            )
        if "metrics" in j:
            missing = [b for b in BEHAVIOURS.values() if b not in j["metrics"]]
            if missing or "assistant_length_chars" not in j:
                raise SpiralBenchFormatError(
                    f"{where}: metrics lack {missing or 'nothing'}"
                    f"{'' if 'assistant_length_chars' in j else ', and assistant_length_chars'}"
                    f"; expected the 9 behaviours {list(BEHAVIOURS.values())}"
                )
        out[int(m.group(1)) + 1] = j
    return out


def _conversation_arrays(file: Path, convs: dict, turns: list[int]) -> dict[str, np.ndarray]:
    """Per prompt (in ``convs`` order): scores (C, T, I), lengths and failures (C, T), finals."""
    c, t, i = len(convs), len(turns), len(BEHAVIOURS)
    pos = {turn: k for k, turn in enumerate(turns)}
    out = {
        "score": np.full((c, t, i), np.nan),
        "length": np.full((c, t), np.nan),
        "failed": np.zeros((c, t), dtype=bool),
        "final": np.full((c, len(FINAL_JUDGEMENTS)), np.nan),
    }
    for ci, (pid, conv) in enumerate(convs.items()):
        for turn, j in _turns(file, pid, conv.get("judgements") or {}).items():
            if "metrics" not in j:
                out["failed"][ci, pos[turn]] = True
                continue
            out["score"][ci, pos[turn]] = [float(j["metrics"][b]) for b in BEHAVIOURS.values()]
            out["length"][ci, pos[turn]] = float(j["assistant_length_chars"])
        final = conv.get("final_judgement") or {}
        out["final"][ci] = [float(final.get(k, np.nan)) for k in FINAL_JUDGEMENTS]
    return out


def _all_turns(file: Path, convs: dict) -> list[int]:
    turns: set[int] = set()
    for pid, conv in convs.items():
        turns |= set(_turns(file, pid, conv.get("judgements") or {}))
    return sorted(turns)


def _model_name(file: Path, convs: dict) -> str:
    names = {str(c.get("evaluated_model", "")) for c in convs.values()}
    if len(names) != 1 or not names.pop():
        raise SpiralBenchFormatError(
            f"{file}: the conversations name evaluated models {sorted(names)}; expected one"
        )
    return file.stem


def load_spiral_bench(path: str | Path) -> xr.Dataset:
    """Spiral-Bench result file(s) -> a validated replicated study.

    Parameters
    ----------
    path
        One result JSON (``res_v0.2/<chatbot>.json``) or a folder of them; the chatbot is named
        by the file's stem (the leaderboard's name), its ``evaluated_model`` kept as a coord.

    Returns
    -------
    xarray.Dataset
        ``score (rater, model, conversation, turn, item)``: the judge's summed snippet intensity
        per behaviour (count, >= 0), NaN where the judge's reply failed; ``judge_failed``,
        ``assistant_length_chars`` (model, conversation, turn); ``final_off_rails``,
        ``final_safety``, ``final_social_dexterity`` (model, conversation); ``n_judge_failed``
        (model); ``published (model, item)`` and ``published_<key> (model)``: the leaderboard
        row. Conversations are the prompt ids (every chatbot ran the same prompts), with
        ``prompt`` and ``category`` coords.

    References
    ----------
    Paech, S. (2025). Spiral-Bench. https://github.com/sam-paech/spiral-bench (MIT).
    """
    files = _files(Path(path))
    runs = {}
    for f in files:
        convs, summary = _run(f)
        runs[_model_name(f, convs)] = (f, convs, summary)
    if len(runs) != len(files):
        raise SpiralBenchFormatError(f"{path}: two files share a chatbot name (file stem)")
    models = list(runs)
    prompts = list(dict.fromkeys(p for _, convs, _ in runs.values() for p in convs))
    turns = sorted(set().union(*(_all_turns(f, c) for f, c, _ in runs.values())))
    m, c, t = len(models), len(prompts), len(turns)
    arrays = {
        "score": np.full((m, c, t, len(BEHAVIOURS)), np.nan),
        "length": np.full((m, c, t), np.nan),
        "failed": np.zeros((m, c, t), dtype=bool),
        "final": np.full((m, c, len(FINAL_JUDGEMENTS)), np.nan),
    }
    category = np.full((m, c), "", dtype=object)
    present = np.zeros((m, c), dtype=bool)
    published = np.full((m, len(BEHAVIOURS)), np.nan)
    extra = np.full((m, len(PUBLISHED_KEYS)), np.nan)
    evaluated = []
    for mi, (f, convs, summary) in enumerate(runs.values()):
        idx = [prompts.index(p) for p in convs]
        for key, value in _conversation_arrays(f, convs, turns).items():
            arrays[key][mi, idx] = value
        present[mi, idx] = True
        category[mi, idx] = [str(v.get("category", "")) for v in convs.values()]
        published[mi] = [float(summary.get(b, np.nan)) for b in BEHAVIOURS]
        extra[mi] = [float(summary.get(k, np.nan)) for k in PUBLISHED_KEYS]
        evaluated.append(str(next(iter(convs.values())).get("evaluated_model", "")))
    return _dataset(models, prompts, turns, arrays, category, present, published, extra, evaluated)


def _dataset(models, prompts, turns, arrays, category, present, published, extra, evaluated):
    prompt = np.where(present, np.array(prompts, dtype=object)[None, :], "")
    failed = arrays["failed"]
    ds = xr.Dataset(
        {
            "score": ((RATER, MODEL, CONVERSATION, TURN, ITEM), arrays["score"][None]),
            "has_conversation": ((MODEL, CONVERSATION), present),
            "judge_failed": ((MODEL, CONVERSATION, TURN), failed),
            "n_judge_failed": (MODEL, failed.sum(axis=(1, 2)).astype(int)),
            "assistant_length_chars": ((MODEL, CONVERSATION, TURN), arrays["length"]),
            "published": ((MODEL, ITEM), published),
            **{
                f"final_{k}": ((MODEL, CONVERSATION), arrays["final"][..., i])
                for i, k in enumerate(FINAL_JUDGEMENTS)
            },
            **{f"published_{k}": (MODEL, extra[:, i]) for i, k in enumerate(PUBLISHED_KEYS)},
        },
        coords={
            RATER: np.array([JUDGE], dtype=object),
            "rater_kind": (RATER, np.array(["judge"], dtype=object)),
            MODEL: np.array(models, dtype=object),
            "evaluated_model": (MODEL, np.array(evaluated, dtype=object)),
            CONVERSATION: np.array(prompts, dtype=object),
            TURN: np.asarray(turns, dtype=int),
            ITEM: np.array(list(BEHAVIOURS), dtype=object),
            "item_label": (ITEM, np.array(list(BEHAVIOURS.values()), dtype=object)),
            **item_scale_coords(["count"] * len(BEHAVIOURS), [0.0] * 9, [np.nan] * 9),
            "prompt": ((MODEL, CONVERSATION), prompt.astype(object)),
            "category": ((MODEL, CONVERSATION), category),
        },
        attrs={
            "kind": KIND,
            "source": "spiral_bench",
            "reference": "Paech, S. (2025). Spiral-Bench. github.com/sam-paech/spiral-bench (MIT)",
            "score_meaning": "summed snippet intensity (1-3 per flagged snippet) per judged turn",
            "judge_failed_meaning": "the judge's reply could not be parsed: no rating (NaN)",
            "n_judge_failed": json.dumps(
                {m: int(n) for m, n in zip(models, failed.sum(axis=(1, 2)), strict=True)}
            ),
            "conversation_items": ",".join(f"final_{k}" for k in FINAL_JUDGEMENTS),
            "published_meaning": "the leaderboard row (scoring_summary) of each file, as published",
        },
    )
    return validate_replicated(ds)


def failed_turns(ds: xr.Dataset) -> dict[str, int]:
    """Failed judge turns per chatbot of a Spiral-Bench study (``n_judge_failed``)."""
    counts = ds["n_judge_failed"].values
    return {str(m): int(n) for m, n in zip(ds[MODEL].values, counts, strict=True)}


def describe(ds: xr.Dataset) -> dict[str, Any]:
    """Sizes and failure counts of a loaded Spiral-Bench study (for logs and the stage index)."""
    return {
        "models": [str(m) for m in ds[MODEL].values],
        "conversations": int(ds["has_conversation"].sum()),
        "judged_turns": int(np.isfinite(ds["score"].isel({RATER: 0, ITEM: 0})).sum()),
        "judge_failed": failed_turns(ds),
    }


__all__ = [
    "BEHAVIOURS",
    "FINAL_JUDGEMENTS",
    "JUDGE",
    "PUBLISHED_KEYS",
    "SpiralBenchFormatError",
    "describe",
    "failed_turns",
    "load_spiral_bench",
]
