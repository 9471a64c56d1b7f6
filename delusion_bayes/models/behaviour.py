r"""Judged behaviours over turns in a replicated study: chatbot -> conversation -> turn (issue 54).

For the rating ``y`` of rater ``r`` on turn ``t`` of conversation ``c`` of chatbot ``m`` on item
(behaviour) ``i``, the capped intensity ``y = min(score, cap_i) - min_i`` on the levels
``0..K_i - 1`` (``cap_i``: the scoring rule's cap, Spiral-Bench's ``v2_cap5`` gives 0..5):

.. math::

    \eta_{rmcti} &= \alpha_{im} + \beta_{im}\, x_t + \sigma^{conv}_i z_{mci} + s_{ir} \\
    P(y \le k) &= \mathrm{logit}^{-1}(\kappa_{ik} - \eta) \quad\text{(ordinal, cumulative
    logit)} \\
    \alpha_{i\cdot} &\sim \mathrm{ZeroSumNormal}(2) \text{ over chatbots}, \quad
    \beta_{im} \sim N(0, 2.5), \quad z \sim N(0, 1), \quad
    \sigma^{conv}_i \sim \mathrm{Gamma}(2, 2) \\
    s_{i\cdot} &\sim \mathrm{ZeroSumNormal}(0.5) \text{ over raters (two or more)} \\
    \kappa_{i\cdot} &\sim N(0, 3) \text{ ordered}

with ``x_t = (t - t_mid) / (t_max - t_min)`` in [-1/2, 1/2] (the turn trend: escalation within
a conversation, per chatbot and item). The chatbots' mean level of an item is in the
cutpoints (``alpha`` sums to zero over chatbots). The ``hurdle`` likelihood splits the same
structure in two: ``P(y > 0) = logit^{-1}(eta^0)`` and ``y - 1 | y > 0`` ordinal on ``1..K-1``
with ``eta^1``, each with its own ``alpha``, ``beta``, conversation effects and scales.
docs/dev/models.md ("Judged behaviours") says which one the stage fits and why (PSIS-LOO and
posterior predictive checks on the Spiral-Bench files).

The chatbot-level quantity (:mod:`.behaviour_posterior`): ``item_mean (model, item)``, the
expected value per judged turn of a **new** conversation, ``mean_t mean_r int sum_k k
P(y = k | eta(u)) N(u; 0, sigma^conv_i) du + min_i`` (Gauss-Hermite over ``u``): the estimand
of :func:`~delusion_bayes.baselines.replicated.item_means` on the same rule, so the two columns
answer one question.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from ..data.replicated import CONVERSATION, ITEM, MODEL, RATER, TURN
from .definition import ModelDef
from .priors import make_rv, prior_table, resolve_prior_table

__all__ = [
    "BEHAVIOUR_PRIORS",
    "DEFINITION",
    "LIKELIHOODS",
    "BehaviourSpec",
    "behaviour_spec",
    "build_behaviour",
    "fit_behaviour",
]

#: default priors (logit scale) in one table
BEHAVIOUR_PRIORS: dict[str, dict[str, Any]] = {
    "alpha": {"dist": "ZeroSumNormal", "sigma": 2.0},
    # the turn trend over the whole conversation (x spans 1): Gelman et al. (2008, Ann. Appl.
    # Stat. 2) scale 2.5 for a logistic coefficient of an input with SD <= 0.5. N(0, 1) shrank
    # the simulated recognition item's trends (posterior means 5.5-8.5 under 2.5) by ~20%
    "beta": {"dist": "Normal", "mu": 0.0, "sigma": 2.5},
    # zero-avoiding (Chung et al. 2013, Psychometrika 78): a chatbot's conversations differ, and
    # with HalfNormal(1) the chains crawled through the scale's lower tail where a few
    # well-informed conversations pin their effect (spiral_like, 10 sampler seeds: min ESS of
    # the scales 292-641 at the first attempt, one fit failing after the refit; Gamma(2, 2):
    # 542-954, 10 of 10 pass; docs/dev/models.md, "Judged behaviours"). Mean 1 as before
    "sigma_conversation": {"dist": "Gamma", "alpha": 2.0, "beta": 2.0},
    # fixed scale, as the trajectory models' (RATER_PRIORS): a spread estimated from two to four
    # raters is barely identified (its HalfNormal scale had the lowest ESS of the fit)
    "severity": {"dist": "ZeroSumNormal", "sigma": 0.5},
    "cutpoints": {"dist": "Normal", "mu": 0.0, "sigma": 3.0},
}
LIKELIHOODS: tuple[str, ...] = ("ordinal", "hurdle")
#: a cutpoint beyond an item's last level (items with fewer levels than the widest)
_FAR = 1.0e4


@dataclass
class BehaviourSpec:
    """Everything the graph needs, inspectable without PyMC: one row per rating (``y`` the level
    index, ``model``/``unit``/``item``/``rater`` indices, ``x`` the scaled turn), each
    conversation unit's chatbot, the levels per item and the turn grid of a new conversation."""

    coords: dict[str, list]
    y: np.ndarray
    idx: dict[str, np.ndarray]
    x: np.ndarray
    unit_model: np.ndarray
    n_levels: np.ndarray  # (item,)
    offset: np.ndarray  # (item,) the value of level 0 (the item's minimum)
    x_turns: np.ndarray  # the scaled judged turns a new conversation has
    likelihood: str = "ordinal"
    rule: str = "raw"
    priors: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(BEHAVIOUR_PRIORS))
    name: str = "behaviour"

    @property
    def definition(self) -> ModelDef:
        return DEFINITION

    @property
    def variant(self) -> str:
        return f"{self.name}[{self.likelihood}]"

    @property
    def n_raters(self) -> int:
        return len(self.coords[RATER])

    def build(self):
        return build_behaviour(self)

    def finish(self, tree: xr.DataTree, seed: int = 0, log_likelihood: bool = True):
        from .behaviour_posterior import finish_behaviour_fit

        return finish_behaviour_fit(tree, self, seed=seed, log_likelihood=log_likelihood)

    def prior_table(self):
        return prior_table(self.priors)

    def hash(self) -> str:
        h = hashlib.sha256()
        meta = {"coords": self.coords, "priors": self.priors, "lik": self.likelihood}
        h.update(json.dumps(meta, sort_keys=True, default=str).encode())
        for a in (self.y, self.x, self.unit_model, self.n_levels, self.offset, self.x_turns):
            h.update(np.ascontiguousarray(a).tobytes())
        for k in sorted(self.idx):
            h.update(np.ascontiguousarray(self.idx[k]).tobytes())
        return h.hexdigest()[:16]


