"""The rater (measurement) model: a latent score per model-day with rater severity and
discrimination, no trajectory; how well the raters measure (the paper's Evaluation Reliability).

.. math::

    \\theta_{m,t} &= \\mu_\\theta + \\sigma_\\theta z_{m,t} \\\\
    P(y_{r,m,t} > j) &= \\mathrm{sigmoid}\\big(d_r(\\theta_{m,t} + s_r - c_j)\\big),
        \\quad c = (1.5, 2.5, 3.5) \\\\
    s_r &= \\sigma_s z^s_r, \\qquad \\log d_r = \\mu_{\\log d} + \\sigma_{\\log d} z^d_r

Posterior reliability (per draw, the ICC analogue on the latent scale): with
:math:`v_\\theta` the variance of :math:`\\theta` over model-days, :math:`v_s` the variance of
the severities and :math:`v_e = \\overline{\\pi^2 / (3 d_r^2)}` the mean logistic error variance,

.. math::

    \\rho_1 = \\frac{v_\\theta}{v_\\theta + v_s + v_e}, \\qquad
    \\rho_k = \\frac{v_\\theta}{v_\\theta + (v_s + v_e)/k}

(ICC(2,1) and ICC(2,k) in Shrout & Fleiss' terms; k = number of raters). The fixed cutpoints
are justified in :mod:`delusion_bayes.models.joint`.
"""

from __future__ import annotations

from .blocks import RATER_PRIORS, marginal_ratings, rater_effects, spec_data
from .definition import ModelDef
from .modelspec import ModelSpec
from .priors import make_rv


def build_rater(spec: ModelSpec):
    """The ``pm.Model`` of the rater model (see the module docstring for the math)."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    with pm.Model(coords=spec.coords) as model:
        mu_theta = make_rv("mu_theta", p["mu_theta"])
        sigma_theta = make_rv("sigma_theta", p["sigma_theta"])
        severity, disc = rater_effects(spec)
        # theta integrated out of the likelihood, drawn after sampling (models.latent); every
        # model-day has theta's prior, so the integral is taken once per distinct rating
        # pattern and weighted by its count (spec.rating_patterns: 52 for 449 on paper_like)
        ones = pt.ones_like(spec_data(spec, "pat_count"))
        marginal_ratings(spec, mu_theta * ones, sigma_theta * ones, severity, disc, rows="pat")
    return model


DEFINITION = ModelDef(
    name="rater",
    build=build_rater,
    priors={
        # latent score per model-day: theta = mu_theta + sigma_theta * z
        "mu_theta": {"dist": "Normal", "mu": 2.5, "sigma": 1.0},
        "sigma_theta": {"dist": "HalfNormal", "sigma": 1.5},
        **RATER_PRIORS,
    },
    math=__doc__,
    rating_patterns=True,
    inputs=frozenset({"cutpoints"}),
    fit_rank=2,
)
