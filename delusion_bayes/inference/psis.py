"""Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR 25:72)
for every observation of a log-likelihood at once, and the PSIS-LOO of a fit built on it.

Why by hand: ArviZ 1.x (``arviz_stats``) smooths the importance ratios one observation at a time
in a Python loop (``make_ufunc``): a full sort of all draws, a generalized Pareto fit and its
quantiles per observation, 1.5 s of every 2 s of ``az.loo`` for a fit's 1,796 ratings. This
module follows ``arviz_stats.base.diagnostics`` (``_psislw``, ``_ps_tail``, ``_gpdfit``,
``_gpinv``) step by step, vectorised over observations: the same tail size (one ``r_eff`` for
all observations, as ArviZ), the tail found by partition instead of a full sort, the
empirical-Bayes fit of Zhang and Stephens (2009) with the same grid and prior, and the same
truncation and normalisation. It agrees with ``az.psislw`` to 1e-12
(``tests/inference/test_psis.py``); :func:`loo` hands its weights to ``az.loo``, which does
the rest (elpd, its standard error, p_loo, the k warnings) as always.

:func:`relative_eff` is ArviZ's ``r_eff`` (the posterior's mean ESS over its draws) without the
NaN that a posterior with a structurally missing value gives it (the marginal models' latent
stage of an unrated model-day): ArviZ's mean over all parameters is then NaN, and PSIS falls
back to the largest tail (20% of the draws instead of ``3 sqrt(S / r_eff)``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

#: observations per block of the vectorised Pareto fit (its grid is ``block x m x tail``
#: doubles: 200 x 70 x 190 = 21 MB at 4,000 draws)
BLOCK = 200
_PRIOR_BS, _PRIOR_K = 3, 10  # arviz_stats' _gpdfit: the grid's scale and kappa's prior weight


def tail_size(n_draws: int, r_eff: float) -> int:
    """ArviZ's number of draws in the smoothed right tail (``_get_ps_tails``)."""
    if n_draws * r_eff > 225:
        return int(np.floor(3 * (n_draws / r_eff) ** 0.5))
    return int(np.floor(n_draws / 5))


