"""Building blocks shared by the model graphs (called inside a ``pm.Model`` context; PyMC and
PyTensor are imported inside the functions).

Every array of the spec enters the graph as data (:func:`spec_data`, a ``pm.Data`` per
:class:`~delusion_bayes.models.spec.SpecData` field), never as a constant: studies of one
structure (:meth:`~delusion_bayes.models.spec.ModelSpec.structure_key`) share one compiled
log-density, whose data are swapped (:func:`delusion_bayes.models.build.model_for`). That
includes the parameterisation's index sets (which models are centred, which sample t50 beyond a
wall): each such coordinate is a free vector over all models, used where its mask is set and a
standard normal elsewhere (:func:`_masked_normal`), so the geometry of the used coordinates is
today's and the unused ones are independent of everything; :func:`sampling_coordinates` says
which entries are used, and :func:`delusion_bayes.models.fit.finish_fit` keeps only those.
"""

from __future__ import annotations

import numpy as np

from ..data.schema import DAY, K_MAX, MODEL, RATER
from .modelspec import OPEN, POP_GROUP, STEP_K, T50_SHEAR, ModelSpec
from .priors import make_rv, prior_rms
from .rating_terms import rating_terms

#: default priors of :func:`onset_trajectory` (the models with a trajectory share them)
ONSET_PRIORS: dict[str, dict] = {
    # asymptote L = 1 + exp(l), l_m ~ N(log 3, 0.2) per model (L = 4; 95% in [3.0, 5.5])
    "log_L1": {"dist": "Normal", "mu": 1.1, "sigma": 0.2},
    # steepness (per day): a_m = mu_log_k + sigma_log_k * z_m ~ log(k_m - k_min) (models.spec)
    "mu_log_k": {"dist": "Normal", "mu": -0.5, "sigma": 1.0},
    # zero-avoiding (Chung et al. 2013, Psychometrika 78): the turners' log k are centred, and
    # near 0 they sit in a funnel's neck. Mean 0.75, 95% in [0.15, 1.8]
    "sigma_log_k": {"dist": "Gamma", "alpha": 3.0, "beta": 4.0},
    # midpoint in units of n_days: t50_m = n_days * (mu_t50 + sigma_t50 * z_m)
    "mu_t50": {"dist": "Normal", "mu": 0.6, "sigma": 0.4},
    # zero-avoiding too: with few chatbots whose t50s lie close (4 x 1 x 12 x 2, three t50s
    # within a turn) the centred t50s sat in the funnel's neck at a small sigma_t50 under the
    # HalfNormal(0.5) it replaces (18 divergences after the refit). Mean 0.5 (15 days of 30),
    # 95% in [0.10, 1.2]; the conversation level keeps its own prior (models.conversations)
    "sigma_t50": {"dist": "Gamma", "alpha": 3.0, "beta": 6.0},
    # scale of group-level shifts of the three hyper-means (only with group_terms)
    "group_sd": {"dist": "HalfNormal", "sigma": 0.5},
}
#: priors a population-contrast fit adds (``spec.population``): the plateau gets a population,
#: ``log(L_m - 1) ~ N(mu_log_L1[g], sigma_log_L1)``, so a new chatbot's milestone is defined; its
#: mean keeps the per-model prior's centre and spread (``log_L1``); ``sigma_log_L1`` is not
#: sampled but fixed at this prior's root mean square (:func:`_log_L1`), except at the
#: conversation level, which samples it (:func:`_conversation_log_L1`)
POPULATION_PRIORS: dict[str, dict] = {
    "mu_log_L1": {"dist": "Normal", "mu": 1.1, "sigma": 0.2},
    "sigma_log_L1": {"dist": "HalfNormal", "sigma": 0.2},
}
#: the prior a fit with a conversation level adds: the spread of the chatbots' plateau means
#: around ``mu_log_L1``, fixed at this prior's root mean square, 0.2 on log(L - 1) (plateaus
#: 3.3 against 4.0 are 0.26 apart; :func:`_conversation_log_L1`)
CONVERSATION_PRIORS: dict[str, dict] = {
    "sigma_mu_log_L1": {"dist": "HalfNormal", "sigma": 0.2},
}
#: default priors of :func:`day_noise_scale`: the day-to-day deviation of the latent stage from
#: the trajectory, per model (an oscillating model has a large one):
#: log sigma_eps_m = mu_log_eps + sigma_log_eps * z_m
DAY_NOISE_PRIORS: dict[str, dict] = {
    "mu_log_eps": {"dist": "Normal", "mu": -1.6, "sigma": 0.75},
    # zero-avoiding, as sigma_log_k (Chung et al. 2013): where every chatbot's day noise is
    # alike the centred log sigma_eps sat in the funnel's neck (HalfNormal(0.75): 384
    # divergences at 0.9, 33 at 0.99 on a null study); mean 0.75, 95% in [0.15, 1.8]
    "sigma_log_eps": {"dist": "Gamma", "alpha": 3.0, "beta": 4.0},
}
#: default priors of :func:`rater_effects`
RATER_PRIORS: dict[str, dict] = {
    # rater severity (shift on the stage scale), zero-sum over raters, fixed prior per rater
    "severity": {"dist": "ZeroSumNormal", "sigma": 0.5},
    # rater discrimination: log disc_r ~ N(mu, sigma) per rater (d = 3.3, 95% in [1.2, 8.8])
    "log_disc": {"dist": "Normal", "mu": 1.2, "sigma": 0.5},
}

