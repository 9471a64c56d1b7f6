"""The joint model: hierarchical logistic onset of a latent stage, rated ordinally by every rater.

Math
----
For model ``m`` (of M), day ``t`` (1..T) and rater ``r``:

.. math::

    L_m &= 1 + \\exp(\\mu_L + \\sigma_L z^L_m) \\\\
    k_m &= K_{\\max}\\,\\mathrm{sigmoid}(a_m - \\log K_{\\max}), \\quad
        a_m = \\mu_{\\log k} + \\sigma_{\\log k} z^k_m
        \\quad (1/k_m = e^{-a_m} + 1/K_{\\max},\\ K_{\\max} = 20) \\\\
    t_{50,m} &\\sim N\\big(T \\mu_{t50},\\, T \\sigma_{t50}\\big)
        \\quad \\text{(partially centred, below)}, \\qquad z \\sim N(0, 1) \\\\
    \\mathrm{stage}_{m,t} &= 1 + (L_m - 1)\\,\\mathrm{sigmoid}(k_m (t - t_{50,m}))
        + \\sigma_{\\varepsilon,m} z^\\varepsilon_{m,t} \\\\
    \\log\\sigma_{\\varepsilon,m} &= \\mu_{\\log\\varepsilon}
        + \\sigma_{\\log\\varepsilon} z^{\\varepsilon}_m \\\\
    P(y_{r,m,t} > j) &= \\mathrm{sigmoid}\\big(d_r(\\mathrm{stage}_{m,t} + s_r - c_j)\\big),
        \\quad c = (1.5, 2.5, 3.5) \\\\
    s &\\sim \\mathrm{ZeroSumNormal}(\\sigma_s) \\;(\\textstyle\\sum_r s_r = 0), \\qquad
        \\log d_r = \\mu_{\\log d} + \\sigma_{\\log d} z^d_r

Optional group terms (``group_terms=["vendor", ...]``) add ``b_{p,g}[group_g(m)]`` to the
hyper-means of ``p`` in (log(L - 1), a = log k, t50/T).

Why this parameterisation (measured on ``simulate_study("paper_like", seed=0)``, 2 x 500
nutpie draws; before: 5 divergences, R-hat up to 1.05 on L/k/t50, 2.24 on Opus 4.1's t50):

* ``k`` has a soft upper bound ``K_max = 20`` per day, the least-squares fits' ``k_max``
  (:mod:`delusion_bayes.baselines.logistic`), so both methods bound k alike. A model that
  switches overnight (Claude Opus 4.1, true k = 10) leaves the likelihood flat in k above
  ~5; with ``k = exp(a)`` the chains drifted to huge k and t50 between the two days became
  a ridge with walls of slope k. For ``k << K_max``, ``a`` is ``log k``.
* ``L - 1`` is log-normal, not ``3 sigmoid(.)``: most turners plateau at the scale top,
  ``L = 4``, which a logit puts at +infinity (a flat tail the chains wander along); on the
  log scale it is an interior point. ``L`` may exceed 4 slightly (a latent stage above the
  top category, as with the least-squares fits' default ``upper=None``). The tight spread
  ``sigma_L ~ HalfNormal(0.3)`` encodes that every model has a plateau well above stage 1,
  which is what makes "never turns" mean "t50 beyond T": with a loose spread a never-turner
  also fits as ``L ~ 1`` with any t50, a second mode that chains fell into.
* ``t50`` is partially centred: centred (``t50_centred``) for a model whose median rating
  reaches 2.5 on some day, as each such t50 is pinned by the data to within a day while the
  population spread is ~T/2 (a non-centred ``z`` would sit on a narrow ridge along
  ``mu_t50``, ``sigma_t50``); non-centred for a model that never gets there, whose t50 the
  data bound only from below, by a wall ``k (T - t50) < -c`` (``c ~ 2``) that curves in
  ``(k, t50)``. Its coordinate is sheared so that the wall is flat:
  ``t50 = T (mu_t50 + sigma_t50 z_t50) + c / k`` with ``z_t50 ~ N(-c / (k T sigma_t50), 1)``
  (``c = T50_SHEAR = 2``). Seeds 1-6 at 2 x 500: 0 divergences (unsheared: 2 runs of 6 had
  one). The choices change the geometry, not the model (``tests/models/test_spec.py``).
  Rater severity is centred for the same reason as turning models' t50: every rater
  scores hundreds of model-days (non-centred: R-hat 1.15 on ``sigma_severity``). Rater
  discrimination and the day-noise level stay non-centred: centred, their hyper-SDs collapsed
  towards 0 on the small study (3 raters, 5 models): R-hat 1.07 and divergences.
* The day noise ``eps`` is partially centred per model with a weight ``lambda_m`` estimated
  from the ratings (:func:`delusion_bayes.models.spec.noise_centring`; free variable
  ``eps_tilde ~ N(lambda mu, sigma_eps^lambda)``, ``stage = mu + sigma_eps^(1-lambda)
  (eps_tilde - lambda mu)``, the same model for every lambda): ~0.7-0.8 for an oscillating
  model, whose 4 raters pin each day's stage more tightly than its day noise does, 0 for the
  others. Non-centred, the oscillating Opus 3's t50 was tied (correlation 0.75) to its day
  noise at t50 and was the least mixed onset parameter (ESS ~200 of 1,000); now ~450.

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
