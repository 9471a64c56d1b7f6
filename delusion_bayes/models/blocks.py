"""Building blocks shared by the model graphs (called inside a ``pm.Model`` context).

Kept apart from the four model modules so each of those reads as its math. Heavy imports
(PyMC, PyTensor) happen inside the functions.
"""

from __future__ import annotations

import numpy as np

from ..data.schema import DAY, MODEL, RATER
from .priors import make_rv
from .spec import CUT, K_MAX, OBS, STAGE_CUTPOINTS, STEP_K, T50_SHEAR, ModelSpec

#: onset parameters that group terms shift (on their unconstrained scale)
_ONSET_PARAMS = ("L", "log_k", "t50")


def _group_shift(spec: ModelSpec, param: str):
    """Sum over group terms of the level effect of each model: ``sum_g b_{param,g}[group_g(m)]``.

    Non-centred: ``b = sd * z`` with ``sd ~ group_sd`` (one scale per parameter and term).
    """
    import pymc as pm

    shift = 0.0
    for term in spec.group_terms:
        dim = f"group_{term}"
        sd = make_rv(f"sd_{param}_{term}", spec.priors["group_sd"])
        z = pm.Normal(f"z_{param}_{term}", 0.0, 1.0, dims=dim)
        b = pm.Deterministic(f"b_{param}_{term}", sd * z, dims=dim)
        shift = shift + b[spec.data[f"group_{term}_idx"]]
    return shift


def _t50(spec: ModelSpec, mu_t50, sigma_t50, n_models: int, k):
    """Partially centred ``t50 ~ N(T (mu_t50 + shift), T sigma_t50)``.

    Centred (free ``t50_centred``) for models whose median rating reaches stage 2.5 on some day:
    the data pin their t50 to within a day while the population spread is ~T/2, so a
    non-centred z would sit on a narrow ridge along (mu_t50, sigma_t50). Non-centred
    (``z_t50``) for the others, whose t50 is only bounded below by the data and otherwise
    follows the population (the funnel case non-centring is for).

    The non-centred coordinate is sheared along ``1/k``: ``t50 = loc + scale z + c / k`` with
    ``z ~ N(-c / (k scale), 1)`` (:data:`~delusion_bayes.models.spec.T50_SHEAR` ``c``), the
    same ``t50 ~ N(loc, scale)`` for every ``c``. The data of a never-turner say "the curve has
    not risen by day T": ``k (T - t50) < -c`` with ``c ~ 2`` (measured on paper_like: the 1%
    quantile of ``k (t50 - T)`` is 1.6-2.2), a wall ``t50 > T + c / k`` that curves with ``k``.
    In ``z`` the wall is ``z > (T - loc) / scale``, flat in ``k``, which a diagonal mass matrix
    follows.
    """
    import pymc as pm
    import pytensor.tensor as pt

    T = float(spec.n_days)
    centred = np.asarray(spec.data.get("t50_centred", np.ones(n_models, bool)), bool)
    loc = T * (mu_t50 + _group_shift(spec, "t50")) * pt.ones(n_models)
    scale = T * sigma_t50
    t50 = pt.zeros(n_models)
    ic, inc = np.flatnonzero(centred), np.flatnonzero(~centred)
    if ic.size:
        tc = pm.Normal("t50_centred", loc[ic], scale, shape=ic.size)
        t50 = pt.set_subtensor(t50[ic], tc)
    if inc.size:
        shift = T50_SHEAR / k[inc]
        z = pm.Normal("z_t50", -shift / scale, 1.0, shape=inc.size)
        t50 = pt.set_subtensor(t50[inc], loc[inc] + scale * z + shift)
    return t50


