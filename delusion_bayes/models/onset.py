"""The onset model: the hierarchical logistic trajectory fitted to the consensus.

The Bayesian twin of the paper's least-squares fit (Statistical Analysis,
``m(t) = 1 + (L-1)/(1+e^{-k(t-t50)})`` on the 4-rater median consensus), with the same
partial pooling as :mod:`delusion_bayes.models.joint`.

Math
----
.. math::

    L_m, k_m, t_{50,m} &\\text{ as in the joint model (same hierarchy)} \\\\
    \\bar y_{m,t} &\\sim N\\big(1 + (L_m - 1)\\,\\mathrm{sigmoid}(k_m(t - t_{50,m})),
        \\sigma_y\\big)

where :math:`\\bar y_{m,t}` is ``delusion_bayes.baselines.consensus(recognition,
rule="median")`` (x.5 values allowed). Model-days without a consensus are left out.
"""

from __future__ import annotations

from .blocks import onset_trajectory
from .priors import make_rv
from .spec import OBS, ModelSpec


def build_onset(spec: ModelSpec):
    """The ``pm.Model`` of the onset model (see the module docstring for the math)."""
    import pymc as pm

    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        sigma_y = make_rv("sigma_y", spec.priors["sigma_y"])
        d = spec.data
        pm.Normal(
            "y", mu=mu[d["model_idx"], d["day_idx"]], sigma=sigma_y, observed=d["y"], dims=OBS
        )
    return model