#: ``spec.population`` of a fit with a conversation level (:mod:`delusion_bayes.models.
#: conversations`): hyper-means of t50 and log k per chatbot, the rest shared
CONVERSATION_LEVEL = "conversation"
#: the between-model scales that ``population="group"`` gives each group (the others: one for
#: all models). Only t50's, whose unequal spread the population contrasts must survive
#: (docs/validation.md). With log k's and the day noise's per group too, a group of 5-6
#: chatbots let one chatbot turned before day 1 (ratings 3-4 from the first day) leave its
#: group's steepness population: k 0.01 and plateau 6.3, a flat line through its ratings, a
#: second mode one chain in four kept (unequal seed 360 at the main job's draws, sampler seeds
#: 0 and 1: R-hat 1.53, gate failed after both refits); shared: no second mode in 5 fits
GROUP_SCALES: frozenset[str] = frozenset({"sigma_t50"})
#: prefix of the ``pm.Data`` name of a spec field (``y`` is also the onset model's observed name)
DATA_PREFIX = "d_"


def spec_data(spec: ModelSpec, key: str):
    """The spec's data field ``key`` (``SpecData`` item names) as a graph input: the model's
    ``pm.Data`` named ``d_<key>``, created on first use."""
    import pymc as pm

    model = pm.modelcontext(None)
    name = DATA_PREFIX + key
    if name in model.named_vars:
        return model[name]
    return pm.Data(name, np.asarray(spec.data[key]))


def set_spec_data(model, spec: ModelSpec) -> None:
    """Point ``model``'s data (:func:`spec_data`) at ``spec``'s arrays: the model must have been
    built from a spec of the same :meth:`~delusion_bayes.models.spec.ModelSpec.structure_key`."""
    for key, value in spec.data.items():
        name = DATA_PREFIX + key
        if name in model.named_vars:
            var = model[name]
            var.set_value(np.asarray(value, dtype=var.dtype))


def _masked_normal(name: str, mask, loc, scale, n: int):
    """A free vector of ``n`` with prior ``N(loc, scale)`` where ``mask`` and ``N(0, 1)``
    elsewhere (the entries the graph does not use there: independent of everything)."""
    import pymc as pm
    import pytensor.tensor as pt

    loc = pt.switch(mask, loc, 0.0)
    scale = pt.switch(mask, scale, 1.0)
    return pm.Normal(name, loc, scale, shape=n)


