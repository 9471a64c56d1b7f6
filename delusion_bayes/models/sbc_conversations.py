"""SBC of the trajectory model with a conversation level (:mod:`.conversations`) against a
prior and a simulator that do not share its graph (issue 54, item 4).

The truths are drawn in NumPy from the documented priors (:data:`~.sbc_reference.
REFERENCE_PRIORS` and :data:`PLATEAU_PRIORS`, frozen copies): per chatbot the hyper-means
``mu_t50``, ``mu_log_k`` and the plateau mean ``mu_log_L1_chatbot ~ N(mu_log_L1, 0.2)``
(the chatbots' spread fixed, as the model fixes it); shared by all conversations
``sigma_t50``, ``sigma_log_k``, the plateaus' centre ``mu_log_L1`` and spread
``sigma_log_L1``, the day-noise population and the raters; per conversation
``t50 ~ N(T mu_t50[m], T sigma_t50)``, ``log k``, ``log(L - 1) ~ N(mu_log_L1_chatbot[m],
sigma_log_L1)`` and the day noise. The ratings come
from the trajectory simulator of :func:`~.sbc.simulate_ratings` (stage = trajectory + noise,
cumulative-logit ratings at the stage cutpoints), on the design of a template replicated
study's conversations, and each study is fitted as the replicated stage fits it
(:func:`~.conversations.units_spec`).

Ranked (randomised normalised ranks; Talts et al. 2020): the chatbot-level ``mu_t50``,
``mu_log_k`` and ``mu_log_L1_chatbot``, the shared scales and ``mu_log_L1``, and per
conversation ``t50``, ``k`` and ``L``. Studies whose fit fixed ``sigma_t50`` (fewer than two
conversations turned: a different model) carry ``t50_scale_sampled`` False and
:func:`~.sbc_reference.rank_checks` leaves them out. The fit's plateau rule is followed the
same way: a chatbot whose conversations do not show their plateau has no plateau mean in the
fit (:func:`~.conversations.plateau_shown`), so its ``mu_log_L1_chatbot`` is not ranked and its
conversations' ``L`` are ranked apart, as ``L_unowned`` (the fit's prior for them is narrower
than the simulator's by the chatbots' spread; reported, not a test of the model). With
``shared=True`` the shared prompts' t50 shifts are drawn (:func:`draw_truth`) and their scales
ranked, as the opt-in fit has them.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import xarray as xr
from scipy.special import expit

from ..data.schema import DAY, K_MAX, MODEL, RATER

log = logging.getLogger(__name__)
#: the plateau hierarchy's documented priors (``blocks.POPULATION_PRIORS`` and
#: ``blocks.CONVERSATION_PRIORS``), frozen here
PLATEAU_PRIORS: dict[str, tuple[str, tuple[float, ...]]] = {
    "mu_log_L1": ("Normal", (1.1, 0.2)),
    "sigma_log_L1": ("HalfNormal", (0.2,)),
}
#: the between-conversation t50 scale's documented prior (``conversations.
#: CONVERSATION_T50_SCALE_PRIOR``; the chatbots' study has a Gamma(3, 6)), frozen here
T50_SCALE_PRIOR: tuple[str, tuple[float, ...]] = ("HalfNormal", (0.5,))
#: the chatbots' plateau means' spread the model fixes (its HalfNormal(0.2)'s root mean square)
SIGMA_MU_LOG_L1 = 0.2
#: what is ranked: chatbot level, shared, conversation level
PARAMS = (
    "mu_t50",
    "mu_log_k",
    "mu_log_L1_chatbot",
    "sigma_t50",
    "sigma_log_k",
    "mu_log_L1",
    "sigma_log_L1",
    "t50",
    "k",
    "L",
)


def draw_truth(
    chatbot: np.ndarray,
    n_raters: int,
    n_days: int,
    rng,
    levels: dict[str, np.ndarray] | None = None,
) -> xr.Dataset:
    """One draw of every parameter for units with chatbot indices ``chatbot``, as a Dataset with
    a ``draw`` dim of size 1 (the layout :func:`~.sbc.simulate_ratings` reads). ``levels``: per
    grouping the chatbots share (``conversations.shared_terms``), each unit's level index; the
    scale prior's draw is then the total ``sd_t50_total``, split into ``sigma_t50`` and each
    grouping's ``sd_t50_<term>`` by Dirichlet(1, ...) variance shares
    (``blocks._t50_variance_shares``), and each level's shift of t50 is drawn last."""
    from .sbc_reference import REFERENCE_PRIORS as P
    from .sbc_reference import draw_reference as draw

    n_bots, n_units = int(chatbot.max()) + 1, len(chatbot)
    bot = {"mu_t50": draw(P["mu_t50"], rng, n_bots), "mu_log_k": draw(P["mu_log_k"], rng, n_bots)}
    shared = {"sigma_t50": float(draw(T50_SCALE_PRIOR, rng))}  # first: the draws' old order
    if levels:  # the draw is the total, split by Dirichlet(1, ...) variance shares
        total = shared["sd_t50_total"] = shared["sigma_t50"]
        w = rng.dirichlet(np.ones(len(levels) + 1))
        shared["sigma_t50"] = total * float(np.sqrt(w[0]))
        shared |= {f"sd_t50_{t}": total * float(np.sqrt(w[i + 1])) for i, t in enumerate(levels)}
    shared |= {n: float(draw(P[n], rng)) for n in ("sigma_log_k", "mu_log_eps", "sigma_log_eps")}
    shared |= {n: float(draw(prior, rng)) for n, prior in PLATEAU_PRIORS.items()}
    bot["mu_log_L1_chatbot"] = rng.normal(shared["mu_log_L1"], SIGMA_MU_LOG_L1, n_bots)
    a = rng.normal(bot["mu_log_k"][chatbot], shared["sigma_log_k"])
    t50 = rng.normal(n_days * bot["mu_t50"][chatbot], n_days * shared["sigma_t50"])
    eps = rng.normal(shared["mu_log_eps"], shared["sigma_log_eps"], n_units)
    units = {
        "L": 1.0
        + np.exp(rng.normal(bot["mu_log_L1_chatbot"][chatbot], shared["sigma_log_L1"], n_units)),
        "k": K_MAX * expit(a - np.log(K_MAX)),
        "t50": t50,
        "sigma_eps": np.exp(eps),
    }
    raters = {
        "severity": draw(P["severity"], rng, n_raters),
        "discrimination": np.exp(draw(P["log_disc"], rng, n_raters)),
    }
    for term, idx in (levels or {}).items():
        effect = n_days * shared[f"sd_t50_{term}"] * rng.standard_normal(int(idx.max()) + 1)
        units["t50"] = units["t50"] + effect[idx]
    data = {n: (("draw",), [v]) for n, v in shared.items()}
    data |= {n: (("draw", "chatbot"), v[None]) for n, v in bot.items()}
    data |= {n: (("draw", MODEL), v[None]) for n, v in units.items()}
    data |= {n: (("draw", RATER), v[None]) for n, v in raters.items()}
    return xr.Dataset(data)


