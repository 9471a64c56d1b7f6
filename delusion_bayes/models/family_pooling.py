"""Partial pooling of a family of estimates: the Bayesian answer to multiplicity (issue 51, item 2).

The normal-normal hierarchical model of Gelman, Hill & Yajima (2012) for ``m`` estimates ``y_i``
with standard errors ``s_i`` (taken as known)::

    y_i     ~ Normal(theta_i, s_i)
    theta_i ~ Normal(mu, tau)            (theta_i = mu + tau * z_i, z_i ~ Normal(0, 1): non-centred)
    mu      ~ flat | Normal(mu_loc, mu_sd) | fixed      tau ~ half-Cauchy(0, scale) | half-normal
                                                            | uniform (improper, BDA3 5.4)

The comparisons are treated as exchangeable effects with a learned spread ``tau``: when the family
looks like noise around a common value, ``tau`` is small and every ``theta_i`` is pulled to it,
so the posterior rarely claims a sign; when the effects are real and spread, ``tau`` is large and
the estimates stand. The per-comparison **P(sign error)** = ``min(P(theta_i > 0), P(theta_i <
0))`` is the posterior probability that the sign one would declare is wrong; declaring a sign
where it is below ``alpha / 2`` is the same as the equal-tailed ``1 - alpha`` interval excluding
0. It controls the *Bayesian* type-S error of the declarations, not a frequentist FWER or FDR
(their simulated rates: ``experiments/bench/multiplicity_calibration.py``).

**mu learned by default** (flat prior), as Gelman, Hill & Yajima (2012) and BDA3 5.4 do: the
family's effects share a centre that need not be 0 (a replay run whose every model drifts the
same way; a behaviour on which every chatbot scores high), and shrinking toward 0 instead would
understate a shift common to the family. ``mu=0.0`` fixes it (effects exchangeable around "no
effect"), which is more conservative under a global null. **tau ~ half-Cauchy(0, median s_i)**
by default (Gelman 2006: weakly informative, a family spread the size of a typical standard
error; with many comparisons the data dominate). Estimates on different scales (contrasts of
different quantities) must be put on one scale first, e.g. z-scores ``(y_i / s_i, 1)``.

**Computation is exact, not MCMC**: the model is one-dimensional in ``tau`` once ``mu`` and
``theta`` are integrated out in closed form (BDA3 section 5.4, eqs. 5.17-5.21, extended to a
normal prior on ``mu``), so ``p(tau | y)`` is evaluated on a quadrature grid (midpoints in ``u``,
``tau = c u / (1 - u)``, ``u`` in (0, 1), which covers the whole half-line) and ``theta_i | tau,
y`` is normal: the posterior of ``theta_i`` is a normal mixture over the grid. Quantiles invert
the mixture CDF; joint draws (for ranks) sample ``tau`` from the grid, then ``mu``, then
``theta``. ``method="pymc"`` fits the same model with NUTS (nutpie if installed) as a check
(``tests/models/test_family_pooling.py``).

References
----------
1. Gelman, A., Hill, J. & Yajima, M. (2012). Why we (usually) don't have to worry about multiple
   comparisons. J. Res. Educ. Effectiveness 5, 189-211.
2. Gelman, A. et al. (2013). Bayesian Data Analysis, 3rd ed., section 5.4-5.5 (eight schools).
3. Gelman, A. (2006). Prior distributions for variance parameters in hierarchical models.
   Bayesian Analysis 1, 515-534.
4. Rubin, D. B. (1981). Estimation in parallel randomized experiments. J. Educ. Stat. 6, 377-401.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from ..inference.config import DEFAULT_TARGET_ACCEPT, SamplerConfig

#: prior families for tau
TAU_PRIORS = ("half_cauchy", "half_normal", "uniform")
#: the per-comparison columns of :func:`pool_family`, in order
POOL_COLUMNS = (
    "item estimate std_error pooled_mean pooled_median pooled_lower pooled_upper p_positive "
    "p_sign_error tau_median tau_lower tau_upper mu_mean"
).split()


def _ncdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * special.erfc(-x / np.sqrt(2.0))


@dataclass
class FamilyPosterior:
    """``p(tau | y)`` on a grid and, per grid point, the normal ``mu | tau, y`` and
    ``theta_i | tau, y`` (the mixture components). Made by :func:`family_posterior`."""

    names: list[str]
    y: np.ndarray  # (m,)
    se: np.ndarray  # (m,)
    tau: np.ndarray  # (k,) grid points with non-negligible weight
    weight: np.ndarray  # (k,) posterior mass of each grid cell, adds to 1
    mu_mean: np.ndarray  # (k,)
    mu_var: np.ndarray  # (k,) 0 when mu is fixed
    theta_mean: np.ndarray  # (k, m)
    theta_sd: np.ndarray  # (k, m)

    def p_positive(self) -> np.ndarray:
        """P(theta_i > 0 | y) per item (exact mixture)."""
        z = self.theta_mean / np.maximum(self.theta_sd, 1e-300)
        return self.weight @ _ncdf(z)

    def p_sign_error(self) -> np.ndarray:
        """``min(P(theta_i > 0), P(theta_i < 0))`` per item."""
        pp = self.p_positive()
        return np.minimum(pp, 1 - pp)

    def theta_quantiles(self, q: Sequence[float], n_x: int = 512) -> np.ndarray:
        """Quantiles ``q`` of each theta_i (array (len(q), m)): the mixture CDF on ``n_x`` points
        from the lowest component mean - 7 sd to the highest + 7 sd, inverted by interpolation."""
        lo = (self.theta_mean - 7 * self.theta_sd).min(axis=0)
        hi = (self.theta_mean + 7 * self.theta_sd).max(axis=0)
        out = np.empty((len(q), self.y.size))
        for i in range(self.y.size):
            x = np.linspace(lo[i], hi[i], n_x)
            sd = np.maximum(self.theta_sd[:, i, None], 1e-12 * (hi[i] - lo[i]))
            cdf = self.weight @ _ncdf((x[None, :] - self.theta_mean[:, i, None]) / sd)
            out[:, i] = np.interp(q, cdf, x)
        return out

    def tau_quantiles(self, q: Sequence[float]) -> np.ndarray:
        """Quantiles of tau (piecewise-linear CDF over the grid)."""
        cdf = np.cumsum(self.weight)
        return np.interp(q, cdf - self.weight / 2, self.tau)

    def sample(self, draws: int, seed: Any = None) -> np.ndarray:
        """Joint posterior draws of theta, array (draw, item): tau from the grid, then mu, then
        each theta_i given both (keeps the dependence that ranks need)."""
        rng = np.random.default_rng(seed)
        k = rng.choice(self.tau.size, size=draws, p=self.weight)
        mu = self.mu_mean[k] + np.sqrt(self.mu_var[k]) * rng.standard_normal(draws)
        tau2 = self.tau[k, None] ** 2
        s2 = self.se[None, :] ** 2
        shrink = s2 / (s2 + tau2)  # B_i: weight on mu
        mean = (1 - shrink) * self.y[None, :] + shrink * mu[:, None]
        sd = np.sqrt(s2 * (1 - shrink))
        return mean + sd * rng.standard_normal(mean.shape)

    def summary(self, ci: float = 0.95) -> pd.DataFrame:
        """The :data:`POOL_COLUMNS` table (see :func:`pool_family`)."""
        q = [(1 - ci) / 2, 0.5, (1 + ci) / 2]
        lo, med, hi = self.theta_quantiles(q)
        tq = self.tau_quantiles(q)
        pp = self.p_positive()
        return pd.DataFrame(
            {
                "item": self.names,
                "estimate": self.y,
                "std_error": self.se,
                "pooled_mean": self.weight @ self.theta_mean,
                "pooled_median": med,
                "pooled_lower": lo,
                "pooled_upper": hi,
                "p_positive": pp,
                "p_sign_error": np.minimum(pp, 1 - pp),
                "tau_median": tq[1],
                "tau_lower": tq[0],
                "tau_upper": tq[2],
                "mu_mean": self.weight @ self.mu_mean,
            }
        )


def _log_tau_prior(tau: np.ndarray, prior: str, scale: float) -> np.ndarray:
    if prior == "half_cauchy":
        return -np.log1p((tau / scale) ** 2)
    if prior == "half_normal":
        return -0.5 * (tau / scale) ** 2
    return np.zeros_like(tau)


def _check_inputs(estimates: Any, std_errors: Any, names: Sequence[str] | None):
    y = np.asarray(estimates, dtype=float).ravel()
    se = np.asarray(std_errors, dtype=float).ravel()
    if y.size != se.size or y.size == 0:
        raise ValueError(f"{y.size} estimates and {se.size} standard errors; need equal, >= 1")
    bad = ~np.isfinite(y) | ~np.isfinite(se) | (se <= 0)
    if bad.any():
        raise ValueError(
            "estimates and standard errors must be finite with se > 0; items "
            f"{np.flatnonzero(bad)[:5].tolist()} are not: drop them first"
        )
    names = [str(i) for i in range(y.size)] if names is None else [str(n) for n in names]
    if len(names) != y.size:
        raise ValueError(f"{len(names)} names for {y.size} estimates")
    return y, se, names


def family_posterior(
    estimates: Any,
    std_errors: Any,
    names: Sequence[str] | None = None,
    *,
    mu: float | str = "learned",
    mu_prior_sd: float | None = None,
    mu_prior_loc: float = 0.0,
    tau_prior: str = "half_cauchy",
    tau_scale: float | None = None,
    n_grid: int = 800,
) -> FamilyPosterior:
    """The exact posterior of the module's model on a ``tau`` grid (see the module docstring).

    ``mu``: ``"learned"`` (prior: flat, or Normal(``mu_prior_loc``, ``mu_prior_sd``)) or a number
    (fixed). ``tau_prior`` in :data:`TAU_PRIORS`, scale ``tau_scale`` (default: median SE).
    """
    y, se, names = _check_inputs(estimates, std_errors, names)
    if tau_prior not in TAU_PRIORS:
        raise ValueError(f"tau_prior={tau_prior!r}; expected one of {list(TAU_PRIORS)}")
    if mu != "learned" and not isinstance(mu, int | float):
        raise ValueError(f"mu={mu!r}; expected 'learned' or a number (fixed)")
    scale = float(np.median(se)) if tau_scale is None else float(tau_scale)
    u = (np.arange(n_grid) + 0.5) / n_grid
    c = max(scale, float(np.median(se)))  # grid scale: where the posterior mass can sit
    tau = c * u / (1 - u)
    log_jac = np.log(c) - 2 * np.log1p(-u)
    s2 = se[None, :] ** 2
    v = s2 + tau[:, None] ** 2  # (k, m) marginal variance of y_i given tau
    logp = _log_tau_prior(tau, tau_prior, scale) + log_jac - 0.5 * np.log(v).sum(axis=1)
    if mu == "learned":
        prec = (1 / v).sum(axis=1)
        num = (y / v).sum(axis=1)
        if mu_prior_sd is not None:
            prec = prec + 1 / mu_prior_sd**2
            num = num + mu_prior_loc / mu_prior_sd**2
        mu_mean, mu_var = num / prec, 1 / prec
        logp += 0.5 * np.log(mu_var)
        if mu_prior_sd is not None:
            logp -= 0.5 * (mu_mean - mu_prior_loc) ** 2 / mu_prior_sd**2
    else:
        mu_mean, mu_var = np.full(n_grid, float(mu)), np.zeros(n_grid)
    logp -= 0.5 * (((y[None, :] - mu_mean[:, None]) ** 2) / v).sum(axis=1)
    w = np.exp(logp - logp.max())
    keep = w > 1e-12
    w = w[keep] / w[keep].sum()
    tau, v, mu_mean, mu_var = tau[keep], v[keep], mu_mean[keep], mu_var[keep]
    shrink = s2 / v
    theta_mean = (1 - shrink) * y[None, :] + shrink * mu_mean[:, None]
    theta_sd = np.sqrt(s2 * (1 - shrink) + shrink**2 * mu_var[:, None])
    return FamilyPosterior(names, y, se, tau, w, mu_mean, mu_var, theta_mean, theta_sd)


def summarise_draws(
    theta: np.ndarray, tau: np.ndarray, mu: np.ndarray, y, se, names, ci: float = 0.95
) -> pd.DataFrame:
    """The :data:`POOL_COLUMNS` table from joint draws (the PyMC route)."""
    q = [(1 - ci) / 2, 0.5, (1 + ci) / 2]
    lo, med, hi = np.quantile(theta, q, axis=0)
    pp = (theta > 0).mean(axis=0)
    tq = np.quantile(tau, q)
    return pd.DataFrame(
        {
            "item": names,
            "estimate": y,
            "std_error": se,
            "pooled_mean": theta.mean(axis=0),
            "pooled_median": med,
            "pooled_lower": lo,
            "pooled_upper": hi,
            "p_positive": pp,
            "p_sign_error": np.minimum(pp, (theta < 0).mean(axis=0)),
            "tau_median": tq[1],
            "tau_lower": tq[0],
            "tau_upper": tq[2],
            "mu_mean": mu.mean(),
        }
    )


def _pool_pymc(y, se, names, mu, mu_prior_sd, mu_prior_loc, tau_prior, scale, draws, seed, ci):
    """The same model by NUTS (non-centred): nutpie if installed, else PyMC's sampler."""
    import importlib.util

    import pymc as pm

    with pm.Model(coords={"item": names}):
        if mu != "learned":
            mu_v = pm.Data("mu", float(mu))
        elif mu_prior_sd is None:
            mu_v = pm.Flat("mu")
        else:
            mu_v = pm.Normal("mu", mu_prior_loc, mu_prior_sd)
        tau = {
            "half_cauchy": lambda: pm.HalfCauchy("tau", scale),
            "half_normal": lambda: pm.HalfNormal("tau", scale),
            "uniform": lambda: pm.HalfFlat("tau"),
        }[tau_prior]()
        z = pm.Normal("z", 0, 1, dims="item")
        theta = pm.Deterministic("theta", mu_v + tau * z, dims="item")
        pm.Normal("y", theta, se, observed=y, dims="item")
        sampler = "nutpie" if importlib.util.find_spec("nutpie") else "pymc"
        idata = pm.sample(
            draws=draws,
            tune=max(draws, 500),
            chains=2,
            nuts_sampler=sampler,
            random_seed=seed,
            progressbar=False,
            target_accept=DEFAULT_TARGET_ACCEPT,
        )
    post = idata.posterior
    th = post["theta"].stack(s=("chain", "draw")).transpose("s", "item").values
    ta = post["tau"].stack(s=("chain", "draw")).values
    mu_d = post["mu"].stack(s=("chain", "draw")).values if "mu" in post else np.full(1, mu)
    return summarise_draws(th, ta, mu_d, y, se, names, ci)


