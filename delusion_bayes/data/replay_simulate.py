"""Simulated replay studies with known prevalence (for recovery, coverage and benchmarks).

Generative model (the structure of DelusionEval, Moore et al. 2026, arXiv:2608.05004):
participants own conversations, cut into overlapping windows with one sample per user turn
(:func:`~delusion_bayes.data.replay_windows.plan_windows`). For participant ``p``, conversation
``c``, sample ``s``, model ``m`` and code ``k``::

    u_p ~ Normal(0, sigma_participant)          v_c ~ Normal(0, sigma_conversation)
    original:  logit P(hit) = theta[original, k] + u_p + v_c       (one draw per user turn)
    model m:   logit P(hit) = theta[m, k] + u_p + v_c + beta[m, k] * (context_depth - 10) / 10
                              + gamma[m, k] * prior_content[s, k]

with ``prior_content`` from :func:`~delusion_bayes.data.replay_prior.prior_content_array` (so depth
and prior content are correlated, as in the paper's "Context length effects"). Hits become 0-10
judge scores (``>= cutoff`` for hits). Evaluated models are below the original on every category
but discourages-harm (the paper's main result). Truth: ``true_logit, true_depth_slope,
true_prior_effect (model, code)``, ``true_sigma_participant``, ``true_sigma_conversation`` and
``true_prevalence (model, code)`` = E[sum of P(hit)] / E[number of scored samples] by Monte Carlo
on ``truth_participants`` fresh participants (the cluster bootstrap's ratio-estimator target; a
category's is the mean of its codes').
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import xarray as xr
from scipy.special import expit, logit

from .replay_prior import prior_content_array
from .replay_schema import (
    CATEGORY,
    CODE,
    CODEBOOK,
    CODES,
    DEPTH_CENTER,
    DEPTH_UNIT,
    FAMILY,
    MODEL,
    ORIGINAL,
    SAMPLE,
    code_cutoff,
    hits_from_scores,
)
from .replay_windows import make_sample_id, plan_windows

#: original-transcript prevalence per code in the real release (:data:`~.replay_schema.CODEBOOK`)
BASE_PREVALENCE: dict[str, float] = {code: p for code, (_, _, p) in CODEBOOK.items()}

FAMILIES = {"gpt": "gpt", "claude": "claude", "gemini": "gemini", "qwen": "qwen"}


@dataclass(frozen=True)
class ReplayDesign:
    """Size of a simulated replay study."""

    n_participants: int
    conversations: tuple[int, int]  # per participant, inclusive range
    messages: tuple[int, int]  # per conversation, inclusive range
    models: tuple[str, ...]
    codes: tuple[str, ...] = field(default_factory=lambda: tuple(CODES))
    window: int = 20
    stride: int = 10
    context: int = 0


SCALES: dict[str, ReplayDesign] = {
    # tests: ~6 participants x ~2.5 conversations x ~30 messages, 3 models
    "small": ReplayDesign(6, (2, 3), (16, 44), (ORIGINAL, "gpt-4o", "claude-sonnet-4.5")),
    # DelusionEval: 18 participants, ~600 windows, ~6,800 samples per model, 18 codes
    "delusioneval": ReplayDesign(
        18,
        (4, 10),
        (32, 88),
        (ORIGINAL, "gpt-4o", "gpt-5.4", "claude-sonnet-4.5", "gemini-2.5-pro", "qwen3-235b"),
    ),
}


def family_of(model: str) -> str:
    """Model family from its name (``gpt-4o`` -> ``gpt``); ``original`` is its own family."""
    return next((fam for fam in FAMILIES if model.lower().startswith(fam)), model)


def _draw_params(rng: np.random.Generator, design: ReplayDesign) -> dict[str, np.ndarray]:
    codes = design.codes
    cats = np.array([CODES.get(c, "") for c in codes])
    n_m, n_k = len(design.models), len(codes)
    theta, beta, gamma = np.zeros((3, n_m, n_k))
    base = logit(np.array([BASE_PREVALENCE.get(c, 0.05) for c in codes]))
    cat_names = sorted(set(cats))
    for i, model in enumerate(design.models):
        if model == ORIGINAL:
            theta[i] = base
            continue
        for cat in cat_names:
            sel = cats == cat
            # logit shifts vs the original as in the real release's category tables: evaluated
            # models -3.3 to -0.6 (quartiles -2.7, -1.2) below it, discourages harm -1.9 to +1.6
            if cat == "discourages harm":
                shift = rng.uniform(-1.0, 1.5)
                slope = rng.normal(-0.3, 0.1)
                g = 0.4
            else:
                shift = rng.uniform(-3.0, -1.0)
                slope = rng.normal(0.3, 0.1) if cat == "delusional" else rng.normal(0.0, 0.15)
                g = 1.0
            theta[i, sel] = base[sel] + shift + rng.normal(0, 0.25, sel.sum())
            beta[i, sel] = slope
            gamma[i, sel] = g
    return {"theta": theta, "beta": beta, "gamma": gamma}


def _draw_design(rng: np.random.Generator, design: ReplayDesign, n_participants: int) -> dict:
    """Conversations, roles and samples (no text)."""
    rows = []  # per sample: participant, conversation, window start, index, turn, depth, reply
    conv_part: list[int] = []  # participant of each conversation
    for p in range(n_participants):
        for _ in range(int(rng.integers(design.conversations[0], design.conversations[1] + 1))):
            n = int(rng.integers(design.messages[0], design.messages[1] + 1))
            roles = np.empty(n, dtype=object)
            roles[0] = "assistant" if rng.random() < 0.1 else "user"
            repeat = rng.random(n) < 0.08
            for i in range(1, n):
                roles[i] = "user" if roles[i - 1] == "assistant" or repeat[i] else "assistant"
            c_id = len(conv_part)
            for start, pos, t, pstart in plan_windows(
                roles, design.window, design.stride, design.context
            ):
                reply = pos + 1 < n and roles[pos + 1] == "assistant"
                rows.append((p, c_id, start, pos, t, pos - pstart, reply))
            conv_part.append(p)
    cols = np.array(rows, dtype=np.int64).reshape(-1, 7).T
    names = ("participant", "conversation", "window_start", "index", "turn", "context_depth")
    return {
        **dict(zip(names, cols[:6], strict=True)),
        "reply": cols[6].astype(bool),
        "conv_participant": np.array(conv_part, dtype=np.int64),
    }


def _draw_outcomes(
    rng: np.random.Generator,
    d: dict,
    params: dict[str, np.ndarray],
    models: tuple[str, ...],
    sigma_p: float,
    sigma_c: float,
    miss_rate: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Hits (sample, model, code; NaN missing) and the P(hit) behind them."""
    n_s = d["participant"].size
    n_m, n_k = params["theta"].shape
    u = rng.normal(0, sigma_p, d["participant"].max() + 1 if n_s else 0)
    v = rng.normal(0, sigma_c, d["conv_participant"].size)
    re = (u[d["participant"]] + v[d["conversation"]])[:, None]
    hits = np.full((n_s, n_m, n_k), np.nan)
    probs = np.full((n_s, n_m, n_k), np.nan)
    # the original's verdict belongs to the transcript message: one draw per user turn
    key = d["conversation"] * 1_000_000 + d["index"]
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    o = models.index(ORIGINAL) if ORIGINAL in models else None
    if o is not None:
        p_o = expit(params["theta"][o][None, :] + re[first])
        h_o = (rng.random(p_o.shape) < p_o).astype(float)
        h = h_o[inv]
        h[~d["reply"]] = np.nan
        hits[:, o] = h
        probs[:, o] = np.where(d["reply"][:, None], p_o[inv], np.nan)
        prior = prior_content_array(h, d["conversation"], d["index"], d["context_depth"])
    else:
        prior = np.zeros((n_s, n_k))
    x = ((d["context_depth"] - DEPTH_CENTER) / DEPTH_UNIT)[:, None]
    for m in range(n_m):
        if m == o:
            continue
        p = expit(params["theta"][m] + re + params["beta"][m] * x + params["gamma"][m] * prior)
        h = (rng.random(p.shape) < p).astype(float)
        h[rng.random(n_s) < miss_rate] = np.nan
        hits[:, m] = h
        probs[:, m] = p
    return hits, probs


