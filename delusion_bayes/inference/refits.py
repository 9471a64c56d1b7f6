"""The diagnostics gate's remedies: a fit that fails its gate is sampled again at a higher
target acceptance, then with more draws (:func:`fit_with_refits`), every attempt recorded
(:func:`fit_attempts`), and a fit that still fails gets advice from the study's design
(:func:`gate_advice`). The models stage calls these; so do the benchmarks
(``experiments/bench/gate_grid.py``)."""

from __future__ import annotations

import json
import logging
import weakref
from typing import Any

import numpy as np

from ..config import group_config
from .config import InferenceConfig

log = logging.getLogger(__name__)


def fit_with_refits(make, inf: Any):
    """``make()``'s fit, refitted by the standard remedies while it fails its gate, at most once
    each (same seed; the compiled model is reused, so a refit costs sampling only):

    1. more divergences than the gate allows: ``make(target_accept=...)`` at
       ``inference.refit_target_accept`` (halfway from the attempt's target to 1 when that was
       as high already);
    2. then, if the latest attempt has no excess divergences but its R-hat or ESS fails the
       gate: ``make(draws=..., tune=...)`` with ``inference.refit_draws_factor`` times the draws
       and tuning steps, at the latest attempt's target. Chains of a few hundred effective
       draws put R-hat above 1.01 for some of ~100 parameters by chance alone; longer chains
       are what Vehtari et al. (2021, Bayesian Analysis 16:667) prescribe, and a real
       multimodality still fails;
    3. if those longer chains diverge and remedy 1 has not been used: remedy 1, with their
       draws.

    The fit returned carries ``attrs["gate_attempts"]``: JSON, one ``{target_accept, draws,
    divergences, seconds, max_rhat, min_ess, failed, moved_mcse, moved_param}`` per attempt
    (the models stage writes it into ``gate.json``): ``failed`` names the parameters whose
    R-hat or ESS failed the gate (at most :data:`MAX_FAILED_LISTED`); ``moved_mcse`` is how far
    this attempt's posterior means of the :data:`HEADLINE` parameters lie from the returned
    fit's, the largest ``|mean_a - mean_last| / sqrt(mcse_a^2 + mcse_last^2)`` (MCSE of the
    mean: ``sd / sqrt(ess_bulk)``), at ``moved_param`` (0 for the returned attempt)."""
    from .diagnostics import sampler_stats

    inf = group_config(InferenceConfig, inf)
    allowed, refit_at, factor = inf.max_divergences, inf.refit_target_accept, inf.refit_draws_factor
    dt = make()
    attempts = [_attempt(dt, sampler_stats(dt)["divergences"], inf)]
    more: dict[str, Any] = {}

    def divergence_refit() -> None:
        nonlocal dt
        # at or above refit_target_accept already (the onset model's 0.99): halfway to 1
        first = attempts[-1]["target_accept"]
        more["target_accept"] = max(float(refit_at), 1.0 - (1.0 - first) / 2.0)
        log.warning(
            "%s: %d divergent transitions at target_accept %.3g; refitting at %.4g "
            "(inference.refit_target_accept)",
            dt.attrs.get("variant", "fit"),
            attempts[-1]["divergences"],
            first,
            more["target_accept"],
        )
        dt = make(**more)
        attempts.append(_attempt(dt, sampler_stats(dt)["divergences"], inf))

    if refit_at is not None and attempts[-1]["divergences"] > allowed:
        divergence_refit()
    last = attempts[-1]
    if factor is not None and float(factor) > 1 and last["divergences"] <= allowed:
        if not last["mixed"]:
            more["draws"] = int(round(last["draws"] * float(factor)))
            more["tune"] = int(round(last["tune"] * float(factor)))
            log.warning(
                "%s: R-hat %.4f or ESS %.0f fails the gate; refitting with %d draws and "
                "%d tuning steps per chain (inference.refit_draws_factor)",
                dt.attrs.get("variant", "fit"),
                last["max_rhat"],
                last["min_ess"],
                more["draws"],
                more["tune"],
            )
            dt = make(**more)
            attempts.append(_attempt(dt, sampler_stats(dt)["divergences"], inf))
            # the longer chains found a divergence the first attempt's did not: the divergence
            # remedy, not yet used, at the longer chains' length (sparse 15 x 12 x 3, 30%
            # missing: 1 divergence in 8,000 draws at 0.9; docs/dev/models.md)
            diverged = attempts[-1]["divergences"] > allowed
            if refit_at is not None and diverged and "target_accept" not in more:
                divergence_refit()
    _moved(attempts)
    dt.attrs["gate_attempts"] = json.dumps(attempts)
    return dt


#: ``(weak reference to a fit, its diagnostics table)`` of the last attempt
#: :func:`fit_with_refits` diagnosed, so that the stage's gate does not compute the same table
#: again (:func:`diagnostics_of`; a weak reference: never another fit's table)
_DIAGNOSED: list[Any] = [None, None]


