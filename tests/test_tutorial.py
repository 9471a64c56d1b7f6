"""``docs/tutorial.md`` runs as written: every code block, in order, in a fresh folder.

Python blocks share one namespace (as in a notebook); each line of a bash block is one command,
``delusion-bayes`` run as ``python -m delusion_bayes`` from this checkout. The tutorial itself
uses small sizes (the template study, 2 chains), so nothing is substituted: what a reader
copies is what this test runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)
SUMMARIZE = (
    "import sys; from delusion_bayes.sweep import summarize_main; sys.exit(summarize_main())"
)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(TUTORIAL.read_text())]


def _command(line: str) -> list[str]:
    args = shlex.split(line)
    if args[0] == "delusion-bayes":
        return [sys.executable, "-m", "delusion_bayes", *args[1:]]
    if args[0] == "delusion-bayes-summarize":
        return [sys.executable, "-c", SUMMARIZE, *args[1:]]
    raise AssertionError(f"the tutorial runs only delusion-bayes commands, not {args[0]!r}")


def test_tutorial_has_the_steps():
    kinds = [k for k, _ in blocks()]
    assert kinds.count("bash") == 2 and kinds.count("python") >= 5
    text = TUTORIAL.read_text()
    for step in ("init-study", "stages=[baselines]", "db.models.fit", "savefig", " -m "):
        assert step in text, step


@pytest.mark.slow
def test_tutorial_runs(tmp_path, monkeypatch):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MPLBACKEND": "Agg",
        "DELUSION_BAYES_CACHE": os.environ.get("DELUSION_BAYES_CACHE", str(tmp_path / "cache")),
    }
    monkeypatch.setenv("DELUSION_BAYES_CACHE", env["DELUSION_BAYES_CACHE"])
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__tutorial__"}
    for i, (kind, code) in enumerate(blocks()):
        if kind == "python":
            exec(compile(code, f"{TUTORIAL.name}, block {i}", "exec"), namespace)  # noqa: S102
            continue
        for line in code.strip().splitlines():
            out = subprocess.run(_command(line), capture_output=True, text=True, env=env,
                                 cwd=tmp_path, timeout=600)  # fmt: skip
            assert out.returncode == 0, (line, out.stdout[-2000:], out.stderr[-3000:])
    assert (tmp_path / "t50_baseline_vs_joint.png").stat().st_size > 10_000
    assert sorted(namespace["summary"]["baselines.stable_run"].unique()) == [2, 3]
    assert set(namespace["post"]["t50"].dims) == {"chain", "draw", "model"}
