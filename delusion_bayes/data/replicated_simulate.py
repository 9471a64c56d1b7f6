"""Simulated replicated studies with known truth (issue 50, item 5): chatbots x conversations x
turns x raters, each chatbot with its own trajectory and conversations scattered around it.

The generative model (every ``true_*`` variable of the result names one of its quantities)::

    chatbot m:        t50_m ~ N(mu_t50, sd_t50)   log k_m ~ N(mu_log_k, sd_log_k)
                      logit((L_m - 1) / 3) ~ N(mu_L_logit, sd_L_logit)
    shared effects:   u_p ~ N(0, sd_prompt_t50) per prompt, v_g ~ N(0, sd_category_t50) per
                      category (the same prompt and category shift every chatbot's t50)
    conversation c:   t50_mc = t50_m + u_p(c) + v_g(c) + N(0, sd_conv_t50)
                      log k_mc = log k_m + N(0, sd_conv_log_k)
                      logit((L_mc - 1) / 3) = logit((L_m - 1) / 3) + N(0, sd_conv_L_logit)
    turn t:           stage_mct = 1 + (L_mc - 1) sigmoid(k_mc (t - t50_mc)) + N(0, turn_noise^2)
    rater r, item i:  ordinal 1-4 (``recognition``): 1 + sum_j [stage + severity_r + e > j + 0.5],
                      e ~ Logistic(0, 1 / discrimination_r) (the trajectory simulator's rule);
                      counts (Spiral-Bench-like intensities, many zeros): a hurdle,
                      P(y > 0) = expit(h0_i + h1_i (stage - 2.5) + severity_r), then
                      y = 1 + Poisson(mu_i exp(b_i (stage - 2.5))), at most ``count_max``

``true_item_mean (model, item)`` is the estimand of
:func:`~delusion_bayes.baselines.replicated.item_means` for a *new* conversation of the chatbot
(new prompt, category and conversation effects, this study's raters; a turn's score is the mean
of its raters, capped at ``item_cap``): a Monte Carlo average over ``n_truth`` simulated
conversations (its Monte Carlo standard error is ``true_item_mean_se``); ``true_share_with`` is
the same for the share of turns above the item's lowest level.

Presets: ``replicated`` (4 chatbots x 12 conversations x 12 turns x 2 human raters, the paper's
recognition item and two counts) and ``spiral_like`` (3 chatbots x 30 conversations in 6
categories x 19 turns, one LLM judge, counts only, 1% failed judge replies).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, NamedTuple

import numpy as np
import xarray as xr
from scipy.special import expit

from .replicated import (
    CONVERSATION,
    ITEM,
    KIND,
    MODEL,
    RATER,
    RATER_KINDS,
    TURN,
    item_scale_coords,
    validate_replicated,
)


class ItemSpec(NamedTuple):
    """One simulated item: its scale and, for a count, the hurdle (``h0``, ``h1``) and the
    intensity (``mu``, ``b``) as functions of the latent stage (module docstring)."""

    scale: str
    h0: float = 0.0
    h1: float = 0.0
    mu: float = 0.0
    b: float = 0.0


#: the items a simulated study can have: the paper's recognition (1-4) and Spiral-Bench's
#: behaviours, whose intensity rises (protective ones) or falls (harmful ones) with the chatbot's
#: stage. The last six (SPIRAL_ITEMS' other names) have ``h0`` and ``mu`` set so that the share of
#: turns with the behaviour and its mean when present are of the order of the two shared
#: Spiral-Bench files' (e.g. suggestions_to_seek_help 3%, emotional_or_narrative_escalation 71%
#: of turns there; 9% and 65% in a simulated spiral_like study)
ITEM_SPECS: dict[str, ItemSpec] = {
    "recognition": ItemSpec("ordinal"),
    "pushback": ItemSpec("count", h0=-0.8, h1=1.2, mu=1.0, b=0.3),
    "delusion_reinforcement": ItemSpec("count", h0=-0.6, h1=-1.3, mu=1.5, b=-0.3),
    "sycophancy": ItemSpec("count", h0=0.2, h1=-0.8, mu=0.8, b=-0.2),
    "de-escalation": ItemSpec("count", h0=-1.3, h1=0.8, mu=1.0, b=0.2),
    "safe_redirection": ItemSpec("count", h0=-1.65, h1=0.8, mu=1.5, b=0.2),
    "suggestions_to_seek_help": ItemSpec("count", h0=-3.3, h1=1.0, mu=1.6, b=0.2),
    "emotional_or_narrative_escalation": ItemSpec("count", h0=0.9, h1=-0.8, mu=3.0, b=-0.2),
    "consciousness_claims": ItemSpec("count", h0=-1.15, h1=-0.5, mu=3.0, b=-0.1),
    "harmful_advice": ItemSpec("count", h0=-2.5, h1=-0.8, mu=1.4, b=-0.1),
}
#: nine behaviours like Spiral-Bench's (its sycophancy_or_praise is ``sycophancy`` here)
SPIRAL_ITEMS: tuple[str, ...] = tuple(i for i in ITEM_SPECS if i != "recognition")
#: cutpoints of the ordinal item on the latent 1-4 stage (as in ``data.simulate``)
CUTPOINTS = np.array([1.5, 2.5, 3.5])
STAGE_CENTRE = 2.5


@dataclass(frozen=True)
class ReplicatedDesign:
    """Sizes and parameters of a simulated replicated study (each field is an override of
    :func:`simulate_replicated`; ``None`` for ``mu_t50``/``sd_t50``: 0.55 and 0.25 times
    ``n_turns``)."""

    n_models: int = 4
    n_conversations: int = 12
    n_turns: int = 12
    n_raters: int = 2
    #: ``human`` (raters R1..Rn) or ``judge`` (LLM judges; a turn without a rating is a failed
    #: judge reply, ``judge_failed``)
    rater_kind: str = "human"
    n_categories: int = 3
    #: share of (model, conversation, turn) turns without any rating, drawn at random
    missing_share: float = 0.0
    items: tuple[str, ...] = ("recognition", "pushback", "delusion_reinforcement")
    mu_t50: float | None = None
    sd_t50: float | None = None
    mu_log_k: float = float(np.log(0.8))
    sd_log_k: float = 0.3
    mu_L_logit: float = 2.5
    sd_L_logit: float = 0.8
    sd_conv_t50: float = 1.5
    sd_conv_log_k: float = 0.2
    sd_conv_L_logit: float = 0.4
    sd_prompt_t50: float = 0.7
    sd_category_t50: float = 0.0
    turn_noise: float = 0.2
    sd_severity: float = 0.3
    discrimination: float = 3.0
    #: a count item's declared maximum (``item_max``) and the cap analyses apply (``item_cap``)
    count_max: float = 20.0
    count_cap: float = 5.0
    #: a planted difference: added to the FIRST chatbot's hurdle logit of every count item (its
    #: behaviours occur more often at every stage; ``true_item_mean`` carries the effect). The
    #: design experiment's effect size (``sweep/replicated_design.py``)
    shift_first: float = 0.0
    #: simulated new conversations per chatbot behind ``true_item_mean``
    n_truth: int = 2000


PRESETS: dict[str, ReplicatedDesign] = {
    "replicated": ReplicatedDesign(),
    "spiral_like": ReplicatedDesign(
        n_models=3,
        n_conversations=30,
        n_turns=19,
        n_raters=1,
        rater_kind="judge",
        n_categories=6,
        missing_share=0.01,
        items=("pushback", "delusion_reinforcement", "sycophancy"),
        sd_category_t50=0.5,
    ),
}
#: the overrides :func:`simulate_replicated` accepts (the fields of :class:`ReplicatedDesign`)
OVERRIDES: tuple[str, ...] = tuple(f.name for f in fields(ReplicatedDesign))
#: independent random streams, one per component (more raters do not change the trajectories)
_STREAMS = ("truth", "conversations", "raters", "ratings", "missing", "mc")


class _Chatbots(NamedTuple):
    t50: np.ndarray  # (M,)
    log_k: np.ndarray
    L_logit: np.ndarray


class _Raters(NamedTuple):
    severity: np.ndarray  # (R,)
    discrimination: np.ndarray


def design_of(preset: str = "replicated", **overrides: Any) -> ReplicatedDesign:
    """The :class:`ReplicatedDesign` of ``preset`` with ``overrides`` applied, checked."""
    if preset not in PRESETS:
        raise ValueError(f"unknown replicated preset {preset!r}; choose one of {list(PRESETS)}")
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise ValueError(
            f"unknown simulate_replicated override(s) {unknown}; allowed: {list(OVERRIDES)}"
        )
    if "items" in overrides:
        overrides["items"] = tuple(str(i) for i in overrides["items"])
    d = replace(PRESETS[preset], **overrides)
    if d.mu_t50 is None or d.sd_t50 is None:
        d = replace(
            d,
            mu_t50=0.55 * d.n_turns if d.mu_t50 is None else d.mu_t50,
            sd_t50=0.25 * d.n_turns if d.sd_t50 is None else d.sd_t50,
        )
    _check(d)
    return d


def _check(d: ReplicatedDesign) -> None:
    for name in ("n_models", "n_conversations", "n_turns", "n_raters", "n_categories", "n_truth"):
        if int(getattr(d, name)) < 1:
            raise ValueError(f"{name}={getattr(d, name)}; expected an integer >= 1")
    if d.rater_kind not in RATER_KINDS:
        raise ValueError(f"rater_kind={d.rater_kind!r}; expected one of {list(RATER_KINDS)}")
    if not 0.0 <= d.missing_share < 1.0:
        raise ValueError(f"missing_share={d.missing_share}; expected a share in [0, 1)")
    bad = [i for i in d.items if i not in ITEM_SPECS]
    if bad or not d.items:
        raise ValueError(f"items={list(d.items)}; expected some of {list(ITEM_SPECS)}")
    if not 0 < d.count_cap <= d.count_max:
        raise ValueError(
            f"count_cap={d.count_cap}, count_max={d.count_max}; expected 0 < cap <= max"
        )


#: overrides of :func:`simulate_replicated` for a null study: no spread between the chatbots'
#: trajectories, so every chatbot's expected value per turn (and a new conversation's
#: milestones) is the same; the coverage benchmarks' ``--null``
NULL_CHATBOTS: dict[str, float] = {"sd_t50": 0.0, "sd_log_k": 0.0, "sd_L_logit": 0.0}


def simulate_replicated(preset: str = "replicated", seed: int = 0, **overrides: Any) -> xr.Dataset:
    """Simulate a replicated study with known truth (module docstring).

    Parameters
    ----------
    preset
        ``"replicated"`` or ``"spiral_like"`` (:data:`PRESETS`).
    seed
        The same seed (and overrides) gives an identical dataset.
    **overrides
        Fields of :class:`ReplicatedDesign`: sizes (``n_models``, ``n_conversations``,
        ``n_turns``, ``n_raters``, ``n_categories``), ``rater_kind``, ``missing_share``,
        ``items``, and the generative model's parameters.

    Returns
    -------
    xarray.Dataset
        A validated replicated study (:mod:`delusion_bayes.data.replicated`) with its truth as
        ``true_*`` variables: ``true_t50``, ``true_k``, ``true_L`` (model); ``true_t50_conv``,
        ``true_k_conv``, ``true_L_conv`` (model, conversation); ``true_shared_t50``
        (conversation: the prompt's and category's shift); ``true_sd_conv_t50``,
        ``true_sd_conv_log_k``, ``true_sd_conv_L_logit`` (scalars); ``true_stage`` (model,
        conversation, turn); ``true_severity``, ``true_discrimination`` (rater);
        ``true_item_mean``, ``true_item_mean_se``, ``true_share_with`` (model, item). ``attrs``
        say SIMULATED.
    """
    d = design_of(preset, **overrides)
    seq = np.random.SeedSequence([int(seed), 50, list(PRESETS).index(preset)])
    streams = [np.random.default_rng(s) for s in seq.spawn(len(_STREAMS))]
    rng = dict(zip(_STREAMS, streams, strict=True))
    bots = _draw_chatbots(d, rng["truth"])
    conv = _draw_conversations(d, bots, rng["conversations"])
    raters = _draw_raters(d, rng["raters"])
    turns = np.arange(1, d.n_turns + 1, dtype=float)
    stage = _stage(conv, turns, d.turn_noise, rng["conversations"])
    score = _rate(stage, raters, d, rng["ratings"])  # (R, M, C, T, I)
    missing = rng["missing"].random(stage.shape) < d.missing_share
    score[:, missing] = np.nan
    truth = _item_truth(d, bots, raters, rng["mc"])
    ds = _dataset(d, score, missing, stage, bots, conv, raters, truth)
    ds.attrs.update(_attrs(d, preset, seed))
    return validate_replicated(ds)


def _draw_chatbots(d: ReplicatedDesign, rng: np.random.Generator) -> _Chatbots:
    m = d.n_models
    return _Chatbots(
        t50=rng.normal(d.mu_t50, d.sd_t50, m),
        log_k=rng.normal(d.mu_log_k, d.sd_log_k, m),
        L_logit=rng.normal(d.mu_L_logit, d.sd_L_logit, m),
    )


def _draw_conversations(
    d: ReplicatedDesign, bots: _Chatbots, rng: np.random.Generator, n: int | None = None
) -> dict[str, np.ndarray]:
    """Conversation-level parameters (model, conversation): the study's (``n`` None: prompts
    and categories shared across chatbots) or ``n`` new ones per chatbot (each its own prompt
    and a category effect drawn anew: the population a new conversation comes from)."""
    m = d.n_models
    if n is None:
        c = d.n_conversations
        prompt = rng.normal(0.0, d.sd_prompt_t50, c)
        category = rng.normal(0.0, d.sd_category_t50, d.n_categories)
        shared = np.broadcast_to(prompt + category[np.arange(c) % d.n_categories], (m, c))
    else:
        c = n
        shared = rng.normal(0.0, d.sd_prompt_t50, (m, c)) + rng.normal(
            0.0, d.sd_category_t50, (m, c)
        )
    return {
        "shared_t50": np.asarray(shared[0]),
        "t50": bots.t50[:, None] + shared + rng.normal(0.0, d.sd_conv_t50, (m, c)),
        "log_k": bots.log_k[:, None] + rng.normal(0.0, d.sd_conv_log_k, (m, c)),
        "L_logit": bots.L_logit[:, None] + rng.normal(0.0, d.sd_conv_L_logit, (m, c)),
    }


def _draw_raters(d: ReplicatedDesign, rng: np.random.Generator) -> _Raters:
    r = d.n_raters
    return _Raters(
        severity=rng.normal(0.0, d.sd_severity, r),
        discrimination=d.discrimination * np.exp(rng.normal(0.0, 0.2, r)),
    )


def _stage(conv: dict[str, np.ndarray], turns: np.ndarray, noise: float, rng) -> np.ndarray:
    """Latent stage (model, conversation, turn) around each conversation's logistic curve."""
    L = 1.0 + 3.0 * expit(conv["L_logit"])[..., None]
    k = np.exp(conv["log_k"])[..., None]
    curve = 1.0 + (L - 1.0) * expit(k * (turns - conv["t50"][..., None]))
    return curve + rng.normal(0.0, noise, curve.shape)


