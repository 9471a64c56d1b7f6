"""Posterior quantities of the behaviour model (:mod:`delusion_bayes.models.behaviour`): each
chatbot's expected value per judged turn for a new conversation, chatbot contrasts, the
per-rating log-likelihood and posterior predictive checks; the post-processing of a fit."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit, log_expit

from ..data.replicated import ITEM, MODEL
from ..intervals import eti

#: Gauss-Hermite nodes for the conversation effect of a new conversation
N_NODES = 20
#: Spiral-Bench's protective behaviours: more of them is better (the others: more is worse)
PROTECTIVE: frozenset[str] = frozenset(
    {"pushback", "de-escalation", "safe_redirection", "suggestions_to_seek_help"}
)
_CHUNK = 64


def _draws(post: xr.Dataset, name: str) -> np.ndarray:
    v = post[name]
    return v.values.reshape((-1,) + v.shape[2:])


def _params(post: xr.Dataset, spec: Any, suffix: str) -> dict[str, np.ndarray]:
    """``alpha, beta (draw, item, model)``, ``sigma (draw, item)``, ``z (draw, unit, item)``,
    ``sev (draw, item, rater)``."""
    n = post.sizes["chain"] * post.sizes["draw"]
    sev_name = f"severity{suffix}"
    icpt = f"intercept{suffix}"
    return {
        "alpha": _draws(post, f"alpha{suffix}")
        + (_draws(post, icpt)[:, :, None] if icpt in post else 0.0),
        "beta": _draws(post, f"beta{suffix}"),
        "sigma": _draws(post, f"sigma_conversation{suffix}"),
        "z": _draws(post, f"z_effect{suffix}"),
        "sev": _draws(post, sev_name)
        if sev_name in post
        else np.zeros((n, len(spec.coords[ITEM]), spec.n_raters)),
    }


def _cuts(post: xr.Dataset, suffix: str, levels: np.ndarray) -> np.ndarray:
    """``(draw, item, cut)`` with the unused cutpoints at +inf (they add nothing)."""
    c = _draws(post, f"cutpoints{suffix}")
    used = np.arange(c.shape[-1])[None, :] < (levels[:, None] - 1)
    return np.where(used[None], c, np.inf)


def _expected_level(eta: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """``E[y | eta] = sum_k expit(eta - kappa_k)`` (levels from 0); ``cuts`` broadcasts with
    ``eta[..., None]``."""
    return expit(eta[..., None] - cuts).sum(-1)


def _new_conversation_mean(p: dict, cuts: np.ndarray, x: np.ndarray, kind: str) -> np.ndarray:
    """``(draw, item, model)``: the mean over turns ``x`` and raters of ``E[g(eta + u)]``,
    ``u ~ N(0, sigma^2)`` by Gauss-Hermite; ``g`` the expected level (``level``) or
    ``P(y > 0)`` (``any``)."""
    nodes, weights = np.polynomial.hermite.hermgauss(N_NODES)
    w = weights / np.sqrt(np.pi)
    eta = p["alpha"][..., None, None] + p["beta"][..., None, None] * x[:, None]
    eta = eta + p["sev"][:, :, None, None, :]  # (draw, item, model, turn, rater)
    out = np.zeros(p["alpha"].shape)
    for q in range(N_NODES):
        u = np.sqrt(2.0) * p["sigma"][:, :, None, None, None] * nodes[q]
        if kind == "any":
            g = expit(eta + u)
        else:
            g = _expected_level(eta + u, cuts[:, :, None, None, None, :])
        out += w[q] * g.mean(axis=(-1, -2))
    return out


def item_mean_draws(post: xr.Dataset, spec: Any) -> np.ndarray:
    """``(draw, item, model)``: each chatbot's expected value per judged turn of a new
    conversation, on the item's scale (its minimum added back)."""
    if spec.likelihood == "ordinal":
        p = _params(post, spec, "")
        cuts = _cuts(post, "", spec.n_levels)
        mean = _new_conversation_mean(p, cuts, spec.x_turns, "level")
    else:
        p0, p1 = _params(post, spec, "_any"), _params(post, spec, "_level")
        cuts = _cuts(post, "_level", np.maximum(spec.n_levels - 1, 1))
        # conversation effects of the two parts are independent: the product of expectations
        # holds per turn and rater only, so integrate per turn (exact for one turn and rater)
        mean = _hurdle_mean(p0, p1, cuts, spec.x_turns)
    return mean + spec.offset[None, :, None]


