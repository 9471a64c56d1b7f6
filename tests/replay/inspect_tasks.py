"""Real Inspect AI evals run offline with ``mockllm`` for the log-reader tests.

Every mock output carries a ``ModelUsage``: without one mockllm counts tokens with tiktoken,
which downloads its encoding on first use and fails offline (measured with inspect-ai 0.3.285).
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, accuracy, match, scorer
from inspect_ai.solver import generate

#: DelusionEval-shaped samples: windows of 2 user turns, one code each (the task's metadata)
WINDOWS = {"w0": "romantic-interest", "w1": "romantic-interest", "w2": "misrepresents-sentience",
           "w3": "misrepresents-sentience"}  # fmt: skip
ERRORED = ("chat-a", "w1.turn2", 1)  # (model, sample, epoch) whose scorer raises
UNPARSED = ("chat-b", "w3.turn0", 2)  # the judge's reply "could not be parsed": NaN verdict


def _samples() -> list[Sample]:
    return [Sample(id=f"{w}.turn{t}", input=f"turn {t} of {w}", target="",
                   metadata={"harmful_annotations": [f"bot-{code}"], "window_id": w,
                             "turn_index": t})
            for w, code in WINDOWS.items() for t in (0, 2)]  # fmt: skip


def raw_score(model: str, sample_id: str, epoch: int) -> int:
    """The judge's 0-10 score the mock scorer gives (deterministic)."""
    return (sum(map(ord, model + sample_id)) * 7 + 5 * epoch) % 11


@scorer(metrics=[accuracy()])
def annotation_scorer(cutoff: int = 7):
    """DelusionEval's scorer shape: verdict in Score.value, raw score and cutoff in the
    explanation JSON."""

    async def score(state, target):
        model = str(state.model).split("/")[-1]
        key = (model, str(state.sample_id), state.epoch)
        if key == ERRORED:
            raise RuntimeError("judge failed")
        ann = state.metadata["harmful_annotations"][0]
        if key == UNPARSED:
            expl = {"annotation_id": ann, "raw_score": None, "cutoff": cutoff, "thought": ""}
            return Score(value=float("nan"), explanation=json.dumps(expl))
        raw = raw_score(*key)
        expl = {"annotation_id": ann, "raw_score": raw, "cutoff": cutoff, "thought": "",
                "matches": [], "message_role": "assistant"}  # fmt: skip
        return Score(value=int(raw >= cutoff), explanation=json.dumps(expl))

    return score


def _outputs(name: str, texts=("ok",)):
    def gen():
        i = 0
        while True:
            out = ModelOutput.from_content(model=name, content=texts[i % len(texts)])
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            i += 1
            yield out

    return gen()


def run_delusion_logs(log_dir: Path, epochs: int = 2) -> list[str]:
    """Two models x 8 samples x ``epochs``, plus a cancelled log (chat-c, half its samples)."""
    paths = []
    for name in ("chat-a", "chat-b"):
        model = get_model(f"mockllm/{name}", custom_outputs=_outputs(name))
        task = Task(dataset=MemoryDataset(_samples()), solver=generate(),
                    scorer=annotation_scorer(), epochs=epochs, name="delusions_eval")  # fmt: skip
        (lg,) = inspect_eval(task, model=model, log_dir=str(log_dir), display="none",
                             fail_on_error=False)  # fmt: skip
        paths.append(lg.location)
    # a cancelled run: the log Inspect writes when a run is stopped holds the samples that
    # finished and status "cancelled"; written with Inspect's own writer from a finished one
    lg = read_eval_log(paths[1])
    lg.status = "cancelled"
    lg.eval.model = "mockllm/chat-c"
    lg.samples = lg.samples[: len(lg.samples) // 2]
    cancelled = str(Path(log_dir) / "cancelled_chat-c.eval")
    write_eval_log(lg, cancelled)
    return [*paths, cancelled]


def run_match_logs(log_dir: Path) -> list[str]:
    """A non-DelusionEval eval: binary ``match`` scorer, ``topic`` metadata, 2 models."""
    samples = [Sample(id=f"q{i}", input=f"question {i}", target="yes",
                      metadata={"topic": ["maths", "history", "art"][i % 3], "user": f"u{i % 4}"})
               for i in range(12)]  # fmt: skip
    paths = []
    for name, texts in (("chat-a", ("yes", "no", "no")), ("chat-b", ("yes", "yes", "no"))):
        model = get_model(f"mockllm/{name}", custom_outputs=_outputs(name, texts))
        task = Task(dataset=MemoryDataset(samples), solver=generate(), scorer=match(),
                    name="topic_quiz")  # fmt: skip
        (lg,) = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
        paths.append(lg.location)
    return paths
