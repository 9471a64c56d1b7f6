"""The onset model: the hierarchical logistic trajectory fitted to the consensus.

The Bayesian twin of the paper's least-squares fit (Statistical Analysis,
``m(t) = 1 + (L-1)/(1+e^{-k(t-t50)})`` on the 4-rater median consensus), with the same
partial pooling as :mod:`delusion_bayes.models.joint`.

.. math::

    L_m, k_m, t_{50,m} &\\text{ as in the joint model (same hierarchy)} \\\\
    y^*_{m,t} &\\sim N\\big(1 + (L_m - 1)\\,\\mathrm{sigmoid}(k_m(t - t_{50,m})),
        \\sigma_y\\big), \\qquad \\bar y_{m,t} = \\max(1, y^*_{m,t})

where :math:`\\bar y_{m,t}` is ``delusion_bayes.baselines.consensus(recognition,
rule="median")`` (x.5 values allowed). Model-days without a consensus are left out.

The consensus is censored at the floor only (a Tobit likelihood: a consensus of 1 has
probability ``Phi((1 - mu) / sigma_y)``), so on floor days it differs from the least-squares fit
by design (why: ``docs/dev/design-notes.md#modelsonsetpy``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .blocks import ONSET_PRIORS, onset_trajectory, spec_data
from .definition import ModelDef
from .modelspec import K_MIN, OBS, ModelSpec
from .priors import make_rv

#: ends of the recognition scale (the onset model censors its consensus at the floor only)
SCALE_MIN, SCALE_MAX = 1.0, 4.0
#: below this z, log Phi(z) is its asymptotic series (erfc underflows near z = -38)
_TAIL_Z = -30.0


def log_ndtr(z):
    """``log Phi(z)`` of a PyTensor ``z``, accurate in both tails, with finite gradients.

    For ``z < -30`` the Mills-ratio series ``-z^2/2 - log(-z) - log(2 pi)/2 + log(1 - 1/z^2 +
    3/z^4)`` (error < 1e-8); each branch sees clipped arguments, so the unused one never puts
    NaN into the gradient.
    """
    import pytensor.tensor as pt

    # log(Phi) on [-30, 0], log1p(-Phi(-z)) above 0 (exact where Phi rounds to 1)
    zn = pt.clip(z, _TAIL_Z, 0.0)
    zp = pt.maximum(z, 0.0)
    body = pt.switch(
        pt.lt(z, 0.0),
        pt.log(0.5 * pt.erfc(-zn / np.sqrt(2.0))),
        pt.log1p(-0.5 * pt.erfc(zp / np.sqrt(2.0))),
    )
    zt = pt.minimum(z, _TAIL_Z)
    tail = (
        -0.5 * zt**2 - pt.log(-zt) - 0.5 * np.log(2 * np.pi) + pt.log1p(-1.0 / zt**2 + 3.0 / zt**4)
    )
    return pt.switch(pt.lt(z, _TAIL_Z), tail, body)


def censored_normal_logp(value, mu, sigma, lower: float = SCALE_MIN, upper: float = SCALE_MAX):
    """Log-likelihood of ``min(upper, max(lower, N(mu, sigma)))`` at ``value``, as
    ``pm.Censored(pm.Normal.dist(mu, sigma), lower, upper)``. Written out for speed: that
    evaluates both tail probabilities for every value, here only for the values at a bound."""
    import pytensor.tensor as pt

    # float64 throughout: PyTensor would keep a Python float such as 0.5 in float32
    value, mu, sigma = (pt.cast(pt.as_tensor_variable(x), "float64") for x in (value, mu, sigma))
    mu = pt.broadcast_to(mu, value.shape)
    sigma = pt.broadcast_to(sigma, value.shape)
    z = (value - mu) / sigma
    out = -0.5 * z**2 - pt.log(sigma) - 0.5 * np.log(2 * np.pi)
    # the tail probabilities only where the value is at a bound
    lo = pt.nonzero(pt.le(value, lower))[0]
    hi = pt.nonzero(pt.ge(value, upper))[0]
    out = pt.set_subtensor(out[lo], log_ndtr((lower - mu[lo]) / sigma[lo]))
    return pt.set_subtensor(out[hi], log_ndtr((mu[hi] - upper) / sigma[hi]))


def censored_normal(
    name: str, mu, sigma, observed, lower: float = SCALE_MIN, upper: float = SCALE_MAX, **kwargs
):
    """Observed values censored at ``lower`` and ``upper`` (:func:`censored_normal_logp`;
    ``upper=np.inf``: below only); predictive draws are clipped normal draws."""
    import pymc as pm

    def logp(value, mu, sigma):
        return censored_normal_logp(value, mu, sigma, lower, upper)

    def dist(mu, sigma, size):
        # symbolic draws: no numba object-mode fallback for a Python ``random``
        return pm.math.clip(pm.Normal.dist(mu, sigma, size=size), lower, upper)

    return pm.CustomDist(name, mu, sigma, dist=dist, logp=logp, observed=observed, **kwargs)


def build_onset(spec: ModelSpec):
    """The ``pm.Model`` of the onset model (see the module docstring for the math)."""
    import pymc as pm

    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        sigma_y = make_rv("sigma_y", spec.priors["sigma_y"])
        # censored at the floor only (the module docstring says why not at the top)
        mu_y = mu[spec_data(spec, "model_idx"), spec_data(spec, "day_idx")]
        censored_normal("y", mu_y, sigma_y, spec_data(spec, "y"), upper=np.inf, dims=OBS)
    return model


def onset_predictive(dt: xr.DataTree, spec: ModelSpec, seed: int) -> xr.DataTree:
    """Posterior predictive consensus of the ``onset`` model, ``max(1, N(trajectory, sigma_y))``,
    drawn in numpy."""
    from .marginal import param_draws

    rng = np.random.default_rng([int(seed), 8])
    post = dt["posterior"].to_dataset()
    d = spec.data
    mu = param_draws(post, "trajectory")[:, :, d.model_idx, d.day_idx]
    sigma = param_draws(post, "sigma_y")[..., None]
    y = np.maximum(SCALE_MIN, rng.normal(mu, sigma))
    pp = xr.Dataset({"y": (("chain", "draw", OBS), y)}, coords={OBS: np.arange(mu.shape[-1])})
    dt["posterior_predictive"] = xr.DataTree(pp)
    return dt


DEFINITION = ModelDef(
    name="onset",
    build=build_onset,
    priors={
        **ONSET_PRIORS,
        # residual of the consensus around the trajectory (the least-squares error term)
        "sigma_y": {"dist": "HalfNormal", "sigma": 0.5},
    },
    math=__doc__,
    marginal=False,
    inputs=frozenset({"trajectory", "group_terms", "consensus"}),
    target_accept=0.99,
    k_min=K_MIN,
    predictive=onset_predictive,
    fit_rank=3,
    population=True,
)