def _caps(ds: xr.Dataset, cap: float | None, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's lowest level and highest (capped) level."""
    lo = ds["item_min"].values.astype(float)
    hi = ds["item_max"].values.astype(float)
    item_cap = ds["item_cap"].values.astype(float)
    top = np.nanmax(np.where(np.isfinite(scores), scores, -np.inf), axis=(0, 1, 2, 3))
    hi = np.where(np.isfinite(item_cap), np.fmin(item_cap, hi), hi)
    fallback = np.maximum(top, lo + 1) if cap is None else np.full(hi.shape, float(cap))
    hi = np.where(np.isfinite(hi), hi, fallback)
    if cap is not None:
        hi = np.minimum(hi, cap)
    return lo, hi


def behaviour_spec(
    ds: xr.Dataset,
    *,
    rule: str = "auto",
    likelihood: str = "ordinal",
    priors: dict[str, dict[str, Any]] | None = None,
) -> BehaviourSpec:
    """The spec of a validated replicated study: every finite rating, capped at the scoring
    rule's cap (``auto``: as :func:`~delusion_bayes.baselines.replicated.rule_of`; a rule that
    divides by the turn's length has no integer scale: ValueError)."""
    from ..baselines.replicated import rule_of

    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood {likelihood!r}; expected one of {list(LIKELIHOODS)}")
    r = rule_of(ds, rule)
    if r.length_norm:
        raise ValueError(f"rule {r.name!r} is length-normalised; the model needs integer levels")
    s = ds["score"].transpose(RATER, MODEL, CONVERSATION, TURN, ITEM).values.astype(float)
    lo, hi = _caps(ds, r.cap, s)
    s = np.minimum(s, hi) - lo
    present = ds["has_conversation"].transpose(MODEL, CONVERSATION).values
    units = np.argwhere(present)  # (unit, [model, conversation])
    unit_of = np.full(present.shape, -1)
    unit_of[units[:, 0], units[:, 1]] = np.arange(len(units))
    ri, mi, ci, ti, ii = np.nonzero(np.isfinite(s) & present[None, :, :, None, None])
    n_levels = (hi - lo + 1).astype(np.int64)
    y = np.rint(s[ri, mi, ci, ti, ii]).astype(np.int64)
    # ratings ordered bottom level, middle levels, top level (stable): the graph sums each block's
    # log-likelihood over a contiguous slice with only the terms its level needs (ordinal_loglik)
    order = np.argsort(level_block(y, n_levels[ii]), kind="stable")
    ri, mi, ci, ti, ii, y = (a[order] for a in (ri, mi, ci, ti, ii, y))
    turns = ds[TURN].values.astype(float)
    rated_turns = np.unique(turns[ti])
    mid, span = (turns.min() + turns.max()) / 2, max(float(turns.max() - turns.min()), 1.0)
    models = [str(m) for m in ds[MODEL].values]
    convs = [str(c) for c in ds[CONVERSATION].values]
    # entry-wise, a new distribution replacing its entry whole, unknown names an error
    merged = resolve_prior_table("behaviour", BEHAVIOUR_PRIORS, priors)
    return BehaviourSpec(
        coords={
            MODEL: models,
            ITEM: [str(i) for i in ds[ITEM].values],
            RATER: [str(r) for r in ds[RATER].values],
            "unit": [f"{models[m]}|{convs[c]}" for m, c in units],
            "cut": list(range(int(n_levels.max()) - 1)),
        },
        y=y,
        idx={"model": mi, "unit": unit_of[mi, ci], "item": ii, "rater": ri},
        x=(turns[ti] - mid) / span,
        unit_model=units[:, 0].astype(np.int64),
        n_levels=n_levels,
        offset=lo,
        x_turns=(rated_turns - mid) / span,
        likelihood=likelihood,
        rule=r.name,
        priors=merged,
    )


def _linear_predictor(spec: BehaviourSpec, suffix: str = ""):
    """``(eta, common)``: ``eta`` per rating (module docstring) without ``common (item,)``, the
    conversation effects' mean over all conversations (``sigma_i * zbar_i``), which the caller
    moves into the item's location (cutpoints or intercept); variables ``<name><suffix>``."""
    import pymc as pm
    import pytensor.tensor as pt

    p, idx = spec.priors, spec.idx
    n_m, n_i = len(spec.coords[MODEL]), len(spec.coords[ITEM])
    if n_m > 1:
        alpha = pm.ZeroSumNormal(
            f"alpha{suffix}", sigma=p["alpha"]["sigma"], dims=(ITEM, MODEL), n_zerosum_axes=1
        )
    else:
        alpha = pm.Deterministic(f"alpha{suffix}", pt.zeros((n_i, 1)), dims=(ITEM, MODEL))
    beta = pm.Normal(f"beta{suffix}", p["beta"]["mu"], p["beta"]["sigma"], dims=(ITEM, MODEL))
    sigma_c = make_rv(f"sigma_conversation{suffix}", p["sigma_conversation"], dims=ITEM)
    z_dev, zbar = _conversation_z(spec, suffix)
    pm.Deterministic(f"z_effect{suffix}", z_dev + zbar[None, :], dims=("unit", ITEM))
    u = sigma_c * z_dev  # (unit, item), without the overall mean
    ii, mm = idx["item"], idx["model"]
    eta = alpha[ii, mm] + beta[ii, mm] * spec.x + u[idx["unit"], ii]
    if spec.n_raters > 1:
        sev = pm.ZeroSumNormal(f"severity{suffix}", p["severity"]["sigma"], dims=(ITEM, RATER))
        eta = eta + sev[ii, idx["rater"]]
    return eta, sigma_c * zbar


def _free_mean(size: np.ndarray, name: str, dims: tuple[str, ...], member: np.ndarray):
    """Draws ``d ~ N(0, 1/size)`` per group (``dims[0]``) minus their ``size``-weighted mean
    (``member``: rows of weights): the deviations of i.i.d. means from their weighted mean, in
    law; the removed direction is held by its prior."""
    import pymc as pm
    import pytensor.tensor as pt

    raw = pm.Normal(name, 0.0, 1.0 / np.sqrt(np.maximum(size, 1.0))[:, None], dims=dims)
    return raw - pt.dot(member, raw)


def _conversation_z(spec: BehaviourSpec, suffix: str = ""):
    """Standardised conversation effects ``(unit, item)``, i.i.d. N(0, 1) in law, as ``(dev,
    zbar)``: ``dev`` = each chatbot's mean deviation from the overall mean plus each
    conversation's deviation from its chatbot's mean, ``zbar ~ N(0, 1/N) (item,)`` the overall
    mean. Free ``z ~ N(0, 1)`` (``z_conversation``) and ``z_chatbot ~ N(0, 1/n_m)`` give the
    deviations (their own means are redundant directions held by their priors): an exact change
    of variables that keeps the conversation effects from moving with the chatbot's level and
    the item's location."""
    import pymc as pm
    import pytensor.tensor as pt

    n_m, n_u = len(spec.coords[MODEL]), len(spec.unit_model)
    size = np.bincount(spec.unit_model, minlength=n_m).astype(float)
    member = np.zeros((n_m, n_u))
    member[spec.unit_model, np.arange(n_u)] = 1.0 / size[spec.unit_model]
    z = pm.Normal(f"z_conversation{suffix}", 0.0, 1.0, dims=("unit", ITEM))
    dev = z - pt.dot(member, z)[spec.unit_model]
    weights = (size / size.sum())[None, :]
    chat = _free_mean(size, f"z_chatbot{suffix}", (MODEL, ITEM), weights)  # (model, item)
    zbar = pm.Normal(f"z_overall{suffix}", 0.0, 1.0 / np.sqrt(n_u), dims=ITEM)
    return dev + chat[spec.unit_model], zbar


def _cutpoints(spec: BehaviourSpec, n_cut: int, levels: np.ndarray, common, suffix: str = ""):
    """Ordered cutpoints ``(item, n_cut)`` in sampling coordinates ``kappa - common`` (flat,
    ordered; the prior on ``kappa``, the deterministic ``cutpoints``), padded with -FAR/+FAR
    beyond each item's levels; returns the ``(item, n_cut + 2)`` matrix with both ends."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ordered

    n_i = len(spec.coords[ITEM])
    init = np.tile(np.linspace(-1.0, 1.0, n_cut) if n_cut > 1 else np.zeros(1), (n_i, 1))
    shifted = pm.Flat(
        f"cutpoints_shifted{suffix}", shape=(n_i, n_cut), transform=ordered, initval=init
    )
    kappa = pm.Deterministic(f"cutpoints{suffix}", shifted + common[:, None])
    prior = pm.Normal.dist(spec.priors["cutpoints"]["mu"], spec.priors["cutpoints"]["sigma"])
    used = np.arange(n_cut)[None, :] < (levels[:, None] - 1)
    pm.Potential(f"cutpoints_prior{suffix}", pt.where(used, pm.logp(prior, kappa), 0.0).sum())
    # an item with fewer levels than the widest leaves entries beyond its last cutpoint; flat,
    # they are an improper direction (the sampler drifts along it: ~600 divergences and R-hat
    # 1.55 on the simulated replicated preset, recognition 1-4 beside counts 0-5). Each unused
    # gap to the entry before gets Exponential(1), which integrates to 1 whatever the used
    # cutpoints are, so their prior is unchanged
    gap = shifted[:, 1:] - shifted[:, :-1]
    pm.Potential(f"cutpoints_unused{suffix}", pt.where(~used[:, 1:], -gap, 0.0).sum())
    cut = pt.where(used, shifted, _FAR)
    ends = np.full((n_i, 1), _FAR)
    return pt.concatenate([-ends, cut, ends], axis=1)


def _intercept(spec: BehaviourSpec, common, suffix: str):
    """The hurdle's intercept per item in sampling coordinates ``a + common`` (flat; the prior
    on ``a``, the deterministic ``intercept``)."""
    import pymc as pm

    shifted = pm.Flat(f"intercept_shifted{suffix}", dims=ITEM)
    a = pm.Deterministic(f"intercept{suffix}", shifted - common, dims=ITEM)
    prior = pm.Normal.dist(spec.priors["cutpoints"]["mu"], spec.priors["cutpoints"]["sigma"])
    pm.Potential(f"intercept_prior{suffix}", pm.logp(prior, a).sum())
    return shifted


def ordinal_logp(y, eta, cuts_full, item):
    """``log P(y | eta)`` of the cumulative logit: ``a = kappa_y - eta``, ``b = kappa_{y-1} -
    eta`` and ``log(expit(a) - expit(b)) = -softplus(-a) - softplus(b) + log1mexp(b - a)``."""
    import pytensor.tensor as pt

    a = cuts_full[item, y + 1] - eta
    b = cuts_full[item, y] - eta
    return -pt.softplus(-a) - pt.softplus(b) + pt.log1mexp(b - a)


def level_block(y: np.ndarray, n_levels: np.ndarray) -> np.ndarray:
    """0 for a rating at its item's bottom level, 2 at its top level, 1 between."""
    return np.where(y == 0, 0, np.where(y == n_levels - 1, 2, 1))


