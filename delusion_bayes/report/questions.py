"""The one line under every table or figure that puts a baseline beside a posterior: the question
each column answers (issue 28, item 5). One place, so the supplement says the same thing
wherever a pair appears and the tests can look for it."""

from __future__ import annotations

#: the prefix every question line starts with (the tests look for it)
PREFIX = "Questions:"
#: the marker of a prior-driven posterior cell (Table D1)
PRIOR_DRIVEN = "†"
#: the marker of posterior columns from a fit that fixed the t50 population scale (issue 55)
FIXED_SCALE = "‡"


def fixed_scale_note() -> str:
    """The line under every table whose posterior comes from a fit with ``sigma_t50`` fixed."""
    return (
        f"{FIXED_SCALE} fitted with the t50 population scale sigma_t50 FIXED at its prior's root "
        "mean square (too few chatbots turned: the data do not identify it), not "
        "estimated: a different model from the one the other studies get, chosen from these "
        "data. Every t50 interval, and each milestone and contrast that depends on t50, rests "
        "on that value; simulation-based calibration shows this fit miscalibrated in such "
        "studies (docs/dev/models.md, SBC of the joint model)."
    )


def reliability_bias_note() -> str:
    """The line under Table C1's posterior reliability: its known upward bias."""
    return (
        "The posterior reliability is biased upward on short studies with few raters: on "
        "simulated studies of 5 chatbots x 12 days it overstated the simulated reliability "
        "(3 raters: single 0.875, 90% interval 0.827-0.913, against 0.793; 6 raters: some bias "
        "remains), because the rater model's normal latent population does not fit a stage "
        "that piles up at the scale's ends (tests/models/test_rater_recovery.py). Read it as "
        "an upper value."
    )


def finite_label(n: int | None) -> str:
    """How the finite-sample contrast is named wherever it appears: about "these N models"."""
    return f"these {n} models" if n is not None else "these models"


def table_d1() -> str:
    return (
        f"{PREFIX} LS: which logistic curve is closest (least squares) to this model's "
        "consensus trajectory, with its spread over resampled raters? Posterior: what are "
        "this model's L, k and t50 given every rating, the rater model and the priors "
        "(the hierarchy shares information across models)? The posterior's L is on the "
        "latent scale: a rater without severity reads a latent stage above 3.5 as 4, so an L "
        "above 4 is a plateau firmly in stage 4, not a stage beyond the scale."
    )


def prior_driven_note(p: float) -> str:
    return (
        f"{PRIOR_DRIVEN} prior-driven: the posterior of this cell is mostly its prior. Rule: "
        f"the model is a never-turner (P(t50 > last day) > {p:g}): its ratings say only that "
        "the curve has not risen by the last day, so its plateau L, steepness k and the "
        "midpoint beyond the data are filled in by the prior; or the cell's parameter is "
        "flagged 'weak likelihood' in sensitivity.csv."
    )


def table1() -> str:
    return (
        f"{PREFIX} consensus: on which day did the raters' consensus of this one "
        "conversation first reach the milestone (no uncertainty shown)? Posterior: on which "
        "day did the model's latent stage reach it, given all ratings and the model "
        "(median, credible interval; P(never) = probability it is not reached)? Days at "
        "stage 4 differ by definition: the consensus counts days whose raters' median is 4 "
        "(a median of 3.5 is not 4), the posterior counts days whose latent stage is at or "
        "above 3.5, the point from which a rater without severity scores 4; for a chatbot "
        "that turned, the posterior count is therefore the larger."
    )


def table_c1() -> str:
    return (
        f"{PREFIX} baseline: how consistent are the raters' scores across model-days "
        "(α, ICC: variance ratios of the observed scores)? Posterior: what share of the "
        "latent-scale variance of one rater (or of the consensus) is between model-days, "
        "under the rater model?"
    )


def contrasts(n: int | None) -> str:
    return (
        f"{PREFIX} permutation test: do the group labels matter for the process that "
        "produced the chatbots (are the labels exchangeable)? Population: how far apart are "
        "the MEANS of the two groups' populations of chatbots (the difference of population "
        "means, from the model refitted with the grouping; its interval carries the "
        "between-model variation; one new chatbot of a against one of b would differ by "
        "more)? Finite sample (Bayesian section): how do the means of "
        f"{finite_label(n)} differ (only their measurement uncertainty; two groups drawn "
        "from one population differ by chance, and this interval says so)."
    )


def figure1() -> str:
    return (
        f"{PREFIX} least-squares line: which logistic curve fits this model's consensus "
        "best? Posterior band: where does the model's trajectory lie given every rating, "
        "the rater model and the priors? The band is of the latent stage, drawn clipped to "
        "the 1-4 scale (above 3.5 reads as stage 4)."
    )


def replay_prevalence() -> str:
    return (
        f"{PREFIX} bootstrap: how much would the observed share of scored windows vary "
        "over resampled clusters (conversations, windows), no prior? Posterior: what is "
        "the model's prevalence of the category given the scored windows and the "
        "hierarchical prior over cells?"
    )