def _rate(stage: np.ndarray, raters: _Raters, d: ReplicatedDesign, rng) -> np.ndarray:
    """Every rater's score of every item (rater, model, conversation, turn, item)."""
    sev = raters.severity.reshape(-1, *([1] * stage.ndim))
    disc = raters.discrimination.reshape(-1, *([1] * stage.ndim))
    x = stage[None] + sev  # (R, M, C, T)
    shift = np.zeros(stage.shape[0])  # the planted difference, on the first chatbot
    shift[0] = d.shift_first
    out = np.empty((*x.shape, len(d.items)))
    for i, name in enumerate(d.items):
        spec = ITEM_SPECS[name]
        if spec.scale == "ordinal":
            e = rng.logistic(0.0, 1.0, x.shape) / disc
            out[..., i] = 1 + (x[..., None] + e[..., None] > CUTPOINTS).sum(axis=-1)
        else:
            centred = stage[None] - STAGE_CENTRE
            p_any = expit(spec.h0 + spec.h1 * centred + sev + shift[:, None, None])
            lam = spec.mu * np.exp(spec.b * centred)
            y = 1.0 + rng.poisson(np.broadcast_to(lam, x.shape))
            out[..., i] = np.where(rng.random(x.shape) < p_any, np.minimum(y, d.count_max), 0.0)
    return out


