"""Transcripts -> windows -> samples (DelusionEval protocol) on hand-made transcripts."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from delusion_bayes.data.replay import (
    TranscriptError,
    build_samples,
    export_samples_jsonl,
    load_transcripts,
)
from delusion_bayes.data.replay_windows import window_starts

from .conftest import hand_transcripts


def _transcript(roles, conversation="c1", participant="p1", start=0):
    return pd.DataFrame(
        {
            "participant": participant,
            "conversation": conversation,
            "index": range(start, start + len(roles)),
            "role": list(roles),
            "content": [f"{conversation}:{i + start}:{r}" for i, r in enumerate(roles)],
        }
    )


@pytest.mark.parametrize(
    ("n", "window", "stride", "expected"),
    [
        (0, 20, 10, []),
        (5, 20, 10, [0]),
        (20, 20, 10, [0]),
        (21, 20, 10, [0, 10]),
        (30, 20, 10, [0, 10]),
        (31, 20, 10, [0, 10, 20]),
        (6, 4, 2, [0, 2]),
        (7, 4, 2, [0, 2, 4]),
    ],
)
def test_window_starts(n, window, stride, expected):
    assert window_starts(n, window, stride) == expected


def test_overlapping_windows_one_sample_per_user_turn():
    # u a u a u a, window 4, stride 2: windows [0..3] and [2..5]
    tr = _transcript("user assistant user assistant user assistant".split())
    s = build_samples(tr, window=4, stride=2)
    assert s["sample_id"].tolist() == ["p1/c1/w0/m0", "p1/c1/w0/m2", "p1/c1/w2/m2", "p1/c1/w2/m4"]
    assert s["turn"].tolist() == [0, 1, 0, 1]
    assert s["context_depth"].tolist() == [0, 2, 0, 2]
    assert s["window_start"].tolist() == [0, 0, 2, 2]
    assert s["index"].tolist() == [0, 2, 2, 4]
    contents = [[m["content"] for m in msgs] for msgs in s["messages"]]
    assert contents == [
        ["c1:0:user"],
        ["c1:0:user", "c1:1:assistant", "c1:2:user"],
        ["c1:2:user"],
        ["c1:2:user", "c1:3:assistant", "c1:4:user"],
    ]
    assert s["original_reply"].tolist() == [
        "c1:1:assistant",
        "c1:3:assistant",
        "c1:3:assistant",
        "c1:5:assistant",
    ]
    # the second sample of a window is built from the transcript, never from a model's output
    for msgs in s["messages"]:
        assert msgs[-1]["role"] == "user"
        assert all(m["content"].startswith("c1:") for m in msgs)


def test_context_prepends_earlier_messages():
    tr = _transcript("user assistant user assistant user assistant".split())
    one = build_samples(tr, window=4, stride=2, context=1)
    second_window = one[one["window_start"] == 2]
    assert [[m["content"] for m in x] for x in second_window["messages"]] == [
        ["c1:1:assistant", "c1:2:user"],
        ["c1:1:assistant", "c1:2:user", "c1:3:assistant", "c1:4:user"],
    ]
    assert second_window["context_depth"].tolist() == [1, 3]
    assert second_window["sample_id"].tolist() == ["p1/c1/w2/m2/c1", "p1/c1/w2/m4/c1"]
    full = build_samples(tr, window=4, stride=2, context=-1)
    last = full.iloc[-1]
    assert [m["content"] for m in last["messages"]] == [
        f"c1:{i}:{r}" for i, r in enumerate("user assistant user assistant user".split())
    ]
    assert last["context_depth"] == 4
    # context larger than what exists is clipped at the conversation start
    big = build_samples(tr, window=4, stride=2, context=50)
    assert big["context_depth"].tolist() == full["context_depth"].tolist()


def test_short_and_assistant_first_conversations():
    tr = pd.concat(
        [
            _transcript(["assistant", "user", "assistant", "user"], "a1"),
            _transcript(["user"], "a2"),
            _transcript(["assistant", "assistant"], "a3"),
            _transcript(["system", "user", "user", "assistant"], "a4", start=5),
        ]
    )
    s = build_samples(tr, window=20)
    assert s["sample_id"].tolist() == [
        "p1/a1/w0/m1",
        "p1/a1/w0/m3",
        "p1/a2/w0/m0",
        "p1/a4/w5/m6",
        "p1/a4/w5/m7",
    ]
    first = s.iloc[0]
    assert [m["role"] for m in first["messages"]] == ["assistant", "user"]
    assert first["context_depth"] == 1 and first["turn"] == 0
    assert s.iloc[1]["original_reply"] is None  # no message after the last user turn
    assert s.iloc[2]["original_reply"] is None and s.iloc[2]["context_depth"] == 0
    # two user messages in a row: the first has no original reply
    assert s.iloc[3]["original_reply"] is None
    assert s.iloc[4]["original_reply"] == "a4:8:assistant"
    assert [m["role"] for m in s.iloc[4]["messages"]] == ["system", "user", "user"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda d: d.assign(role=d["role"].replace({"assistant": "bot"})),
            r"'c1'.*message 1.*'bot'",
        ),
        (lambda d: d.assign(content=d["content"].where(d["index"] != 2, "  ")), r"'c1'.*message 2"),
        (lambda d: d.assign(index=[0, 1, 3, 4]), r"'c1'.*gap before message index 3"),
        (lambda d: d.assign(index=[0, 1, 1, 2]), r"'c1'.*message index 1 more than once"),
        (lambda d: d.assign(index=[0, 1, 2.5, 3]), r"'c1'.*non-integer message index 2.5"),
        (lambda d: d.drop(columns="role"), r"missing column.*role"),
        (lambda d: d.assign(participant=["p1", "p1", "p2", "p2"]), r"'c1'.*several participants"),
    ],
)
def test_bad_transcripts_name_conversation_and_message(change, match):
    tr = change(_transcript(["user", "assistant", "user", "assistant"]))
    with pytest.raises(TranscriptError, match=match):
        build_samples(tr)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window": 0}, "window"),
        ({"context": -2}, "context"),
        ({"window": 4, "stride": 5}, "stride"),
    ],
)
def test_bad_window_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_samples(_transcript(["user", "assistant"]), **kwargs)


@settings(max_examples=60, deadline=None)
@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "system"]), min_size=1, max_size=45),
    window=st.integers(1, 12),
    stride_frac=st.floats(0.01, 1.0),
    context=st.integers(-1, 6),
)
def test_samples_are_transcript_prefixes(roles, window, stride_frac, context):
    stride = max(1, min(window, round(window * stride_frac)))
    tr = _transcript(roles)
    s = build_samples(tr, window=window, stride=stride, context=context)
    starts = window_starts(len(roles), window, stride)
    expected = sum(sum(r == "user" for r in roles[a : min(a + window, len(roles))]) for a in starts)
    assert len(s) == expected
    assert s["sample_id"].is_unique
    for _, row in s.iterrows():
        pos = row["index"]
        assert roles[pos] == "user"
        assert row["window_start"] <= pos < row["window_start"] + window
        lo = 0 if context == -1 else max(0, row["window_start"] - context)
        want = [{"role": r, "content": f"c1:{i}:{r}"} for i, r in enumerate(roles)][lo : pos + 1]
        assert row["messages"] == want
        assert row["context_depth"] == len(row["messages"]) - 1
    # every user message is sampled at least once
    assert set(s["index"]) == {i for i, r in enumerate(roles) if r == "user"}


def test_export_jsonl_and_load_formats(tmp_path):
    tr = hand_transcripts()
    for name, write in (
        ("t.csv", lambda p: tr.to_csv(p, index=False)),
        ("t.jsonl", lambda p: tr.to_json(p, orient="records", lines=True)),
    ):
        write(tmp_path / name)
        loaded = load_transcripts(tmp_path / name)
        pd.testing.assert_frame_equal(loaded[tr.columns].reset_index(drop=True), tr)
    samples = build_samples(tr)
    path = export_samples_jsonl(samples, tmp_path / "out" / "samples.jsonl")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == len(samples) == 6
    assert lines[1]["sample_id"] == "p1/c1/w0/m2"
    assert lines[1]["messages"] == [
        {"role": "user", "content": "c1 user 0"},
        {"role": "assistant", "content": "c1 assistant 1"},
        {"role": "user", "content": "c1 user 2"},
    ]
    assert lines[1]["original_reply"] == "c1 assistant 3"
    with pytest.raises(TranscriptError, match=r"unknown transcript format '\.txt'"):
        (tmp_path / "t.txt").write_text("x")
        load_transcripts(tmp_path / "t.txt")
