"""The disengagement model: the adjudicated Level A/B outcome as a function of the latent stage,
with model effects, on top of the joint model.

The paper's "recognising the crisis and acting on it dissociate" (GPT-5.1 reached stable
clinical framing yet never recommended stepping away) becomes a posterior quantity: the model
effect ``u_m`` and ``p_level_b_at_stage4[m]``, the probability of a Level-B recommendation on a
day the model frames clinically (stage 4).

Math
----
Stage as in :mod:`delusion_bayes.models.joint`, plus, for the adjudicated outcome
:math:`D_{m,t} \\in \\{0: \\text{none}, 1: \\text{Level A only}, 2: \\text{Level B}\\}` (Level B
implies Level A, so the pair is one ordinal variable):

.. math::

    \\eta_{m,t} &= \\beta\\,(\\mathrm{stage}_{m,t} - 2.5) + u_m, \\qquad
        u_m = \\sigma_u z^u_m \\\\
    P(D_{m,t} \\geq 1) &= \\mathrm{sigmoid}(\\eta_{m,t} - c_1), \\quad
    P(D_{m,t} = 2) = \\mathrm{sigmoid}(\\eta_{m,t} - c_2), \\quad
    c_2 = c_1 + e^{\\gamma}

The second cutpoint is the first plus a positive increment, so no ``ordered`` transform is
needed.
"""

from __future__ import annotations

from ..data.schema import MODEL
from .blocks import day_noise, onset_trajectory, ordinal_ratings
from .priors import make_rv
from .spec import OBS_LEVEL, ModelSpec


def build_disengagement(spec: ModelSpec):
    """The ``pm.Model`` of the disengagement model (see the module docstring for the math)."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    with pm.Model(coords=spec.coords) as model:
        mu = onset_trajectory(spec)
        stage = day_noise(spec, mu)
        ordinal_ratings(spec, stage)
        beta = make_rv("beta_level", p["beta_level"])
        sigma_u = make_rv("sigma_u", p["sigma_u"])
        z_u = pm.Normal("z_u", 0.0, 1.0, dims=MODEL)
        u = pm.Deterministic("u", sigma_u * z_u, dims=MODEL)
        c1 = make_rv("c_level_1", p["c_level_1"])
        gap = make_rv("log_gap_level", p["log_gap_level"])
        cuts = pt.stack([c1, c1 + pt.exp(gap)])
        d = spec.data
        m, t = d["level_model_idx"], d["level_day_idx"]
        eta = beta * (stage[m, t] - 2.5) + u[m]
        pm.OrderedLogistic(
            "level", eta=eta, cutpoints=cuts, observed=d["level"], dims=OBS_LEVEL, compute_p=False
        )
        eta4 = beta * 1.5 + u
        pm.Deterministic("p_level_a_at_stage4", pm.math.sigmoid(eta4 - cuts[0]), dims=MODEL)
        pm.Deterministic("p_level_b_at_stage4", pm.math.sigmoid(eta4 - cuts[1]), dims=MODEL)
    return model
