"""Simulation-based calibration (SBC) of the trajectory models with ``simuk``.

Prior SBC (Talts, Betancourt, Simpson, Vehtari & Gelman 2020, arXiv:1804.06788): fit the model
to studies drawn from its prior predictive and rank each drawn value among the posterior draws;
a correct sampler gives uniform ranks on ``0..n_draws``. The loop is ``simuk.SBC``; added here:
ranks of the derived ``L, k, t50`` (simuk ranks free variables only), a check that every
simulation ran (simuk logs a failure and stops), a uniformity test and rank histograms.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats
from scipy.special import expit

from ..data.schema import DAY, MODEL, RATER
from ..inference.config import SamplerConfig
from .latent import STAGE_CUTS, ordinal_draw
from .registry import model_def

#: the sampler settings of an SBC fit unless ``sampler`` says otherwise: 200 draws per
#: simulation make ranks 0..100 (every second draw), enough to test uniformity
SBC_SAMPLER = SamplerConfig(draws=200, tune=200, chains=2)


def sbc_draws(draws: int | None, tune: int | None, chains: int | None) -> tuple[int, int, int]:
    """``(draws, tune, chains)``: each given value, else :data:`SBC_SAMPLER`'s."""
    pick = (SBC_SAMPLER.draws, SBC_SAMPLER.tune, SBC_SAMPLER.chains)
    given = (draws, tune, chains)
    return tuple(int(d if v is None else v) for v, d in zip(given, pick, strict=True))


#: what is ranked by default: derived onset parameters, then the hyper-parameters
DEFAULT_VARS = ("L", "k", "t50", "mu_log_k", "mu_t50", "sigma_t50", "sigma_y")
#: the same for the models with a latent stage (joint)
MARGINAL_VARS = (
    "L",
    "k",
    "t50",
    "sigma_eps",
    "severity",
    "discrimination",
    "mu_log_k",
    "mu_t50",
    "sigma_t50",
    "mu_log_eps",
)


def run_sbc(
    ds: xr.Dataset | None = None,
    model: str = "onset",
    *,
    num_simulations: int = 20,
    sampler: SamplerConfig | str | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int = 0,
    target_accept: float | None = None,
    var_names: Sequence[str] = DEFAULT_VARS,
    cache_dir: str | Path | None = None,
    progressbar: bool = True,
) -> xr.DataTree:
    """Prior SBC of ``model`` (``onset`` or ``joint``) on the design (coords, missingness) of
    ``ds`` (default ``simulate_study("small", seed=0)``); ``seed`` fixes the prior draws and
    every fit's sampler seed; ``var_names`` may name deterministics such as ``L``, ``k``, ``t50``.

    Returns a DataTree with group ``prior_sbc`` of integer ranks (``chain`` of size 1, ``draw`` =
    simulation) and attrs ``n_draws`` (the maximum rank), ``num_simulations``, ``model``,
    ``sampler``, ``seed``. ``sampler``: the NUTS settings (default :data:`SBC_SAMPLER`; a name
    picks the sampler), ``draws``, ``tune``, ``chains``, ``target_accept`` replace them
    (``target_accept=None``: the model's own). Raises RuntimeError when a simulation failed,
    ValueError for a name in ``var_names`` that is not a variable of the model.
    """
    from ..inference.cache import configure_pytensor_cache

    configure_pytensor_cache(cache_dir)
    from ..data import simulate_study

    if ds is None:
        ds = simulate_study(preset="small", seed=0)
    marginal = model_def(model).marginal
    if marginal and tuple(var_names) == DEFAULT_VARS:
        var_names = MARGINAL_VARS
    name = sampler if isinstance(sampler, str) else None
    base = SBC_SAMPLER if sampler is None or name is not None else sampler
    settings = dict(draws=draws, tune=tune, chains=chains, target_accept=target_accept)
    scfg = base.updated(name=name, **settings)
    run = _SbcRun(
        num_simulations=int(num_simulations),
        draws=scfg.draws,
        tune=scfg.tune,
        chains=scfg.chains,
        seed=int(seed),
        sampler=scfg.name,
        target_accept=scfg.target_accept or model_def(model).target_accept,
        var_names=list(var_names),
        cache_dir=cache_dir,
        progressbar=progressbar,
    )
    if marginal:
        return _sbc_marginal(ds, model, run)
    return _sbc_simuk(ds, model, run)


