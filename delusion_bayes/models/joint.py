"""The joint model: hierarchical logistic onset of a latent stage, rated ordinally by every rater.

Math
----
For model ``m`` (of M), day ``t`` (1..T) and rater ``r``:

.. math::

    L_m &= 1 + 3\\,\\mathrm{sigmoid}(\\mu_L + \\sigma_L z^L_m) \\\\
    k_m &= \\exp(\\mu_{\\log k} + \\sigma_{\\log k} z^k_m) \\\\
    t_{50,m} &= T\\,(\\mu_{t50} + \\sigma_{t50} z^{t}_m), \\qquad z \\sim N(0, 1)
        \\quad \\text{(non-centred)} \\\\
    \\mathrm{stage}_{m,t} &= 1 + (L_m - 1)\\,\\mathrm{sigmoid}(k_m (t - t_{50,m}))
        + \\sigma_{\\varepsilon,m} z^\\varepsilon_{m,t} \\\\
    \\log\\sigma_{\\varepsilon,m} &= \\mu_{\\log\\varepsilon}
        + \\sigma_{\\log\\varepsilon} z^{\\varepsilon}_m \\\\
    P(y_{r,m,t} > j) &= \\mathrm{sigmoid}\\big(d_r(\\mathrm{stage}_{m,t} + s_r - c_j)\\big),
        \\quad c = (1.5, 2.5, 3.5) \\\\
    s_r &= \\sigma_s z^s_r \\;(\\textstyle\\sum_r z^s_r = 0), \\qquad \\log d_r = \\mu_{\\log d} + \\sigma_{\\log d} z^d_r

Optional group terms (``group_terms=["vendor", ...]``) add ``b_{p,g}[group_g(m)]`` to the
hyper-means of ``p`` in (logit L, log k, t50/T).

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

from .blocks import day_noise, onset_trajectory, ordinal_ratings
from .spec import ModelSpec


def build_joint(spec: ModelSpec):
    """The ``pm.Model`` of the joint model (see the module docstring for the math)."""
    import pymc as pm

    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        stage = day_noise(spec, mu)
        ordinal_ratings(spec, stage)
    return model