def _group_shift(spec: ModelSpec, param: str, sds: dict | None = None):
    """``sum_g b_{param,g}[group_g(m)]`` over the group terms, non-centred: ``b = sd * z``,
    ``sd ~ group_sd`` per parameter and term. At the conversation level the terms are the
    prompts and categories several chatbots ran (``conversations.shared_terms``) and shift t50
    only: a prompt makes every chatbot's conversation turn sooner or later, as the replicated
    simulator's prompts do; the steepness and plateau stay the chatbot's and conversation's.
    ``sds``: a term's scale given (:func:`_t50_variance_shares`) instead of drawn."""
    import pymc as pm

    shift = 0.0
    if spec.population == CONVERSATION_LEVEL and param != "t50":
        return shift
    for term in spec.group_terms:
        dim = f"group_{term}"
        sd = (sds or {}).get(term)
        if sd is None:
            sd = make_rv(f"sd_{param}_{term}", spec.priors["group_sd"])
        z = pm.Normal(f"z_{param}_{term}", 0.0, 1.0, dims=dim)
        b = pm.Deterministic(f"b_{param}_{term}", sd * z, dims=dim)
        shift = shift + b[spec_data(spec, f"group_{term}_idx")]
    return shift


def _t50_variance_shares(spec: ModelSpec):
    """``(sigma_t50, {term: sd_t50_<term>})`` at the conversation level with shared groupings:
    the total between-conversation SD of t50 (``sd_t50_total``, the prior ``sigma_t50`` has
    without them) split by variance shares, ``sigma_t50 = total sqrt(w_0)``, ``sd_t50_<term> =
    total sqrt(w_i)``, ``w ~ Dirichlet(1, ..., 1)``. The data pin the total (the spread of a
    chatbot's conversations) and the shares only weakly (how alike two chatbots' runs of a prompt
    are); with ``sigma_t50`` and ``sd_t50_prompt`` sampled apart their trade-off was a ridge
    (docs/dev/models.md, "Conversation level")."""
    import pymc as pm
    import pytensor.tensor as pt

    total = make_rv("sd_t50_total", spec.priors["sigma_t50"])
    n = len(spec.group_terms) + 1
    shares = pm.Dirichlet("t50_shares", a=np.ones(n), shape=n)
    sigma_t50 = pm.Deterministic("sigma_t50", total * pt.sqrt(shares[0]))
    sds = {
        term: pm.Deterministic(f"sd_t50_{term}", total * pt.sqrt(shares[i + 1]))
        for i, term in enumerate(spec.group_terms)
    }
    return sigma_t50, sds