def _scores_from_hits(rng: np.random.Generator, hits: np.ndarray, cutoff: np.ndarray) -> np.ndarray:
    """0-10 judge scores: ``>= cutoff`` for hits, below it otherwise (``cutoff`` per code)."""
    cutoff = np.broadcast_to(np.asarray(cutoff, dtype=np.int64), hits.shape)
    hi = rng.integers(cutoff, 11, hits.shape).astype(float)
    lo = np.where(
        rng.random(hits.shape) < 0.7, 0, rng.integers(1, np.maximum(cutoff, 2), hits.shape)
    )
    score = np.where(hits == 1, hi, lo.astype(float))
    return np.where(np.isnan(hits), np.nan, score)


def simulate_replay(
    seed: int = 0,
    scale: str = "small",
    *,
    params_seed: int | None = None,
    n_participants: int | None = None,
    models: tuple[str, ...] | list[str] | None = None,
    codes: tuple[str, ...] | list[str] | None = None,
    sigma_participant: float = 0.6,
    sigma_conversation: float = 0.4,
    miss_rate: float = 0.005,
    cutoff: float | None = None,
    truth_participants: int | None = None,
) -> xr.Dataset:
    """A replay study (``score, cutoff, hit``, ``true_*`` variables, model coord ``family``) with
    known per-model x code prevalence (see the module docstring).

    Parameters
    ----------
    seed, params_seed
        Seeds of the data (design, random effects, hits, scores) and of the fixed effects
        (default ``seed``; fix it and vary ``seed`` for repeated studies from one truth).
    scale
        ``"small"`` (6 participants, 3 models; tests) or ``"delusioneval"`` (18 participants,
        ~6,800 samples per model, 18 codes, the original + 5 models).
    n_participants, models, codes
        Override the scale's design.
    sigma_participant, sigma_conversation
        Standard deviations of the participant and conversation intercepts (logit scale).
    miss_rate
        Share of (sample, model) judge verdicts missing at random.
    cutoff
        One judge cutoff for every code; default the codebook's (:data:`~.replay_schema.CUTOFFS`).
    truth_participants
        Participants of the Monte Carlo population behind ``true_prevalence`` (default
        ``max(200, 20 * n_participants)``; 0 skips it).
    """
    design = _replay_design(scale, n_participants, models, codes)
    params_seed = seed if params_seed is None else params_seed
    params = _draw_params(np.random.default_rng([params_seed, 1]), design)
    sigmas = (sigma_participant, sigma_conversation)
    rng = np.random.default_rng([seed, 2])
    d = _draw_design(rng, design, design.n_participants)
    hits, _ = _draw_outcomes(rng, d, params, design.models, *sigmas, miss_rate)
    cut = np.array([float(cutoff) if cutoff is not None else code_cutoff(c) for c in design.codes])
    score = _scores_from_hits(rng, hits, cut)

    ds = _replay_dataset(d, design, score, cut, params, sigmas)
    n_truth = (
        max(200, 20 * design.n_participants) if truth_participants is None else truth_participants
    )
    if n_truth > 0:
        rng_truth = np.random.default_rng([seed, 3])
        ds["true_prevalence"] = _true_prevalence(rng_truth, design, params, sigmas, n_truth)
    ds.attrs.update(_provenance(scale, seed, params_seed, n_truth))
    return ds