def onset_trajectory(spec: ModelSpec):
    """Hierarchical onset parameters and the ``(model, day)`` trajectory (math and the reasons
    for each parameterisation: :mod:`delusion_bayes.models.joint`).

    Adds ``L``, ``k``, ``t50`` (dim ``model``) and ``trajectory`` (``model, day``) to the model
    and returns the trajectory mu[m, t].
    """
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    n_models = len(spec.coords[MODEL])
    mu_L = make_rv("mu_L", p["mu_L"])
    sigma_L = make_rv("sigma_L", p["sigma_L"])
    z_L = pm.Normal("z_L", 0.0, 1.0, dims=MODEL)
    # log(L - 1), not logit((L - 1) / 3): L = 4 (the scale top, the truth of most turners) is
    # then an interior point with a finite likelihood peak, not logit -> +inf with a flat tail
    L = pm.Deterministic(
        "L", 1.0 + pt.exp(mu_L + _group_shift(spec, "L") + sigma_L * z_L), dims=MODEL
    )
    if spec.trajectory == "step":
        k = pm.Deterministic("k", pt.fill(pt.zeros(n_models), STEP_K), dims=MODEL)
    else:
        mu_log_k = make_rv("mu_log_k", p["mu_log_k"])
        sigma_log_k = make_rv("sigma_log_k", p["sigma_log_k"])
        z_k = pm.Normal("z_log_k", 0.0, 1.0, dims=MODEL)
        # soft upper bound: 1/k = exp(-a) + 1/K_MAX, i.e. k = K_MAX sigmoid(a - log K_MAX), ~exp(a)
        # for k << K_MAX. An overnight switch leaves the likelihood flat in k; unbounded, log k
        # drifts and t50 between two days becomes a ridge with walls of slope k
        a = mu_log_k + _group_shift(spec, "log_k") + sigma_log_k * z_k
        k = pm.Deterministic("k", K_MAX * pm.math.sigmoid(a - np.log(K_MAX)), dims=MODEL)
    mu_t50 = make_rv("mu_t50", p["mu_t50"])
    sigma_t50 = make_rv("sigma_t50", p["sigma_t50"])
    t50 = pm.Deterministic("t50", _t50(spec, mu_t50, sigma_t50, n_models, k), dims=MODEL)
    t = pt.as_tensor_variable(spec.data["day_values"])[None, :]
    x = k[:, None] * (t - t50[:, None])
    if spec.trajectory == "linear":
        # floor-to-L ramp with the logistic's slope at the midpoint, (L-1) k / 4
        shape = pt.clip(0.5 + x / 4.0, 0.0, 1.0)
    else:
        shape = pm.math.sigmoid(x)
    # kept (on every day, rated or not): the marginal model-day log-likelihood integrates the
    # day noise around it (:mod:`delusion_bayes.models.marginal`)
    return pm.Deterministic("trajectory", 1.0 + (L - 1.0)[:, None] * shape, dims=(MODEL, DAY))


def day_noise(spec: ModelSpec, mu):
    """Latent stage = trajectory + day noise eps[m, t] ~ Normal(0, sigma_eps[m]),
    with ``log sigma_eps[m] = mu_log_eps + sigma_log_eps * z_m`` (an oscillating model such as
    the paper's Claude Opus 3 gets a large one instead of distorting the shared fit)."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    mu_log_eps = make_rv("mu_log_eps", p["mu_log_eps"])
    sigma_log_eps = make_rv("sigma_log_eps", p["sigma_log_eps"])
    # sigma_eps non-centred: centring it (paper_like: R-hat on L/k/t50 1.019 -> 1.015,
    # noise-level) put divergences on the small study, where sigma_log_eps can collapse to ~0
    z_s = pm.Normal("z_log_eps", 0.0, 1.0, dims=MODEL)
    sigma_eps = pm.Deterministic("sigma_eps", pt.exp(mu_log_eps + sigma_log_eps * z_s), dims=MODEL)
    # the day noise itself partially centred per model (weights: spec.noise_centring):
    # s ~ N(lam mu, sigma^lam), stage = mu + sigma^(1-lam) (s - lam mu) ~ N(mu, sigma) for any lam
    lam = np.asarray(spec.data.get("eps_lambda", np.zeros(len(spec.coords[MODEL]))), float)
    lam_c = pt.as_tensor_variable(lam)[:, None]
    sig = sigma_eps[:, None]
    s = pm.Normal("eps_tilde", lam_c * mu, sig**lam_c, dims=(MODEL, DAY))
    return pm.Deterministic(
        "stage", mu + sig ** (1.0 - lam_c) * (s - lam_c * mu), dims=(MODEL, DAY)
    )


def rater_effects(spec: ModelSpec):
    """Rater severity (shift) and discrimination (scale); ``shared`` fixes severity to 0 and uses
    one discrimination for all raters."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    n_raters = len(spec.coords[RATER])
    mu_log_disc = make_rv("mu_log_disc", p["mu_log_disc"])
    if spec.cutpoints == "shared":
        severity = pm.Deterministic("severity", pt.zeros(n_raters), dims=RATER)
        disc = pm.Deterministic(
            "discrimination", pt.exp(mu_log_disc) * pt.ones(n_raters), dims=RATER
        )
        return severity, disc
    sigma_sev = make_rv("sigma_severity", p["sigma_severity"])
    # zero-sum: the mean rater defines the stage scale (as in the simulator). Centred: every
    # rater scores hundreds of model-days, so severities are pinned by the data and a
    # non-centred z would trade off against sigma_severity (R-hat 1.15 on paper_like)
    severity = pm.ZeroSumNormal("severity", sigma=sigma_sev, dims=RATER)
    sigma_log_disc = make_rv("sigma_log_disc", p["sigma_log_disc"])
    # non-centred: centred, sigma_log_disc collapsed towards 0 with 3 raters (small study:
    # R-hat 1.07 on the discriminations); on paper_like (4 raters x 450 model-days, joint,
    # 2 x 500, seeds 1-6) centred gave 2 and 8 divergences in two runs (non-centred: none) and
    # the same max R-hat on L/k/t50 (1.007-1.017)
    z_disc = pm.Normal("z_log_disc", 0.0, 1.0, dims=RATER)
    disc = pm.Deterministic(
        "discrimination", pt.exp(mu_log_disc + sigma_log_disc * z_disc), dims=RATER
    )
    return severity, disc


