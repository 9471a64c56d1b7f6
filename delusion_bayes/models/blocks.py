"""Building blocks shared by the model graphs (called inside a ``pm.Model`` context).

Kept apart from the four model modules so each of those reads as its math. Heavy imports
(PyMC, PyTensor) happen inside the functions.
"""

from __future__ import annotations

import numpy as np

from ..data.schema import DAY, MODEL, RATER
from .priors import make_rv
from .rating_terms import rating_terms
from .spec import CUT, K_MAX, K_MIN, OPEN, STEP_K, T50_SHEAR, ModelSpec


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
    """``t50 ~ N(T (mu_t50 + shift), T sigma_t50)`` in two coordinates, the same prior in both.

    Centred (free ``t50_centred``) for models whose median rating reaches stage 2.5 on some day:
    the data pin their t50 to within a day while the population spread is ~T/2, so a
    non-centred z would sit on a narrow ridge along (mu_t50, sigma_t50).

    For the others (never-turners), whose ratings say only "the curve has not risen by day T",
    i.e. ``h = k (t50 - T) > c`` (``c ~ 2``), the free variable is ``w`` with
    ``t50 = T + c sinh(w) / k`` (``c = T50_SHEAR``), and the prior density of t50 enters with
    its Jacobian (``pm.Flat`` + ``pm.Potential``). In ``w`` that wall is flat in ``k`` and of
    unit width; in ``z = (t50 - loc) / scale`` (non-centred, sheared or not) its width is
    ``1 / (k T sigma_t50)``, so NUTS had to take steps of the thinnest wall everywhere
    (``docs/design-notes.md#modelsblockspy``).
    """
    import pymc as pm
    import pytensor.tensor as pt

    T = float(spec.n_days)
    t_first = float(np.min(spec.data["day_values"])) if "day_values" in spec.data else 1.0
    centred = _turned(spec, n_models)
    early = np.asarray(spec.data.get("t50_early", np.zeros(n_models, bool)), bool) & ~centred
    late = ~centred & ~early
    loc = T * (mu_t50 + _group_shift(spec, "t50")) * pt.ones(n_models)
    scale = T * sigma_t50
    t50 = pt.zeros(n_models)
    ic = np.flatnonzero(centred)
    if ic.size:
        tc = pm.Normal("t50_centred", loc[ic], scale, shape=ic.size)
        t50 = pt.set_subtensor(t50[ic], tc)
    # t50 = T + c sinh(w) / k: h = k (t50 - T) = c sinh(w) is the logit distance of the last
    # day from the midpoint, the one thing a never-turner's ratings bound (h > ~c); in w that
    # wall sits at w ~ asinh(1) with a width that does not depend on k. The mirror for a model
    # already turned on the first day: t50 = t_1 - c sinh(w) / k. The prior t50 ~ N(loc, scale)
    # is kept exactly: its density in w is N(t50; loc, scale) |dt50/dw|
    for name, idx, anchor, sign in (("w_t50", np.flatnonzero(late), T, 1.0),
                                    ("w_t50_early", np.flatnonzero(early), t_first, -1.0)):  # fmt: skip
        if not idx.size:
            continue
        kk = k[idx]
        # started on the side of the wall the data put the model (h = c sinh(w) = 2c, the curve
        # at 98% of its rise away from the anchor), not at w = 0, the wall itself: an
        # already-turned model started there could settle in a flat-line local mode
        w = pm.Flat(name, shape=idx.size, initval=np.full(idx.size, np.arcsinh(2.0)))
        t_w = anchor + sign * T50_SHEAR * pt.sinh(w) / kk
        jac = pt.log(T50_SHEAR * pt.cosh(w) / kk)
        z = (t_w - loc[idx]) / scale
        pm.Potential(f"{name}_prior", (-0.5 * z**2 - pt.log(scale) + jac).sum())
        t50 = pt.set_subtensor(t50[idx], t_w)
    return t50


