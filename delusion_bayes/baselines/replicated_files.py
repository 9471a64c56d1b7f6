"""The files of the ``replicated`` stage (issue 50): their declarations and a checked reader.

One declaration per file, as arguments of ``results._f`` (stage, name, meaning, columns,
optional columns). Until ``delusion_bayes/results.py`` declares them (it is at its size limit),
:func:`read_table` checks and types a file from these declarations itself, and goes through
``results.read`` once the contract has them; the stage writes through the same declarations
(``stages.replicated.ReplicatedOutputs``) and the report's replicated section reads through
:func:`read_table`, so writer and reader check the same columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from .. import results

STAGE = "replicated"
_CI = "ci_low:float ci_high:float"
_SUMMARY = (
    "n_conversations:int n_observed:int share_occurring:float share_ci_low:float "
    "share_ci_high:float median_first_turn:float median_ci_low:float median_ci_high:float "
    "median_censored:bool cluster:str n_boot:int ci_prob:float"
)
_PER_CONVERSATION = "first_turn:float observed:bool censor_turn:float n_turns_scored:int"
#: the stage's files: arguments of ``results._f`` (stage, name, meaning, columns, optional)
DECLARATIONS: tuple[tuple[str, ...], ...] = (
    (STAGE, "item_means.csv", "per chatbot x item on one scoring rule: mean per turn and "
     "share of turns with the behaviour, conversation-clustered (categories -> conversations) "
     "bootstrap percentile CIs; unscored turns left out and counted",
     f"model:str item:str mean:float {_CI} n_conversations:int n_turns_missing:int "
     "share_with:float share_ci_low:float share_ci_high:float n_turns:int rule:str cluster:str "
     "n_boot:int ci_prob:float"),
    (STAGE, "published_check.csv", "published Spiral-Bench means recomputed from the "
     "turns under the rule that made them (per chatbot)",
     "model:str item:str published:float recomputed:float rule:str abs_diff:float "
     "reproduced:bool"),
    (STAGE, "conversation_means.csv", "per conversation x item: mean per turn on the "
     "rule, share of turns with the behaviour, turns used and unscored",
     "model:str conversation:str item:str mean:float share_with:float n_turns:int "
     "n_turns_missing:int rule:str", "prompt:str category:str"),
    (STAGE, "first_occurrence.csv", "per conversation x item: first turn with the "
     "behaviour, censored at the last scored turn + 1",
     f"model:str conversation:str item:str {_PER_CONVERSATION}", "category:str"),
    (STAGE, "first_occurrence_summary.csv", "per chatbot x item: share of conversations "
     "with the behaviour and median first turn, cluster-bootstrap CIs",
     f"model:str item:str {_SUMMARY}"),
    (STAGE, "contrasts.csv", "chatbot pairs per item on conversation means: sign-flip "
     "permutation test paired by prompt, else exact rank-sum test; Holm and BH over the run's "
     "pairs x items (one family)",
     "item:str a:str b:str paired:bool n_a:int n_b:int mean_a:float mean_b:float diff:float "
     "pvalue:float exact:bool n_permutations:float method:str rule:str",
     "p_holm:float p_bh:float family_size:int"),
    (STAGE, "judge_failed.csv", "turns without a rating per chatbot: failed judge "
     "replies (Spiral-Bench) and unscored turns, never counted as zeros",
     "model:str n_conversations:int n_turns:int n_judge_failed:int n_turns_unscored:int"),
    (STAGE, "reliability.csv", "Krippendorff's alpha per item with two or more raters over "
     "judged turns (model, conversation, turn), level from the item's scale, unit-bootstrap "
     "percentile CI",
     f"item:str n_raters:int n_units:int alpha:float {_CI} level:str",
     "rater_kinds:str n_boot:int"),
    (STAGE, "milestones_conversations.csv", "the paper's milestones per conversation from "
     "the raters' median recognition (first_clinical: >= 3; first_stable: 3 turns at 4), "
     "censored at the conversation's last rated turn + 1",
     f"model:str conversation:str milestone:str {_PER_CONVERSATION}", "category:str"),
    (STAGE, "milestones.csv", "per chatbot x milestone: share of conversations reaching it "
     "and median turn, conversation-clustered bootstrap CIs",
     f"model:str milestone:str {_SUMMARY}"),
    (STAGE, "bayes_item_means.csv", "per chatbot x item: the behaviour model's posterior of "
     "the expected value per judged turn of a new conversation (same rule as item_means), "
     "beside item_means' bootstrap mean and CI",
     f"model:str item:str median:float {_CI} mean:float sd_conversation:float "
     "boot_mean:float boot_ci_low:float boot_ci_high:float rule:str likelihood:str"),
    (STAGE, "bayes_contrasts.csv", "chatbot pairs per item for a new conversation: posterior "
     "difference A - B with its interval, P(A higher), P(A worse)",
     f"item:str a:str b:str diff:float {_CI} p_a_higher:float p_a_worse:float "
     "worse_when:str"),
    (STAGE, "gate.json", "the behaviour model's diagnostics gate (R-hat, ESS, divergences)"),
    (STAGE, "bayes_diagnostics.csv", "per-parameter diagnostics of the behaviour model",
     "parameter:str r_hat:float ess_bulk:float ess_tail:float"),
    (STAGE, "bayes_trajectories.csv", "per chatbot x quantity: the trajectory model with a "
     "conversation level, for a new conversation: expected t50, censored milestones, "
     "P(never), between-conversation SD of t50 (recognition item on 1-4 only)",
     f"model:str quantity:str median:float mean:float {_CI} prob:float trajectory_model:str "
     "conversation_level:bool scale:str note:str"),
    (STAGE, "bayes_trajectory_contrasts.csv", "chatbot pairs per quantity, a new conversation "
     "of each (trajectory model with a conversation level): difference A - B of t50, "
     "milestones, P(never) with its interval, P(A lower), P(A higher)",
     f"quantity:str a:str b:str diff:float {_CI} p_a_lower:float p_a_higher:float prob:float "
     "trajectory_model:str conversation_level:bool note:str"),
    (STAGE, "trajectory_gate.json", "the conversation-level trajectory fit's diagnostics gate"),
    (STAGE, "trajectory_diagnostics.csv", "per-parameter diagnostics of that fit",
     "parameter:str r_hat:float ess_bulk:float ess_tail:float"),
    (STAGE, "index.json", "what the stage wrote: {files, headline, notes, settings, skipped}"),
)  # fmt: skip
#: required then optional columns of each CSV, with their dtypes
DTYPES: dict[str, dict[str, str]] = {
    d[1]: dict(c.rsplit(":", 1) for c in " ".join(d[3:5]).split())
    for d in DECLARATIONS
    if len(d) > 3
}
COLUMNS: dict[str, list[str]] = {
    d[1]: [c.rsplit(":", 1)[0] for c in d[3].split()] for d in DECLARATIONS if len(d) > 3
}


class ReplicatedFileError(results.ResultFileError):
    """A ``replicated/`` file that does not match its declaration (names file and columns)."""


def check_columns(name: str, columns: list[str], where: str) -> None:
    """:class:`ReplicatedFileError` when ``columns`` lack a declared column of ``name``."""
    missing = [c for c in COLUMNS[name] if c not in columns]
    if missing:
        raise ReplicatedFileError(
            f"{where}: missing columns {missing} of {STAGE}/{name}; declared: {COLUMNS[name]} "
            "(delusion_bayes/baselines/replicated_files.py)"
        )


def read_table(run_dir: str | Path, name: str) -> Any:
    """``run_dir/replicated/<name>`` checked against its declaration and typed (a DataFrame, or
    a dict for ``index.json``); None when the stage did not write it."""
    key = f"{STAGE}/{name}"
    if key in results.FILES:
        return results.read(run_dir, key)
    path = Path(run_dir) / STAGE / name
    if not path.is_file():
        return None
    if name.endswith(".json"):
        return json.loads(path.read_text())
    df = pd.read_csv(path)
    check_columns(name, [str(c) for c in df.columns], str(path))
    for col, dtype in DTYPES[name].items():
        if col not in df:
            continue
        if dtype == "float":
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
        elif dtype == "int":
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("Int64")
        elif dtype == "bool":
            df[col] = df[col].map(lambda v: str(v).strip().lower() in ("true", "1"))
        else:
            df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    return df


__all__ = [
    "COLUMNS",
    "DECLARATIONS",
    "DTYPES",
    "ReplicatedFileError",
    "check_columns",
    "read_table",
]
