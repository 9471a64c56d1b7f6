"""Prior entries: the allowed distributions, overrides merged over a model's defaults, and the
PyMC variables they make.

A prior is ``{"dist": <PyMC distribution name>, <parameter>: <value>, ...}``. A model's default
table is in its definition (``DEFINITION.priors`` in ``models/joint.py`` ...; the blocks they
share in :mod:`delusion_bayes.models.blocks`): ``conf/model/*.yaml`` hold ``priors: {}`` and a
run's overrides go there (:func:`resolve_prior_table` merges them over the table). The latent
stage lives on the 1-4 scale, ``t50`` hyper-priors are in units of ``n_days`` (``mu_t50: 0.6``
= day 18 of 30), ``log_k`` is per day.
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
    "LogNormal": ("mu", "sigma"),
}


def resolve_prior_table(
    model: str, defaults: Mapping[str, Mapping[str, Any]], overrides: Mapping[str, Any] | None
) -> dict[str, dict]:
    """A deep copy of ``model``'s ``defaults`` updated by ``overrides`` (entry-wise); ValueError
    for an unknown parameter, distribution or distribution argument
    (:func:`delusion_bayes.models.resolve_priors` finds a model's defaults in the registry)."""
    priors = copy.deepcopy({k: dict(v) for k, v in defaults.items()})
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