def pool_family(
    estimates: Any,
    std_errors: Any,
    names: Sequence[str] | None = None,
    *,
    mu: float | str = "learned",
    mu_prior_sd: float | None = None,
    mu_prior_loc: float = 0.0,
    tau_prior: str = "half_cauchy",
    tau_scale: float | None = None,
    ci: float = 0.95,
    method: str = "exact",
    draws: int | None = None,
    seed: Any = 0,
) -> pd.DataFrame:
    """Partial pooling of a family of estimates: pooled posterior per comparison and tau.

    Parameters
    ----------
    estimates, std_errors : array (m,)
        The family's estimates and their standard errors (one scale; see the module docstring).
    names : item names.
    mu, mu_prior_sd, mu_prior_loc, tau_prior, tau_scale : the model (module docstring);
        defaults: mu learned with a flat prior, tau ~ half-Cauchy(0, median SE).
    ci : interval probability (equal-tailed).
    method : ``"exact"`` (grid over tau, closed-form rest; ``draws``/``seed`` unused) or
        ``"pymc"`` (NUTS, 2 chains of ``draws`` after as many tuning steps, ``seed``;
        ``draws=None``: the sampler config's default).

    Returns
    -------
    DataFrame with :data:`POOL_COLUMNS`: per comparison the pooled posterior mean, median and
    ``ci`` interval, P(theta > 0), P(sign error); the family's tau (median and interval, the
    same in every row) and posterior mean of mu. Declare a sign where ``p_sign_error < (1 -
    ci) / 2`` (the interval excludes 0).
    """
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1); got {ci!r}")
    if method not in ("exact", "pymc"):
        raise ValueError(f"method={method!r}; expected 'exact' or 'pymc'")
    y, se, names = _check_inputs(estimates, std_errors, names)
    scale = float(np.median(se)) if tau_scale is None else float(tau_scale)
    if method == "pymc":
        n = SamplerConfig().draws if draws is None else int(draws)  # the one default
        args = (mu, mu_prior_sd, mu_prior_loc, tau_prior, scale, n, seed, ci)
        out = _pool_pymc(y, se, names, *args)
    else:
        post = family_posterior(
            y,
            se,
            names,
            mu=mu,
            mu_prior_sd=mu_prior_sd,
            mu_prior_loc=mu_prior_loc,
            tau_prior=tau_prior,
            tau_scale=scale,
        )
        out = post.summary(ci)
    out.attrs.update(
        model="y_i ~ N(theta_i, se_i), theta_i ~ N(mu, tau)",
        mu=mu,
        mu_prior_sd=mu_prior_sd,
        tau_prior=f"{tau_prior}(0, {scale:.4g})",
        method=method,
        ci=ci,
    )
    return out