def _follow_plateau_rule(rows: dict, own: np.ndarray, chatbot: np.ndarray) -> None:
    """Apply the model's plateau rule to the last study's ranks (NaN where it does not rank):
    a chatbot whose conversations do not show their plateau has no plateau mean of its own in
    the fit (``conversations.plateau_shown``), so its ``mu_log_L1_chatbot`` is not ranked and
    its conversations' ``L`` go to ``L_unowned``: the fit puts them around the centre, the
    simulator around the chatbot's own draw, so those ranks may drift; the rest are the
    model's own."""
    unowned = ~own[chatbot]
    rows["mu_log_L1_chatbot"][-1] = np.where(own, rows["mu_log_L1_chatbot"][-1], np.nan)
    L = rows["L"][-1]
    rows["L"][-1] = np.where(unowned, np.nan, L)
    rows["L_unowned"].append(np.where(unowned, L, np.nan))


def shared_levels(units: xr.Dataset) -> dict[str, np.ndarray]:
    """Per grouping the chatbots share (``conversations.shared_terms``: the fit learns its t50
    shifts, so the reference draws them too and ranks their spreads), each unit's level."""
    from .conversations import shared_terms

    return {
        t: np.unique(units[t].values.astype(str), return_inverse=True)[1]
        for t in shared_terms(units)
    }


