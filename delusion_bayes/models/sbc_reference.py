"""SBC of the joint model against a prior and a simulator that do not share its graph.

:func:`delusion_bayes.models.sbc.run_sbc` draws its truths from the fitted PyMC graph, so a bug
in the graph's priors is also in the truths, and it forces every t50 centred. Here the truths
are drawn in NumPy from :data:`REFERENCE_PRIORS` (the joint model's documented priors, written
out once more: a change to the model's prior table makes the two disagree, which is the
point), the ratings by the generative process of :mod:`delusion_bayes.data.simulate`
(:func:`~delusion_bayes.models.sbc.simulate_ratings`: stage = trajectory + N(0, sigma_eps),
cumulative-logit ratings at :data:`~delusion_bayes.data.schema.STAGE_CUTPOINTS`), and each
study is fitted with the geometry a real run chooses from its data
(:func:`~delusion_bayes.models.spec.build_spec`), optionally through the fit-with-refits
procedure users get (:func:`delusion_bayes.inference.refits.fit_with_refits`).

Each drawn parameter, and each milestone of the drawn stage (censored at ``n_days + 1``), is
ranked among its posterior draws (randomised normalised ranks, uniform on (0, 1) for a correct
posterior; Talts et al. 2020, arXiv:1804.06788); :func:`rank_checks` tests them per parameter.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats
from scipy.special import expit

from ..data.schema import DAY, K_MAX, MODEL, RATER

#: the joint model's documented priors (docs/dev/models.md; ``models/blocks.py``), frozen here so
#: that the truths do not come from the table the fit reads
REFERENCE_PRIORS: dict[str, tuple[str, tuple[float, ...]]] = {
    "log_L1": ("Normal", (1.1, 0.2)),
    "mu_log_k": ("Normal", (-0.5, 1.0)),
    "sigma_log_k": ("Gamma", (3.0, 4.0)),  # alpha, beta (rate)
    "mu_t50": ("Normal", (0.6, 0.4)),
    "sigma_t50": ("Gamma", (3.0, 6.0)),
    "mu_log_eps": ("Normal", (-1.6, 0.75)),
    "sigma_log_eps": ("Gamma", (3.0, 4.0)),
    "severity": ("ZeroSumNormal", (0.5,)),
    "log_disc": ("Normal", (1.2, 0.5)),
}
#: what is ranked: the model's parameters, then the milestones of the drawn stage
PARAMS = ("L", "k", "t50", "sigma_eps", "severity", "discrimination", "mu_log_k",
          "sigma_log_k", "mu_t50", "sigma_t50", "mu_log_eps", "sigma_log_eps")  # fmt: skip
MILESTONES = ("first_clinical", "first_stable", "days_stage4")


def draw_reference(entry: tuple[str, tuple[float, ...]], rng, size=None) -> np.ndarray:
    dist, a = entry
    if dist == "Normal":
        return rng.normal(a[0], a[1], size)
    if dist == "HalfNormal":
        return np.abs(rng.normal(0.0, a[0], size))
    if dist == "Gamma":
        return rng.gamma(a[0], 1.0 / a[1], size)
    if dist == "ZeroSumNormal":
        x = rng.normal(0.0, a[0], size)
        return x - x.mean()
    raise ValueError(f"no reference draw for {dist!r}")


def draw_truth(n_models: int, n_raters: int, n_days: int, rng, priors=None) -> xr.Dataset:
    """One draw of every joint-model parameter from ``priors`` (default
    :data:`REFERENCE_PRIORS`), as a Dataset with a ``draw`` dim of size 1."""
    p = REFERENCE_PRIORS if priors is None else priors
    names = ("mu_log_k", "sigma_log_k", "mu_t50", "sigma_t50", "mu_log_eps", "sigma_log_eps")
    hyper = {n: float(draw_reference(p[n], rng)) for n in names}
    a = rng.normal(hyper["mu_log_k"], hyper["sigma_log_k"], n_models)
    per_model = {
        "L": 1.0 + np.exp(draw_reference(p["log_L1"], rng, n_models)),
        "k": K_MAX * expit(a - np.log(K_MAX)),
        "t50": rng.normal(n_days * hyper["mu_t50"], n_days * hyper["sigma_t50"], n_models),
        "sigma_eps": np.exp(rng.normal(hyper["mu_log_eps"], hyper["sigma_log_eps"], n_models)),
    }
    per_rater = {
        "severity": draw_reference(p["severity"], rng, n_raters),
        "discrimination": np.exp(draw_reference(p["log_disc"], rng, n_raters)),
    }
    data = {n: (("draw",), [v]) for n, v in hyper.items()}
    data |= {n: (("draw", MODEL), v[None]) for n, v in per_model.items()}
    data |= {n: (("draw", RATER), v[None]) for n, v in per_rater.items()}
    return xr.Dataset(data)


def normalised_rank(post: np.ndarray, truth: np.ndarray, rng) -> np.ndarray:
    """Randomised normalised rank of ``truth`` (elements) among ``post`` (draws, elements)."""
    less = (post < truth).sum(axis=0)
    ties = (post == truth).sum(axis=0)
    r = less + np.floor(rng.random(less.shape) * (ties + 1))
    return (r + 0.5) / (post.shape[0] + 1)


def _fit_one(sim: xr.Dataset, spec, settings: dict, refits: Any):
    """The fit of one simulated study: ``models.fit``, or through ``fit_with_refits``."""
    from .fit import fit

    def make(**kw):
        return fit(sim, "joint", spec=spec, **(settings | kw))

    if refits is None:
        return make()
    from ..inference.refits import fit_with_refits

    return fit_with_refits(make, refits)


def run_reference_sbc(
    ds: xr.Dataset,
    *,
    num_simulations: int = 30,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int = 0,
    refits: Any = None,
    cache_dir: Any = None,
) -> xr.Dataset:
    """Reference-prior SBC of the joint model on the design (days, raters, models,
    missingness) of ``ds``. ``refits``: an ``inference`` config; each study is then fitted by
    :func:`~delusion_bayes.inference.refits.fit_with_refits` (``attrs["attempts"]``: JSON, the
    attempts per study).

    Returns a Dataset over ``sim`` (and ``model`` / ``rater``): the randomised normalised rank
    of each parameter of :data:`PARAMS` and milestone of :data:`MILESTONES`, with the
    per-study coordinate ``t50_scale_sampled`` (False: the fit fixed ``sigma_t50``, a
    different model from the one drawn).
    """
    from ..baselines import milestones
    from .derived import posterior_milestones, stage_category
    from .sbc import SBC_SAMPLER, simulate_ratings
    from .spec import build_spec

    rng = np.random.default_rng([int(seed), 55])
    n_models, n_raters, n_days = ds.sizes[MODEL], ds.sizes[RATER], ds.sizes[DAY]
    # the SBC sampler's settings unless given (models.sbc.SBC_SAMPLER: one default each)
    draws = SBC_SAMPLER.draws if draws is None else int(draws)
    tune = SBC_SAMPLER.tune if tune is None else int(tune)
    chains = SBC_SAMPLER.chains if chains is None else int(chains)
    settings = dict(draws=draws, tune=tune, chains=chains, log_likelihood=False, log_prior=False,
                    posterior_predictive=False, share_graph=True, progressbar=False,
                    cache_dir=cache_dir)  # fmt: skip
    rows: dict[str, list[np.ndarray]] = {v: [] for v in PARAMS + MILESTONES}
    sampled, attempts = [], []
    for i in range(int(num_simulations)):
        truth = draw_truth(n_models, n_raters, n_days, rng)
        sim, stage = simulate_ratings(ds, truth, 0, rng, return_stage=True)
        spec = build_spec(sim, "joint")
        sampled.append(bool(spec.t50_scale_sampled))
        dt = _fit_one(sim, spec, settings | {"seed": int(seed) * 1000 + i}, refits)
        attempts.append(json.loads(dt.attrs.get("gate_attempts", "[]") or "[]"))
        post = dt["posterior"].to_dataset()
        for v in PARAMS:
            t = np.atleast_1d(np.asarray(truth[v].isel(draw=0).values, float))
            p = np.asarray(post[v].values, float).reshape(-1, t.size)
            rows[v].append(normalised_rank(p, t, rng))
        true_ms = milestones(stage_category(stage), censor_day=n_days + 1, clinical_at=3,
                             stable_at=4)  # fmt: skip
        post_ms = posterior_milestones(dt)
        for v in MILESTONES:
            t = np.asarray(true_ms[v].transpose(MODEL).values, float)
            p = np.asarray(post_ms[v].transpose("chain", "draw", MODEL).values, float)
            rows[v].append(normalised_rank(p.reshape(-1, t.size), t, rng))
    dims = {v: (MODEL if len(rows[v][0]) == n_models else RATER) for v in rows}
    data = {
        v: (("sim", dims[v]), np.stack(rows[v]))
        if len(rows[v][0]) > 1
        else (("sim",), np.stack(rows[v])[:, 0])
        for v in rows
    }
    out = xr.Dataset(data, coords={"t50_scale_sampled": ("sim", np.asarray(sampled, bool))})
    out.attrs.update(num_simulations=int(num_simulations), seed=int(seed), draws=draws,
                     chains=chains, attempts=json.dumps(attempts))  # fmt: skip
    return out


def rank_dataset(rows: dict, sampled, divergences, **attrs) -> xr.Dataset:
    """The ranks Dataset of a reference SBC loop: per variable ``(sim, <variable>_element)``,
    with ``t50_scale_sampled`` and ``divergences`` per study and ``attrs`` (said SIMULATED)."""
    data = {v: (("sim", f"{v}_element"), np.stack(r)) for v, r in rows.items() if r}
    coords = {
        "t50_scale_sampled": ("sim", np.asarray(sampled, bool)),
        "divergences": ("sim", np.asarray(divergences)),
    }
    out = xr.Dataset(data, coords=coords)
    out.attrs.update(**attrs, simulated="SIMULATED: reference-prior SBC")
    return out


def rank_checks(ranks: xr.Dataset, variables: Sequence[str] | None = None) -> pd.DataFrame:
    """Per variable, over the studies whose fit sampled ``sigma_t50`` (the model drawn): the
    per-study mean of its normalised ranks (one number per study, so the studies are the
    independent units) tested against 1/2 (``p_location``: a biased posterior), and the
    per-study mean of ``|u - 1/2|`` against 1/4 (``p_spread``: too narrow, ranks at the ends,
    or too wide); two-sided one-sample t-tests. Returns one row per variable with ``n``,
    ``mean_u``, ``mean_abs``, ``p_location``, ``p_spread`` and ``p_min`` (their minimum)."""
    keep = np.asarray(ranks["t50_scale_sampled"].values, bool)
    rows = []
    for v in variables or list(ranks.data_vars):
        u = np.asarray(ranks[v].values, float)[keep].reshape(int(keep.sum()), -1)
        # NaN: an element a study's fit does not rank (sbc_conversations' plateau rule)
        u = u[~np.isnan(u).all(axis=1)]
        loc, spread = np.nanmean(u, axis=1), np.nanmean(np.abs(u - 0.5), axis=1)
        p_loc = float(stats.ttest_1samp(loc, 0.5).pvalue)
        p_spread = float(stats.ttest_1samp(spread, 0.25).pvalue)
        rows.append({"variable": v, "n": loc.size, "mean_u": float(loc.mean()),
                     "mean_abs": float(spread.mean()), "p_location": p_loc,
                     "p_spread": p_spread, "p_min": min(p_loc, p_spread)})  # fmt: skip
    return pd.DataFrame(rows)