@dataclass(frozen=True)
class _SbcRun:
    """The settings of one SBC run (:func:`run_sbc`'s arguments)."""

    num_simulations: int
    draws: int
    tune: int
    chains: int
    seed: int
    sampler: str
    target_accept: float
    var_names: list[str]
    cache_dir: str | Path | None
    progressbar: bool


def _sbc_simuk(ds: xr.Dataset, model: str, run: _SbcRun) -> xr.DataTree:
    """Prior SBC by simuk, for a model whose likelihood simuk can simulate (``onset``)."""
    import simuk

    pm_model = _prior_model(ds, model, run.var_names)
    sample_kwargs: dict[str, Any] = dict(
        draws=run.draws,
        tune=run.tune,
        chains=run.chains,
        nuts_sampler=run.sampler,
        target_accept=float(run.target_accept),
        progressbar=False,
        compute_convergence_checks=False,
        **({"cores": 1} if run.sampler == "pymc" else {}),
    )
    sbc = simuk.SBC(
        pm_model,
        num_simulations=run.num_simulations,
        sample_kwargs=sample_kwargs,
        seed=run.seed,
        progress_bar=bool(run.progressbar),
    )
    # simuk's draws also hold the deterministics, so derived parameters can be ranked too
    sbc.var_names = list(run.var_names)
    sbc.run_simulations()
    done = int(sbc._simulations_complete)
    if done < run.num_simulations:
        raise RuntimeError(
            f"SBC of {model!r} stopped after {done} of {run.num_simulations} simulations "
            "(the traceback above is simuk's); nothing is reported from a partial run"
        )
    dt = sbc.simulations
    dt.attrs.update(
        n_draws=run.draws * run.chains,
        num_simulations=run.num_simulations,
        model=model,
        sampler=run.sampler,
        seed=run.seed,
    )
    return dt


def _prior_model(ds: xr.Dataset, model: str, var_names: Sequence[str]):
    """The ``pm.Model`` of ``model`` on ``ds`` with every t50 centred (no wall Potential, which
    prior draws would ignore; the same model); ``var_names`` checked against its variables."""
    from .build import build_model
    from .spec import build_spec

    spec = build_spec(ds, model)
    spec.data.t50_centred = np.ones(len(spec.coords["model"]), bool)
    pm_model = build_model(spec)
    # the wall coordinates' start values (blocks._t50) are for models beyond a wall, which this
    # graph has none of; simuk's pm.observe refuses a model with start values
    for rv in pm_model.rvs_to_initial_values:
        pm_model.rvs_to_initial_values[rv] = None
    unknown = [v for v in var_names if v not in pm_model.named_vars]
    if unknown:
        raise ValueError(
            f"var_names {unknown} are not variables of model {model!r}; "
            f"free variables: {[v.name for v in pm_model.free_RVs]}, "
            f"deterministics: {[v.name for v in pm_model.deterministics]}"
        )
    return pm_model


def simulate_ratings(
    ds: xr.Dataset, prior: xr.Dataset, i: int, rng, return_stage: bool = False
) -> xr.Dataset | tuple[xr.Dataset, xr.DataArray]:
    """The study ``ds`` with its recognition ratings replaced by draws from the joint model's
    generative process at prior draw ``i`` (missing ratings stay missing); ``return_stage``:
    also the drawn latent stage ``(model, day)``."""

    def get(name):
        return np.asarray(prior[name].isel(draw=i).values, float)

    rec = ds["recognition"].transpose(RATER, MODEL, DAY)
    days = np.asarray(rec[DAY].values, float)
    L, k, t50, sig = get("L"), get("k"), get("t50"), get("sigma_eps")
    traj = 1.0 + (L - 1.0)[:, None] * expit(k[:, None] * (days[None, :] - t50[:, None]))
    stage = traj + sig[:, None] * rng.standard_normal(traj.shape)
    sev, disc = get("severity"), get("discrimination")
    eta = stage[None] + sev[:, None, None]
    y = 1.0 + ordinal_draw(eta, np.broadcast_to(disc[:, None, None], eta.shape), STAGE_CUTS, rng)
    y = np.where(np.isnan(rec.values), np.nan, y)
    out = ds.copy()
    out["recognition"] = rec.copy(data=y)
    if return_stage:
        return out, xr.DataArray(stage, dims=(MODEL, DAY), coords={DAY: rec[DAY].values})
    return out