def _provenance(scale: str, seed: int, params_seed: int, n_truth: int) -> dict:
    """The attrs of a simulated replay study: how to draw it again, the depth covariate."""
    return {
        "kind": "replay",
        "simulated": 1,
        "scale": scale,
        "seed": int(seed),
        "params_seed": int(params_seed),
        "depth_center": DEPTH_CENTER,
        "depth_unit": DEPTH_UNIT,
        "truth_participants": int(n_truth),
    }


def _true_prevalence(rng, design: ReplayDesign, params, sigmas, n_truth: int):
    """``(model, code)`` prevalence of the population: the mean P(hit) over the samples of
    ``n_truth`` fresh participants (nothing missing)."""
    d = _draw_design(rng, design, n_truth)
    _, probs = _draw_outcomes(rng, d, params, design.models, *sigmas, 0.0)
    return (MODEL, CODE), np.nanmean(probs, axis=0)


def _replay_dataset(d: dict, design: ReplayDesign, score, cut, params, sigmas) -> xr.Dataset:
    """The drawn study: scores, cutoffs, hits and the truth behind them, with the sample coords
    of the drawn design ``d``."""
    sigma_participant, sigma_conversation = sigmas
    models, codes = design.models, design.codes
    pnames, conv_names, sid, window = _sample_names(d, design.context)
    ds = xr.Dataset(
        {
            "score": ((SAMPLE, MODEL, CODE), score),
            "cutoff": ((CODE,), cut),
            "true_logit": ((MODEL, CODE), params["theta"]),
            "true_depth_slope": ((MODEL, CODE), params["beta"]),
            "true_prior_effect": ((MODEL, CODE), params["gamma"]),
            "true_sigma_participant": ((), float(sigma_participant)),
            "true_sigma_conversation": ((), float(sigma_conversation)),
        },
        coords={
            SAMPLE: np.array(sid, dtype=object),
            MODEL: list(models),
            CODE: list(codes),
            CATEGORY: (CODE, np.array([CODES[c] for c in codes], dtype=object)),
            FAMILY: (MODEL, np.array([family_of(m) for m in models], dtype=object)),
            "participant": (SAMPLE, pnames),
            "conversation": (SAMPLE, conv_names),
            "window": (SAMPLE, window),
            **{c: (SAMPLE, d[c]) for c in ("window_start", "index", "turn", "context_depth")},
        },
    )
    ds["hit"] = hits_from_scores(ds["score"], ds["cutoff"])
    return ds


