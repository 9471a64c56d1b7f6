"""A conversation level in the trajectory models (issue 54, item 1): the chatbot, not the
conversation, as the unit of inference.

A replicated study (:mod:`delusion_bayes.data.replicated`) rated on the recognition item
(stage 1-4 per turn) becomes a trajectory study whose units are its conversations
(:func:`conversation_units`: ``model`` = one ``chatbot/conversation`` unit, ``day`` = turn).
``joint`` or ``onset`` is then fitted with the chatbot as the grouping of its hyper-means (the
machinery of the population contrasts, :mod:`delusion_bayes.models.population`)::

    t50_mc ~ N(T mu_t50[m], T sigma_t50),  log k_mc ~ N(mu_log_k[m], sigma_log_k),
    log(L_mc - 1) ~ N(mu_log_L1_chatbot[m], sigma_log_L1),
    mu_log_L1_chatbot[m] ~ N(mu_log_L1, sigma_mu_log_L1),  (joint) log sigma_eps_mc ~ N(mu, sigma)

for conversation ``c`` of chatbot ``m``: each conversation has its own trajectory around its
chatbot's, the ``sigma`` are the between-conversation spreads, shared by the chatbots
(``scale="shared"``, the default: ``spec.population = "conversation"``), and each chatbot's
``mu_t50``, ``mu_log_k`` has the shared hyper-mean's prior (no pooling across chatbots: a
replicated study has enough conversations per chatbot to learn each). The plateau means are
partially pooled (:func:`delusion_bayes.models.blocks._conversation_log_L1`) where a chatbot's
conversations show their plateau (half of them or more: :func:`plateau_shown`); a chatbot whose
conversations turn late never shows it, and a plateau mean of its own then borrowed a low one
(a flat line through its late ratings, traded off against its t50), so it keeps the
population's mean ``mu_log_L1``. One plateau population for all chatbots mixed but
under-covered a new conversation's first stable turn (docs/dev/models.md, "Conversation
level"); this rule is a data-dependent model choice, which the SBC follows
(:mod:`delusion_bayes.models.sbc_conversations`).
``scale="group"``: means per chatbot, the plateau's mean too, and t50's spread
(:data:`~delusion_bayes.models.blocks.GROUP_SCALES`; the population-contrast fits' model).
T50, log k and the day noise's scale are sampled non-centred for every conversation (the
conversations of a chatbot are alike in onset and steepness and rated alike, so their spreads
are tighter than one conversation's data pin them; t50 has no wall coordinate here,
:func:`delusion_bayes.models.blocks._t50`).

With ``shared=True`` (``replicated.trajectory_shared_prompts``; off by default: two grid
designs miss the gate with it, docs/dev/models.md, "Prompts the chatbots share"), where the
chatbots ran the same prompts (:func:`shared_terms`), each prompt (and category) shifts t50
for every chatbot, ``t50_mc = T (mu_t50[m] + sd_t50_prompt z_p(c) + sigma_t50
z_mc)``, with ``sigma_t50`` and ``sd_t50_prompt`` the variance shares of their total
``sd_t50_total`` (:func:`delusion_bayes.models.blocks._t50_variance_shares`): a chatbot
contrast then leaves out which prompts were drawn, since both chatbots ran them, and a new
conversation's t50 spreads by the total, since it runs a new prompt.

The chatbot-level quantities are posterior quantities (:func:`chatbot_trajectories`): a new
conversation's expected t50 and milestones (censored at the window like the data, by the
baselines' rules), ``P(never)`` (a new conversation never reaches clinical framing within the
window) and the between-conversation spread of t50. With one conversation per chatbot there is
no conversation level to learn: :func:`conversation_spec` returns today's model unchanged (the
same graph: the same structure key), and the chatbot-level rows are then the trajectory
paper's per-model quantities.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replicated import CONVERSATION, ITEM, MODEL, RATER, TURN
from ..data.schema import DAY
from ..errors import UserError
from .modelspec import POP_GROUP

#: the item a trajectory model reads: the trajectory paper's recognition stage (1-4)
ITEM_NAME = "recognition"
#: the unit coordinate's separator: ``chatbot/conversation``
SEP = "/"
#: the prior of ``sigma_t50`` with a conversation level, where it is the spread of one chatbot's
#: conversations (1.66 turns of 12, 0.14 T, in the ``replicated`` preset): that sits at the 5%
#: quantile of the chatbots' zero-avoiding Gamma(3, 6) (``blocks.ONSET_PRIORS``), and a
#: chatbot's conversations may well be alike, so the level keeps the HalfNormal(0.5) under
#: which its SBC and coverage were measured (docs/dev/models.md, "Conversation level")
CONVERSATION_T50_SCALE_PRIOR: dict = {"dist": "HalfNormal", "sigma": 0.5}
#: conversation groupings that several chatbots may share (``data.replicated`` coords), finest
#: first: where chatbots ran the same prompts, each prompt (and category) shifts every chatbot's
#: t50 alike (:func:`shared_terms`), so a chatbot contrast is free of which prompts were drawn
SHARED_TERMS: tuple[str, ...] = ("prompt", "category")
#: shared levels a grouping needs before its spread is learnt: with fewer, its variance share of
#: the total (``blocks._t50_variance_shares``) is the prior's, uniform, and what it takes from
#: the conversations' spread would rest on the prior alone
MIN_SHARED_LEVELS = 5
#: quantities :func:`chatbot_trajectories` reports per chatbot
QUANTITIES = ("t50", "first_clinical", "first_stable", "p_never")
#: what simulation found of a quantity's intervals with a conversation level, written beside
#: its rows and in the stage's notes (docs/dev/models.md, "Conversation level"). None now: a new
#: conversation's first stable turn, under-covered with one plateau population for all
#: chatbots (95%: 0.79 of 49 studies), is covered under the plateau rule (0.960 of 100 studies)
CAVEATS: dict[str, str] = {}


def conversation_units(rep: xr.Dataset, item: str = ITEM_NAME) -> xr.Dataset:
    """The trajectory study of ``rep``'s ``item`` with one unit per conversation: ``recognition
    (rater, model, day)``, ``model`` = ``"<chatbot>/<conversation>"`` over the conversations the
    chatbot ran (``has_conversation``), ``day`` = the turn numbers; ``attrs["chatbot"]``, one
    per unit. Raises when the item is absent or is not on the 1-4 stage scale."""
    if item not in rep[ITEM].values:
        raise UserError(
            f"replicated study: no item {item!r} among {rep[ITEM].values.tolist()}; the trajectory "
            "models read the recognition stage (1-4) per turn"
        )
    lo, hi = (float(rep[c].sel({ITEM: item})) for c in ("item_min", "item_max"))
    if (lo, hi) != (1.0, 4.0):
        raise UserError(
            f"replicated study: item {item!r} has levels {lo:g}-{hi:g}; the trajectory models "
            "expect the recognition stage, levels 1-4"
        )
    score = rep["score"].sel({ITEM: item}).transpose(RATER, MODEL, CONVERSATION, TURN)
    has = np.asarray(rep["has_conversation"].transpose(MODEL, CONVERSATION).values, bool)
    mi, ci = np.nonzero(has)
    chatbots = [str(v) for v in rep[MODEL].values]
    convs = [str(v) for v in rep[CONVERSATION].values]
    vals = np.asarray(score.values, float)[:, mi, ci, :]
    units = [f"{chatbots[m]}{SEP}{convs[c]}" for m, c in zip(mi, ci, strict=True)]
    da = xr.DataArray(
        vals,
        dims=(RATER, MODEL, DAY),
        coords={
            RATER: [str(r) for r in rep[RATER].values],
            MODEL: units,
            DAY: np.asarray(rep[TURN].values),
        },
    )
    for name in SHARED_TERMS:  # the prompt and category each conversation ran, where known
        if name in rep.coords and set(rep[name].dims) == {MODEL, CONVERSATION}:
            labels = rep[name].transpose(MODEL, CONVERSATION).values[mi, ci]
            da = da.assign_coords({name: (MODEL, [str(v) for v in labels])})
    ds = xr.Dataset({"recognition": da})
    ds.attrs.update(chatbot=[chatbots[m] for m in mi], source=str(rep.attrs.get("source", "")))
    return ds


def shared_terms(units: xr.Dataset) -> list[str]:
    """The conversation groupings of ``units`` whose effect on t50 the model learns: of
    :data:`SHARED_TERMS`, those with at least :data:`MIN_SHARED_LEVELS` levels that two or more
    chatbots ran (a prompt one chatbot ran is a conversation effect); a category only where it
    groups several prompts (the same partition as the prompts adds nothing identifiable)."""
    chatbot = np.asarray(units.attrs["chatbot"])
    out: list[str] = []
    n_levels: dict[str, int] = {}
    for name in SHARED_TERMS:
        if name not in units.coords:
            continue
        labels = np.asarray(units[name].values).astype(str)
        pairs = pd.DataFrame({"level": labels, "chatbot": chatbot}).drop_duplicates()
        shared = int((pairs.groupby("level").size() >= 2).sum())
        n_levels[name] = len(set(labels))
        if shared >= MIN_SHARED_LEVELS and all(n_levels[name] < n_levels[t] for t in out):
            out.append(name)
    return out


def conversation_spec(
    rep: xr.Dataset,
    model: str = "joint",
    *,
    scale: str = "shared",
    item: str = ITEM_NAME,
    shared: bool = False,
    priors: Mapping[str, Any] | None = None,
    **variant: Any,
):
    """``(units, spec)``: the unit study (:func:`conversation_units`) and ``model``'s spec with
    the chatbot as the grouping of its hyper-means (module docstring); with one conversation
    per chatbot, today's spec of the chatbots' study (no conversation level). ``shared``: learn
    the t50 shifts of the prompts the chatbots share (:func:`shared_terms`)."""
    units = conversation_units(rep, item)
    return units_spec(units, model, scale=scale, shared=shared, priors=priors, **variant)


def units_spec(
    units: xr.Dataset,
    model: str = "joint",
    *,
    scale: str = "shared",
    shared: bool = False,
    priors: Mapping[str, Any] | None = None,
    **variant: Any,
):
    """:func:`conversation_spec` of a unit study (``attrs["chatbot"]``: each unit's chatbot),
    e.g. one whose ratings a simulator replaced (:mod:`.sbc_conversations`)."""
    from .blocks import CONVERSATION_LEVEL, CONVERSATION_PRIORS
    from .population import SCALES, grouped_spec
    from .priors import resolve_prior_table
    from .spec import build_spec

    if scale not in SCALES:
        raise ValueError(f"conversation scale={scale!r}; expected one of {list(SCALES)}")
    chatbot = np.asarray(units.attrs["chatbot"])
    names = list(dict.fromkeys(chatbot.tolist()))
    if len(names) == len(chatbot):  # one conversation each: the chatbots' own study
        units = units.assign_coords({MODEL: chatbot})
        return units, build_spec(units, model, dict(priors or {}), **variant)
    group = [names.index(c) for c in chatbot]
    population = CONVERSATION_LEVEL if scale == "shared" else scale
    if shared and population == CONVERSATION_LEVEL and "group_terms" not in variant:
        variant["group_terms"] = shared_terms(units)
    priors = {"sigma_t50": dict(CONVERSATION_T50_SCALE_PRIOR), **dict(priors or {})}
    conv_priors = CONVERSATION_PRIORS if population == CONVERSATION_LEVEL else {}
    base = {k: v for k, v in priors.items() if k not in conv_priors}
    spec = grouped_spec(units, model, group, names, population, base, **variant)
    own = {k: v for k, v in priors.items() if k in conv_priors}
    spec.priors.update(resolve_prior_table(model, conv_priors, own))
    if population == CONVERSATION_LEVEL:
        spec.data["plateau_own"] = plateau_shown(units, np.asarray(group), len(names))
    # log k non-centred: a chatbot's conversations have alike steepness, so the population
    # (between-conversation) scale is tighter than one conversation's data pin log k, the
    # case for non-centring (geometry.log_k_centring); centred, the replicated preset mixed
    # slowly (docs/dev/models.md, "Conversation level")
    spec.data["log_k_centred"] = np.zeros_like(np.asarray(spec.data.log_k_centred, bool))
    if spec.data.eps_centred is not None:
        # the day noise non-centred too, for the same reason: a chatbot's conversations are
        # rated alike, so the spread of their noise scales is small (0 in the simulator) and a
        # conversation centred by geometry.noise_identified sat in the funnel's neck (8 x 3 x
        # 20 x 3, 20% missing: the one divergence left after the refit, at sigma_log_eps 0.019,
        # the lowest of 4,000 draws; docs/dev/models.md, "Gate over replicated designs")
        spec.data["eps_centred"] = np.zeros_like(np.asarray(spec.data.eps_centred, bool))
    return units, spec


#: turns a conversation's ratings must go on after reaching the stage midpoint for its plateau
#: to count as shown
PLATEAU_TURNS = 3


def plateau_shown(units: xr.Dataset, group: np.ndarray, n_chatbots: int) -> np.ndarray:
    """Per chatbot: whether at least half its conversations show their plateau (a
    conversation's median rating reaches the stage midpoint, by :func:`~.geometry.
    onset_geometry`'s rule, with :data:`PLATEAU_TURNS` rated turns after it)."""
    from .geometry import onset_geometry

    rec = units["recognition"].transpose(RATER, MODEL, DAY).values
    med = np.nanmedian(np.asarray(rec, float), axis=0)
    turned, _ = onset_geometry(med[:, : max(med.shape[1] - PLATEAU_TURNS, 1)])
    share = np.bincount(group, turned, n_chatbots) / np.bincount(group, minlength=n_chatbots)
    return share >= 0.5


def fit_conversations(
    rep: xr.Dataset,
    model: str = "joint",
    *,
    scale: str = "shared",
    item: str = ITEM_NAME,
    shared: bool = False,
    priors: Mapping[str, Any] | None = None,
    variant: Mapping[str, Any] | None = None,
    **fit_kwargs: Any,
) -> xr.DataTree:
    """Fit ``model`` with a conversation level (:func:`conversation_spec`; ``priors`` override
    its defaults) by :func:`delusion_bayes.models.fit`; ``attrs["conversation_level"]`` says
    whether there was one (False: one conversation per chatbot), ``attrs["chatbot"]`` each
    unit's chatbot."""
    from .fit import fit

    units, spec = conversation_spec(
        rep, model, scale=scale, item=item, shared=shared, priors=priors, **dict(variant or {})
    )
    dt = fit(units, model, spec=spec, **fit_kwargs)
    dt.attrs.update(
        conversation_level=bool(spec.population),
        chatbot=list(units.attrs["chatbot"]),
        population=str(spec.population or ""),
    )
    return dt


def chatbot_draws(
    dt: xr.DataTree, *, stable_run: int = 3, n_new: int | None = None, seed: int = 0
) -> xr.Dataset:
    """Per posterior draw and chatbot, each of :data:`QUANTITIES` for a NEW conversation
    (``(sample, chatbot)``): its expected t50 and censored milestones and ``P(never)``, plus
    ``sd_conv_t50``, the between-conversation SD of t50 (turns; a new conversation runs a new
    prompt, so a shared prompt's spread is part of it). Without a conversation level
    (one conversation per chatbot) the chatbot's own fitted t50 and milestones."""
    from .population import N_NEW, new_conversation_t50_scale, population_means

    if not dt.attrs.get("conversation_level"):
        return _single_conversation_draws(dt, stable_run)
    means = population_means(dt, QUANTITIES, stable_run=stable_run, n_new=n_new or N_NEW, seed=seed)
    post = dt["posterior"].to_dataset()
    sd = new_conversation_t50_scale(post, means.sizes[POP_GROUP]) * post.sizes[DAY]
    out = means.assign(sd_conv_t50=(("sample", POP_GROUP), np.asarray(sd)))
    return out.rename({POP_GROUP: "chatbot"})


def _single_conversation_draws(dt: xr.DataTree, stable_run: int) -> xr.Dataset:
    """The fitted per-model t50 and milestones of a fit without a conversation level."""
    from .derived import posterior_milestones

    post = dt["posterior"].to_dataset()
    ms = posterior_milestones(dt, stable_run=stable_run)
    cens = int(ms.attrs["censor_day"])
    data = {"t50": post["t50"], **{m: ms[m] for m in ("first_clinical", "first_stable")}}
    data["p_never"] = (ms["first_clinical"] >= cens).astype(float)
    out = xr.Dataset(data).stack(sample=("chain", "draw")).transpose("sample", MODEL)
    return out.drop_vars(["chain", "draw", "sample"]).rename({MODEL: "chatbot"})


def chatbot_trajectories(draws: xr.Dataset, prob: float = 0.95) -> pd.DataFrame:
    """One row per chatbot x quantity of :func:`chatbot_draws`: posterior median, mean and
    equal-tailed ``prob`` interval."""
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    rows = []
    for q in draws.data_vars:
        x = draws[q].transpose("sample", "chatbot").values
        for j, name in enumerate(draws["chatbot"].values):
            v = x[:, j][np.isfinite(x[:, j])]
            rows.append(
                {
                    "chatbot": str(name),
                    "quantity": str(q),
                    "median": np.median(v),
                    "mean": v.mean(),
                    "ci_low": np.quantile(v, lo),
                    "ci_high": np.quantile(v, hi),
                    "prob": prob,
                }
            )
    return pd.DataFrame(rows)


#: the quantities compared between chatbots (the between-conversation SD is a spread, not a
#: level: its contrast is not reported)
CONTRASTED = ("t50", "first_clinical", "first_stable", "p_never")


def chatbot_contrasts(draws: xr.Dataset, prob: float = 0.95) -> pd.DataFrame:
    """Every chatbot pair (A listed before B) per quantity of :data:`CONTRASTED`, each for a new
    conversation of each: ``diff`` (A - B, posterior median) with its equal-tailed ``prob``
    interval, ``p_a_lower`` = P(A - B < 0) (for t50 and the milestones: A's recognition comes
    earlier) and ``p_a_higher`` = P(A - B > 0)."""
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    names = [str(c) for c in draws["chatbot"].values]
    rows = []
    for q in (q for q in CONTRASTED if q in draws):
        x = draws[q].transpose("sample", "chatbot").values
        for a, b in combinations(range(len(names)), 2):
            d = x[:, a] - x[:, b]
            d = d[np.isfinite(d)]
            rows.append(
                {
                    "quantity": q,
                    "a": names[a],
                    "b": names[b],
                    "diff": float(np.median(d)),
                    "ci_low": float(np.quantile(d, lo)),
                    "ci_high": float(np.quantile(d, hi)),
                    "p_a_lower": float((d < 0).mean()),
                    "p_a_higher": float((d > 0).mean()),
                    "prob": prob,
                }
            )
    return pd.DataFrame(rows)
