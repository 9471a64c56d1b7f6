"""Derived quantities (draws or tidy summaries) from a fit's posterior; numpy/xarray only.

The *posterior stage category* is the latent stage rounded to the nearest stage in 1-4;
milestones are :func:`delusion_bayes.baselines.milestones` applied draw by draw to it (never
reached = the censoring day ``n_days + 1``). A model-day nobody rated is NaN.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..data.schema import DAY, MODEL, RATER, censor_day
from ..intervals import interval, sample_dims

SAMPLE_DIMS: tuple[str, ...] = ("chain", "draw")
#: onset parameters summarised in ``t50_posterior.csv``
ONSET_PARAMS: tuple[str, ...] = ("L", "k", "t50")


def _posterior(dt: Any) -> xr.Dataset:
    if isinstance(dt, xr.Dataset):
        return dt
    try:
        post = dt["posterior"]
    except KeyError as err:
        raise ValueError("the fit has no 'posterior' group") from err
    return post.to_dataset() if hasattr(post, "to_dataset") else post


def _sample_dims(da: xr.DataArray | xr.Dataset) -> list[str]:
    return sample_dims(da, SAMPLE_DIMS)


def _need(post: xr.Dataset, var: str, what: str) -> xr.DataArray:
    if var not in post:
        raise ValueError(
            f"{what} needs posterior variable {var!r}; the posterior has {sorted(post.data_vars)}"
        )
    return post[var]


def _n_days(dt: Any, post: xr.Dataset) -> int:
    attrs = getattr(dt, "attrs", {}) or {}
    if "n_days" in attrs:
        return int(attrs["n_days"])
    if DAY in post.dims:
        return int(np.max(post[DAY].values))
    raise ValueError("cannot tell the study length: no 'n_days' attr and no 'day' dim")


def _summ(da: xr.DataArray, prob: float, kind: str) -> dict[str, xr.DataArray]:
    lo, hi = interval(da, prob, kind)
    return {"median": da.median(_sample_dims(da), skipna=False), "ci_low": lo, "ci_high": hi}


def stage_category(stage: xr.DataArray) -> xr.DataArray:
    """Latent stage -> nearest stage 1-4 (2.5 -> 3); NaN stays NaN."""
    return np.clip(np.floor(stage + 0.5), 1, 4)


def t50_posterior(dt: Any, ci_prob: float = 0.95, ci_kind: str = "eti") -> pd.DataFrame:
    """Posterior of the onset parameters per model and ``P(t50 > last day)``.

    Returns a ``pandas.DataFrame``: one row per model: ``model``, ``L_median``, ``L_ci_low``,
    ``L_ci_high`` (and the same for ``k`` and ``t50``), ``p_beyond_last_day`` = P(t50 > n_days),
    ``ci_prob``, ``ci_kind``.
    """
    post = _posterior(dt)
    n_days = _n_days(dt, post)
    cols: dict[str, Any] = {
        f"{p}_{k}": v.values
        for p in ONSET_PARAMS
        for k, v in _summ(_need(post, p, "t50_posterior"), ci_prob, ci_kind).items()
    }
    t50 = post["t50"]
    cols["p_beyond_last_day"] = (t50 > n_days).mean(_sample_dims(t50)).values
    df = pd.DataFrame({MODEL: [str(m) for m in post[MODEL].values], **cols})
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def _obs_to_grid(
    values: xr.DataArray, model_idx: Sequence[str], day_idx: Sequence[int], post: xr.Dataset
) -> xr.DataArray:
    """Scatter draws on an observation dim onto ``(chain, draw, model, day)``, NaN elsewhere."""
    models = [str(m) for m in post[MODEL].values]
    days = np.asarray(post[DAY].values)
    mi = np.array([models.index(str(m)) for m in model_idx])
    di = np.searchsorted(days, np.asarray(day_idx))
    dims = _sample_dims(values)
    v = values.transpose(*dims, ...).values
    grid = np.full((*v.shape[:-1], len(models), len(days)), np.nan)
    grid[..., mi, di] = v
    coords = {**{d: values[d].values for d in dims}, MODEL: post[MODEL].values, DAY: days}
    return xr.DataArray(grid, dims=(*dims, MODEL, DAY), coords=coords)


def trajectory_stage(dt: Any, days: Sequence[float] | None = None) -> xr.DataArray:
    """The fit's trajectory ``1 + (L - 1) shape(k (t - t50))`` per draw, model and day (the
    ``onset`` model's stage; not masked), with the shape of the fit's ``trajectory`` variant
    (``attrs["trajectory"]``: the logistic ``sigmoid``, or the ``linear`` ramp;
    :func:`delusion_bayes.models.blocks.trajectory_shape`, the graph's own). ``days`` default to
    the ``day`` coord, else ``1..n_days``."""
    from scipy.special import expit  # no overflow warning far from t50

    from .blocks import trajectory_shape

    post = _posterior(dt)
    L, k, t50 = [_need(post, p, "trajectory_stage").reset_coords(drop=True) for p in ONSET_PARAMS]
    if days is None:
        days = post[DAY].values if DAY in post.coords else np.arange(1, _n_days(dt, post) + 1)
    t = xr.DataArray(np.asarray(days), dims=DAY, coords={DAY: np.asarray(days)})
    attrs = getattr(dt, "attrs", {}) or {}
    variant = str(attrs.get("trajectory", "") or post.attrs.get("trajectory", "") or "logistic")
    shape = trajectory_shape(k * (t - t50), variant, clip=_clip, sigmoid=expit)
    return 1.0 + (L - 1.0) * shape


def _clip(x: xr.DataArray, lo: float, hi: float) -> xr.DataArray:
    return x.clip(lo, hi)


def predicted_levels(dt: Any) -> xr.Dataset | None:
    """Posterior predictive ``level_a``/``level_b`` on ``(chain, draw, model, day)`` from the
    disengagement model's ``level``; ``None`` without it. Unadjudicated model-days are NaN."""
    try:
        pp = dt["posterior_predictive"].to_dataset()
    except (KeyError, AttributeError):
        return None
    if "level" not in pp:
        return None
    lvl = pp["level"]
    post = _posterior(dt)
    grid = _obs_to_grid(lvl, lvl["obs_level_model"].values, lvl["obs_level_day"].values, post)
    return xr.Dataset(
        {"level_a": (grid >= 1).where(grid.notnull()), "level_b": (grid >= 2).where(grid.notnull())}
    )


def posterior_milestones(
    dt: Any,
    *,
    stable_run: int = 3,
    missing: str = "skip",
    censor: int | None = None,
    levels: xr.Dataset | None = None,
) -> xr.Dataset:
    """Milestone latencies and day counts per draw and model from ``stage`` (or the onset
    model's :func:`trajectory_stage`); ``stable_run``, ``missing`` as in
    :func:`delusion_bayes.baselines.milestones`; ``censor`` defaults to ``n_days + 1``,
    ``levels`` (``level_a``/``level_b`` draws) to :func:`predicted_levels`.

    Returns an ``xarray.Dataset``: ``first_clinical``, ``first_stable``, ``days_stage4`` (+
    ``first_level_b``, ``days_level_a``, ``days_level_b`` with levels) over ``(chain, draw,
    model)``; ``attrs["censor_day"]``.
    """
    from ..baselines import milestones

    post = _posterior(dt)
    stage = post["stage"] if "stage" in post else trajectory_stage(dt)
    n_days = _n_days(dt, post)
    cens = censor_day(n_days) if censor is None else int(censor)
    levels = predicted_levels(dt) if levels is None else levels
    kw = {} if levels is None else {"level_b": levels["level_b"], "level_a": levels["level_a"]}
    return milestones(
        stage_category(stage),
        stable_run=stable_run,
        censor_day=cens,
        clinical_at=3,
        stable_at=4,
        missing=missing,
        **kw,
    )


def milestones_table(ms: xr.Dataset, ci_prob: float = 0.95, ci_kind: str = "eti") -> pd.DataFrame:
    """Tidy summary of :func:`posterior_milestones`: one row per model and milestone with
    ``median``, ``ci_low``, ``ci_high``, ``p_censored`` (latencies; NaN for day counts) and
    ``mean``."""
    cens = ms.attrs.get("censor_day")
    rows = []
    for name, da in ms.data_vars.items():
        s = _summ(da, ci_prob, ci_kind)
        mean = da.mean(_sample_dims(da))
        pc = (
            (da >= cens).mean(_sample_dims(da))
            if name.startswith("first_") and cens is not None
            else xr.full_like(mean, np.nan)
        )
        for i, m in enumerate(da[MODEL].values):
            summary = {k: float(s[k].values[i]) for k in ("median", "ci_low", "ci_high")}
            rows.append(
                {
                    MODEL: str(m),
                    "milestone": name,
                    **summary,
                    "p_censored": float(pc.values[i]),
                    "mean": float(mean.values[i]),
                }
            )
    df = pd.DataFrame(rows)
    df["ci_prob"], df["ci_kind"], df["censor_day"] = ci_prob, ci_kind, cens
    return df


def contrast_quantities(dt: Any, ms: xr.Dataset | None = None) -> xr.Dataset:
    """The per-model draws contrasts can use: milestones (if given) plus ``t50``, ``L``, ``k``
    (if in the posterior), all over ``(chain, draw, model)`` with the model coords."""
    post = _posterior(dt)
    out = {p: post[p] for p in ONSET_PARAMS if p in post}
    if ms is not None:
        out.update(ms.data_vars)
    model_coords = {k: post.coords[k] for k in post.coords if post.coords[k].dims == (MODEL,)}
    return xr.Dataset(out).assign_coords(model_coords)


def posterior_contrasts(
    quantities: xr.Dataset, contrasts: Iterable[Any], ci_prob: float = 0.95, ci_kind: str = "eti"
) -> pd.DataFrame:
    """Posterior group contrasts: per draw, mean over the models of group A minus mean over
    group B, for each quantity the contrast lists (``quantities``: draws over ``(chain, draw,
    model)`` with model coords, :func:`contrast_quantities`; ``contrasts``: the permutation
    tests' specs ``{name, by, a, b, alternative, quantities}``).

    Returns a ``pandas.DataFrame``: ``name``, ``quantity``, ``median``, ``ci_low``, ``ci_high``,
    ``p_gt_0`` (posterior probability that A's mean exceeds B's), ``mean``, ``n_a``, ``n_b``,
    ``alternative``, ``note`` (why a row is NaN: a quantity this model does not give).
    """
    from ..baselines.permutation import as_contrast, contrast_groups

    rows = []
    for spec in contrasts:
        c = as_contrast(spec)
        mask_a, mask_b = contrast_groups(quantities, c)
        for q in c.quantities or []:
            row: dict[str, Any] = {
                "name": c.name,
                "quantity": q,
                "n_a": int(mask_a.sum()),
                "n_b": int(mask_b.sum()),
                "alternative": c.alternative,
            }
            if q not in quantities:
                row.update(dict.fromkeys(("median", "ci_low", "ci_high", "p_gt_0", "mean"), np.nan))
                rows.append({**row, "note": f"{q!r} is not a quantity of this model"})
                continue
            da = quantities[q]
            mean_a = da.isel({MODEL: mask_a}).mean(MODEL, skipna=True)
            diff = mean_a - da.isel({MODEL: mask_b}).mean(MODEL, skipna=True)
            lo, hi = interval(diff, ci_prob, ci_kind)
            dims = _sample_dims(diff)
            row.update(
                median=float(diff.median(dims)),
                ci_low=float(lo),
                ci_high=float(hi),
                p_gt_0=float((diff > 0).mean(dims)),
                mean=float(diff.mean(dims)),
                note="",
            )
            rows.append(row)
    cols = ["name", "quantity", "median", "ci_low", "ci_high", "p_gt_0", "mean", "n_a", "n_b"]
    df = pd.DataFrame(rows, columns=[*cols, "alternative", "note"])
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def consensus_posterior(dt: Any) -> pd.DataFrame:
    """Bayesian consensus per model-day: the modal posterior stage category, ``P(stage >= 3)``
    (clinical framing) and the posterior mean of the latent stage. A model-day nobody rated has
    NaN in every column.

    Returns a ``pandas.DataFrame``: ``model``, ``day``, ``modal_stage``, ``p_ge3``, ``p_ge4``,
    ``mean``, ``p1``..``p4``.
    """
    post = _posterior(dt)
    stage = _need(post, "stage", "consensus_posterior")
    dims = _sample_dims(stage)
    cat = stage_category(stage)
    missing = stage.isnull().any(dims)
    probs = xr.concat([(cat == s).mean(dims) for s in (1, 2, 3, 4)], dim="stage_cat")
    modal = probs.argmax("stage_cat") + 1
    out = xr.Dataset(
        {
            "modal_stage": modal.astype(float),
            "p_ge3": (cat >= 3).mean(dims),
            "p_ge4": (cat >= 4).mean(dims),
            "mean": stage.mean(dims),
            **{f"p{s}": probs.isel(stage_cat=s - 1, drop=True) for s in (1, 2, 3, 4)},
        }
    ).where(~missing)
    out = out.reset_coords(drop=True).transpose(MODEL, DAY)
    df = out.to_dataframe().reset_index()
    df[MODEL] = df[MODEL].astype(str)
    return df


def rater_posterior(dt: Any, ci_prob: float = 0.95, ci_kind: str = "eti") -> pd.DataFrame:
    """Rater severity (shift on the stage scale: > 0 scores higher than the latent) and
    discrimination per rater: ``rater``, ``<param>_median/_ci_low/_ci_high/_mean``."""
    post = _posterior(dt)
    raters = _need(post, "severity", "rater_posterior")[RATER].values
    df = pd.DataFrame({RATER: [str(r) for r in raters]})
    for p in ("severity", "discrimination"):
        da = _need(post, p, "rater_posterior")
        for k, v in _summ(da, ci_prob, ci_kind).items():
            df[f"{p}_{k}"] = v.values
        df[f"{p}_mean"] = da.mean(_sample_dims(da)).values
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def reliability_draws(dt: Any) -> xr.Dataset:
    """Posterior reliability of one rater and of the k-rater consensus per draw (the
    ICC(2,1)/ICC(2,k) analogues; math in :mod:`delusion_bayes.models.rater`)."""
    post = _posterior(dt)
    stage = _need(post, "stage", "reliability")
    sev = _need(post, "severity", "reliability")
    disc = _need(post, "discrimination", "reliability")
    v_theta = stage.var([MODEL, DAY], skipna=True)
    v_s = sev.var(RATER)
    v_e = ((np.pi**2 / 3.0) / disc**2).mean(RATER)
    k = sev.sizes[RATER]
    return xr.Dataset(
        {
            "reliability_single": v_theta / (v_theta + v_s + v_e),
            "reliability_consensus": v_theta / (v_theta + (v_s + v_e) / k),
        }
    ).reset_coords(drop=True)


def reliability_posterior(dt: Any, ci_prob: float = 0.95, ci_kind: str = "eti") -> pd.DataFrame:
    """Summary of :func:`reliability_draws`: ``quantity``, ``median``, ``ci_low``, ``ci_high``,
    ``mean``, and ``analogue`` (the frequentist statistic it sits next to)."""
    rel = reliability_draws(dt)
    analogue = {"reliability_single": "ICC2", "reliability_consensus": "ICC2k"}
    rows = []
    for q, da in rel.data_vars.items():
        s = {k: float(v) for k, v in _summ(da, ci_prob, ci_kind).items()}
        rows.append(
            {"quantity": q, **s, "mean": float(da.mean(_sample_dims(da))), "analogue": analogue[q]}
        )
    df = pd.DataFrame(rows)
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def p_level_b_table(dt: Any, ci_prob: float = 0.95, ci_kind: str = "eti") -> pd.DataFrame | None:
    """The disengagement model's "recognises but does not act" quantities per model:
    ``p_level_b_at_stage4`` and the model effect ``u`` (``None`` for other models)."""
    post = _posterior(dt)
    if "p_level_b_at_stage4" not in post:
        return None
    df = pd.DataFrame({MODEL: [str(m) for m in post[MODEL].values]})
    for p in ("p_level_a_at_stage4", "p_level_b_at_stage4", "u"):
        if p in post:
            for k, v in _summ(post[p], ci_prob, ci_kind).items():
                df[f"{p}_{k}"] = v.values
    return df


__all__ = [
    "interval",
    "stage_category",
    "t50_posterior",
    "predicted_levels",
    "trajectory_stage",
    "posterior_milestones",
    "milestones_table",
    "contrast_quantities",
    "posterior_contrasts",
    "consensus_posterior",
    "rater_posterior",
    "reliability_draws",
    "reliability_posterior",
    "p_level_b_table",
]
