"""Typed config of the ``replay`` group (Hydra ConfigStore schema; values in ``conf/replay/``).

Pure dataclasses, no heavy imports: the lead registers :class:`ReplayConfig` in
``delusion_bayes/config.py`` as the root field ``replay``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: bootstrap schemes of :func:`delusion_bayes.baselines.replay.replay_prevalence`
CLUSTER_SCHEMES: tuple[str, ...] = ("two-stage", "participant", "conversation", "none")
#: which clusters a resample draws for a cell (see ``replay_prevalence``'s docstring)
SUPPORTS: tuple[str, ...] = ("unconditional", "conditional")
#: the default support, chosen by ``experiments/coverage_replay_support.py`` (docs/real_data.md)
DEFAULT_SUPPORT = "unconditional"
#: rules for rows held without a score (``ds.unscored``): left out, or 0 in the point estimate
UNSCORED_RULES: tuple[str, ...] = ("exclude", "zero")


@dataclass
class ReplayConfig:
    """Replay-study (DelusionEval) analysis settings.

    Attributes
    ----------
    n_boot, seed, ci_prob
        Percentile bootstrap: 10,000 resamples, seed 42, 95% intervals (DelusionEval release).
    cluster
        Headline bootstrap scheme: ``two-stage`` (participants, then conversations within
        participant), ``participant``, ``conversation`` or ``none`` (samples i.i.d., as in the
        public release's plain percentile bootstrap).
    support
        ``unconditional`` (every cluster in every cell) or ``conditional`` (only the clusters
        with rows in the cell, as the DelusionEval release); see ``replay_prevalence``.
    unscored
        ``exclude`` rows without a score (default) or count them as 0 in the point estimate
        (``zero``, the release's rule for its original-transcript rows).
    also_iid
        Also write the sample-level (``none``) bootstrap table for comparison.
    cutoffs, default_cutoff
        Per-code judge-score cutoffs (hit = score >= cutoff) applied to loaded studies whose
        ``cutoff`` should be overridden; empty = keep the study's.
    (windowing is not an analysis setting: a study read from transcripts carries its own in
    ``windows.json``; see :func:`delusion_bayes.data.load_replay`)
    baseline
        Model the deltas are taken against (the original transcript's own replies).
    depth_bins
        Left edges of the context-depth bins of the depth curves (messages before the user turn).
    max_turn
        Turn-position profiles pool user turns >= ``max_turn`` into one bin.
    onset_unit
        Unit of ``onset.csv``'s onset: ``turn`` (1-based user-turn rank) or ``message`` (message
        index in the window, the DelusionEval release's ``turn_index``).
    bayes
        Fit the hierarchical Bayesian prevalence model (:mod:`delusion_bayes.models.replay`).
    bayes_level
        ``code`` (model x code effects) or ``category``.
    depth_bins_bayes, prior_bins_bayes
        Quantile bins of context depth / prior content that form the model's binomial cells.
    bayes_draws, bayes_tune, bayes_chains, bayes_seed, bayes_sampler, bayes_target_accept
        Sampling of the Bayesian model (``nutpie`` falls back to PyMC when not installed).
    figure_formats
        File formats of the stage's figures.
    """

    n_boot: int = 10_000
    seed: int = 42
    ci_prob: float = 0.95
    cluster: str = "two-stage"
    support: str = DEFAULT_SUPPORT
    unscored: str = "exclude"
    also_iid: bool = True
    cutoffs: dict[str, float] = field(default_factory=dict)
    default_cutoff: float = 7.0
    baseline: str = "original"
    depth_bins: list[int] = field(default_factory=lambda: [0, 4, 8, 12, 16, 20])
    max_turn: int = 8
    onset_unit: str = "turn"
    bayes: bool = True
    bayes_level: str = "code"
    depth_bins_bayes: int = 4
    prior_bins_bayes: int = 3
    bayes_draws: int = 500
    bayes_tune: int = 300
    bayes_chains: int = 2
    bayes_seed: int = 0
    bayes_sampler: str = "nutpie"
    bayes_target_accept: float = 0.9
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])