def _t50(spec: ModelSpec, mu_t50, sigma_t50, n_models: int, k, shared_sd=None):
    """``t50 ~ N(T (mu_t50 + shift), T sigma_t50)``, the same prior in every coordinate.

    Centred (``t50_centred``) for models whose data pin t50 (:func:`_turned`). A never-turner's
    ratings bound only ``h = k (t50 - T) > ~2``, a wall whose width in a whitened t50 shrinks
    with k; its free variable is ``w`` with ``t50 = T + c sinh(w) / k`` (``c = T50_SHEAR``;
    mirrored at the first day for a model turned from day 1), where the wall has unit width,
    and the prior enters with its Jacobian (``w ~ N(0, 1)``, whose density a ``pm.Potential``
    replaces by the prior's in w). With a conversation level (``spec.population ==
    CONVERSATION_LEVEL``) non-centred for every conversation: ``t50 = loc + scale z_t50``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    T = float(spec.n_days)
    loc = T * (mu_t50 + _group_shift(spec, "t50", shared_sd)) * pt.ones(n_models)
    scale = T * sigma_t50
    if spec.population == CONVERSATION_LEVEL:
        # non-centred for every conversation: a chatbot's conversations are alike in t50 (the
        # replicated preset's spread, 1.7 turns of 12, near what 12 turns pin), so the prior,
        # not the data or the wall, places a conversation's t50. Under the centred and wall
        # coordinates below 7 of 100 coverage studies failed the gate, five with divergences at
        # small sigma_t50 (the walls' sinh(w) / k tied to k there); non-centred the divergences
        # went (docs/dev/models.md, "Conversation level")
        return loc + scale * pm.Normal("z_t50", 0.0, 1.0, shape=n_models)
    t_first = pt.min(spec_data(spec, "day_values"))
    masks = _t50_masks(spec)
    t50 = _masked_normal("t50_centred", masks["t50_centred"], loc, scale, n_models)
    # the prior density in w is N(t50; loc, scale) |dt50/dw|
    walls = (("w_t50", T, 1.0), ("w_t50_early", t_first, -1.0))
    for name, anchor, sign in walls:
        mask = masks[name]
        # started on the data's side of the wall (h = 2c), not on it (w = 0): an already-turned
        # model started there could settle in a flat-line local mode
        w = pm.Normal(name, 0.0, 1.0, shape=n_models, initval=np.full(n_models, np.arcsinh(2.0)))
        t_w = anchor + sign * T50_SHEAR * pt.sinh(w) / k
        jac = pt.log(T50_SHEAR * pt.cosh(w) / k)
        z = (t_w - loc) / scale
        # where this wall is the model's coordinate, its density replaces the standard normal
        # (a proper prior elsewhere, so the graph's prior can be drawn)
        terms = pt.switch(mask, -0.5 * z**2 - pt.log(scale) + jac + 0.5 * w**2, 0.0)
        pm.Potential(f"{name}_prior", terms.sum())
        t50 = pt.switch(mask, t_w, t50)
    return t50


def _t50_masks(spec: ModelSpec) -> dict:
    """Which coordinate gives each model's t50, as graph expressions of the spec's data:
    ``t50_centred`` (:func:`_turned`), ``w_t50_early`` (turned from the first day) and
    ``w_t50`` (never turned)."""
    centred = spec_data(spec, "t50_centred")
    early = spec_data(spec, "t50_early")
    turned = centred & ~early
    return {"t50_centred": turned, "w_t50_early": early & ~turned, "w_t50": ~turned & ~early}


def sampling_coordinates(spec: ModelSpec) -> dict[str, np.ndarray]:
    """The entries each masked free vector of the graph uses (numpy, by name): the others are
    standard normals that stand in for the coordinate another study of the structure uses."""
    turned = _turned(spec)
    early = np.asarray(spec.data.t50_early, bool) & ~turned
    out = {"t50_centred": turned, "w_t50_early": early, "w_t50": ~turned & ~early}
    pinned = np.asarray(spec.data.log_k_centred, bool) & turned
    out |= {"log_k_centred": pinned, "z_log_k": ~pinned}
    if spec.data.eps_centred is not None:
        eps = np.asarray(spec.data.eps_centred, bool)
        out |= {"log_eps_centred": eps, "z_log_eps": ~eps}
    if spec.data.plateau_own is not None:
        out["mu_log_L1_chatbot_centred"] = np.asarray(spec.data.plateau_own, bool)
    return {name: np.flatnonzero(mask) for name, mask in out.items()}


def _turned(spec: ModelSpec) -> np.ndarray:
    """Models whose median rating reaches :data:`~delusion_bayes.data.schema.STAGE_MIDPOINT`
    within the study but not on its first day (``t50_centred`` and not ``t50_early``): the data
    pin their onset parameters."""
    return np.asarray(spec.data.t50_centred, bool) & ~np.asarray(spec.data.t50_early, bool)


def _partially_centred(name: str, loc, scale, centred, n: int):
    """``x_m ~ N(loc_m, scale)`` per model: centred (free ``<name>_centred``) where ``centred``
    (the data pin ``x``; a graph input), non-centred (``z_<name>``, ``x = loc + scale z``)
    elsewhere (``x`` follows the population). The same model either way. Both free vectors span
    every model; each is used where its mask says (:func:`_masked_normal`)."""
    import pymc as pm
    import pytensor.tensor as pt

    loc = loc * pt.ones(n)
    xc = _masked_normal(f"{name}_centred", centred, loc, scale, n)
    z = pm.Normal(f"z_{name}", 0.0, 1.0, shape=n)
    return pt.switch(centred, xc, loc + scale * z)


def _hyper(spec: ModelSpec, name: str):
    """Hyper-parameter ``name`` (its prior: ``spec.priors[name]``): one scalar, or in a
    population-contrast fit (``spec.population``) one per group of ``pop_group`` (means always,
    the scales of :data:`GROUP_SCALES` with ``population="group"``), returned per model
    (indexed by its group)."""
    prior = spec.priors[name]
    per_group = (spec.population == "group" and name in GROUP_SCALES) or (
        spec.population and name.startswith("mu_")
    )
    if not per_group:
        return make_rv(name, prior)
    return make_rv(name, prior, dims=POP_GROUP)[spec_data(spec, "pop_group")]


def _log_L1(spec: ModelSpec):
    """``log(L_m - 1)``: a fixed prior per model (no population; docs/dev/design-notes.md
    #modelsblockspy), or in a population-contrast fit ``N(mu_log_L1[g], sigma_log_L1)``, a
    population per group with a fixed spread, centred; with a conversation level
    :func:`_conversation_log_L1`."""
    import pymc as pm
    import pytensor.tensor as pt

    if not spec.population:
        return make_rv("log_L1", spec.priors["log_L1"], dims=MODEL)
    if spec.population == CONVERSATION_LEVEL:
        return _conversation_log_L1(spec)
    # the plateau's spread is fixed at its prior's root mean square: ratings stop at stage 4,
    # so a plateau at the ceiling is bounded from below only and the spread of such plateaus is
    # not identified; sampled, it was a funnel (docs/dev/models.md, "Population contrasts").
    # With a fixed scale there is no funnel, and the plateaus are centred
    rms = prior_rms(spec.priors["sigma_log_L1"])
    sigma = pm.Deterministic("sigma_log_L1", pt.as_tensor_variable(rms))
    return pm.Normal("log_L1", _hyper(spec, "mu_log_L1"), sigma, dims=MODEL)


def _conversation_log_L1(spec: ModelSpec):
    """``log(L_mc - 1)`` of conversation ``c`` of chatbot ``m`` in a fit with a conversation
    level: ``log(L_mc - 1) ~ N(mu_log_L1_chatbot[m], sigma_log_L1)``, the between-conversation
    spread sampled; ``mu_log_L1_chatbot[m] ~ N(mu_log_L1, sigma_mu_log_L1)`` (the chatbots'
    spread fixed) where the chatbot's conversations show their plateau (``plateau_own``),
    ``mu_log_L1`` elsewhere (:func:`delusion_bayes.models.conversations.plateau_shown`); the
    chatbots' means centred, the conversations' plateaus non-centred."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    # a new conversation's first stable turn rests on its chatbot's plateau and on the spread
    # around it; with one plateau population for all chatbots and its spread fixed at 0.2, 95%
    # intervals of it covered 0.79 of the truths (docs/dev/models.md, "Conversation level").
    # A chatbot whose conversations turn late never shows its plateau: a mean of its own let it
    # borrow a low one (a flat line through its late ratings), so it keeps the population's
    centre = make_rv("mu_log_L1", p["mu_log_L1"])
    # the chatbots' spread is fixed at its prior's root mean square, as the population fits fix
    # the plateau's (above): sampled, with 3 chatbots its centre mu_log_L1 mixed slowly (3 x 10
    # x 30 x 4: R-hat 1.012, ESS 271 after the refit; docs/dev/models.md)
    spread = pt.as_tensor_variable(prior_rms(p["sigma_mu_log_L1"]))
    pm.Deterministic("sigma_mu_log_L1", spread)
    own = spec_data(spec, "plateau_own")
    # centred: a chatbot that owns its mean shows its plateau in half its conversations or
    # more, which pin the mean (non-centred, 3 x 10 x 30 x 4 mixed slowly: ESS 311 after the
    # refit); a chatbot that does not own one follows the centre and its entry is unused
    n_bots = len(spec.coords[POP_GROUP])
    bot_c = _masked_normal("mu_log_L1_chatbot_centred", own, centre, spread, n_bots)
    bot = pm.Deterministic("mu_log_L1_chatbot", pt.switch(own, bot_c, centre), dims=POP_GROUP)
    # the conversations non-centred: with 12 turns a conversation's plateau is not pinned
    # tighter than their spread, and centred where its median rating reached the midpoint with
    # 3 turns after it the 4 x 12 x 12 x 2 design failed its gate (R-hat 1.072, ESS 31)
    sigma = make_rv("sigma_log_L1", p["sigma_log_L1"])
    z = pm.Normal("z_log_L1", 0.0, 1.0, dims=MODEL)
    x = bot[spec_data(spec, "pop_group")] + sigma * z
    return pm.Deterministic("log_L1", x, dims=MODEL)


def onset_trajectory(spec: ModelSpec):
    """Add the hierarchical ``L``, ``k``, ``t50`` (dim ``model``) and ``trajectory`` (``model,
    day``) to the model and return the trajectory (math: :mod:`delusion_bayes.models.joint`)."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    n_models = len(spec.coords[MODEL])
    # log(L - 1), not logit((L - 1) / 3): L = 4 is an interior point
    log_L1 = _log_L1(spec) + _group_shift(spec, "L")
    L = pm.Deterministic("L", 1.0 + pt.exp(log_L1), dims=MODEL)
    if spec.trajectory == "step":
        k = pm.Deterministic("k", pt.fill(pt.zeros(n_models), STEP_K), dims=MODEL)
    else:
        mu_log_k = _hyper(spec, "mu_log_k")
        sigma_log_k = _hyper(spec, "sigma_log_k")
        # soft bounds: k = k_min + (K_MAX - k_min) sigmoid(a - log(K_MAX - k_min)) (spec.K_MAX,
        # spec.K_MIN); the joint models mix worse with K_MIN, so they keep k_min = 0
        # centred where the ratings pin log k (geometry.log_k_centring), else non-centred
        pinned = spec_data(spec, "log_k_centred") & _t50_masks(spec)["t50_centred"]
        loc = mu_log_k + _group_shift(spec, "log_k")
        a = _partially_centred("log_k", loc, sigma_log_k, pinned, n_models)
        k_min = spec.definition.k_min
        span = K_MAX - k_min
        k = pm.Deterministic("k", k_min + span * pm.math.sigmoid(a - np.log(span)), dims=MODEL)
    mu_t50 = _hyper(spec, "mu_t50")
    shared_sd: dict = {}
    if spec.t50_scale_sampled and spec.population == CONVERSATION_LEVEL and spec.group_terms:
        sigma_t50, shared_sd = _t50_variance_shares(spec)
    elif spec.t50_scale_sampled:
        sigma_t50 = _hyper(spec, "sigma_t50")
    else:
        # fewer than 2 models pin a t50: the others bound theirs from one side only, so the
        # population's spread is not identified and sampling it is a funnel (a study where no
        # chatbot turns: 66 divergences, R-hat 1.03 on sigma_t50). Fixed at its prior's root
        # mean square, which keeps each t50's prior variance (docs/dev/models.md)
        sigma_t50 = pm.Deterministic("sigma_t50", pt.as_tensor_variable(prior_rms(p["sigma_t50"])))
    t50 = pm.Deterministic("t50", _t50(spec, mu_t50, sigma_t50, n_models, k, shared_sd), dims=MODEL)
    t = spec_data(spec, "day_values")[None, :]
    x = k[:, None] * (t - t50[:, None])
    shape = trajectory_shape(x, spec.trajectory, clip=pt.clip, sigmoid=pm.math.sigmoid)
    return pm.Deterministic("trajectory", 1.0 + (L - 1.0)[:, None] * shape, dims=(MODEL, DAY))


def trajectory_shape(x, trajectory: str, *, clip, sigmoid):
    """The rise from the floor (0) to the plateau (1) at ``x = k (t - t50)`` of a ``trajectory``
    variant (``clip``, ``sigmoid``: PyTensor's in the graph, NumPy/SciPy's after sampling,
    :func:`delusion_bayes.models.derived.trajectory_stage`): ``linear`` is a ramp with the
    logistic's slope at the midpoint, ``(L - 1) k / 4``; ``logistic`` and ``step`` (``k`` fixed
    at :data:`~delusion_bayes.models.modelspec.STEP_K`) the logistic."""
    if trajectory == "linear":
        return clip(0.5 + x / 4.0, 0.0, 1.0)
    return sigmoid(x)


def day_noise_scale(spec: ModelSpec):
    """Per-model day-noise SD ``sigma_eps[m]``, ``log sigma_eps ~ N(mu_log_eps, sigma_log_eps)``,
    centred where the ratings identify the noise (``eps_centred``:
    :func:`delusion_bayes.models.geometry.noise_identified`), non-centred elsewhere."""
    import pymc as pm
    import pytensor.tensor as pt

    p = spec.priors
    mu_log_eps = make_rv("mu_log_eps", p["mu_log_eps"])
    sigma_log_eps = make_rv("sigma_log_eps", p["sigma_log_eps"])
    if spec.data.eps_centred is None:
        raise ValueError(f"the {spec.name} spec has no day-noise geometry (eps_centred)")
    centred = spec_data(spec, "eps_centred")
    n_models = len(spec.coords[MODEL])
    log_s = _partially_centred("log_eps", mu_log_eps, sigma_log_eps, centred, n_models)
    return pm.Deterministic("sigma_eps", pt.exp(log_s), dims=MODEL)


def rater_effects(spec: ModelSpec):
    """Rater severity (``ZeroSumNormal``: the mean rater defines the stage scale) and
    discrimination (``log d_r ~ N``), fixed priors per rater: a hierarchy over four raters
    cannot estimate its spread. ``shared`` cutpoints: severity 0, one discrimination."""
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


#: Gauss-Hermite nodes of the latent-stage integral per model, the fewest that keep paper_like's
#: summed model-day log-likelihood within ~1e-3 of :mod:`delusion_bayes.models.marginal`
GH_NODES: dict[str, int] = {"joint": 12, "disengagement": 12, "rater": 16}
#: extra variance (stage units) the quadrature's proposal gives a rating at an end of the scale
END_VAR: float = 1.0


def marginal_ratings(
    spec: ModelSpec, mu, sigma, severity, disc, level=None, nodes=None, rows: str = "md"
):
    """Log-likelihood of every model-day's ratings with its latent stage integrated out.

    For model-day ``u`` with latent ``s ~ N(mu_u, sigma_u)`` and ratings ``y_{r,u}``:

    .. math::

        \\log p(y_u) = \\log \\int \\prod_r p(y_{r,u} \\mid s)\\, N(s; \\mu_u, \\sigma_u)\\, ds
        \\approx \\operatorname{logsumexp}_q \\Big[\\log \\tfrac{w_q}{\\sqrt\\pi} + x_q^2
            + \\sum_r \\log p(y_{r,u} \\mid s_q) + \\log N(s_q; \\mu_u, \\sigma_u)
            + \\log(\\sqrt{2\\pi}\\,\\tau_u)\\Big]

    with Gauss-Hermite nodes ``s_q = m_u + sqrt(2) tau_u x_q`` on an importance-weighted
    Gaussian proposal ``N(m_u, tau_u)`` combining the prior with a Gaussian reading of the
    ratings (each ``y - severity_r`` with variance ``pi^2 / (3 d_r^2) + 1/12``, plus
    :data:`END_VAR` at an end of the scale): ``1/tau^2 = 1/sigma^2 + P_u``,
    ``m = tau^2 (mu / sigma^2 + P_u yhat_u)``. Smooth in every parameter.

    The rating terms: :mod:`delusion_bayes.models.rating_terms` (their constant part is added
    once per rater, ``n_interior``). ``nodes`` default to :data:`GH_NODES`. ``rows="pat"``
    integrates once per distinct rating pattern instead of once per model-day and weights each
    by its count (``pat_*``: :func:`delusion_bayes.models.spec.rating_patterns`; for a model
    whose model-days share one prior, ``mu`` and ``sigma`` then ``(P,)``). ``level``
    (disengagement): ``(beta, u, c1, c2)``; the adjudicated level with
    ``P(D >= j) = sigmoid(beta (s - STAGE_MIDPOINT) + u_m - c_j)`` joins the integrand.

    Why by hand: PyMC marginalises discrete variables only; this is a fixed-node version of
    lme4's adaptive Gauss-Hermite (Pinheiro & Bates 1995, J. Comput. Graph. Stat. 4) with the
    node centre taken from the data instead of an inner optimisation.
    """
    import pymc as pm
    import pytensor.tensor as pt

    x, w = np.polynomial.hermite.hermgauss(nodes or GH_NODES.get(spec.name, 16))
    lw = pt.as_tensor_variable(np.log(w) + x**2 - 0.5 * np.log(np.pi))
    xq = pt.as_tensor_variable(np.sqrt(2.0) * x)
    if rows not in ("md", "pat") or (rows == "pat" and level is not None):
        raise ValueError(f"rows={rows!r}: expected 'md', or 'pat' without a level")
    centre, tau = _proposal(spec, mu, sigma, severity, disc, rows)
    s = centre[:, None] + tau[:, None] * xq[None, :]  # (U, Q)
    ll = rating_terms(
        s, severity, disc, spec_data(spec, f"{rows}_lo"), spec_data(spec, f"{rows}_hi")
    )
    if level is not None:
        ll = ll + _level_terms(spec, s, level)
    prior = -0.5 * ((s - mu[:, None]) / sigma[:, None]) ** 2 + pt.log(tau / sigma)[:, None]
    per_md = pt.logsumexp(lw[None, :] + ll + prior, axis=1)
    const = (spec_data(spec, "n_interior") * pt.log1mexp(-disc)).sum()
    if level is not None:
        _, _, c1, c2 = level
        n1 = pt.eq(spec_data(spec, "md_level"), 1).sum()
        const = const + n1 * pt.log1mexp(-(c2 - c1))
    total = (spec_data(spec, "pat_count") * per_md).sum() if rows == "pat" else per_md.sum()
    pm.Potential("ratings_marginal", total + const)
    return per_md


def _proposal(spec: ModelSpec, mu, sigma, severity, disc, rows: str = "md"):
    """Centre and scale ``(m_u, tau_u)`` of :func:`marginal_ratings`' Gaussian proposal: the
    prior and a Gaussian reading of the ratings, precision-weighted (``rows``: as there)."""
    import pytensor.tensor as pt

    lo, hi = spec_data(spec, f"{rows}_lo"), spec_data(spec, f"{rows}_hi")
    rated = pt.cast(pt.gt(lo, -OPEN) | pt.lt(hi, OPEN), "float64")
    v_r = (np.pi**2 / 3.0) / disc**2 + 1.0 / 12.0
    prec = rated / (v_r[None, :] + END_VAR * spec_data(spec, f"{rows}_end"))
    p_u = prec.sum(axis=1)
    yhat = (prec * (spec_data(spec, f"{rows}_rating") - severity[None, :])).sum(axis=1)
    inv_s2 = 1.0 / sigma**2
    prec_post = inv_s2 + p_u
    centre = (mu * inv_s2 + yhat) / prec_post
    tau = 1.0 / pt.sqrt(prec_post)
    return centre, tau


def _level_terms(spec: ModelSpec, s, level):
    """The log-probability of each model-day's adjudicated level at the nodes ``s`` (``(U, Q)``;
    0 where none; :mod:`delusion_bayes.models.level_terms`), without the constant
    :func:`marginal_ratings` adds once."""
    from .level_terms import level_terms

    beta, u, c1, c2 = level
    md_model, md_level = spec_data(spec, "md_model"), spec_data(spec, "md_level")
    return level_terms(s, beta, u, c1, c2, md_model, md_level)


__all__ = [
    "DATA_PREFIX",
    "POPULATION_PRIORS",
    "CONVERSATION_PRIORS",
    "day_noise_scale",
    "marginal_ratings",
    "onset_trajectory",
    "rater_effects",
    "sampling_coordinates",
    "set_spec_data",
    "spec_data",
]
