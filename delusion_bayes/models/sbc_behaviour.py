"""SBC of the behaviour model (:mod:`.behaviour`) against a prior and a simulator that do not
share its graph (issue 54, item 4).

The truths are drawn in NumPy from :data:`BEHAVIOUR_REFERENCE_PRIORS`, the model's documented
priors written out once more (a change to ``BEHAVIOUR_PRIORS`` makes the two disagree, which is
the point): per item and chatbot ``alpha`` (zero-sum over chatbots) and ``beta``, per item
``sigma_conversation`` and ordered cutpoints (the order statistics of i.i.d. ``N(0, 3)``: the
density the model's flat ordered cutpoints with a normal potential on each have), per
conversation and item ``z ~ N(0, 1)``, per item and rater a zero-sum severity. The ratings are
drawn from the cumulative logit by inverting its CDF in NumPy, on the design (chatbots,
conversations, turns, raters, items, levels) of a template study, and each study is fitted as
the replicated stage fits it (:func:`~.behaviour.fit_behaviour`).

Ranked (randomised normalised ranks; Talts et al. 2020, arXiv:1804.06788): the chatbot-level
``alpha``, ``beta`` and the new-conversation mean ``item_mean`` (its truth by Monte Carlo over
20,000 new conversations in NumPy, not the fit's Gauss-Hermite), the conversation-level
``z_effect`` and ``sigma_conversation``, the ``cutpoints`` and (two or more raters)
``severity``. :func:`~.sbc_reference.rank_checks` tests them per variable.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import xarray as xr
from scipy.special import expit

from ..data.replicated import CONVERSATION, ITEM, MODEL, RATER, TURN

log = logging.getLogger(__name__)
#: the behaviour model's documented priors (docs/dev/models.md, "Judged behaviours"), frozen
#: here so that the truths do not come from the table the fit reads
BEHAVIOUR_REFERENCE_PRIORS: dict[str, float] = {
    "alpha": 2.0,  # ZeroSumNormal sigma over chatbots
    "beta": 2.5,  # Normal(0, .)
    "sigma_conversation": 2.0,  # Gamma(shape 2, this rate)
    "severity": 0.5,  # ZeroSumNormal sigma over raters
    "cutpoints": 3.0,  # Normal(0, .), ordered
}
#: what is ranked
PARAMS = ("alpha", "beta", "item_mean", "sigma_conversation", "z_effect", "cutpoints", "severity")


def _zero_sum(rng, sigma: float, shape: tuple[int, ...]) -> np.ndarray:
    """Zero-sum normal over the last axis: i.i.d. ``N(0, sigma)`` minus their mean, the law
    ``N(0, sigma^2 (I - 11'/n))`` of PyMC's ZeroSumNormal."""
    x = rng.normal(0.0, sigma, shape)
    return x - x.mean(axis=-1, keepdims=True)


def draw_truth(template: xr.Dataset, n_levels: int, rng) -> dict[str, np.ndarray]:
    """One draw of every parameter for the design of ``template`` (a replicated study)."""
    p = BEHAVIOUR_REFERENCE_PRIORS
    n_m, n_c = template.sizes[MODEL], template.sizes[CONVERSATION]
    n_i, n_r = template.sizes[ITEM], template.sizes[RATER]
    cuts = np.sort(rng.normal(0.0, p["cutpoints"], (n_i, n_levels - 1)), axis=-1)
    return {
        "alpha": _zero_sum(rng, p["alpha"], (n_i, n_m)),
        "beta": rng.normal(0.0, p["beta"], (n_i, n_m)),
        "sigma_conversation": rng.gamma(2.0, 1.0 / p["sigma_conversation"], n_i),
        "z": rng.normal(0.0, 1.0, (n_m, n_c, n_i)),
        "cutpoints": cuts,
        "severity": _zero_sum(rng, p["severity"], (n_i, n_r)) if n_r > 1 else np.zeros((n_i, 1)),
    }


def _x(template: xr.Dataset) -> np.ndarray:
    """The model's scaled turn ``(t - t_mid) / (t_max - t_min)``."""
    t = template[TURN].values.astype(float)
    return (t - (t.min() + t.max()) / 2) / max(float(t.max() - t.min()), 1.0)


def _draw_levels(eta: np.ndarray, cuts: np.ndarray, rng) -> np.ndarray:
    """Ordinal levels of the cumulative logit ``P(y <= k) = expit(cuts_k - eta)`` by inversion
    (``cuts`` broadcast against ``eta`` with the level axis last)."""
    cdf = expit(cuts - eta[..., None])
    return (rng.random(eta.shape)[..., None] > cdf).sum(axis=-1)


def simulate(template: xr.Dataset, truth: dict[str, np.ndarray], rng) -> xr.Dataset:
    """``template`` with its scores replaced by ratings drawn from ``truth`` (levels added to
    each item's ``item_min``); conversations the template lacks stay missing."""
    x = _x(template)
    a = truth["alpha"].T[None, :, None, None, :]  # (1, model, 1, 1, item)
    b = truth["beta"].T[None, :, None, None, :] * x[None, None, None, :, None]
    u = (truth["sigma_conversation"] * truth["z"])[None, :, :, None, :]
    s = truth["severity"].T[:, None, None, None, :]  # (rater, 1, 1, 1, item)
    eta = a + b + u + s  # (rater, model, conversation, turn, item)
    levels = _draw_levels(eta, truth["cutpoints"][None, None, None, None], rng)
    dims = (RATER, MODEL, CONVERSATION, TURN, ITEM)
    old = template["score"].transpose(*dims)
    score = levels + template["item_min"].values[None, None, None, None, :]
    score = np.where(np.isfinite(old.values), score, np.nan)
    out = template.copy()
    out["score"] = (dims, score)
    return out


def true_item_mean(template: xr.Dataset, truth: dict[str, np.ndarray], rng, n: int = 20_000):
    """``(item, model)``: a new conversation's expected level per judged turn (mean over the
    template's turns and raters), by Monte Carlo over ``n`` conversation effects."""
    x = _x(template)
    sig = truth["sigma_conversation"]
    u = rng.normal(0.0, 1.0, (n, 1, 1, 1, 1)) * sig[None, :, None, None, None]
    eta = (
        truth["alpha"][None, :, :, None, None]
        + truth["beta"][None, :, :, None, None] * x[None, None, None, :, None]
        + truth["severity"][None, :, None, None, :]
        + u
    )
    cdf = expit(truth["cutpoints"][None, :, None, None, None, :] - eta[..., None])
    expected = (1.0 - cdf).sum(axis=-1)  # E[y] = sum_k P(y > k)
    return expected.mean(axis=(0, 3, 4))


def run_behaviour_sbc(
    template: xr.Dataset,
    *,
    n_levels: int = 4,
    num_simulations: int = 20,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int = 0,
    cache_dir=None,
) -> xr.Dataset:
    """Reference-prior SBC of the behaviour model on the design of ``template`` with items on
    ``n_levels`` levels (``item_min`` 0); a Dataset over ``sim`` of each variable's ranks
    (flattened per variable, dim ``element``), with ``t50_scale_sampled`` all True so that
    :func:`~.sbc_reference.rank_checks` reads it, and per study the fit's divergences."""
    from .behaviour import fit_behaviour
    from .sbc_reference import normalised_rank, rank_dataset

    template = template.assign(
        item_min=(ITEM, np.zeros(template.sizes[ITEM])),
        item_max=(ITEM, np.full(template.sizes[ITEM], float(n_levels - 1))),
        item_cap=(ITEM, np.full(template.sizes[ITEM], np.nan)),
    )
    from .sbc import sbc_draws

    draws, tune, chains = sbc_draws(draws, tune, chains)  # SBC_SAMPLER's unless given
    rng = np.random.default_rng([int(seed), 54])
    rows: dict[str, list[np.ndarray]] = {v: [] for v in PARAMS}
    divergences = []
    t0 = time.perf_counter()
    for i in range(int(num_simulations)):
        truth = draw_truth(template, n_levels, rng)
        sim = simulate(template, truth, rng)
        truth["item_mean"] = true_item_mean(sim, truth, rng)
        dt = fit_behaviour(
            sim,
            rule="raw",
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            seed=int(seed) * 1000 + i,
            progressbar=False,
            log_prior=False,
            posterior_predictive=False,
            log_likelihood=False,
            cache_dir=cache_dir,
        )
        divergences.append(int(dt["sample_stats"]["diverging"].sum()))
        log.info(
            "SBC study %d/%d: %d divergences, %.0f s since the start",
            i + 1,
            num_simulations,
            divergences[-1],
            time.perf_counter() - t0,
        )
        post = dt["posterior"].to_dataset()
        truth["z_effect"] = truth["z"].reshape(-1, truth["z"].shape[-1])  # (unit, item)
        for v in PARAMS:
            if v == "severity" and template.sizes[RATER] < 2:
                continue
            t = np.asarray(truth[v], float)
            p = np.asarray(post[v].transpose("chain", "draw", ...).values, float)
            if v == "item_mean":  # the posterior's (model, item) vs the truth's (item, model)
                p = np.swapaxes(p, -1, -2)
            rows[v].append(normalised_rank(p.reshape(-1, t.size), t.ravel(), rng))
    return rank_dataset(
        rows,
        np.ones(int(num_simulations), bool),
        divergences,
        num_simulations=int(num_simulations),
        seed=int(seed),
        draws=draws,
        chains=chains,
    )


__all__ = [
    "BEHAVIOUR_REFERENCE_PRIORS",
    "PARAMS",
    "draw_truth",
    "run_behaviour_sbc",
    "simulate",
    "true_item_mean",
]
