"""The joint model: hierarchical logistic onset of a latent stage, rated ordinally by every rater,
with each model-day's stage integrated out of the likelihood.

Math
----
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

and the likelihood of model-day (m, t) is its ratings with the stage integrated out,
``log int prod_r p(y_{r,m,t} | s) N(s; mu_{m,t}, sigma_eps_m) ds`` (16-node Gauss-Hermite on a
proposal built from the prior and the ratings: :func:`delusion_bayes.models.blocks.
marginal_ratings`). The stage's posterior is drawn after sampling, per parameter draw from its
conditional posterior (:mod:`delusion_bayes.models.latent`), so ``stage`` is in the posterior
as before. Optional group terms (``group_terms=["vendor", ...]``) add ``b_{p,g}[group_g(m)]``
to the hyper-means of ``p`` in (log(L - 1), a = log k, t50/T). Hyper-priors:
:mod:`delusion_bayes.models.priors`.

Why this structure (measurements: ``docs/design-notes.md#modelsjointpy``; history in
``docs/models.md``):

* **The day noise is integrated out**: sampled, the model-day stages made a funnel with the
  noise scales.
* **Never-turners' t50 in the coordinate of their wall** (:func:`delusion_bayes.models.
  blocks._t50`): their ratings bound only ``k (t50 - T) > ~2``, a wall whose width in any
  whitened t50 coordinate shrinks with k.
* **Partial centring of log k and t50**: centred for models whose median rating reaches 2.5
  (the data pin them), non-centred for never-turners (they follow the population).
* **Rater effects with fixed priors, no hierarchy over four raters** (a population spread from
  four values is not estimable).
* ``k`` has a soft upper bound ``K_max = 20`` per day, the least-squares fits' ``k_max``
  (:mod:`delusion_bayes.baselines.logistic`): a model that switches overnight leaves the
  likelihood flat in k. ``L - 1`` is log-normal: most turners plateau at the scale top,
  ``L = 4``, an interior point on the log scale.

Why fixed cutpoints: the latent stage is *defined* on the paper's 1-4 recognition scale
(Statistical Analysis: ``m(t) = 1 + (L-1)/(1+e^{-k(t-t50)})``), so L, k and t50 keep the meaning
of the least-squares fit. Fixing the cutpoints half-way between the stages identifies the
location and scale of that latent; what free cutpoints would add is carried by a rater severity
shift ``s_r`` (a rater who sees a stage early) and a rater discrimination ``d_r`` (how sharply a
rater's scores follow the latent). This is a graded-response / many-facet parameterisation, it
needs no ``ordered`` transform (which nutpie rejects), and it is the generative model of
``delusion_bayes.data.simulate_study``.

``t50`` is not bounded by the study: a model that never turns has its posterior mass beyond day
T (``P(t50 > T)`` is a derived quantity), not a failed fit. Missing ratings are not in the
likelihood; a model-day no rater saw is NaN in ``stage``.
"""

from __future__ import annotations

from .blocks import day_noise_scale, marginal_ratings, onset_trajectory, rater_effects
from .spec import ModelSpec


def build_joint(spec: ModelSpec):
    """The ``pm.Model`` of the joint model (see the module docstring for the math)."""
    import pymc as pm

    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        sigma_eps = day_noise_scale(spec)
        severity, disc = rater_effects(spec)
        d = spec.data
        marginal_ratings(
            spec, mu[d["md_model"], d["md_day"]], sigma_eps[d["md_model"]], severity, disc
        )
    return model