def run_conversation_sbc(
    units: xr.Dataset,
    *,
    model: str = "joint",
    num_simulations: int = 20,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int = 0,
    shared: bool = False,
    cache_dir=None,
) -> xr.Dataset:
    """Reference-prior SBC of ``model`` with a conversation level on the design of ``units``
    (:func:`~.conversations.conversation_units` of a replicated study); a Dataset over ``sim``
    of each variable's ranks (dim ``<variable>_element``), ``t50_scale_sampled`` and the fits'
    divergences per study. Fitted at the stage's starting target (0.99). ``shared``: with the
    shared prompts' t50 shifts (``conversations.units_spec``), drawn and ranked too."""
    from ..inference.config import InferenceConfig
    from .conversations import units_spec
    from .fit import fit
    from .sbc import simulate_ratings
    from .sbc_reference import normalised_rank, rank_dataset

    chatbot_names = list(dict.fromkeys(units.attrs["chatbot"]))
    chatbot = np.array([chatbot_names.index(c) for c in units.attrs["chatbot"]])
    from .sbc import sbc_draws

    draws, tune, chains = sbc_draws(draws, tune, chains)  # SBC_SAMPLER's unless given
    rng = np.random.default_rng([int(seed), 56])
    n_raters, n_days = units.sizes[RATER], units.sizes[DAY]
    levels = shared_levels(units) if shared else {}
    params = (*PARAMS, *(f"sd_t50_{t}" for t in (("total", *levels) if levels else ())))
    rows: dict[str, list[np.ndarray]] = {v: [] for v in (*params, "L_unowned")}
    sampled, divergences = [], []
    settings = dict(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=1,
        progressbar=False,
        log_prior=False,
        log_likelihood=False,
        posterior_predictive=False,
        share_graph=True,
        cache_dir=cache_dir,
        target_accept=InferenceConfig().refit_target_accept,
    )
    t0 = time.perf_counter()
    for i in range(int(num_simulations)):
        truth = draw_truth(chatbot, n_raters, n_days, rng, levels)
        sim = simulate_ratings(units, truth, 0, rng)
        sim = sim.assign_coords({t: (MODEL, units[t].values) for t in levels})
        sim.attrs.update(units.attrs)
        spec = units_spec(sim, model, shared=shared)[1]
        sampled.append(bool(spec.t50_scale_sampled))
        dt = fit(sim, model, spec=spec, seed=int(seed) * 1000 + i, **settings)
        divergences.append(int(dt["sample_stats"]["diverging"].sum()))
        log.info(
            "SBC study %d/%d: %d divergences, %.0f s since the start",
            i + 1,
            num_simulations,
            divergences[-1],
            time.perf_counter() - t0,
        )
        post = dt["posterior"].to_dataset()
        for v in params:
            t = np.atleast_1d(np.asarray(truth[v].isel(draw=0).values, float))
            p = np.asarray(post[v].transpose("chain", "draw", ...).values, float)
            rows[v].append(normalised_rank(p.reshape(-1, t.size), t, rng))
        _follow_plateau_rule(rows, np.asarray(spec.data.plateau_own, bool), chatbot)
    return rank_dataset(
        rows,
        sampled,
        divergences,
        num_simulations=int(num_simulations),
        seed=int(seed),
        draws=draws,
        chains=chains,
        model=model,
    )


__all__ = [
    "PARAMS",
    "PLATEAU_PRIORS",
    "SIGMA_MU_LOG_L1",
    "draw_truth",
    "run_conversation_sbc",
    "shared_levels",
]