def diagnostics_of(dt, inf: Any):
    """The per-parameter diagnostics table of ``dt``
    (:func:`delusion_bayes.inference.diagnostics.diagnose`), computed once per fit."""
    from .diagnostics import diagnose

    ref, table = _DIAGNOSED
    if ref is not None and ref() is dt:
        return table
    table = diagnose(dt, inf)
    _DIAGNOSED[:] = [weakref.ref(dt), table]
    return table


#: the parameters whose move between attempts ``gate.json`` reports: the reported onset
#: parameters, rater effects and day noise
HEADLINE = ("L", "k", "t50", "severity", "discrimination", "sigma_eps", "sigma_y")
#: most parameters an attempt's ``failed`` lists
MAX_FAILED_LISTED = 20


def _moved(attempts: list[dict[str, Any]]) -> None:
    """Replace each attempt's headline summary by its largest move from the last attempt's,
    in MCSE units (in place; drops the working keys)."""
    last = attempts[-1]["headline"]
    for a in attempts:
        a.pop("mixed")
        head = a.pop("headline")
        best, where = 0.0, None
        for p, (m, se) in head.items():
            if p in last and np.isfinite(m) and np.isfinite(last[p][0]):
                z = abs(m - last[p][0]) / max(float(np.hypot(se, last[p][1])), 1e-12)
                if z > best:
                    best, where = z, p
        a["moved_mcse"], a["moved_param"] = round(best, 2), where


def _attempt(dt, divergences: int, inf: Any) -> dict[str, Any]:
    """One sampling attempt's settings and diagnostics (``mixed``: R-hat and ESS pass)."""
    post = dt["posterior"]
    table = diagnostics_of(dt, inf)
    gated = table[~table["constant"]]
    ok = (gated["r_hat"] <= table.attrs["rhat_max"]) & (
        gated[["ess_bulk", "ess_tail"]].min(axis=1) >= table.attrs["ess_min"]
    )
    head = gated[gated["variable"].isin(HEADLINE)]
    mcse = head["sd"] / np.sqrt(head["ess_bulk"].clip(lower=1.0))
    return {
        "failed": [str(p) for p in gated.index[~ok]][:MAX_FAILED_LISTED],
        "headline": {
            str(p): (float(m), float(se))
            for p, m, se in zip(head.index, head["mean"], mcse, strict=True)
        },
        "target_accept": float(post.attrs.get("target_accept", np.nan)),
        "draws": int(post.sizes["draw"]),
        "tune": int(post.attrs.get("tune", 0) or 0),
        "divergences": int(divergences),
        "seconds": round(float(dt.attrs.get("fit_time", np.nan)), 2),
        "max_rhat": round(float(gated["r_hat"].max()), 4) if len(gated) else float("nan"),
        "min_ess": round(float(gated[["ess_bulk", "ess_tail"]].min().min()), 1)
        if len(gated)
        else float("nan"),
        "mixed": bool(ok.all()),
    }


def fit_attempts(dt, g: dict[str, Any]) -> dict[str, Any]:
    """``{attempts, refitted, t50_scale_fixed}`` for ``gate.json``: every sampling attempt of
    this fit (:func:`fit_with_refits`), the last one with the gate's verdict, and whether the
    fit fixed the t50 population scale (a data-dependent change of the model that the
    supplement marks under every table using the fit)."""
    attempts = json.loads(dt.attrs.get("gate_attempts", "[]") or "[]")
    if attempts:
        attempts[-1].update(passed=bool(g["passed"]), max_rhat=g["max_rhat"], min_ess=g["min_ess"])
    fixed = "sigma_t50" in dt["posterior"] and not int(dt.attrs.get("t50_scale_sampled", 1))
    return {"attempts": attempts, "refitted": len(attempts) > 1, "t50_scale_fixed": bool(fixed)}


def gate_advice(dt, g: dict[str, Any]) -> list[str]:
    """What to try for a fit that failed its gate, with the study design's likely reason."""
    post = dt["posterior"]
    out = []
    n_raters = post.sizes.get("rater")
    n_models = post.sizes.get("model")
    if n_raters is not None and n_raters <= 2:
        out.append(
            f"{n_raters} raters: rater severity and discrimination are weakly identified; "
            "try model.cutpoints=shared (one discrimination for all raters)"
        )
    if n_models is not None and n_models < 8:
        out.append(
            f"{n_models} chatbots: the between-chatbot scales (sigma_*) rest mostly on "
            "their priors; a divergence there is a funnel, not a coding error"
        )
    if "t50" in post.data_vars and "n_days" in dt.attrs:
        beyond = (post["t50"] > float(dt.attrs["n_days"])).mean(("chain", "draw"))
        if bool((beyond > 0.5).all()):
            out.append("no chatbot turns within the study: t50 and k are set by their priors")
    if g.get("divergences", 0):
        out.append(
            "divergences: raise sampler.target_accept (e.g. 0.995) and sampler.tune (e.g. 2000)"
        )
    if any("R-hat" in r or "ESS" in r for r in g.get("reasons", [])):
        out.append("R-hat or ESS: more draws (sampler.draws=3000) and look at rank.png")
    return out
