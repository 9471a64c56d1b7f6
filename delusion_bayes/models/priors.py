"""Default priors of every model in one table, and their overrides.

A prior is ``{"dist": <PyMC distribution name>, <parameter>: <value>, ...}``. This table is the
one source of the defaults: ``conf/model/*.yaml`` hold ``priors: {}`` and a run's overrides go
there (:func:`resolve_priors` merges them over the table). The latent stage lives on the 1-4
scale, ``t50`` hyper-priors are in units of ``n_days`` (``mu_t50: 0.6`` = day 18 of 30),
``log_k`` is per day.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: allowed distributions and their parameter names (anything else is a typo: ValueError)
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "Normal": ("mu", "sigma"),
    "HalfNormal": ("sigma",),
    "Exponential": ("lam",),
    "StudentT": ("nu", "mu", "sigma"),
    "HalfStudentT": ("nu", "sigma"),
    "ZeroSumNormal": ("sigma",),
    "Gamma": ("alpha", "beta"),
}

_ONSET_HYPER: dict[str, dict[str, Any]] = {
    # asymptote L = 1 + exp(l), l_m ~ N(log 3, 0.2) per model (L = 4; 95% in [3.0, 5.5])
    "log_L1": {"dist": "Normal", "mu": 1.1, "sigma": 0.2},
    # steepness (per day): a_m = mu_log_k + sigma_log_k * z_m ~ log(k_m - k_min) (models.spec)
    "mu_log_k": {"dist": "Normal", "mu": -0.5, "sigma": 1.0},
    # zero-avoiding (Chung et al. 2013, Psychometrika 78): the turners' log k are centred, and
    # near 0 they sit in a funnel's neck. Mean 0.75, 95% in [0.15, 1.8]
    "sigma_log_k": {"dist": "Gamma", "alpha": 3.0, "beta": 4.0},
    # midpoint in units of n_days: t50_m = n_days * (mu_t50 + sigma_t50 * z_m)
    "mu_t50": {"dist": "Normal", "mu": 0.6, "sigma": 0.4},
    "sigma_t50": {"dist": "HalfNormal", "sigma": 0.5},
    # scale of group-level shifts of the three hyper-means (only with group_terms)
    "group_sd": {"dist": "HalfNormal", "sigma": 0.5},
}

_RATERS: dict[str, dict[str, Any]] = {
    # rater severity (shift on the stage scale), zero-sum over raters, fixed prior per rater
    "severity": {"dist": "ZeroSumNormal", "sigma": 0.5},
    # rater discrimination: log disc_r ~ N(mu, sigma) per rater (d = 3.3, 95% in [1.2, 8.8])
    "log_disc": {"dist": "Normal", "mu": 1.2, "sigma": 0.5},
}

DEFAULT_PRIORS: dict[str, dict[str, dict[str, Any]]] = {
    "joint": {
        **_ONSET_HYPER,
        # day-to-day deviation of the latent stage from the trajectory, per model (an oscillating
        # model has a large one): log sigma_eps_m = mu_log_eps + sigma_log_eps * z_m
        "mu_log_eps": {"dist": "Normal", "mu": -1.6, "sigma": 0.75},
        "sigma_log_eps": {"dist": "HalfNormal", "sigma": 0.75},
        **_RATERS,
    },
    "onset": {
        **_ONSET_HYPER,
        # residual of the consensus around the trajectory (the least-squares error term)
        "sigma_y": {"dist": "HalfNormal", "sigma": 0.5},
    },
    "rater": {
        # latent score per model-day: theta = mu_theta + sigma_theta * z
        "mu_theta": {"dist": "Normal", "mu": 2.5, "sigma": 1.0},
        "sigma_theta": {"dist": "HalfNormal", "sigma": 1.5},
        **_RATERS,
    },
    "disengagement": {
        **_ONSET_HYPER,
        "mu_log_eps": {"dist": "Normal", "mu": -1.6, "sigma": 0.75},
        "sigma_log_eps": {"dist": "HalfNormal", "sigma": 0.75},
        **_RATERS,
        # ordinal disengagement level (0 none, 1 Level A only, 2 Level B): slope on the stage
        "beta_level": {"dist": "Normal", "mu": 1.0, "sigma": 1.5},
        # model effects u_m = sigma_u * z_m ("recognises but does not act" = low u_m)
        "sigma_u": {"dist": "HalfNormal", "sigma": 1.5},
        # first cutpoint (at stage 2.5) and log gap to the second
        "c_level_1": {"dist": "Normal", "mu": 1.0, "sigma": 2.0},
        "log_gap_level": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    },
}


def default_priors(model: str) -> dict[str, dict[str, Any]]:
    """A deep copy of the default prior table of ``model``."""
    if model not in DEFAULT_PRIORS:
        raise ValueError(f"unknown model {model!r}; expected one of {sorted(DEFAULT_PRIORS)}")
    return copy.deepcopy(DEFAULT_PRIORS[model])


def resolve_priors(model: str, overrides: Mapping[str, Any] | None = None) -> dict[str, dict]:
    """Defaults of ``model`` updated by ``overrides`` (entry-wise); ValueError for an unknown
    parameter, distribution or distribution argument."""
    priors = default_priors(model)
    for name, spec in dict(overrides or {}).items():
        if name not in priors:
            raise ValueError(
                f"prior override {name!r} is not a parameter of model {model!r}; "
                f"valid names: {sorted(priors)}"
            )
        spec = dict(spec)
        new_dist = "dist" in spec and spec["dist"] != priors[name]["dist"]
        priors[name] = spec if new_dist else {**priors[name], **spec}
        _check(name, priors[name])
    for name, spec in priors.items():
        _check(name, spec)
    return priors


def _check(name: str, spec: Mapping[str, Any]) -> None:
    dist = spec.get("dist")
    if dist not in DISTRIBUTIONS:
        raise ValueError(
            f"prior {name!r}: distribution {dist!r} not supported; "
            f"use one of {sorted(DISTRIBUTIONS)}"
        )
    args = {k for k in spec if k != "dist"}
    expected = set(DISTRIBUTIONS[dist])
    if args != expected:
        raise ValueError(
            f"prior {name!r} ({dist}) has arguments {sorted(args)}; expected {sorted(expected)}"
        )
    for k in args:
        v = spec[k]
        if not isinstance(v, int | float) or (k != "mu" and v <= 0):
            raise ValueError(f"prior {name!r}: {k}={v!r} must be a number (positive unless mu)")


def prior_table(priors: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Priors as a tidy table: one row per parameter, columns ``dist`` and its arguments."""
    rows = [{"parameter": k, **dict(v)} for k, v in priors.items()]
    return pd.DataFrame(rows).set_index("parameter")


def prior_rms(spec: Mapping[str, Any], n: int = 100_000) -> float:
    """``sqrt(E[x^2])`` of a scalar prior, from ``n`` seeded draws (any configured family; the
    HalfNormal default: its ``sigma``, within 0.5%)."""
    import pymc as pm

    draws = pm.draw(make_dist(spec), draws=n, random_seed=0)
    return float(np.sqrt(np.mean(np.square(draws))))


def make_rv(name: str, spec: Mapping[str, Any], **kwargs):
    """The PyMC random variable of a prior entry (inside a ``pm.Model`` context)."""
    import pymc as pm

    return getattr(pm, spec["dist"])(name, **_args(spec), **kwargs)


def make_dist(spec: Mapping[str, Any], **kwargs):
    """The unnamed PyMC distribution (``.dist``) of a prior entry, e.g. for ``pm.logp``."""
    import pymc as pm

    return getattr(pm, spec["dist"]).dist(**_args(spec), **kwargs)


def _args(spec: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in spec.items() if k != "dist"}
