"""The disengagement model: the adjudicated Level A/B outcome as a function of the latent stage,
with model effects, on top of the joint model. The paper's "recognising the crisis and acting on
it dissociate" becomes the model effect ``u_m`` and ``p_level_b_at_stage4[m]``.

Stage as in :mod:`delusion_bayes.models.joint`, plus, for the adjudicated outcome
:math:`D_{m,t} \\in \\{0: \\text{none}, 1: \\text{Level A only}, 2: \\text{Level B}\\}` (Level B
implies Level A, so the pair is one ordinal variable):

.. math::

    \\eta_{m,t} &= \\beta\\,(\\mathrm{stage}_{m,t} - 2.5) + u_m, \\qquad
        u_m = \\sigma_u z^u_m, \\quad z^u \\sim \\mathrm{ZeroSumNormal}(1) \\\\
    P(D_{m,t} \\geq 1) &= \\mathrm{sigmoid}(\\eta_{m,t} - c_1), \\quad
    P(D_{m,t} = 2) = \\mathrm{sigmoid}(\\eta_{m,t} - c_2), \\quad
    c_2 = c_1 + e^{\\gamma}
"""

from __future__ import annotations

from ..data.schema import MODEL, STAGE_MIDPOINT
from .blocks import (
    DAY_NOISE_PRIORS,
    ONSET_PRIORS,
    RATER_PRIORS,
    day_noise_scale,
    marginal_ratings,
    onset_trajectory,
    rater_effects,
    spec_data,
)
from .definition import ModelDef
from .modelspec import ModelSpec
from .priors import make_rv


def build_disengagement(spec: ModelSpec):
    """The ``pm.Model`` of the disengagement model (see the module docstring for the math)."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        sigma_eps = day_noise_scale(spec)
        severity, disc = rater_effects(spec)
        beta = make_rv("beta_level", p["beta_level"])
        sigma_u = make_rv("sigma_u", p["sigma_u"])
        # zero-sum: else the first cutpoint and the mean model effect trade off
        z_u = pm.ZeroSumNormal("z_u", sigma=1.0, dims=MODEL)
        u = pm.Deterministic("u", sigma_u * z_u, dims=MODEL)
        c1 = make_rv("c_level_1", p["c_level_1"])
        gap = make_rv("log_gap_level", p["log_gap_level"])
        c2 = c1 + pt.exp(gap)
        md_model, md_day = spec_data(spec, "md_model"), spec_data(spec, "md_day")
        marginal_ratings(
            spec,
            mu[md_model, md_day],
            sigma_eps[md_model],
            severity,
            disc,
            level=(beta, u, c1, c2),
        )
        eta4 = beta * (4.0 - STAGE_MIDPOINT) + u  # at stage 4
        pm.Deterministic("p_level_a_at_stage4", pm.math.sigmoid(eta4 - c1), dims=MODEL)
        pm.Deterministic("p_level_b_at_stage4", pm.math.sigmoid(eta4 - c2), dims=MODEL)
    return model


DEFINITION = ModelDef(
    name="disengagement",
    build=build_disengagement,
    priors={
        **ONSET_PRIORS,
        **DAY_NOISE_PRIORS,
        **RATER_PRIORS,
        # ordinal disengagement level (0 none, 1 Level A only, 2 Level B): slope on the stage
        "beta_level": {"dist": "Normal", "mu": 1.0, "sigma": 1.5},
        # model effects u_m = sigma_u * z_m ("recognises but does not act" = low u_m)
        "sigma_u": {"dist": "HalfNormal", "sigma": 1.5},
        # first cutpoint (at stage 2.5) and log gap to the second
        "c_level_1": {"dist": "Normal", "mu": 1.0, "sigma": 2.0},
        "log_gap_level": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    },
    math=__doc__,
    day_noise=True,
    levels=True,
    needs=(("level_a", "adjudication.csv"), ("level_b", "adjudication.csv")),
    inputs=frozenset({"trajectory", "cutpoints", "group_terms"}),
    target_accept=0.9,
    # the posterior milestones' first Level-B day reads its predicted levels
    always_predictive=True,
    fit_rank=0,
)