def ordinal_loglik(y: np.ndarray, eta, cuts_full, item: np.ndarray, n_levels: np.ndarray):
    """The summed :func:`ordinal_logp` of ratings ordered by :func:`level_block` (else the plain
    sum). At the bottom level ``log P = -softplus(-a)``, at the top ``-softplus(b)``: one
    transcendental term (and its gradient) instead of three. Most judged turns show none of a
    behaviour, so this halves the gradient's cost (1.3-1.8 ms against 2.5-3.4 ms at 20,331
    SIMULATED Spiral-Bench-like ratings, 65% at the bottom; docs/dev/models.md, "Speed")."""
    import pytensor.tensor as pt

    block = level_block(y, n_levels[item])
    if np.any(np.diff(block) < 0):
        return ordinal_logp(y, eta, cuts_full, item).sum()
    n0, n01 = np.searchsorted(block, [1, 2])
    bottom, mid, top = slice(0, n0), slice(n0, n01), slice(n01, None)
    total = -pt.softplus(eta[bottom] - cuts_full[item[bottom], 1]).sum()
    total = total - pt.softplus(cuts_full[item[top], y[top]] - eta[top]).sum()
    return total + ordinal_logp(y[mid], eta[mid], cuts_full, item[mid]).sum()


def build_behaviour(spec: BehaviourSpec):
    """The ``pm.Model`` of the module docstring (the likelihood as one potential; the
    per-rating log-likelihood is recomputed after sampling, :mod:`.behaviour_posterior`)."""
    import pymc as pm
    import pytensor.tensor as pt

    coords = {k: v for k, v in spec.coords.items()}
    item, y = spec.idx["item"], spec.y
    with pm.Model(coords=coords) as model:
        if spec.likelihood == "ordinal":
            eta, common = _linear_predictor(spec)
            cuts = _cutpoints(spec, len(spec.coords["cut"]), spec.n_levels, common)
            ll = ordinal_loglik(y, eta, cuts, item, spec.n_levels)
        else:
            eta0, common0 = _linear_predictor(spec, "_any")
            eta0 = eta0 + _intercept(spec, common0, "_any")[item]
            eta1, common1 = _linear_predictor(spec, "_level")
            n_cut = max(len(spec.coords["cut"]) - 1, 1)
            levels = np.maximum(spec.n_levels - 1, 1)
            cuts = _cutpoints(spec, n_cut, levels, common1, "_level")
            ll_pos = ordinal_logp(np.maximum(y - 1, 0), eta1, cuts, item)
            ll = pt.where(y > 0, -pt.softplus(-eta0) + ll_pos, -pt.softplus(eta0))
        pm.Potential("y_loglik", ll.sum())
    return model


def fit_behaviour(
    ds: xr.Dataset,
    *,
    rule: str = "auto",
    likelihood: str = "ordinal",
    priors: dict[str, dict[str, Any]] | None = None,
    **fit_kwargs: Any,
) -> xr.DataTree:
    """Fit the behaviour model of a replicated study through :func:`delusion_bayes.models.fit`
    (``fit_kwargs``: its sampler arguments, ``sampler`` to ``progressbar``). The posterior gains
    ``item_mean (model, item)`` for a new conversation (:mod:`.behaviour_posterior`)."""
    from .fit import fit

    spec = behaviour_spec(ds, rule=rule, likelihood=likelihood, priors=priors)
    return fit(ds, spec=spec, **fit_kwargs)


#: the behaviour model's definition; its spec carries it (:class:`BehaviourSpec` brings its own
#: graph and is fitted from a replicated study by the replicated stage)
DEFINITION = ModelDef(
    name="behaviour",
    build=None,
    priors=BEHAVIOUR_PRIORS,
    math=__doc__,
    study="replicated",
    marginal=False,
    inputs=frozenset(),
    target_accept=0.9,
)
