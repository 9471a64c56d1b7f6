"""Rank-normalised split R-hat, bulk and tail ESS and the MCSE of the mean and the SD (Vehtari,
Gelman, Simpson, Carpenter and Bürkner 2021, Bayesian Analysis 16:667) of every scalar of a
posterior at once.

Why by hand: ArviZ 1.x (``arviz_stats``) computes them one scalar parameter at a time in a
Python loop (``make_ufunc``), with three rank transforms, three FFTs and three Geyer sequences
per parameter: 3.5-6 s per fit of the main job (~1,000 parameters), the largest share of the
work after sampling. This module follows ``arviz_stats.base.diagnostics`` step by step, but
ranks, transforms and FFTs all parameters in one call each; only Geyer's truncation, a short
sequential scan, stays a loop. It agrees with ``az.rhat`` and ``az.ess`` to 1e-12
(``tests/inference/test_rank_diagnostics.py``), and so reads ArviZ's own settings (the tail
quantiles from ``rcParams["stats.ci_prob"]``).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats
from scipy.fftpack import next_fast_len

#: fewest draws per chain, and chains, for which ArviZ computes the diagnostics (else NaN)
MIN_DRAWS, MIN_CHAINS_RHAT, MIN_CHAINS_ESS = 4, 2, 1


def rank_diagnostics(x: np.ndarray, tail_prob: float | None = None) -> dict[str, np.ndarray]:
    """``{"r_hat", "ess_bulk", "ess_tail"}`` of each row of ``x`` (``(n, chain, draw)``), as
    ``az.rhat(method="rank")``, ``az.ess(method="bulk")`` and ``az.ess(method="tail")`` give
    them per parameter. A row with a NaN draw is NaN in all three; ``tail_prob``: the tail
    quantiles ``(p, 1 - p)`` (default ArviZ's ``rcParams["stats.ci_prob"]``)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"rank_diagnostics: expected (n, chain, draw); got shape {x.shape}")
    n, n_chain, n_draw = x.shape
    out = {k: np.full(n, np.nan) for k in ("r_hat", "ess_bulk", "ess_tail")}
    ok = ~np.isnan(x).any(axis=(1, 2)) & (n_draw >= MIN_DRAWS)
    if not ok.any() or n_chain < MIN_CHAINS_ESS:
        return out
    xo = x[ok]
    xs = _split(xo)
    z = _z_scale(xs)
    out["ess_bulk"][ok] = _ess(z)
    if n_chain >= MIN_CHAINS_RHAT:
        folded = np.abs(xs - np.median(xs.reshape(len(xs), -1), axis=1)[:, None, None])
        out["r_hat"][ok] = np.maximum(_rhat(z), _rhat(_z_scale(folded)))
    if tail_prob is None:
        import arviz as az

        tail_prob = float(az.rcParams["stats.ci_prob"])
    lo, hi = sorted((tail_prob, 1.0 - tail_prob))
    q = np.quantile(xo.reshape(len(xo), -1), [lo, hi], axis=1)  # numpy's "linear", as ArviZ
    tails = [_ess(_split((xo <= q[j][:, None, None]).astype(float))) for j in (0, 1)]
    out["ess_tail"][ok] = np.minimum(*tails)
    return out


def mcse(x: np.ndarray) -> dict[str, np.ndarray]:
    """``{"mcse_mean", "mcse_sd"}`` of each row of ``x`` (``(n, chain, draw)``), as
    ``az.mcse(method="mean")`` and ``az.mcse(method="sd")`` give them per parameter (Vehtari et
    al. 2021, section 4: the standard deviation over the square root of the split-chain ESS of
    the draws; for the SD, the delta method on the split-chain ESS of the squared deviations).
    A row with a NaN draw, or fewer than 4 draws per chain, is NaN in both, as in ArviZ."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"mcse: expected (n, chain, draw); got shape {x.shape}")
    n, n_chain, n_draw = x.shape
    out = {k: np.full(n, np.nan) for k in ("mcse_mean", "mcse_sd")}
    ok = ~np.isnan(x).any(axis=(1, 2)) & (n_draw >= MIN_DRAWS)
    if not ok.any() or n_chain < MIN_CHAINS_ESS:
        return out
    xo = x[ok]
    flat = xo.reshape(len(xo), -1)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant row: sd 0, MCSE of sd NaN
        out["mcse_mean"][ok] = flat.std(axis=1, ddof=1) / np.sqrt(_ess(_split(xo)))
        sq = (xo - flat.mean(axis=1)[:, None, None]) ** 2
        var = sq.reshape(len(xo), -1).mean(axis=1)
        var_of_var = ((sq**2).reshape(len(xo), -1).mean(axis=1) - var**2) / _ess(_split(sq))
        out["mcse_sd"][ok] = np.sqrt(var_of_var / var / 4)
    return out


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last halves as two chains (the middle draw of an odd count
    dropped): ``(n, 2 chain, draw // 2)``."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., -half:]], axis=1)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Normal scores of the ranks over all of a row's draws (average ranks for ties, Blom's
    offset 3/8)."""
    n, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    rank = stats.rankdata(x.reshape(n, size), method="average", axis=1)
    # ndtri is what ``stats.norm.ppf`` evaluates, without its argument checks
    return special.ndtri((rank - 3 / 8) / (size - 2 * 3 / 8 + 1)).reshape(x.shape)


def _rhat(x: np.ndarray) -> np.ndarray:
    """The potential scale reduction of each row (its chains as given)."""
    n_draw = x.shape[-1]
    chain_mean = x.mean(axis=2)
    between = n_draw * np.var(chain_mean, axis=1, ddof=1)
    within = np.var(x, axis=2, ddof=1).mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):  # a constant row: NaN, as ArviZ
        return np.sqrt((between / within + n_draw - 1) / n_draw)


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of each row: autocovariances by FFT, Geyer's initial positive and
    monotone sequences (:func:`_tau`)."""
    n, n_chain, n_draw = x.shape
    size = n_chain * n_draw
    out = np.full(n, float(size))
    varying = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) >= np.finfo(float).resolution
    if not varying.any():
        return out
    xv = x[varying]
    m = next_fast_len(2 * n_draw)
    centred = xv - xv.mean(axis=2, keepdims=True)
    f = np.fft.rfft(centred, n=m, axis=2)
    f *= np.conjugate(f)
    acov = np.fft.irfft(f, n=m, axis=2)[..., :n_draw] / n_draw
    mean_var = np.mean(acov[:, :, 0], axis=1) * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    if n_chain > 1:
        var_plus = var_plus + np.var(xv.mean(axis=2), axis=1, ddof=1)
    rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]  # (n, lag)
    # the scan reads lags up to its first pair (t + 1, t + 2), odd t, summing to <= 0 (or to
    # the end): pass it no more columns than the latest such pair of any row needs
    pairs = rho[:, 2 : n_draw - 1 - (n_draw - 3) % 2].reshape(len(rho), -1, 2).sum(axis=2)
    if pairs.shape[1]:
        stop = np.where((pairs > 0).all(axis=1), n_draw, 2 * np.argmax(pairs <= 0, axis=1) + 4)
        cols = int(min(n_draw, stop.max()))
    else:  # chains too short for a pair beyond lag 1
        cols = n_draw
    tau = np.array([_tau(r, n_draw) for r in rho[:, :cols].tolist()])
    tau = np.maximum(tau, 1 / np.log10(size))
    out[varying] = size / tau
    return out


def _tau(rho: list[float], n_draw: int) -> float:
    """The integrated autocorrelation time of one row of lag autocorrelations (``rho[0]`` is 1
    by construction; at least as many lags as the scan reads): ``arviz_stats``' ``_ess`` scan,
    kept sequential because where it stops depends on every earlier pair."""
    if rho[1] != rho[1]:  # NaN: ArviZ's scan stops at once and its sum is NaN
        return float("nan")
    r = [0.0] * len(rho)
    even, odd = 1.0, rho[1]
    r[0], r[1] = even, odd
    t = 1
    while t < n_draw - 3 and (even + odd) > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        if (even + odd) >= 0:
            r[t + 1], r[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        r[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if (r[t + 1] + r[t + 2]) > (r[t - 1] + r[t]):
            r[t + 1] = (r[t - 1] + r[t]) / 2.0
            r[t + 2] = r[t + 1]
        t += 2
    # a NaN pair ends the first scan unstored: only rho[1] can carry one into the sum
    return -1.0 + 2.0 * float(np.sum(r[: max_t + 1])) + float(np.sum(r[max_t + 1 : max_t + 2]))


__all__ = ["rank_diagnostics"]