def psislw(log_ratios: np.ndarray, r_eff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Smoothed, normalised log importance weights and Pareto k of each row of ``log_ratios``
    (``(n_obs, n_draws)``; for LOO, minus the log-likelihood, draws in chain-major order), as
    ``az.psislw`` gives them per observation."""
    x = np.array(log_ratios, dtype=float, copy=True)
    if x.ndim != 2:
        raise ValueError(f"psislw: expected (n_obs, n_draws); got shape {x.shape}")
    n_obs, n_draws = x.shape
    m = tail_size(n_draws, r_eff)
    if m < 5:
        raise ValueError("n_draws_tail must be at least 5")
    x -= x.max(axis=1, keepdims=True)
    k = np.full(n_obs, np.nan)
    for lo in range(0, n_obs, BLOCK):
        rows = slice(lo, min(lo + BLOCK, n_obs))
        k[rows] = _smooth_tails(x[rows], m)
    x -= _logsumexp_rows(x)
    return x, k


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """``logsumexp`` of each row, as a column (scipy's handles infinities, signs and weights,
    and takes half a second over a fit's 7 million log weights; these are finite)"""
    top = x.max(axis=1, keepdims=True)
    return top + np.log(np.exp(x - top).sum(axis=1, keepdims=True))


def _smooth_tails(x: np.ndarray, m: int) -> np.ndarray:
    """Replace the ``m`` largest values of each row of ``x`` (in place) by the Pareto fit's
    quantiles, as ``_ps_tail(smooth_draws=True, tail="right", log_weights=True)``; returns k."""
    n = x.shape[1]
    part = np.argpartition(x, n - m - 1, axis=1)[:, n - m - 1 :]  # the cutoff and the tail
    order = np.take_along_axis(part, np.argsort(np.take_along_axis(x, part, 1), axis=1), 1)
    cutoff_idx, tail_idx = order[:, 0], order[:, 1:]
    tail = np.take_along_axis(x, tail_idx, 1)  # ascending
    cutoff = np.take_along_axis(x, cutoff_idx[:, None], 1)[:, 0]
    max_tail = tail[:, -1]
    if np.any(np.abs(max_tail - tail[:, 0]) < np.finfo(float).tiny):
        raise ValueError("All tail values are the same")
    e_cut = np.exp(cutoff)
    kappa, sigma = _gpdfit(np.exp(tail) - e_cut[:, None])
    p = np.arange(0.5, m) / m
    fit = np.isfinite(kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(
            (kappa == 0.0)[:, None],
            e_cut[:, None] - sigma[:, None] * np.log1p(-p),
            e_cut[:, None]
            + sigma[:, None] * np.expm1(-kappa[:, None] * np.log1p(-p)) / kappa[:, None],
        )
        q = np.where((sigma <= 0)[:, None], np.nan, q)
        smoothed = np.log(q)
    smoothed = np.where(smoothed > max_tail[:, None], max_tail[:, None], smoothed)
    rows = np.flatnonzero(fit)
    x[rows[:, None], tail_idx[rows]] = smoothed[rows]
    return kappa


def _gpdfit(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``arviz_stats``' ``_gpdfit`` (Zhang and Stephens' empirical-Bayes estimate with a
    N(0.5, .) prior on kappa) of each row of ``y`` (sorted ascending, exceedances over the
    cutoff); ``(nan, nan)`` for a row whose first quartile is its minimum, ``(inf, nan)`` for a
    NaN estimate."""
    n_obs, n = y.shape
    m_est = 30 + int(n**0.5)
    xstar = y[:, int((n / 4 + 0.5) - 1)]
    degenerate = xstar <= y[:, 0]
    grid = 1 - np.sqrt(m_est / (np.arange(1, m_est + 1, dtype=float) - 0.5))
    with np.errstate(divide="ignore", invalid="ignore"):
        b = grid[None, :] / (_PRIOR_BS * xstar[:, None]) + 1 / y[:, -1:]  # (n_obs, m_est)
        k_b = np.log1p(-b[:, :, None] * y[:, None, :]).mean(axis=2)
        len_scale = n * (np.log(-b / k_b) - k_b - 1)
        w = np.exp(len_scale - _logsumexp_rows(len_scale))
        w = np.where(w >= 10 * np.finfo(float).eps, w, 0.0)  # ArviZ drops negligible weights
        w /= w.sum(axis=1, keepdims=True)
        b_post = (b * w).sum(axis=1)
        kappa = np.log1p(-b_post[:, None] * y).mean(axis=1)
        sigma = -kappa / b_post
    kappa = (n * kappa + _PRIOR_K * 0.5) / (n + _PRIOR_K)
    nan_k = np.isnan(kappa)
    kappa = np.where(nan_k, np.inf, kappa)
    sigma = np.where(nan_k, np.nan, sigma)
    return np.where(degenerate, np.nan, kappa), np.where(degenerate, np.nan, sigma)


def relative_eff(posterior: Any) -> float:
    """ArviZ's ``r_eff`` for PSIS-LOO: the mean ESS (``method="mean"``) of the posterior's
    scalars over the number of draws, ignoring the scalars whose ESS is undefined (NaN draws);
    1 with one chain."""
    import arviz_stats  # noqa: F401  (registers the ``azstats`` accessor)

    if posterior.sizes["chain"] == 1:
        return 1.0
    n = posterior.sizes["chain"] * posterior.sizes["draw"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ess = posterior.azstats.ess(method="mean")
    values = np.hstack([np.ravel(ess[v].values) for v in ess.data_vars])
    values = values[np.isfinite(values)]
    return float(values.mean() / n) if values.size else 1.0


def loo(dt: Any, var_name: str, r_eff: float | None = None):
    """``az.loo(dt, var_name, pointwise=True)`` with the weights of :func:`psislw` and the
    ``r_eff`` of :func:`relative_eff`, as ArviZ's own result object (``ELPDDataLOO``).

    Why not ``az.loo(log_weights=...)`` itself: given the weights, ArviZ still sums them with the
    log-likelihood one observation at a time (``make_ufunc``), 1-2 s of a fit's 1,796 ratings;
    the sums below are the same arithmetic for all observations at once
    (``elpd_i = logsumexp(lw + ll)``, ``p_loo_i = logsumexp(ll) - log S - elpd_i``), and
    ArviZ's own functions do the summary and the k warnings. ``tests/inference/test_psis.py``
    holds it equal to ``az.loo``.
    """
    import xarray as xr
    from arviz_stats.loo.loo_helper import _warn_pareto_k, _warn_pointwise_loo
    from arviz_stats.utils import ELPDDataLOO

    ll = dt["log_likelihood"][var_name]
    sample = ("chain", "draw")
    obs = [d for d in ll.dims if d not in sample]
    n_s = ll.sizes["chain"] * ll.sizes["draw"]
    r_eff = relative_eff(dt["posterior"]) if r_eff is None else r_eff
    flat = ll.transpose(*obs, *sample)
    values = flat.values.reshape(-1, n_s)
    lw, k = psislw(-values, r_eff)
    elpd_v = _logsumexp_rows(lw + values)[:, 0]
    p_v = _logsumexp_rows(values)[:, 0] - np.log(n_s) - elpd_v
    shape = flat.shape[: len(obs)]
    obs_coords = {d: flat[d] for d in obs if d in flat.coords}

    def per_obs(v: np.ndarray, name: str) -> xr.DataArray:
        return xr.DataArray(v.reshape(shape), dims=obs, coords=obs_coords, name=name)

    elpd_i, p_loo_i, pareto_k = per_obs(elpd_v, var_name), per_obs(p_v, var_name), per_obs(k, "")
    elpd, se, p_loo, _ = elpd_i.azstats.loo_summary(p_loo_i)
    warn, good_k = _warn_pareto_k(pareto_k, n_s)
    _warn_pointwise_loo(elpd, elpd_i.values)
    log_weights = xr.DataArray(lw.reshape(flat.shape), dims=flat.dims, coords=flat.coords)
    return ELPDDataLOO(
        elpd=elpd,
        se=se,
        p=p_loo,
        n_samples=n_s,
        n_data_points=int(np.prod(shape)),
        scale="log",
        warning=warn,
        good_k=good_k,
        elpd_i=elpd_i,
        pareto_k=pareto_k,
        approx_posterior=False,
        log_weights=log_weights,
    )


__all__ = ["BLOCK", "loo", "psislw", "relative_eff", "tail_size"]