def _replay_design(scale: str, n_participants, models, codes) -> ReplayDesign:
    """The scale's design with the overrides, checked."""
    if scale not in SCALES:
        raise ValueError(f"unknown replay scale {scale!r}; expected one of {list(SCALES)}")
    base = SCALES[scale]
    models = tuple(models) if models is not None else base.models
    codes = tuple(codes) if codes is not None else base.codes
    unknown = [c for c in codes if c not in CODES]
    if unknown:
        raise ValueError(f"unknown code(s) {unknown}; simulate_replay knows {list(CODES)}")
    if len(set(models)) != len(models):
        raise ValueError(f"models must be distinct, got {list(models)}")
    n_participants = base.n_participants if n_participants is None else n_participants
    design = replace(base, n_participants=n_participants, models=models, codes=codes)
    if design.n_participants < 2:
        raise ValueError(f"n_participants must be >= 2, got {design.n_participants}")
    return design


def _sample_names(d: dict[str, np.ndarray], context: int):
    """Participant, conversation, sample id and window name of every drawn sample."""
    pnames = np.array([f"p{p + 1:02d}" for p in d["participant"]], dtype=object)
    cp = d["conv_participant"]
    conv_names = np.array(
        [f"p{cp[c] + 1:02d}-c{c + 1:03d}" for c in d["conversation"]], dtype=object
    )
    keys = list(
        zip(pnames, conv_names, d["window_start"].tolist(), d["index"].tolist(), strict=True)
    )
    sid = [make_sample_id(p, c, w, i, context) for p, c, w, i in keys]
    window = np.array([f"{p}/{c}/w{w}" for p, c, w, _ in keys], dtype=object)
    return pnames, conv_names, sid, window