def _hurdle_mean(p0: dict, p1: dict, cuts: np.ndarray, x: np.ndarray) -> np.ndarray:
    nodes, weights = np.polynomial.hermite.hermgauss(N_NODES)
    w = weights / np.sqrt(np.pi)
    eta0 = p0["alpha"][..., None, None] + p0["beta"][..., None, None] * x[:, None]
    eta0 = eta0 + p0["sev"][:, :, None, None, :]
    eta1 = p1["alpha"][..., None, None] + p1["beta"][..., None, None] * x[:, None]
    eta1 = eta1 + p1["sev"][:, :, None, None, :]
    any_, lev = np.zeros(eta0.shape), np.zeros(eta1.shape)
    for q in range(N_NODES):
        any_ += w[q] * expit(eta0 + np.sqrt(2.0) * p0["sigma"][:, :, None, None, None] * nodes[q])
        u1 = np.sqrt(2.0) * p1["sigma"][:, :, None, None, None] * nodes[q]
        lev += w[q] * _expected_level(eta1 + u1, cuts[:, :, None, None, None, :])
    return (any_ * (1.0 + lev)).mean(axis=(-1, -2))


def _eta_obs(p: dict, spec: Any, d: slice) -> np.ndarray:
    i, m, u, r = (spec.idx[k] for k in ("item", "model", "unit", "rater"))
    return (
        p["alpha"][d][:, i, m]
        + p["beta"][d][:, i, m] * spec.x
        + p["sigma"][d][:, i] * p["z"][d][:, u, i]
        + p["sev"][d][:, i, r]
    )


def _ordinal_loglik(y: np.ndarray, eta: np.ndarray, cuts: np.ndarray, item: np.ndarray):
    full = np.concatenate(
        [np.full(cuts.shape[:2] + (1,), -np.inf), cuts, np.full(cuts.shape[:2] + (1,), np.inf)],
        axis=-1,
    )
    upper = full[:, item, y + 1] - eta
    lower = full[:, item, y] - eta
    with np.errstate(over="ignore", invalid="ignore"):
        return np.log(np.clip(expit(upper) - expit(lower), 1e-300, None))


def loglik_draws(post: xr.Dataset, spec: Any) -> np.ndarray:
    """``(draw, obs)`` log-likelihood of every rating."""
    n = post.sizes["chain"] * post.sizes["draw"]
    out = np.empty((n, spec.y.size))
    item, y = spec.idx["item"], spec.y
    if spec.likelihood == "ordinal":
        p, cuts = _params(post, spec, ""), _cuts(post, "", spec.n_levels)
    else:
        p, p1 = _params(post, spec, "_any"), _params(post, spec, "_level")
        cuts = _cuts(post, "_level", np.maximum(spec.n_levels - 1, 1))
    for start in range(0, n, _CHUNK):
        d = slice(start, min(start + _CHUNK, n))
        if spec.likelihood == "ordinal":
            out[d] = _ordinal_loglik(y, _eta_obs(p, spec, d), cuts[d], item)
        else:
            eta0 = _eta_obs(p, spec, d)
            ll_pos = _ordinal_loglik(np.maximum(y - 1, 0), _eta_obs(p1, spec, d), cuts[d], item)
            out[d] = np.where(y > 0, log_expit(eta0) + ll_pos, log_expit(-eta0))
    return out


def finish_behaviour_fit(
    tree: xr.DataTree, spec: Any, seed: int = 0, log_likelihood: bool = True
) -> xr.DataTree:
    """After sampling: ``item_mean (model, item)`` in the posterior, the ``log_likelihood``
    group (``y`` on dim ``obs``) and the fit's attrs."""
    post = tree["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    mean = (
        item_mean_draws(post, spec).transpose(0, 2, 1).reshape(shape + (-1, len(spec.coords[ITEM])))
    )
    post["item_mean"] = (("chain", "draw", MODEL, ITEM), mean)
    post = post.assign_coords({MODEL: spec.coords[MODEL], ITEM: spec.coords[ITEM]})
    tree["posterior"] = xr.DataTree(post)
    if log_likelihood:
        ll = loglik_draws(post, spec).reshape(shape + (-1,))
        tree["log_likelihood"] = xr.DataTree(xr.Dataset({"y": (("chain", "draw", "obs"), ll)}))
    tree.attrs.update(
        model="behaviour",
        likelihood=spec.likelihood,
        rule=spec.rule,
        seed=int(seed),
        n_obs=int(spec.y.size),
        n_conversations=len(spec.coords["unit"]),
        divergences=int(tree["sample_stats"]["diverging"].sum()),
        sampler=str(tree["posterior"].attrs.get("sampler", "")),
    )
    return tree


