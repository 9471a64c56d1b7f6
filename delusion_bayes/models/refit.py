"""Checking power-scaling flags by refitting (issue 28, item 4b): refit a study with the scales
of the flagged priors multiplied by 2 and by 0.5 and measure how far every reported number
moves, in posterior-SD units of the original fit.

Power-scaling (:mod:`delusion_bayes.models.sensitivity_reported`) is a local, importance-
sampling approximation at power 1; a refit is the real thing. For a normal prior, doubling the
scale is a power of 1/4 and halving it a power of 4, so the refits probe a far larger change
than the derivative does: a flag the refits do not confirm is a local sensitivity that does not
matter at that size, and a number that moves but was not flagged is one the local check missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

#: the argument of each distribution that sets its scale, and the power the scale enters it
#: with (``Exponential(lam)`` and ``Gamma(alpha, beta)`` have scale 1/lam, 1/beta)
SCALE_ARG: dict[str, tuple[str, int]] = {
    "Normal": ("sigma", 1),
    "HalfNormal": ("sigma", 1),
    "StudentT": ("sigma", 1),
    "HalfStudentT": ("sigma", 1),
    "ZeroSumNormal": ("sigma", 1),
    "Exponential": ("lam", -1),
    "Gamma": ("beta", -1),
}
#: reported parameter (``sensitivity.csv``'s ``variable``) -> the prior-table entries that set
#: its prior (the hierarchy's hyper-priors for a per-model parameter)
PRIOR_OF: dict[str, tuple[str, ...]] = {
    "L": ("log_L1",),
    "discrimination": ("log_disc",),
    "t50": ("mu_t50", "sigma_t50"),
    "k": ("mu_log_k", "sigma_log_k"),
    "sigma_eps": ("mu_log_eps", "sigma_log_eps"),
    # the replay model (:data:`delusion_bayes.models.replay.REPLAY_PRIORS`): a prevalence
    # integrates the cluster intercepts out of ``theta``, so it rests on both
    "prevalence": ("theta", "sigma_conversation", "sigma_participant"),
    "category_prevalence": ("theta", "sigma_conversation", "sigma_participant"),
}
FACTORS = (2.0, 0.5)
#: powers of the whole prior for the flag's recall (issue 55): the prior density raised to
#: 0.5 and 2, the size of change priorsense's power-scaling speaks of (a normal prior's scale
#: times sqrt 2 and over sqrt 2), against the scale factors 2 and 0.5 above (powers 1/4, 4)
POWERS = (0.5, 2.0)
#: a refit that moves a reported number's posterior mean by at least this many posterior SDs
#: (under either factor) confirms its flag. Monte Carlo error of the difference of two means at
#: ESS 400 each is about sqrt(2 / 400) = 0.07 SD, so 0.25 SD is a few times that
MOVES_SD = 0.25


def flagged_priors(
    sens: pd.DataFrame, priors: Mapping[str, Any], used: Iterable[str] | None = None
) -> list[str]:
    """The prior-table entries (keys of ``priors``) behind the parameters ``sensitivity.csv``
    (``sens``) flags (verdict not "-"): the entry of that name, else :data:`PRIOR_OF`; with
    ``used``, only entries among them (the replay model's one-level graph has no
    ``sigma_participant``)."""
    keep = None if used is None else set(used)
    out: list[str] = []
    for var in sens.loc[sens["verdict"] != "-", "variable"].astype(str):
        for name in (var,) if var in priors else PRIOR_OF.get(var, ()):
            if name in priors and name not in out and (keep is None or name in keep):
                out.append(name)
    return out


def _entry(priors: Mapping[str, Mapping[str, Any]], name: str, caller: str) -> dict[str, Any]:
    """A copy of the prior-table entry ``name``; ValueError naming ``caller`` when absent."""
    if name not in priors:
        raise ValueError(f"{caller}: {name!r} is not in the prior table ({sorted(priors)})")
    return dict(priors[name])


def scaled_priors(
    priors: Mapping[str, Mapping[str, Any]], names: Iterable[str], factor: float
) -> dict[str, dict[str, Any]]:
    """Prior overrides (``model.priors``) with the scale of each of ``names`` times ``factor``
    (:data:`SCALE_ARG`); ValueError for a name not in ``priors`` or a distribution without a
    scale."""
    out = {}
    for name in names:
        spec = _entry(priors, name, "scaled_priors")
        if spec["dist"] not in SCALE_ARG:
            raise ValueError(
                f"scaled_priors: {name!r} ({spec['dist']}) has no scale argument; "
                f"known: {sorted(SCALE_ARG)}"
            )
        arg, power = SCALE_ARG[spec["dist"]]
        spec[arg] = float(spec[arg]) * float(factor) ** power
        out[name] = spec
    return out


def powered_priors(
    priors: Mapping[str, Mapping[str, Any]], names: Iterable[str], alpha: float
) -> dict[str, dict[str, Any]]:
    """Prior overrides with each of ``names``' densities raised to the power ``alpha`` (the
    refit version of power-scaling ``log_prior``, which sums these entries' terms). Exact within
    the family: ``Normal``/``HalfNormal``/``ZeroSumNormal`` scale ``sigma / sqrt(alpha)``,
    ``Exponential`` ``lam * alpha``, ``Gamma(a, b)`` becomes ``Gamma(alpha (a - 1) + 1,
    alpha b)``; any other family is a ValueError (a power of a Student-t is not a Student-t)."""
    a = float(alpha)
    out = {}
    for name in names:
        spec = _entry(priors, name, "powered_priors")
        dist = spec["dist"]
        if dist in ("Normal", "HalfNormal", "ZeroSumNormal"):
            spec["sigma"] = float(spec["sigma"]) / float(np.sqrt(a))
        elif dist == "Exponential":
            spec["lam"] = float(spec["lam"]) * a
        elif dist == "Gamma":
            spec["alpha"] = a * (float(spec["alpha"]) - 1.0) + 1.0
            spec["beta"] = float(spec["beta"]) * a
        else:
            raise ValueError(
                f"powered_priors: {name!r} ({dist}) stays in no family under a power; known: "
                "Normal, HalfNormal, ZeroSumNormal, Exponential, Gamma"
            )
        out[name] = spec
    return out


def recall_precision(table: pd.DataFrame, moves: float = MOVES_SD) -> dict[str, Any]:
    """How well the power-scaling screen predicts what a refit at another prior power moves:
    over the rows of ``table`` (``sensitivity_reported.csv`` with ``refit_shift_sd`` filled)
    that were refitted, ``moved`` = ``|refit_shift_sd| >= moves``; for the CJS verdict (the
    flag) and for its first-order proxy ``|prior_mean_shift_sd| >= moves`` (the derivative per
    doubling of the power, i.e. the predicted shift at power 2): flagged, caught, recall
    (caught / moved) and precision (caught / flagged); NaN where the denominator is 0."""
    t = table[table["refit_shift_sd"].notna()]
    moved = t["refit_shift_sd"].abs() >= moves
    out: dict[str, Any] = {"n": len(t), "moved": int(moved.sum()), "moves_sd": moves}
    rules = {"flag": t["verdict"] != "-", "proxy": t["prior_mean_shift_sd"].abs() >= moves}
    for rule, flag in rules.items():
        caught = int((flag & moved).sum())
        out[rule] = {
            "flagged": int(flag.sum()),
            "caught": caught,
            "recall": caught / int(moved.sum()) if moved.any() else float("nan"),
            "precision": caught / int(flag.sum()) if flag.any() else float("nan"),
        }
    return out


def proxy_agreement(table: pd.DataFrame) -> dict[str, Any]:
    """How well ``prior_mean_shift_sd`` (the shift per doubling of the prior's power, from the
    base fit's weights alone) predicts the refits at powers 2 and 0.5 (``shift_x2``,
    ``shift_x0.5`` of :func:`refit_shifts` on :data:`POWERS`; predicted +d and -d): per power,
    Pearson r and the least-squares slope through 0 of the refit's shift on the prediction
    (1 = the proxy is the refit), over the refitted rows."""
    out: dict[str, Any] = {}
    for power, sign in (("2", 1.0), ("0.5", -1.0)):
        col = f"shift_x{power}"
        if col not in table:
            continue
        t = table[[col, "prior_mean_shift_sd"]].dropna()
        x, y = sign * t["prior_mean_shift_sd"].to_numpy(), t[col].to_numpy()
        ok = len(t) > 2 and np.std(x) > 0 and np.std(y) > 0
        out[f"power_{power}"] = {
            "n": len(t),
            "r": float(np.corrcoef(x, y)[0, 1]) if ok else float("nan"),
            "slope": float(x @ y / (x @ x)) if ok else float("nan"),
        }
    return out


def refit_shifts(
    base: Mapping[tuple[str, str, str], xr.DataArray],
    refits: Mapping[float, Mapping[tuple[str, str, str], xr.DataArray]],
) -> pd.DataFrame:
    """Per reported number (keys of ``base``, :func:`~delusion_bayes.models.sensitivity_reported.
    fit_reported_draws`), the shift of its posterior mean under each refit (``{factor: draws}``)
    in posterior SDs of ``base``: columns ``quantity, kind, item, shift_x<factor>...,
    refit_shift_sd`` (the shift of largest size, signed; NaN where the number is missing or
    constant in the base fit)."""
    rows = []
    for key, da in base.items():
        x = np.asarray(da.values, float).ravel()
        sd = float(np.std(x))
        row: dict[str, Any] = dict(zip(("quantity", "kind", "item"), key, strict=True))
        shifts = []
        for f, draws in refits.items():
            y = draws.get(key)
            ok = y is not None and sd > 0 and np.isfinite(x).all()
            s = (float(np.nanmean(y.values)) - float(x.mean())) / sd if ok else np.nan
            row[f"shift_x{f:g}"] = s
            shifts.append(s)
        finite = [s for s in shifts if np.isfinite(s)]
        row["refit_shift_sd"] = max(finite, key=abs) if finite else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def confirm(reported: pd.DataFrame, shifts: pd.DataFrame, moves: float = MOVES_SD) -> dict:
    """``reported`` (``sensitivity_reported.csv``) with ``refit_shift_sd`` filled from
    ``shifts`` (:func:`refit_shifts`), and the counts: flags (verdict not "-"), flags the refits
    confirm (|shift| >= ``moves``), numbers that moved without a flag. Returns ``{"table",
    "n", "flagged", "confirmed", "moved_unflagged", "moves_sd"}``."""
    keys = ["quantity", "kind", "item"]
    table = reported.drop(columns=["refit_shift_sd"]).merge(
        shifts[[*keys, "refit_shift_sd"]], on=keys, how="left"
    )
    table = table[list(reported.columns)]
    flag = table["verdict"] != "-"
    moved = table["refit_shift_sd"].abs() >= moves
    return {
        "table": table,
        "n": int(table["refit_shift_sd"].notna().sum()),
        "flagged": int(flag.sum()),
        "confirmed": int((flag & moved).sum()),
        "moved_unflagged": int((~flag & moved).sum()),
        "moves_sd": moves,
    }


__all__ = [
    "FACTORS",
    "MOVES_SD",
    "POWERS",
    "PRIOR_OF",
    "SCALE_ARG",
    "confirm",
    "flagged_priors",
    "powered_priors",
    "proxy_agreement",
    "recall_precision",
    "refit_shifts",
    "scaled_priors",
]