def _turned(spec: ModelSpec, n_models: int) -> np.ndarray:
    """Models whose median rating reaches clinical framing (2.5) within the study, but not on
    its first day (``t50_centred`` and not ``t50_early`` of the spec): the data pin their onset
    parameters. A never-turner's are bounded from below only, an already-turned model's
    (2.5 on day 1) from above only."""
    centred = np.asarray(spec.data.get("t50_centred", np.ones(n_models, bool)), bool)
    early = np.asarray(spec.data.get("t50_early", np.zeros(n_models, bool)), bool)
    return centred & ~early


def _partially_centred(name: str, loc, scale, centred: np.ndarray):
    """``x_m ~ N(loc_m, scale)`` per model: centred (free ``<name>_centred``) where ``centred``,
    non-centred (``z_<name>``, ``x = loc + scale z``) elsewhere. The same model either way.

    Centred for models whose data pin ``x`` (a turner's log k and t50: the population spread
    is wide next to the posterior, and a non-centred ``z = (x - loc) / scale`` is then tied to
    the hyper-parameters); non-centred for never-turners, whose ``x`` follows the population
    (the funnel non-centring is for).
    """
    import pymc as pm
    import pytensor.tensor as pt

    n = centred.size
    loc = loc * pt.ones(n)
    x = pt.zeros(n)
    ic, inc = np.flatnonzero(centred), np.flatnonzero(~centred)
    if ic.size:
        x = pt.set_subtensor(x[ic], pm.Normal(f"{name}_centred", loc[ic], scale, shape=ic.size))
    if inc.size:
        z = pm.Normal(f"z_{name}", 0.0, 1.0, shape=inc.size)
        x = pt.set_subtensor(x[inc], loc[inc] + scale * z)
    return x


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
    turned = _turned(spec, n_models)
    # the plateau with a fixed prior per model, no population: log(L - 1) ~ N(log 3, 0.2), L = 4
    # (the scale top, where turners plateau) with 95% in [3.0, 5.5]. A hierarchy over L had
    # nothing to learn and funnels to fall into (docs/design-notes.md#modelsblockspy).
    # log(L - 1), not logit((L - 1) / 3): L = 4 is an interior point, not logit -> +inf
    log_L1 = make_rv("log_L1", p["log_L1"], dims=MODEL) + _group_shift(spec, "L")
    L = pm.Deterministic("L", 1.0 + pt.exp(log_L1), dims=MODEL)
    if spec.trajectory == "step":
        k = pm.Deterministic("k", pt.fill(pt.zeros(n_models), STEP_K), dims=MODEL)
    else:
        mu_log_k = make_rv("mu_log_k", p["mu_log_k"])
        sigma_log_k = make_rv("sigma_log_k", p["sigma_log_k"])
        # soft bounds: k = k_min + (K_MAX - k_min) sigmoid(a - log(K_MAX - k_min)), ~k_min + exp(a)
        # for k << K_MAX. Above: an overnight switch leaves the likelihood flat in k; unbounded,
        # log k drifts and t50 between two days becomes a ridge with walls of slope k. Below,
        # in the onset model only: the flat-line mode of a model at its plateau from day 1
        # (spec.K_MIN says why). The joint models pass their gate without it and mix worse with
        # it, so they keep k_min = 0
        a = _partially_centred("log_k", mu_log_k + _group_shift(spec, "log_k"), sigma_log_k, turned)
        k_min = K_MIN if spec.name == "onset" else 0.0
        span = K_MAX - k_min
        k = pm.Deterministic("k", k_min + span * pm.math.sigmoid(a - np.log(span)), dims=MODEL)
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


