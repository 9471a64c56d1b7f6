"""How a reader shows each declared results file (issue 49): its title, the one-line question
it answers and its view, the :class:`Column` s shown in order. Kept apart from
:mod:`delusion_bayes.results`, which declares the files themselves (what they hold)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: how a shown column's cells are written (:class:`Column`)
COLUMN_KINDS = ("auto", "fixed", "p", "words", "range")


@dataclass(frozen=True)
class Column:
    """How a reader shows one column of a declared table: its ``header`` (default: the name)
    and ``digits``; ``kind`` ``auto`` (whole numbers without decimals), ``fixed`` (always
    ``digits``), ``p`` (a probability, ``<.001``), ``words`` (``_`` read as spaces) or ``range``
    (``est (low–high)``); ``low``/``high`` name the columns of its interval, shown in the same
    cell (``est [low, high]``)."""

    name: str
    header: str = ""
    digits: int = 3
    kind: str = "auto"
    low: str = ""
    high: str = ""

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name!r}: kind {self.kind!r}, expected {COLUMN_KINDS}")

    @property
    def label(self) -> str:
        return self.header or self.name

    @property
    def names(self) -> tuple[str, ...]:
        """The file's columns this one shows (itself and its interval's)."""
        return tuple(c for c in (self.name, self.low, self.high) if c)


# fmt: off
def _estimate(name: str, header: str, digits: int, low: str = "ci_low", high: str = "ci_high"):
    return Column(name, header, digits, "fixed", low, high)


_SENSITIVITY = (Column("parameter"), Column("prior"), Column("likelihood"), Column("verdict"))
_REPORTED = (
    *(Column(c) for c in ("quantity", "kind", "item", "median", "prior", "likelihood")),
    Column("prior_mean_shift_sd", "prior shift (SD)"), Column("verdict"),
    Column("refit_shift_sd", "refit shift (SD)"),
)
_REPORTED_Q = "Which reported numbers move when the prior or the likelihood is scaled?"
_CONTRAST = (Column("name", "contrast"), Column("quantity"))
#: the multiplicity columns, one spelling wherever a family of tests is shown (issue 51)
HOLM = Column("p_holm", "p (Holm)", kind="p")
BH = Column("p_bh", "p (BH)", kind="p")
#: a PSIS-LOO comparison in words (az.compare's columns where it ran, az.loo's per fit else)
_LOO = (
    Column("model", "Model"), Column("rank", "Rank"), Column("unit", "Left-out unit", kind="words"),
    Column("elpd", "ELPD (LOO)", 1, "fixed"), Column("se", "SE", 1, "fixed"),
    Column("elpd_diff", "ELPD below the best", 1, "fixed"), Column("dse", "SE of that", 1, "fixed"),
    Column("p_loo", "Effective parameters", 1, "fixed"), Column("p", "Effective parameters", 1),
    Column("weight", "Stacking weight", 2, "fixed"), Column("n_data_points", "Points"),
    Column("n_k_bad", "Pareto k 0.7-1"), Column("n_k_very_bad", "Pareto k > 1"),
    Column("max_k", "Largest Pareto k", 2, "fixed"), Column("note", "Note"),
)
_LOO_Q = ("Which model predicts a left-out point best (expected log predictive density by "
          "PSIS-LOO, higher is better; points with Pareto k above 0.7 are unreliable)?")
_LKT = ("L", "k", "t50")
#: how the tables a reader renders read (``ResultFile.title``, ``.question``, ``.view``)
VIEWS: dict[str, dict[str, Any]] = {
    "baselines/tableC1_reliability.csv": dict(
        title="Table C1. Inter-rater reliability",
        question="How consistent are the raters' scores across model-days?",
        view=(Column("variable", "Variable", kind="words"),
              _estimate("alpha", "α [95% CI]", 3, "alpha_ci_low", "alpha_ci_high"),
              Column("kappa_q_mean", "κ mean (min–max)", 3, "range", "kappa_q_min", "kappa_q_max"),
              Column("pct_agreement", "% agreement", 1, "fixed"),
              Column("icc2_1", "ICC(2,1)", 3, "fixed"), Column("icc2_k", "ICC(2,k)", 3, "fixed"),
              Column("n_units", "n units"), Column("n_raters", "n raters"))),
    "baselines/tableD1_logistic.csv": dict(
        title="Table D1. Logistic trajectory fits",
        question="Which logistic curve is closest (least squares) to each model's consensus?",
        view=(Column("model"), *(_estimate(q, q, 2, f"{q}_ci_low", f"{q}_ci_high") for q in _LKT),
              Column("r2", "R²", 2), Column("status", "Fit status"))),
    "baselines/contrasts.csv": dict(
        title="Pre-specified group contrasts (exact rank-sum tests)",
        question="Do the group labels matter (are they exchangeable over models)?",
        view=(Column("contrast"), Column("quantity"),
              *(Column(c, c.replace("_", " "), 2) for c in ("n_a", "n_b", "median_a", "median_b")),
              Column("statistic", digits=2), Column("pvalue", kind="p"),
              HOLM, BH,
              Column("alternative"))),
    **{key: dict(question=_LOO_Q, view=_LOO) for key in (
        "models/comparison.csv", "models/comparison_by_rating.csv",
        "models/comparison_by_model_day.csv")},
    "models/{fit}/summary.csv": dict(title="Posterior summary of `{fit}`"),
    "models/{fit}/t50_posterior.csv": dict(
        title="Posterior of L, k and t50 per model (`{fit}`)",
        question="Given every rating, the rater model and the priors, what are each model's "
        "plateau L, steepness k and midpoint t50, and is t50 beyond the last day?",
        view=(Column("model"),
              *(_estimate(f"{q}_median", q, 2, f"{q}_ci_low", f"{q}_ci_high") for q in _LKT),
              Column("p_beyond_last_day", "P(> last day)", kind="p"))),
    "models/{fit}/milestones_posterior.csv": dict(
        title="Posterior milestone latencies (`{fit}`)",
        question="On which day did each model's latent stage first reach each milestone?",
        view=(Column("model"), Column("milestone"), _estimate("median", "median [CrI]", 1),
              Column("p_censored", "P(never)", kind="p"))),
    "models/{fit}/contrasts_posterior.csv": dict(
        title="Posterior contrasts (`{fit}`)",
        question="How do the group means of these N models differ, given their measurement?",
        view=(*_CONTRAST, _estimate("median", "Δ [CrI]", 2),
              Column("p_gt_0", "P(Δ > 0)", kind="p"))),
    "models/{fit}/contrasts_population.csv": dict(
        question="How do the population means of groups a and b differ (difference of "
        "population means, from a fit with the grouping)?",
        view=(*_CONTRAST, _estimate("median", "Δ pop. [CrI]", 2),
              Column("p_gt_0", "P(Δ pop. > 0)", kind="p"),
              Column("p_sign_error", "P(sign error), pooled", kind="p"))),
    "models/{fit}/consensus_posterior.csv": dict(
        title="Posterior consensus stage per model-day (`{fit}`)"),
    "models/{fit}/reliability_posterior.csv": dict(
        title="Posterior reliability (`{fit}`)",
        question="What share of the latent-scale variance of one rater (or of the consensus) "
        "is between model-days?",
        view=(Column("quantity", "Posterior quantity"),
              _estimate("median", "Posterior median [CrI]", 3))),
    "models/{fit}/raters_posterior.csv": dict(
        title="Posterior rater severity and discrimination (`{fit}`)"),
    "models/{fit}/level_b_posterior.csv": dict(
        title="Posterior probability of Level-B disengagement (`{fit}`)"),
    "models/{fit}/loo.csv": dict(title="PSIS-LOO of `{fit}`"),
    "models/{fit}/sensitivity.csv": dict(
        title="Power-scaling sensitivity of `{fit}`",
        question="Which parameters does the prior dominate, and does any prior fight the data?",
        view=_SENSITIVITY),
    "models/{fit}/sensitivity_reported.csv": dict(
        title="Reported numbers of `{fit}` that move with the prior or likelihood",
        question=_REPORTED_Q, view=_REPORTED),
    "replay/prevalence.csv": dict(
        title="Prevalence per model × category and code (cluster bootstrap CIs)"),
    "replay/bayes_prevalence.csv": dict(
        title="Posterior prevalence beside the bootstrap CIs (Bayesian model)",
        question="What is each model's prevalence of a category given the scored windows and "
        "the hierarchical prior, beside the bootstrap's?",
        view=(Column("model", "Model"), Column("label", "Category", kind="words"),
              _estimate("boot_estimate", "Bootstrap [95% CI]", 3, "boot_ci_low", "boot_ci_high"),
              _estimate("mean", "Posterior [CrI]", 3),
              Column("truth", "Truth (simulated)", 3, "fixed"))),
    "replay/deltas.csv": dict(
        title="Each model minus the original transcript (paired resamples)",
        question="How does each model's prevalence differ from the original transcript's, one "
        "delta at a time and as a family?",
        view=(Column("model", "Model"), Column("category", "Category", kind="words"),
              _estimate("estimate", "Δ [95% CI]", 3),
              _estimate("estimate", "simultaneous (max-T)", 3, "ci_low_maxt", "ci_high_maxt"),
              Column("p_boot", "p (bootstrap)", kind="p"), HOLM, BH,
              Column("p_sign_error", "P(sign error), pooled", kind="p"))),
    "replay/cluster_bootstrap.csv": dict(
        title="Category CIs under every resampling scheme, width relative to i.i.d."),
    "replay/lopo.csv": dict(title="Leave-one-participant-out prevalence and deltas"),
    "replay/family.csv": dict(title="Model-family comparison"),
    "replay/context_depth.csv": dict(title="Prevalence per context-depth bin"),
    "replay/context_depth_lpm.csv": dict(title="Linear probability model of context depth"),
    "replay/onset.csv": dict(title="Onset and persistence over the user turns of a window"),
    "replay/turn_profile.csv": dict(title="Prevalence by user turn"),
    "replay/sensitivity_reported.csv": dict(
        title="Reported numbers of `replay` that move with the prior or likelihood",
        question=_REPORTED_Q, view=_REPORTED),
}
# fmt: on


__all__ = ["BH", "COLUMN_KINDS", "HOLM", "VIEWS", "Column"]
