"""The joint model: hierarchical logistic onset of a latent stage, rated ordinally by every rater,
with each model-day's stage integrated out of the likelihood.

For model ``m`` (of M), day ``t`` (1..T) and rater ``r``:

.. math::

    L_m &= 1 + \\exp(\\mu_L + \\sigma_L z^L_m) \\\\
    k_m &= K_{\\max}\\,\\mathrm{sigmoid}(a_m - \\log K_{\\max}), \\quad
        a_m \\sim N(\\mu_{\\log k}, \\sigma_{\\log k})
        \\quad (1/k_m = e^{-a_m} + 1/K_{\\max},\\ K_{\\max} = 20) \\\\
    t_{50,m} &\\sim N\\big(T \\mu_{t50},\\, T \\sigma_{t50}\\big) \\\\
    \\mathrm{stage}_{m,t} &\\sim N\\big(\\mu_{m,t},\\, \\sigma_{\\varepsilon,m}\\big), \\quad
        \\mu_{m,t} = 1 + (L_m - 1)\\,\\mathrm{sigmoid}(k_m (t - t_{50,m})) \\\\
    \\log\\sigma_{\\varepsilon,m} &= \\mu_{\\log\\varepsilon}
        + \\sigma_{\\log\\varepsilon} z^{\\varepsilon}_m \\\\
    P(y_{r,m,t} > j \\mid \\mathrm{stage}) &=
        \\mathrm{sigmoid}\\big(d_r(\\mathrm{stage}_{m,t} + s_r - c_j)\\big),
        \\quad c = (1.5, 2.5, 3.5) \\\\
    s &\\sim \\mathrm{ZeroSumNormal}(0.5), \\qquad \\log d_r \\sim N(1.2, 0.5)

and the likelihood of model-day (m, t) is its ratings with the stage integrated out
(:func:`delusion_bayes.models.blocks.marginal_ratings`); ``stage`` is drawn after sampling from
its conditional posterior (:mod:`delusion_bayes.models.latent`). Group terms add
``b_{p,g}[group_g(m)]`` to the hyper-means of (log(L - 1), log k, t50/T). Why this structure
(day noise integrated out, the never-turners' t50 wall coordinate, partial centring, fixed rater
priors): ``docs/dev/design-notes.md#modelsjointpy``.

Fixed cutpoints define the latent on the paper's 1-4 scale (Statistical Analysis), so L, k and
t50 keep the least-squares fit's meaning; the rater severity and discrimination carry what free
cutpoints would add (``docs/dev/design-notes.md``, "From models/").

``t50`` is not bounded by the study: a never-turner has its posterior mass beyond day T, not a
failed fit. A model-day no rater saw is NaN in ``stage``.
"""

from __future__ import annotations

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


def build_joint(spec: ModelSpec):
    """The ``pm.Model`` of the joint model (see the module docstring for the math)."""
    import pymc as pm

    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        sigma_eps = day_noise_scale(spec)
        severity, disc = rater_effects(spec)
        md_model, md_day = spec_data(spec, "md_model"), spec_data(spec, "md_day")
        marginal_ratings(spec, mu[md_model, md_day], sigma_eps[md_model], severity, disc)
    return model


DEFINITION = ModelDef(
    name="joint",
    build=build_joint,
    priors={**ONSET_PRIORS, **DAY_NOISE_PRIORS, **RATER_PRIORS},
    math=__doc__,
    day_noise=True,
    inputs=frozenset({"trajectory", "cutpoints", "group_terms"}),
    target_accept=0.9,
    fit_rank=1,
    population=True,
)
