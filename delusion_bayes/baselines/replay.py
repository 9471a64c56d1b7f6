"""The replay-study (DelusionEval) analyses, importable from one place.

Prevalence tables (:mod:`.replay_tables`), turn-position and context-depth analyses
(:mod:`.replay_dynamics`), the cluster-bootstrap machinery they share (:mod:`.replay_bootstrap`);
the whole analysis of a study is :func:`delusion_bayes.baselines.analyse_replay`.
"""

from .replay_bootstrap import (
    bootstrap_support,
    bootstrap_weights,
    cluster_units,
    count_columns,
    to_units,
)
from .replay_dynamics import (
    replay_depth_curve,
    replay_depth_lpm,
    replay_onset_persistence,
    replay_turn_profile,
)
from .replay_tables import (
    replay_deltas,
    replay_family_comparison,
    replay_leave_one_participant_out,
    replay_prevalence,
    true_category_prevalence,
)

__all__ = [
    "bootstrap_support",
    "bootstrap_weights",
    "cluster_units",
    "count_columns",
    "replay_deltas",
    "replay_depth_curve",
    "replay_depth_lpm",
    "replay_family_comparison",
    "replay_leave_one_participant_out",
    "replay_onset_persistence",
    "replay_prevalence",
    "replay_turn_profile",
    "to_units",
    "true_category_prevalence",
]
