"""Malformed replay studies, given to a run (``data.kind=replay data.source=file``) or to
``db.data.load_replay``, raise the package's own errors naming the file (issue 18, item 3): the
loader checks the files before reading them and re-raises any library exception it still meets
(``delusion_bayes.data.replay``)."""

from __future__ import annotations

import json

import pytest

from delusion_bayes.config import compose
from delusion_bayes.data import StudyFormatError
from delusion_bayes.data.replay import ReplayValidationError, build_samples, save_replay
from delusion_bayes.data.replay_windows import TranscriptError
from delusion_bayes.pipeline import load_data

from .replay.conftest import hand_scores, hand_transcripts

OURS = (StudyFormatError, ReplayValidationError, TranscriptError)


def _replay_dir(tmp_path):
    d = tmp_path / "replay"
    d.mkdir()
    hand_transcripts().to_csv(d / "transcripts.csv", index=False)
    hand_scores(build_samples(hand_transcripts())).to_csv(d / "judge_scores.csv", index=False)
    (d / "codes.csv").write_text("code,category,cutoff\nA,delusional,7\nB,delusional,\n")
    (d / "windows.json").write_text('{"window": 20, "context": 0}')
    return d


def _load(path):
    cfg = compose(["experiment=replay", "data.source=file", f"data.path={path}"])
    return load_data(cfg.data)


def test_the_good_replay_directory_loads(tmp_path):
    ds = _load(_replay_dir(tmp_path))
    assert "score" in ds and ds.sizes["model"] == 2


def _corrupt(d, case):
    if case == "malformed csv":
        (d / "transcripts.csv").write_text(
            'participant,conversation,index,role,content\np1,c1,0,user,"never closed\n'
        )
        return "transcripts.csv"
    if case == "latin-1 transcripts":
        text = (d / "transcripts.csv").read_text().replace("c1 user 0", "café")
        (d / "transcripts.csv").write_bytes(text.encode("latin-1"))
        return "transcripts.csv"
    if case == "truncated jsonl":
        lines = hand_transcripts().to_json(orient="records", lines=True).splitlines()
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        (d / "transcripts.csv").unlink()
        (d / "transcripts.jsonl").write_text("\n".join(lines) + "\n")
        return "transcripts.jsonl"
    if case == "empty judge_scores":
        (d / "judge_scores.csv").write_bytes(b"")
        return "judge_scores.csv"
    if case == "malformed windows.json":
        (d / "windows.json").write_text('{"window": 20,')
        return "windows.json"
    if case == "unknown key in windows.json":
        (d / "windows.json").write_text('{"window": 20, "widnow": 3}')
        return "windows.json"
    if case == "windows.json not an object":
        (d / "windows.json").write_text("[20, 0]")
        return "windows.json"
    if case == "non-numeric cutoff":
        (d / "codes.csv").write_text("code,category,cutoff\nA,delusional,seven\n")
        return "codes.csv"
    raise AssertionError(case)


CASES = [
    "malformed csv",
    "latin-1 transcripts",
    "truncated jsonl",
    "empty judge_scores",
    "malformed windows.json",
    "unknown key in windows.json",
    "windows.json not an object",
    "non-numeric cutoff",
]


@pytest.mark.parametrize("via", ["run", "load_replay"])
@pytest.mark.parametrize("case", CASES)
def test_corrupt_replay_files_raise_our_error_naming_the_file(tmp_path, case, via):
    """The same through a run's config and through ``db.data.load_replay`` called directly
    (the loader itself checks the files and translates library errors)."""
    from delusion_bayes.data import load_replay

    d = _replay_dir(tmp_path)
    fname = _corrupt(d, case)
    with pytest.raises(OURS) as err:
        _load(d) if via == "run" else load_replay(d)
    assert fname in str(err.value), str(err.value)
    assert "expected" in str(err.value)


@pytest.mark.parametrize("cut", [0, 0.5])
def test_truncated_or_empty_replay_netcdf(tmp_path, cut):
    from delusion_bayes.data.replay import replay_dataset

    samples = build_samples(hand_transcripts())
    path = save_replay(replay_dataset(samples, hand_scores(samples)), tmp_path / "replay.nc")
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * cut)])
    with pytest.raises(StudyFormatError) as err:
        _load(path)
    assert "replay.nc" in str(err.value) and "expected" in str(err.value)


def test_windows_json_with_a_string_window(tmp_path):
    d = _replay_dir(tmp_path)
    (d / "windows.json").write_text(json.dumps({"window": "20"}))
    with pytest.raises(StudyFormatError, match=r"windows.json: window = '20'; expected an integer"):
        _load(d)
