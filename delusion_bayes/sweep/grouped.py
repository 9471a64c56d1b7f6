"""The population contrasts of a simulated study from the model refitted with each contrast's
grouping (issue 53): the rows the design experiment's Bayesian power is scored on, in the
coverage study's row format (:data:`~delusion_bayes.sweep.coverage_metrics.REPLICATE_COLUMNS`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from .coverage import POPULATION
from .coverage_metrics import LEVELS
from .truth import population_truth


def grouped_population_rows(
    method: str,
    ds: xr.Dataset,
    contrasts: Sequence[Any],
    base: Mapping[str, Any],
    *,
    fit_kwargs: Mapping[str, Any] | None,
    seed: int,
    stable_run: int,
    cens: int,
) -> list[dict[str, Any]]:
    """The population contrasts of ``method`` from its fit refitted with each contrast's grouping
    (:func:`delusion_bayes.models.population.fit_population`, at the refit target as the main
    job's), one row per contrast x quantity as :func:`posterior_rows`' population rows
    (``method`` + :data:`POPULATION`): ``reject`` = the 95% interval excludes 0, ``stat`` = P of
    the alternative's direction, 90/95% bounds, the true difference of population means. A
    quantity the model has no population for, or a degenerate one, is left out. As for the
    ungrouped fits here, the gate's verdict is recorded (``note``), not enforced: a simulation
    scores every fit it makes (the calibration script counts the gate-clean share apart)."""
    from ..inference.config import InferenceConfig
    from ..inference.diagnostics import gate
    from ..models.population import fit_population, population_contrasts
    from ..models.registry import model_def

    if not contrasts or not model_def(method).population:
        return []
    kw = dict(fit_kwargs or {})
    sampler = kw.pop("sampler", None)
    first = kw.pop("seed", getattr(sampler, "seed", 0))
    start = InferenceConfig.refit_target_accept
    if hasattr(sampler, "updated"):  # a SamplerConfig (the sweep's), else a sampler's name
        kw["sampler"] = sampler.updated(target_accept=start)
    else:
        kw["target_accept"] = start
        if sampler:
            kw["sampler"] = sampler
    kw["seed"] = int(first or 0) + seed
    rows = []
    for c in contrasts:
        dt = fit_population(ds, method, c, **kw)
        verdict = gate(dt)
        note = (
            "gate passed" if verdict["passed"] else "gate failed: " + "; ".join(verdict["reasons"])
        )
        rule = dict(stable_run=stable_run, censor_day=cens, seed=int(base.get("seed", 0)))
        tabs = {
            lv: population_contrasts({dt.attrs["contrast"]: dt}, [c], lv, **rule) for lv in LEVELS
        }
        for q, r95 in tabs[0.95].set_index("quantity").iterrows():
            if np.isnan(r95["median"]):
                continue
            r90 = tabs[0.9].set_index("quantity").loc[q]
            alt = str(r95["alternative"])
            p_gt = float(r95["p_gt_0"])
            stat = {"less": 1 - p_gt, "greater": p_gt}.get(alt, max(p_gt, 1 - p_gt))
            pop = population_truth(ds, c, q)
            bounds = {
                "low_95": r95["ci_low"],
                "high_95": r95["ci_high"],
                "low_90": r90["ci_low"],
                "high_90": r90["ci_high"],
            }
            rows.append(
                {
                    **base,
                    "method": f"{method}{POPULATION}",
                    "kind": "contrast",
                    "quantity": q,
                    "item": r95["name"],
                    "alternative": alt,
                    "stat": stat,
                    "reject": bool(r95["ci_low"] > 0 or r95["ci_high"] < 0),
                    "estimate": float(r95["median"]),
                    "truth": pop,
                    "truth_diff": pop,
                    **{k: float(v) for k, v in bounds.items()},
                    "note": note,
                }
            )
    return rows


__all__ = ["grouped_population_rows"]