def ordinal_ratings(spec: ModelSpec, stage):
    """Cumulative-logit likelihood of every observed rating around the latent stage.

    ``P(y > c_j) = sigmoid(disc_r (stage[m, t] + severity_r - c_j))`` with the fixed
    cutpoints ``c = (1.5, 2.5, 3.5)`` (:func:`cumulative_logit`, the distribution of PyMC's
    ``OrderedLogistic`` with ``eta = disc (stage + severity)`` and ``cutpoints = disc c``). No
    ``ordered`` transform is needed.
    """

    severity, disc = rater_effects(spec)
    d = spec.data
    r, m, t = d["rater_idx"], d["model_idx"], d["day_idx"]
    cumulative_logit("y", stage[m, t] + severity[r], disc[r], d["y"], dims=OBS)
    return severity, disc


def _cumlogit_logp(value, x, scale, cuts: np.ndarray):
    """log P(Y = value) of the cumulative logit ``P(Y > j) = sigmoid(scale (x - cuts_j))``.

    With ``a = scale (x - c_{y-1})`` and ``b = scale (x - c_y)`` (``a > b``):
    ``log(sigmoid(a) - sigmoid(b)) = a + log1mexp(b - a) - softplus(a) - softplus(b)``;
    ``-softplus(b)`` for the lowest category, ``a - softplus(a)`` for the highest.
    """
    import pytensor.tensor as pt

    n_cut = cuts.size
    c = pt.as_tensor_variable(np.asarray(cuts, float))
    y = pt.cast(value, "int64")
    lo = pt.clip(y - 1, 0, n_cut - 1)
    hi = pt.clip(y, 0, n_cut - 1)
    a = scale * (x - c[lo])
    b = scale * (x - c[hi])
    first, last = pt.eq(y, 0), pt.eq(y, n_cut)
    # b - a = -scale (c_y - c_{y-1}) < 0 inside; a harmless -1 where a or b is an open end
    gap = pt.switch(first | last, -1.0, b - a)
    sp_a, sp_b = pt.softplus(a), pt.softplus(b)
    inner = a + pt.log1mexp(gap) - sp_a - sp_b
    return pt.switch(first, -sp_b, pt.switch(last, a - sp_a, inner))


def cumulative_logit(name: str, x, scale, observed: np.ndarray, cuts=STAGE_CUTPOINTS, **kwargs):
    """Observed ordinal ``Y`` in ``0..len(cuts)`` with ``P(Y > j) = sigmoid(scale (x - cuts_j))``.

    The same distribution as PyMC's ``OrderedLogistic(eta=scale x, cutpoints=scale cuts)``,
    with the log-probability written out (:func:`_cumlogit_logp`): PyMC's version takes the
    difference of two sigmoids, which loses all precision in the far tails (a rating 50 stages
    away from the latent is ``-inf`` there, a ``-160.5`` here, the exact value), and builds the
    full (n, K) probability matrix of a ``Categorical``. Elsewhere the two agree to 1e-9
    (``tests/models/test_spec.py``); sampling speed is the same (rater model, paper_like,
    4 x 1000: 24-28 s either way). Written by hand because PyMC's ordinal distributions have no
    log-space form. Posterior predictive draws: ``Y = #{j : u < P(Y > j)}``, ``u ~ U(0, 1)``.
    """
    import pymc as pm
    from scipy.special import expit

    cuts = np.asarray(cuts, float)

    def logp(value, x, scale):
        return _cumlogit_logp(value, x, scale, cuts)

    def random(x, scale, rng=None, size=None):
        x, scale = np.broadcast_arrays(np.asarray(x, float), np.asarray(scale, float))
        if size is not None:
            x, scale = np.broadcast_to(x, size), np.broadcast_to(scale, size)
        p_gt = expit(scale[..., None] * (x[..., None] - cuts))
        u = rng.uniform(size=x.shape)
        return (u[..., None] < p_gt).sum(axis=-1).astype(np.int64)

    return pm.CustomDist(
        name, x, scale, logp=logp, random=random, observed=observed, dtype="int64", **kwargs
    )


__all__ = ["onset_trajectory", "day_noise", "rater_effects", "ordinal_ratings", "CUT"]