def day_noise_scale(spec: ModelSpec):
    """Per-model day-noise SD ``sigma_eps[m]``, ``log sigma_eps ~ N(mu_log_eps, sigma_log_eps)``.

    Partially centred (:func:`_partially_centred`): centred for a model whose ratings identify
    its day noise (``eps_centred``: :func:`delusion_bayes.models.spec.noise_identified`, the
    oscillating Claude Opus 3 of paper_like), non-centred for a calm model, whose noise is
    below what four raters resolve and follows the population. An oscillating model gets a
    large one instead of distorting the shared fit. The noise itself is integrated out of the
    likelihood (:func:`marginal_ratings`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    n_models = len(spec.coords[MODEL])
    mu_log_eps = make_rv("mu_log_eps", p["mu_log_eps"])
    sigma_log_eps = make_rv("sigma_log_eps", p["sigma_log_eps"])
    centred = np.asarray(spec.data.get("eps_centred", np.zeros(n_models, bool)), bool)
    log_s = _partially_centred("log_eps", mu_log_eps, sigma_log_eps, centred)
    return pm.Deterministic("sigma_eps", pt.exp(log_s), dims=MODEL)


def rater_effects(spec: ModelSpec):
    """Rater severity (shift) and discrimination (scale), each with a fixed prior per rater.

    ``severity ~ ZeroSumNormal(sigma)`` (the mean rater defines the stage scale, as in the
    simulator) and ``log discrimination_r ~ N(mu, sigma)`` independently. No population level:
    a hierarchy over four raters cannot estimate its own spread, and with hundreds of ratings
    per rater the fixed weakly-informative priors are overwhelmed by the data anyway.
    ``shared`` fixes severity to 0 and uses one discrimination for all raters.
    """
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    n_raters = len(spec.coords[RATER])
    if spec.cutpoints == "shared":
        log_d = make_rv("log_disc_shared", p["log_disc"])
        severity = pm.Deterministic("severity", pt.zeros(n_raters), dims=RATER)
        disc = pm.Deterministic("discrimination", pt.exp(log_d) * pt.ones(n_raters), dims=RATER)
        return severity, disc
    severity = make_rv("severity", p["severity"], dims=RATER)
    log_d = make_rv("log_disc", p["log_disc"], dims=RATER)
    disc = pm.Deterministic("discrimination", pt.exp(log_d), dims=RATER)
    return severity, disc


#: Gauss-Hermite nodes of the latent-stage integral per model (:func:`marginal_ratings`), the
#: fewest that keep the summed model-day log-likelihood of paper_like within ~1e-3 of the
#: adaptive reference (:mod:`delusion_bayes.models.marginal`) where the posterior lies (checked
#: in tests/models/test_marginal.py; docs/design-notes.md#modelsblockspy)
GH_NODES: dict[str, int] = {"joint": 12, "disengagement": 12, "rater": 16}
#: extra variance (stage units) the quadrature's proposal gives a rating at an end of the
#: scale (1 or 4 says only "at or beyond"): it widens the nodes on a floor or plateau day
END_VAR: float = 1.0


def marginal_ratings(spec: ModelSpec, mu, sigma, severity, disc, level=None, nodes=None):
    """Log-likelihood of every model-day's ratings with its latent stage integrated out.

    For model-day ``u`` with latent ``s ~ N(mu_u, sigma_u)`` and ratings ``y_{r,u}``:

    .. math::

        \\log p(y_u) = \\log \\int \\prod_r p(y_{r,u} \\mid s)\\, N(s; \\mu_u, \\sigma_u)\\, ds
        \\approx \\operatorname{logsumexp}_q \\Big[\\log \\tfrac{w_q}{\\sqrt\\pi} + x_q^2
            + \\sum_r \\log p(y_{r,u} \\mid s_q) + \\log N(s_q; \\mu_u, \\sigma_u)
            + \\log(\\sqrt{2\\pi}\\,\\tau_u)\\Big]

    with Gauss-Hermite nodes ``s_q = m_u + sqrt(2) tau_u x_q`` placed on a Gaussian proposal
    ``N(m_u, tau_u)`` (importance-weighted, so any proposal gives the same integral; a good one
    needs few nodes). The proposal combines the prior with a Gaussian reading of the ratings
    (each ``y - severity_r`` with variance ``pi^2 / (3 d_r^2) + 1/12``, plus :data:`END_VAR` at
    an end of the scale): ``1/tau^2 = 1/sigma^2 + P_u``, ``m = tau^2 (mu / sigma^2 + P_u yhat_u)``.
    For a calm model (``sigma`` small) it is the prior, plain Gauss-Hermite; for an oscillating
    one, whose raters pin each day more tightly than the noise does, it sits where the ratings
    put the stage. Smooth in every parameter, so NUTS differentiates through it.

    Each rating's term is ``log(sigmoid(a) - sigmoid(b))`` with ``a = d (s + sev - c_lo)``,
    ``b = d (s + sev - c_hi)``, written ``-softplus(-a) - softplus(b) + log(1 - e^{-d (c_hi -
    c_lo)})``; the last term does not depend on ``s`` (fixed unit gaps) and is added once per
    rater (``n_interior``). Only the ``U x R x Q`` terms the data have are computed (dense
    because every rater may rate every model-day), in one fused Op with their derivatives
    (:mod:`delusion_bayes.models.rating_terms`); the (model, day) grid's unrated cells are
    never touched.

    ``nodes``: quadrature nodes (default :data:`GH_NODES` of the model).

    ``level`` (disengagement): ``(beta, u, c1, c2)``; the model-day's adjudicated level
    ``D`` with ``P(D >= j) = sigmoid(beta (s - 2.5) + u_m - c_j)`` joins the integrand.

    Why by hand: PyMC marginalises discrete variables (pymc-extras), not a continuous latent;
    this is the Laplace-free, fixed-node version of lme4's adaptive Gauss-Hermite (Pinheiro &
    Bates 1995, J. Comput. Graph. Stat. 4), with the node centre taken from the data rather
    than an inner optimisation so the graph stays small.
    """
    import pymc as pm
    import pytensor.tensor as pt

    d = spec.data
    x, w = np.polynomial.hermite.hermgauss(nodes or GH_NODES.get(spec.name, 16))
    lw = pt.as_tensor_variable(np.log(w) + x**2 - 0.5 * np.log(np.pi))
    xq = pt.as_tensor_variable(np.sqrt(2.0) * x)
    lo, hi = d["md_lo"], d["md_hi"]
    rated = (lo > -OPEN) | (hi < OPEN)
    # proposal: precision-weighted prior and ratings
    v_r = (np.pi**2 / 3.0) / disc**2 + 1.0 / 12.0
    prec = pt.as_tensor_variable(rated.astype(float)) / (v_r[None, :] + END_VAR * d["md_end"])
    p_u = prec.sum(axis=1)
    yhat = (prec * (d["md_rating"] - severity[None, :])).sum(axis=1)
    inv_s2 = 1.0 / sigma**2
    prec_post = inv_s2 + p_u
    centre = (mu * inv_s2 + yhat) / prec_post
    tau = 1.0 / pt.sqrt(prec_post)
    s = centre[:, None] + tau[:, None] * xq[None, :]  # (U, Q)
    # sum over raters of the s-dependent rating terms, (U, Q), one fused numba pass with its
    # partial derivatives (models/rating_terms.py)
    ll = rating_terms(s, severity, disc, lo, hi)
    if level is not None:
        beta, u, c1, c2 = level
        lv = d["md_level"]
        eta = beta * (s - 2.5) + u[d["md_model"]][:, None]
        big = pt.as_tensor_variable(np.full(lv.shape, OPEN))
        c_lo = pt.switch(pt.eq(lv, 0) | pt.lt(lv, 0), -big, pt.switch(pt.eq(lv, 1), c1, c2))
        c_hi = pt.switch(pt.eq(lv, 2) | pt.lt(lv, 0), big, pt.switch(pt.eq(lv, 0), c1, c2))
        ll = ll - pt.softplus(-(eta - c_lo[:, None])) - pt.softplus(eta - c_hi[:, None])
    prior = -0.5 * ((s - mu[:, None]) / sigma[:, None]) ** 2 + pt.log(tau / sigma)[:, None]
    per_md = pt.logsumexp(lw[None, :] + ll + prior, axis=1)
    const = (d["n_interior"] * pt.log1mexp(-disc)).sum()
    if level is not None:
        n1 = float(np.sum(d["md_level"] == 1))
        const = const + n1 * pt.log1mexp(-(c2 - c1))
    pm.Potential("ratings_marginal", per_md.sum() + const)
    return per_md


__all__ = ["onset_trajectory", "day_noise_scale", "rater_effects", "marginal_ratings", "CUT"]