def _sbc_marginal(ds: xr.Dataset, model: str, run: _SbcRun) -> xr.DataTree:
    """Prior SBC of the ``joint`` model, whose likelihood (a ``pm.Potential``) simuk cannot
    simulate through: prior draws, ratings from :func:`simulate_ratings`, a fit, and ranks
    among every second posterior draw per chain (ranks of autocorrelated draws are not uniform
    even for a correct sampler, Talts et al. 2020, section 5).

    The ranks carry a per-simulation coordinate ``t50_scale_sampled``: False where fewer than
    two simulated models turned, so that the fit fixes ``sigma_t50``
    (:attr:`~delusion_bayes.models.spec.ModelSpec.t50_scale_sampled`) and is not the model the
    study was drawn from. Ranks are uniform given the data for an exact posterior, so the
    simulations where it is sampled are a valid SBC on their own
    (:func:`sbc_uniformity`'s ``only``)."""
    import pymc as pm
    from tqdm.auto import tqdm

    from .fit import fit
    from .spec import build_spec

    if model != "joint":
        raise ValueError(
            f"SBC of {model!r} is not implemented (its levels/latent scale need their own "
            "simulator); expected 'onset' or 'joint'"
        )
    var_names, seed, n_sim = run.var_names, run.seed, run.num_simulations
    pm_model = _prior_model(ds, model, var_names)
    need = sorted(set(var_names) | {"L", "k", "t50", "sigma_eps", "severity", "discrimination"})
    with warnings.catch_warnings():
        # the Potentials are the likelihood, which the prior draws must ignore, and the wall
        # coordinates' densities, which no model of this all-centred graph uses
        warnings.filterwarnings("ignore", "The effect of Potentials", UserWarning)
        prior = pm.sample_prior_predictive(
            draws=n_sim, model=pm_model, var_names=need, random_seed=seed
        )["prior"]
    prior = prior.to_dataset().isel(chain=0)
    rng = np.random.default_rng([seed, 11])
    ranks: dict[str, list[np.ndarray]] = {v: [] for v in var_names}
    scale_sampled = []
    for i in tqdm(range(n_sim), desc=f"SBC {model}", disable=not run.progressbar):
        sim = simulate_ratings(ds, prior, i, rng)
        spec = build_spec(sim, model)
        scale_sampled.append(spec.t50_scale_sampled)
        dt = fit(
            sim,
            model,
            spec=spec,
            draws=run.draws,
            tune=run.tune,
            chains=run.chains,
            sampler=run.sampler,
            seed=seed + i,
            target_accept=run.target_accept,
            log_likelihood=False,
            log_prior=False,
            posterior_predictive=False,
            share_graph=True,  # every simulation has the study's shapes: one compile
            cache_dir=run.cache_dir,
        )
        post = dt["posterior"].to_dataset().isel(draw=slice(None, None, 2))
        for v in var_names:
            drawn = np.asarray(prior[v].isel(draw=i).values, float)
            p = np.asarray(post[v].values, float).reshape(-1, *drawn.shape)
            ranks[v].append((p < drawn).sum(axis=0))
    data = {  # (chain=1, draw=simulation, ...)
        v: (("chain", "draw", *[d for d in prior[v].dims if d != "draw"]), np.stack(ranks[v])[None])
        for v in var_names
    }
    coords = {"t50_scale_sampled": ("draw", np.asarray(scale_sampled, bool))}
    out = xr.DataTree.from_dict({"prior_sbc": xr.Dataset(data, coords=coords)})
    out.attrs.update(
        n_draws=run.chains * len(range(0, run.draws, 2)),
        num_simulations=n_sim,
        model=model,
        sampler=run.sampler,
        seed=seed,
    )
    return out


def _ranks(dt: xr.DataTree) -> xr.Dataset:
    return dt["prior_sbc"].to_dataset() if "prior_sbc" in dt.children else dt.to_dataset()


