"""Study data: schema and validation, loading and saving, simulated studies, replay samples.

Trajectory studies are ``xarray.Dataset`` objects with dims ``rater x model x day`` (see
:mod:`delusion_bayes.data.schema`); replay studies are ``sample x model x code``
(:mod:`delusion_bayes.data.replay`).
"""

from __future__ import annotations

from .._lazy import lazy_getattr
from .io import StudyFormatError, load_study, save_study
from .schema import DAY, INTERVENTION_TYPE, INTERVENTION_TYPES, MODEL, RATER, RESAMPLE, censor_day
from .simulate import simulate_study
from .validate import StudyValidationError, validate

#: replay-study names and their modules, imported on first use (optional at import time)
_LAZY = {
    **dict.fromkeys(
        (
            "build_samples",
            "simulate_replay",
            "load_transcripts",
            "export_samples_jsonl",
            "load_judge_scores",
            "validate_replay",
            "load_replay",
            "save_replay",
            "replay_dataset",
        ),
        ".replay",
    ),
    "load_delusioneval": ".delusioneval",  # the DelusionEval release's evaluation rows (real data)
    "load_inspect_logs": ".inspect_logs",  # Inspect AI evaluation logs (DelusionEval's, any scored)
    # replicated studies (chatbot -> conversation -> turn; issue 50)
    **dict.fromkeys(("validate_replicated", "ReplicatedValidationError"), ".replicated"),
    **dict.fromkeys(("load_replicated", "save_replicated"), ".replicated_io"),
    **dict.fromkeys(("read_replicated_csv", "write_replicated_template"), ".replicated_csv"),
    "load_spiral_bench": ".spiral_bench",  # Spiral-Bench result files (real data)
    "simulate_replicated": ".replicated_simulate",  # SIMULATED, with known truth (true_*)
    "from_frames": ".frames",  # a trajectory study from pandas DataFrames (notebooks)
}
__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "DAY",
    "INTERVENTION_TYPE",
    "INTERVENTION_TYPES",
    "MODEL",
    "RATER",
    "RESAMPLE",
    "StudyFormatError",
    "StudyValidationError",
    "censor_day",
    "load_study",
    "save_study",
    "simulate_study",
    "validate",
    *_LAZY,
]
