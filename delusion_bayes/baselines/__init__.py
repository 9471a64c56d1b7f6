"""The papers' own (frequentist) analyses, re-implemented and checked against published values.

Trajectory studies: reliability (Table C1), consensus, milestones (Table 1), logistic fits with a
rater bootstrap (Table D1), rank-sum permutation contrasts, intervention profiles (Table 2,
Figure 2, section F), all in :func:`analyse_trajectory`; replay studies in :func:`analyse_replay`.
Study-level functions return a :class:`BaselineResult` (``.summary``, ``.to_latex()``).
"""

from .alpha import alpha_bootstrap, krippendorff_alpha
from .config import BaselinesConfig, ContrastConfig
from .consensus import consensus, consensus_np
from .logistic import LogisticFit, fit_logistic, fit_logistic_batch, logistic, logistic_bootstrap
from .milestones import milestones
from .multiplicity import adjust_family, benjamini_hochberg, holm, maxt_intervals
from .permutation import (
    RankSumResult,
    Skipped,
    applicable_contrasts,
    contrast_groups,
    min_two_sided_p,
    permutation_contrasts,
    rank_sum_distribution,
    rank_sum_test,
)
from .profiles import (
    SpearmanResult,
    intensity_by_stage,
    intervention_profiles,
    naive_profiles,
    plot_intensity_by_stage,
    spearman,
)
from .rankings import plot_ranks, rank_distribution, rank_draws, rankings
from .reliability import (
    adjudication_agreement,
    cohen_kappa,
    icc,
    percent_agreement,
    reliability_table,
    weighted_kappa,
)
from .replay import (
    replay_deltas,
    replay_depth_curve,
    replay_family_comparison,
    replay_leave_one_participant_out,
    replay_onset_persistence,
    replay_prevalence,
)
from .replay_study import ReplayAnalysis, analyse_replay
from .replicated import conversation_table, item_means, published_check
from .replicated_compare import chatbot_contrasts, first_occurrence, first_occurrence_summary
from .results import BaselineResult
from .trajectory import TrajectoryAnalysis, analyse_trajectory, recoded_codes, t50_for_ranking

__all__ = [
    "BaselineResult",
    "BaselinesConfig",
    "ContrastConfig",
    "LogisticFit",
    "RankSumResult",
    "ReplayAnalysis",
    "SpearmanResult",
    "TrajectoryAnalysis",
    "adjudication_agreement",
    "alpha_bootstrap",
    "analyse_replay",
    "analyse_trajectory",
    "cohen_kappa",
    "consensus",
    "consensus_np",
    "contrast_groups",
    "fit_logistic",
    "fit_logistic_batch",
    "icc",
    "intensity_by_stage",
    "intervention_profiles",
    "krippendorff_alpha",
    "logistic",
    "logistic_bootstrap",
    "milestones",
    "naive_profiles",
    "percent_agreement",
    "permutation_contrasts",
    "applicable_contrasts",
    "min_two_sided_p",
    "Skipped",
    "plot_intensity_by_stage",
    "rank_sum_distribution",
    "rank_sum_test",
    "recoded_codes",
    "reliability_table",
    "replay_deltas",
    "replay_depth_curve",
    "replay_family_comparison",
    "replay_leave_one_participant_out",
    "replay_onset_persistence",
    "replay_prevalence",
    "spearman",
    "t50_for_ranking",
    "weighted_kappa",
    # replicated studies (issue 50)
    "chatbot_contrasts",
    "conversation_table",
    "first_occurrence",
    "first_occurrence_summary",
    "item_means",
    "published_check",
    # multiplicity and rankings (issue 51)
    "adjust_family",
    "benjamini_hochberg",
    "holm",
    "maxt_intervals",
    "plot_ranks",
    "rank_distribution",
    "rank_draws",
    "rankings",
]