def _rank_edges(n_ranks: int, n_draws: int, n_bins: int | None) -> np.ndarray:
    """Equal bins over ranks ``0..n_draws``: ``n_bins`` or about 5 ranks per bin (2-20 bins)."""
    bins = n_bins or int(np.clip(n_ranks // 5, 2, 20))
    return np.linspace(0, n_draws + 1, bins + 1)


def sbc_uniformity(
    dt: xr.DataTree, n_bins: int | None = None, only: str | None = None
) -> pd.DataFrame:
    """Chi-square test (``scipy.stats.chisquare``) of uniform ranks in ``n_bins`` equal bins
    (default about 5 simulations per bin, 2-20 bins), per scalar parameter and per variable.
    ``only``: a boolean per-simulation coordinate of the ranks (``t50_scale_sampled``); just
    the simulations where it is True (valid: ranks are uniform given the data).

    Returns a ``pandas.DataFrame``: one row per scalar parameter (``variable``, ``index``;
    ``index = "all"`` pools a vector variable's elements, which are not independent tests) with
    ``n``, ``chi2``, ``p_value``, ``mean_rank`` (uniform: ``n_draws / 2``).
    """
    ranks = _ranks(dt)
    if only is not None:
        if only not in ranks.coords:
            raise ValueError(f"only={only!r}: not a coordinate of the ranks {list(ranks.coords)}")
        ranks = ranks.isel(draw=np.flatnonzero(np.asarray(ranks[only].values, bool)))
    n_draws = int(dt.attrs["n_draws"])
    rows = []
    for name, da in ranks.data_vars.items():
        arr = np.asarray(da.values, float).reshape(da.sizes["chain"] * da.sizes["draw"], -1)
        n_sims = arr.shape[0]
        edges = _rank_edges(n_sims, n_draws, n_bins)
        vector = arr.shape[1] > 1
        tests = [(str(j) if vector else "", arr[:, j]) for j in range(arr.shape[1])]
        for index, x in tests + ([("all", arr.ravel())] if vector else []):
            res = stats.chisquare(np.histogram(x, bins=edges)[0])
            rows.append(
                {
                    "variable": name,
                    "index": index,
                    "n": x.size,
                    "chi2": float(res.statistic),
                    "p_value": float(res.pvalue),
                    "mean_rank": float(x.mean()),
                }
            )
    out = pd.DataFrame(rows)
    out.attrs["n_draws"] = n_draws
    return out


def plot_sbc(dt: xr.DataTree, path: str | Path | None = None, n_bins: int | None = None):
    """Rank histograms (one panel per variable, elements pooled) with the 99% binomial band of
    uniform ranks, as in Talts et al. (2020), Fig. 1; the figure, saved to ``path`` if given."""
    import matplotlib.pyplot as plt

    ranks = _ranks(dt)
    n_draws = int(dt.attrs["n_draws"])
    names = list(ranks.data_vars)
    ncol = min(4, len(names))
    nrow = int(np.ceil(len(names) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.4 * nrow), squeeze=False)
    n_sims = ranks.sizes["draw"]
    for ax, name in zip(axes.ravel(), names, strict=False):
        x = np.asarray(ranks[name].values, float).ravel()
        edges = _rank_edges(x.size, n_draws, n_bins)
        bins = edges.size - 1
        lo, hi = stats.binom.ppf([0.005, 0.995], x.size, 1.0 / bins)
        ax.axhspan(lo, hi, color="0.85", zorder=0, label="99% band (uniform)")
        ax.axhline(x.size / bins, color="0.5", lw=0.8)
        ax.hist(x, bins=edges, color="C0", edgecolor="white")
        ax.set_title(f"{name} ({ranks[name].size // max(n_sims, 1)} x {n_sims})", fontsize=9)
        ax.set(xlim=(0, n_draws + 1), xlabel="rank")
    for ax in axes.ravel()[len(names) :]:
        ax.set_visible(False)
    model, n_studies = dt.attrs.get("model", ""), dt.attrs.get("num_simulations", "?")
    fig.suptitle(
        f"SBC of the {model} model: ranks among {n_draws} posterior draws ({n_studies} "
        "simulated studies)",
        fontsize=10,
    )
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


__all__ = ["DEFAULT_VARS", "plot_sbc", "run_sbc", "sbc_uniformity"]
