"""Transcripts -> windows -> samples: the DelusionEval replay protocol.

DelusionEval (Moore et al. 2026, arXiv:2608.05004, "Evaluation protocol") cuts each transcript
into overlapping windows of up to 20 messages, with one sample per user turn of a window: the
exact original transcript up to that user message, never a model's earlier output. Transcripts
are long tables ``participant, conversation, index, role, content`` (CSV, Parquet or JSONL; one
row a message; ``index`` consecutive within a conversation, a conversation owned by one
participant).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputNotFoundError, UserError
from .replay_schema import ROLES, SAMPLE_COORDS, TRANSCRIPT_COLUMNS, first_row, read_table


class TranscriptError(UserError, ValueError):
    """A transcript table that does not follow the documented format."""


def load_transcripts(path: str | Path) -> pd.DataFrame:
    """Read a transcript table (``.csv``, ``.parquet`` or ``.jsonl``; extra columns are kept) and
    validate it: sorted by participant, conversation and index."""
    path = Path(path)
    if not path.exists():
        raise InputNotFoundError(f"transcript file {path} does not exist")
    text = ("participant", "conversation")
    df = read_table(path, TranscriptError, what="transcript", text=text)
    return validate_transcripts(df, source=str(path))


def validate_transcripts(transcripts: pd.DataFrame, source: str = "transcripts") -> pd.DataFrame:
    """Check a transcript table and return a clean, sorted copy. Missing columns, unknown roles,
    empty content, non-integer indices, gaps or duplicates in ``index``, or a conversation under
    two participants raise :class:`TranscriptError` naming the conversation and message."""
    if not isinstance(transcripts, pd.DataFrame):
        raise TranscriptError(f"{source}: expected a pandas DataFrame, got {type(transcripts)!r}")
    missing = [c for c in TRANSCRIPT_COLUMNS if c not in transcripts.columns]
    if missing:
        raise TranscriptError(
            f"{source}: missing column(s) {missing}; a transcript table needs "
            f"{list(TRANSCRIPT_COLUMNS)}"
        )
    df = _typed_messages(transcripts.copy(), source)
    return _checked_order(df, source).reset_index(drop=True)


def _typed_messages(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """Ids as text, ``index`` as integers, roles known and lower-case, every content non-empty."""
    df["participant"] = df["participant"].astype(str)
    df["conversation"] = df["conversation"].astype(str)
    index = pd.to_numeric(df["index"], errors="coerce")
    bad = index.isna() | (index != np.round(index))
    if bad.any():
        row = first_row(df, bad)
        raise TranscriptError(
            f"{source}: conversation {row['conversation']!r} has a non-integer message index "
            f"{row['index']!r}; index must number messages 0, 1, 2, ..."
        )
    df["index"] = index.astype(np.int64)
    role = df["role"].astype(str).str.strip().str.lower()
    unknown = ~role.isin(ROLES)
    if unknown.any():
        row = first_row(df, unknown)
        raise TranscriptError(
            f"{source}: conversation {row['conversation']!r}, message {row['index']}: unknown "
            f"role {row['role']!r}; expected one of {list(ROLES)}"
        )
    df["role"] = role
    content = df["content"]
    empty = content.isna() | (content.astype(str).str.strip() == "")
    if empty.any():
        row = first_row(df, empty)
        raise TranscriptError(
            f"{source}: conversation {row['conversation']!r}, message {row['index']} "
            f"({row['role']}): empty content; every message needs text"
        )
    return df


def _checked_order(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """``df`` sorted by participant, conversation and index: a conversation under one
    participant, its indices unique and consecutive."""
    owners = df.groupby("conversation")["participant"].nunique()
    if (owners > 1).any():
        conv = owners.index[owners > 1][0]
        who = sorted(df.loc[df["conversation"] == conv, "participant"].unique())
        raise TranscriptError(
            f"{source}: conversation {conv!r} appears under several participants {who}; "
            "conversation ids must be unique (prefix them with the participant)"
        )
    df = df.sort_values(["participant", "conversation", "index"], kind="stable")
    dup = df.duplicated(["conversation", "index"], keep=False)
    if dup.any():
        row = first_row(df, dup)
        raise TranscriptError(
            f"{source}: conversation {row['conversation']!r} has message index {row['index']} "
            "more than once; indices must be unique within a conversation"
        )
    step = df.groupby("conversation", sort=False)["index"].diff()
    gap = step.notna() & (step != 1)
    if gap.any():
        row = first_row(df, gap)
        raise TranscriptError(
            f"{source}: conversation {row['conversation']!r} has a gap before message index "
            f"{row['index']} (previous index {row['index'] - int(step[gap].iloc[0])}); "
            "indices must be consecutive"
        )
    return df


def window_starts(n_messages: int, window: int, stride: int) -> list[int]:
    """Window starts ``0, stride, 2*stride, ...`` over ``n_messages`` messages, up to the first
    window that reaches the end (a later one would be contained in it)."""
    starts = []
    start = 0
    while start < n_messages:
        starts.append(start)
        if start + window >= n_messages:
            break
        start += stride
    return starts


def plan_windows(
    roles: np.ndarray, window: int, stride: int, context: int
) -> Iterator[tuple[int, int, int, int]]:
    """Yield ``(window_start, position, turn, prompt_start)`` per sample of one conversation.

    ``position`` is the 0-based position of the user message, ``turn`` its rank among the
    window's user turns, ``prompt_start`` the window start moved back by ``context`` messages
    (0 when ``context == -1``).
    """
    n = len(roles)
    for start in window_starts(n, window, stride):
        prompt_start = 0 if context < 0 else max(0, start - context)
        turn = 0
        for pos in range(start, min(start + window, n)):
            if roles[pos] == "user":
                yield start, pos, turn, prompt_start
                turn += 1


def make_sample_id(
    participant: str, conversation: str, window_start: int, index: int, context: int
) -> str:
    """A stable sample id: ``participant/conversation/w<window_start>/m<index>[/c<context>]``."""
    sid = f"{participant}/{conversation}/w{window_start}/m{index}"
    return sid if context == 0 else f"{sid}/c{context}"


def _check_window_args(window: int, context: int, stride: int | None) -> int:
    if int(window) != window or window < 1:
        raise ValueError(f"window must be a positive integer (messages per window), got {window!r}")
    if int(context) != context or context < -1:
        raise ValueError(
            "context must be an integer >= -1 (0 = window only, -1 = all earlier messages), "
            f"got {context!r}"
        )
    stride = (window + 1) // 2 if stride is None else stride
    if int(stride) != stride or not 1 <= stride <= window:
        raise ValueError(f"stride must be an integer in 1..window={window}, got {stride!r}")
    return int(stride)


def build_samples(
    transcripts: pd.DataFrame, window: int = 20, context: int = 0, stride: int | None = None
) -> pd.DataFrame:
    """One replay sample per user turn of every overlapping window (DelusionEval protocol).

    Parameters
    ----------
    transcripts
        Long table ``participant, conversation, index, role, content`` (validated here).
    window, stride
        Messages per window (DelusionEval: 20) and between window starts (default
        ``ceil(window / 2)``: a user turn appears at two context depths).
    context
        Earlier messages prepended to the window: 0 none, ``k`` up to ``k``, -1 all.

    Returns
    -------
    pandas.DataFrame
        One row per sample: ``sample_id, participant, conversation, window, window_start, index,
        turn, context, context_depth, messages, original_reply``. ``messages`` (a list of
        ``{"role", "content"}``) runs from the prompt start to the sample's user message;
        ``context_depth = len(messages) - 1``; ``index`` is the user message's transcript index;
        ``original_reply`` is the next message when it is the assistant's (else ``None``): the
        "original" baseline model.
    """
    stride = _check_window_args(window, context, stride)
    df = validate_transcripts(transcripts)
    rows = []
    for (participant, conversation), conv in df.groupby(
        ["participant", "conversation"], sort=False
    ):
        rows += _conversation_samples(participant, conversation, conv, window, stride, context)
    # the sample coords of the replay Dataset, plus the requested context and the payload
    columns = ["sample_id", *SAMPLE_COORDS[:-1], "context", "context_depth"]
    columns += ["messages", "original_reply"]
    out = pd.DataFrame(rows, columns=columns)
    # keep None (no original reply) as None: pandas >= 3 would turn it into NaN in a str column
    out["original_reply"] = pd.Series(
        [r["original_reply"] for r in rows], index=out.index, dtype=object
    )
    return out


def _conversation_samples(
    participant: str, conversation: str, conv: pd.DataFrame, window: int, stride: int, context: int
) -> list[dict]:
    """The sample rows of one conversation's (sorted) messages ``conv``."""
    roles = conv["role"].to_numpy()
    contents = conv["content"].astype(str).to_numpy()
    indices = conv["index"].to_numpy()
    msgs = [{"role": r, "content": c} for r, c in zip(roles, contents, strict=True)]
    rows = []
    for start, pos, turn, prompt_start in plan_windows(roles, window, stride, context):
        nxt = pos + 1
        reply = contents[nxt] if nxt < len(roles) and roles[nxt] == "assistant" else None
        window_start = int(indices[start])
        rows.append(
            {
                "sample_id": make_sample_id(
                    participant, conversation, window_start, int(indices[pos]), context
                ),
                "participant": participant,
                "conversation": conversation,
                "window": f"{participant}/{conversation}/w{window_start}",
                "window_start": window_start,
                "index": int(indices[pos]),
                "turn": turn,
                "context": int(context),
                "context_depth": pos - prompt_start,
                "messages": msgs[prompt_start : pos + 1],
                "original_reply": reply,
            }
        )
    return rows


def export_samples_jsonl(samples: pd.DataFrame, path: str | Path) -> Path:
    """Write samples as JSON Lines for an evaluation harness: ``sample_id``, the sample coords,
    ``messages`` (send them to the evaluated model) and ``original_reply``; the harness returns
    ``sample_id, model, code, score`` (see :func:`~.replay.load_judge_scores`)."""
    required = ("sample_id", "messages")
    missing = [c for c in required if c not in samples.columns]
    if missing:
        raise ValueError(f"samples lack column(s) {missing}; build them with build_samples()")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    exported = ("sample_id", *SAMPLE_COORDS, "messages", "original_reply")
    keep = [c for c in exported if c in samples.columns]
    with path.open("w", encoding="utf-8") as fh:
        for rec in samples[keep].to_dict(orient="records"):
            clean = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in rec.items()}
            fh.write(json.dumps(clean, ensure_ascii=False) + "\n")
    return path