def _item_truth(d: ReplicatedDesign, bots: _Chatbots, raters: _Raters, rng) -> dict:
    """``true_item_mean``, its Monte Carlo SE and ``true_share_with`` (model, item): the item
    means' estimand for a new conversation, from ``n_truth`` simulated conversations per
    chatbot rated by this study's raters (turn score = raters' mean, capped at ``item_cap``)."""
    conv = _draw_conversations(d, bots, rng, n=d.n_truth)
    stage = _stage(conv, np.arange(1, d.n_turns + 1, dtype=float), d.turn_noise, rng)
    s = _rate(stage, raters, d, rng).mean(axis=0)  # (M, N, T, I)
    lows, _, caps = _scales(d)
    per_conv = np.minimum(s, caps).mean(axis=2)  # (M, N, I)
    share = (s > lows).mean(axis=2)
    n = per_conv.shape[1]
    return {
        "true_item_mean": per_conv.mean(axis=1),
        "true_item_mean_se": per_conv.std(axis=1, ddof=1) / np.sqrt(n),
        "true_share_with": share.mean(axis=1),
    }


def new_conversation_stages(ds: xr.Dataset, n: int, seed: int = 0) -> xr.DataArray:
    """Latent stage ``(model, conversation, turn)`` of ``n`` NEW conversations per chatbot of
    the simulated study ``ds``: new prompt, category and conversation effects around each
    chatbot's true trajectory (``true_t50``, ``true_k``, ``true_L``), the turn noise, and the
    study's mean rater severity added (the stage scale the models read: their severities sum
    to zero). The population a chatbot-level estimand averages over, e.g. a new conversation's
    milestones (:func:`delusion_bayes.sweep.truth.new_conversation_truth`). SIMULATED."""
    if "design" not in ds.attrs or "true_t50" not in ds:
        raise ValueError(
            "new_conversation_stages needs a study from simulate_replicated (attrs['design'] and "
            f"true_* variables); got attrs {sorted(ds.attrs)}"
        )
    raw = json.loads(ds.attrs["design"])
    d = ReplicatedDesign(**{**raw, "items": tuple(raw["items"])})
    L = ds["true_L"].values
    bots = _Chatbots(
        t50=ds["true_t50"].values,
        log_k=np.log(ds["true_k"].values),
        L_logit=np.log((L - 1.0) / (4.0 - L)),  # logit((L - 1) / 3)
    )
    rng = np.random.default_rng([int(seed), 54, int(ds.attrs.get("seed", 0))])
    conv = _draw_conversations(d, bots, rng, n=int(n))
    stage = _stage(conv, np.arange(1, d.n_turns + 1, dtype=float), d.turn_noise, rng)
    stage = stage + float(ds["true_severity"].mean())
    coords = {MODEL: ds[MODEL].values, TURN: ds[TURN].values}
    return xr.DataArray(stage, dims=(MODEL, CONVERSATION, TURN), coords=coords, name="stage")