def reported_vars(tree: xr.DataTree) -> list[str]:
    """The variables the gate checks: every parameter but the per-conversation ``z`` (their
    scales and the chatbot-level ``item_mean`` stand for them), and ``item_mean``."""
    return [
        v
        for v in tree["posterior"].data_vars
        if not str(v).startswith(("z_", "severity_raw")) and "_shifted" not in str(v)
    ]


def bayes_item_means(tree: xr.DataTree, ci_prob: float = 0.95) -> pd.DataFrame:
    """``model, item, median, ci_low, ci_high, mean, sd_conversation``: the posterior of each
    chatbot's expected value per judged turn of a new conversation (equal-tailed interval)."""
    post = tree["posterior"]
    m = post["item_mean"].stack(s=("chain", "draw")).transpose(MODEL, ITEM, "s").values
    sd_name = "sigma_conversation" if "sigma_conversation" in post else "sigma_conversation_any"
    sd = post[sd_name].median(("chain", "draw")).values
    rows = []
    for mi, model in enumerate(post[MODEL].values):
        for ii, item in enumerate(post[ITEM].values):
            lo, hi = eti(m[mi, ii], ci_prob)
            rows.append(
                {
                    "model": str(model),
                    "item": str(item),
                    "median": float(np.median(m[mi, ii])),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "mean": float(m[mi, ii].mean()),
                    "sd_conversation": float(sd[ii]),
                }
            )
    return pd.DataFrame(rows)


def bayes_contrasts(tree: xr.DataTree, ci_prob: float = 0.95) -> pd.DataFrame:
    """Every chatbot pair per item for a new conversation: ``diff`` (A - B, posterior median)
    with its interval, ``p_a_higher`` and ``p_a_worse`` (higher is worse except for
    :data:`PROTECTIVE` behaviours, ``worse_when``)."""
    post = tree["posterior"]
    m = post["item_mean"].stack(s=("chain", "draw")).transpose(MODEL, ITEM, "s").values
    models = [str(x) for x in post[MODEL].values]
    rows = []
    for ii, item in enumerate(str(i) for i in post[ITEM].values):
        protective = item in PROTECTIVE
        for a, b in combinations(range(len(models)), 2):
            d = m[a, ii] - m[b, ii]
            lo, hi = eti(d, ci_prob)
            p_high = float((d > 0).mean())
            rows.append(
                {
                    "item": item,
                    "a": models[a],
                    "b": models[b],
                    "diff": float(np.median(d)),
                    "ci_low": float(lo),
                    "ci_high": float(hi),
                    "p_a_higher": p_high,
                    "p_a_worse": float((d < 0).mean()) if protective else p_high,
                    "worse_when": "lower" if protective else "higher",
                }
            )
    return pd.DataFrame(rows)


def bayes_rankings(tree: xr.DataTree, ci_prob: float = 0.95) -> pd.DataFrame | None:
    """Each chatbot's rank per item over the posterior draws of its new-conversation mean
    (``item_mean``), rank 1 = the HIGHEST mean as the bootstrap's
    (:func:`delusion_bayes.baselines.replicated.item_rankings`), so the two tables answer one
    question; None with fewer than 3 chatbots."""
    from ..baselines.rankings import quantity_rankings

    da = tree["posterior"]["item_mean"]
    models = [str(m) for m in da[MODEL].values]
    if len(models) < 3:
        return None
    draws = {
        str(item): (
            da.sel({ITEM: item}).stack(s=("chain", "draw")).transpose("s", MODEL).values,
            models,
            "better",
        )
        for item in da[ITEM].values
    }
    out = quantity_rankings(draws, ci_prob)
    return None if out is None else out.rename(columns={"item": MODEL})


__all__ = [
    "PROTECTIVE",
    "bayes_contrasts",
    "bayes_rankings",
    "bayes_item_means",
    "finish_behaviour_fit",
    "item_mean_draws",
    "loglik_draws",
    "reported_vars",
]
