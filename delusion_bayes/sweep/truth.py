"""The truth a simulated study was drawn from, in the units the analyses report: the
noise-free ratings and milestones of its latent stage, the logistic parameters it was simulated
with, and the population group difference a contrast estimates (the coverage study scores every
method against these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from ..data.schema import STAGE_CUTPOINTS
from .coverage_metrics import LATENCIES


def noise_free_rating(stage: xr.DataArray, cutpoints: Sequence[float]) -> xr.DataArray:
    """``1 + sum_j [stage > c_j]``: the rating of a rater without severity or noise (NaN kept)."""
    cuts = np.asarray(cutpoints, dtype=float)
    x = stage.values
    with np.errstate(invalid="ignore"):
        cat = 1.0 + (x[..., None] > cuts).sum(axis=-1)
    return stage.copy(data=np.where(np.isnan(x), np.nan, cat))


def true_milestones(stage: xr.DataArray, ds: xr.Dataset, stable_run: int, censor_day: Any):
    """Milestones of the noise-free rating of ``stage`` (the simulator's cutpoints)."""
    from ..baselines import milestones

    cuts = ds["true_cutpoints"].values if "true_cutpoints" in ds else STAGE_CUTPOINTS
    return milestones(noise_free_rating(stage, cuts), stable_run=stable_run, censor_day=censor_day)


def true_quantities(
    ds: xr.Dataset, *, stable_run: int = 3, censor_day: int | None = None
) -> xr.Dataset:
    """The estimands of a simulated study per model (see the module docstring); ValueError
    when the study carries no truth (``true_L, true_k, true_t50, true_stage``)."""
    missing = [v for v in ("true_L", "true_k", "true_t50", "true_stage") if v not in ds.data_vars]
    if missing:
        raise ValueError(
            f"the study has no truth variables {missing}: the coverage study needs a simulated "
            "study (delusion_bayes.data.simulate_study)"
        )
    ms = true_milestones(ds["true_stage"], ds, stable_run, censor_day)
    out = xr.Dataset(
        {
            "L": ds["true_L"],
            "k": ds["true_k"],
            "t50": ds["true_t50"],
            **{m: ms[m] for m in LATENCIES},
        }
    )
    if "true_regime" in ds:
        out["regime"] = ds["true_regime"]
    return out


def population_truth(ds: xr.Dataset, contrast: Any, quantity: str) -> float:
    """The true population difference ``mu_A - mu_B`` of a simulated study: 0 on the ``null``
    preset (one exchangeable population); with its ``group_shift`` override the shift of
    ``t50`` for a contrast of the shifted group against the rest of its ``by`` (NaN for other
    quantities, whose population difference has no closed form, and for contrasts on another
    attribute); NaN on other presets (their models are fixed, not drawn from populations)."""
    import json

    from ..baselines.permutation import as_contrast

    if ds.attrs.get("preset") != "null":
        return np.nan
    shift = json.loads(ds.attrs["group_shift"]) if "group_shift" in ds.attrs else {}
    if not shift:
        return 0.0
    c = as_contrast(contrast)
    if c.by != shift["by"] or quantity != "t50":
        return np.nan
    level, d = str(shift["level"]), float(shift.get("t50", 0.0))
    a = {str(v) for v in c.a}
    b = {str(v) for v in c.b} if c.b is not None else {str(v) for v in ds[c.by].values} - a
    if a == {level}:
        return d
    if b == {level}:
        return -d
    return np.nan


def population_mean_truth(
    ds: xr.Dataset,
    contrast: Any,
    quantity: str,
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    n: int = 20000,
    seed: int = 0,
) -> float:
    """The true difference of population means ``E[q_new | A] - E[q_new | B]`` of a simulated
    ``null``-preset study (the estimand of :func:`delusion_bayes.models.population.
    population_contrasts`), for any quantity: ``t50`` exactly (the populations' means), the
    others by Monte Carlo over ``n`` new chatbots per group drawn from the simulator's
    populations (``data.simulate._null_models``: its ``group_shift`` with ``t50_mean``,
    ``t50_sd``, ``t50_sd_rest``; ``L = 4``, day noise 0.15), rated without noise at the study's
    cutpoints, milestones by the baselines' rules. Monte Carlo SE ~ SD / sqrt(n) (< 0.1 day for
    a milestone at n = 20000). NaN on other presets or for a contrast on another attribute."""
    import json

    from ..baselines import milestones
    from ..baselines.permutation import as_contrast
    from ..data.schema import DAY, MODEL

    if ds.attrs.get("preset") != "null":
        return np.nan
    shift = json.loads(ds.attrs["group_shift"]) if "group_shift" in ds.attrs else {}
    c = as_contrast(contrast)
    if shift and c.by != shift["by"]:
        return np.nan
    level = str(shift.get("level", ""))
    a = {str(v) for v in c.a}
    if shift and a != {level}:
        return np.nan
    mean = float(shift.get("t50_mean", 16.0))
    sd = {"A": float(shift.get("t50_sd", 8.0)), "B": float(shift.get("t50_sd_rest", 8.0))}
    d = {"A": (float(shift.get("t50", 0.0)), float(shift.get("log_k", 0.0))), "B": (0.0, 0.0)}
    if quantity == "t50":
        return d["A"][0]
    rng = np.random.default_rng([int(seed), 53])
    days = np.asarray(ds[DAY].values, float)
    cuts = ds["true_cutpoints"].values if "true_cutpoints" in ds else STAGE_CUTPOINTS
    z = rng.standard_normal((3, n))
    noise = rng.standard_normal((n, days.size)) * 0.15
    means = {}
    for g in ("A", "B"):
        t50 = mean + sd[g] * z[0] + d[g][0]
        k = np.exp(0.6 * z[1] + d[g][1])
        if quantity == "k":
            means[g] = float(k.mean())
            continue
        from scipy.special import expit

        stage = 1.0 + 3.0 * expit(k[:, None] * (days[None, :] - t50[:, None])) + noise
        rating = xr.DataArray(stage, dims=(MODEL, DAY), coords={DAY: days})
        ms = milestones(
            noise_free_rating(rating, cuts), stable_run=stable_run, censor_day=censor_day
        )
        if quantity not in ms:
            return np.nan
        means[g] = float(ms[quantity].mean())
    return means["A"] - means["B"]


def new_conversation_truth(
    ds: xr.Dataset, *, n: int = 20000, stable_run: int = 3, seed: int = 0
) -> xr.Dataset:
    """Per chatbot of a simulated replicated study (``simulate_replicated``), the chatbot-level
    estimands of the conversation-level trajectory models
    (:func:`delusion_bayes.models.conversations.chatbot_draws`) for a NEW conversation, by
    Monte Carlo over ``n`` new conversations (``data.replicated_simulate.
    new_conversation_stages``: new prompt, category and conversation effects, the turn noise,
    the study's mean rater): ``first_clinical``, ``first_stable`` (expected milestone, censored
    at the last turn + 1 like the data; the noise-free rating at the stage cutpoints, the
    baselines' rules) and ``p_never`` (share whose first clinical framing is censored); each
    with its Monte Carlo SE as ``<name>_se``."""
    from ..baselines import milestones
    from ..data.replicated import CONVERSATION, TURN
    from ..data.replicated_simulate import new_conversation_stages
    from ..data.schema import DAY

    stage = new_conversation_stages(ds, n, seed=seed).rename({TURN: DAY})
    ms = milestones(noise_free_rating(stage, STAGE_CUTPOINTS), stable_run=stable_run)
    never = (ms["first_clinical"] >= int(ms.attrs["censor_day"])).astype(float)
    per_conv = {"first_clinical": ms["first_clinical"], "first_stable": ms["first_stable"]}
    per_conv["p_never"] = never
    out = {}
    for name, v in per_conv.items():
        out[name] = v.mean(CONVERSATION)
        out[f"{name}_se"] = v.std(CONVERSATION, ddof=1) / np.sqrt(v.sizes[CONVERSATION])
    return xr.Dataset(out)