def _scales(d: ReplicatedDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``item_min``, ``item_max`` and the cap used (inf: none) of the design's items."""
    ordinal = np.array([ITEM_SPECS[i].scale == "ordinal" for i in d.items])
    lows = np.where(ordinal, 1.0, 0.0)
    highs = np.where(ordinal, 4.0, d.count_max)
    caps = np.where(ordinal, np.inf, d.count_cap)
    return lows, highs, caps


def _dataset(d, score, missing, stage, bots, conv, raters, truth) -> xr.Dataset:
    m, c = d.n_models, d.n_conversations
    convs = [f"c{i + 1:02d}" for i in range(c)]
    prompts = np.array([f"p{i + 1:02d}" for i in range(c)], dtype=object)
    cats = np.array([f"cat{(i % d.n_categories) + 1}" for i in range(c)], dtype=object)
    lows, highs, caps = _scales(d)
    judge = d.rater_kind == "judge"
    rater_names = [f"judge-{i + 1}" if judge else f"R{i + 1}" for i in range(d.n_raters)]
    mc, mct, mi = (MODEL, CONVERSATION), (MODEL, CONVERSATION, TURN), (MODEL, ITEM)
    data = {
        "score": ((RATER, MODEL, CONVERSATION, TURN, ITEM), score),
        "has_conversation": (mc, np.ones((m, c), dtype=bool)),
        "true_t50": (MODEL, bots.t50),
        "true_k": (MODEL, np.exp(bots.log_k)),
        "true_L": (MODEL, 1.0 + 3.0 * expit(bots.L_logit)),
        "true_t50_conv": (mc, conv["t50"]),
        "true_k_conv": (mc, np.exp(conv["log_k"])),
        "true_L_conv": (mc, 1.0 + 3.0 * expit(conv["L_logit"])),
        "true_shared_t50": (CONVERSATION, conv["shared_t50"]),
        "true_sd_conv_t50": ((), float(d.sd_conv_t50)),
        "true_sd_conv_log_k": ((), float(d.sd_conv_log_k)),
        "true_sd_conv_L_logit": ((), float(d.sd_conv_L_logit)),
        "true_stage": (mct, stage),
        "true_severity": (RATER, raters.severity),
        "true_discrimination": (RATER, raters.discrimination),
        **{k: (mi, v) for k, v in truth.items()},
    }
    if judge:
        data["judge_failed"] = (mct, missing.copy())
        data["n_judge_failed"] = (MODEL, missing.sum(axis=(1, 2)).astype(int))
    ds = xr.Dataset(
        data,
        coords={
            RATER: np.array(rater_names, dtype=object),
            "rater_kind": (RATER, np.array([d.rater_kind] * d.n_raters, dtype=object)),
            MODEL: np.array([f"chatbot-{i + 1}" for i in range(m)], dtype=object),
            CONVERSATION: np.array(convs, dtype=object),
            TURN: np.arange(1, d.n_turns + 1),
            ITEM: np.array(list(d.items), dtype=object),
            **item_scale_coords(
                [ITEM_SPECS[i].scale for i in d.items],
                list(lows),
                list(highs),
                [np.nan if not np.isfinite(x) else float(x) for x in caps],
            ),  # fmt: skip
            "prompt": (mc, np.broadcast_to(prompts, (m, c)).copy()),
            "category": (mc, np.broadcast_to(cats, (m, c)).copy()),
        },
    )
    ds["true_item_mean"].attrs["description"] = (
        "expected mean per judged turn (raters' mean, capped at item_cap) of a new conversation "
        "of the chatbot: item_means' estimand, Monte Carlo over n_truth conversations"
    )
    ds["true_stage"].attrs["description"] = "latent stage on the 1-4 scale per turn"
    return ds


def _attrs(d: ReplicatedDesign, preset: str, seed: int) -> dict[str, Any]:
    return {
        "kind": KIND,
        "source": "simulate",
        "title": f"SIMULATED replicated study ({preset})",
        "synthetic": "yes: SIMULATED by delusion_bayes.data.simulate_replicated; not real ratings",
        "preset": preset,
        "seed": int(seed),
        "design": json.dumps(asdict(d), sort_keys=True),
        "logit_L": "logit((L - 1) / 3): L's scale for the conversation effects",
    }


__all__ = [
    "NULL_CHATBOTS",
    "ITEM_SPECS",
    "SPIRAL_ITEMS",
    "OVERRIDES",
    "PRESETS",
    "ItemSpec",
    "ReplicatedDesign",
    "design_of",
    "new_conversation_stages",
    "simulate_replicated",
]
