"""Power-scaling sensitivity of the REPORTED numbers (issue 28, item 4): t50 per model, the
milestone days, the population and finite-sample contrasts, the consensus (mean stage per
model-day), and for the replay fit its prevalences and deltas, not the raw parameters.

Every reported number is a function of the posterior draws, so the importance weights that
power-scale the prior (or the likelihood) of the fit reweight its per-draw values exactly as
they reweight a parameter (Kallioinen et al. 2024, section 2: the diagnostic applies to any
posterior quantity). :func:`reported_sensitivity` builds one ``(chain, draw)`` draw per reported
number and hands it to ``arviz_stats.psense`` with the fit's ``log_prior`` and
``log_likelihood``. Besides the CJS sensitivity it writes the derivative of the mean in
posterior-SD units (how far the mean moves per doubling of the prior's power) and the Pareto k
of the power-scaling weights: above :data:`K_RELIABLE` the importance-sampling approximation is
unreliable and the row says "refit needed" instead of a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .sensitivity import THRESHOLD, VERDICTS, likelihood_var, power_scale_sense, quiet_psense

#: power-scaling exponents (priorsense's and ``arviz_stats.psense``'s defaults)
ALPHAS = (0.99, 1.01)
#: Pareto k above which PSIS estimates are unreliable (Vehtari et al. 2024, PSIS, for S >= 2000
#: draws the bound min(1 - 1/log10(S), 0.7) is 0.7)
K_RELIABLE = 0.7
REFIT_NEEDED = "refit needed (Pareto k > 0.7)"
COLUMNS = (
    "quantity",
    "kind",
    "item",
    "median",
    "prior",
    "likelihood",
    "prior_mean_shift_sd",
    "likelihood_mean_shift_sd",
    "diagnosis",
    "verdict",
    "pareto_k_prior",
    "pareto_k_likelihood",
    "pareto_k_ok",
    "refit_shift_sd",
    "threshold",
)

Key = tuple[str, str, str]  # (quantity, kind, item)


def _flat(da: xr.DataArray) -> np.ndarray:
    return da.transpose("chain", "draw").values


def fit_reported_draws(
    dt: Any,
    ms: xr.Dataset | None,
    contrasts: Iterable[Any],
    *,
    max_model_days: int | None = None,
) -> dict[Key, xr.DataArray]:
    """``{(quantity, kind, item): draws over (chain, draw)}`` of the numbers a fit reports:
    ``t50`` per model, every milestone of ``ms`` per model, the finite-sample contrasts of
    ``contrasts`` (the population contrasts come from their own grouped fits, with that fit's
    prior: :func:`delusion_bayes.models.population.population_delta_draws`), and the posterior
    mean stage per model-day (consensus; all of them, or the first
    ``max_model_days``). Quantities that are NaN in any draw are left out (a row says why in
    :func:`reported_sensitivity`'s caller)."""
    from ..baselines.permutation import as_contrast, contrast_groups
    from ..data.schema import DAY, MODEL
    from . import derived as d

    post = dt["posterior"].to_dataset()
    out: dict[Key, xr.DataArray] = {}
    if "t50" in post:
        for m in post[MODEL].values:
            out[("t50", "per model", str(m))] = post["t50"].sel({MODEL: m}, drop=True)
    if ms is not None:
        for q in ms.data_vars:
            for m in ms[MODEL].values:
                out[(str(q), "per model", str(m))] = ms[q].sel({MODEL: m}, drop=True)
    contrasts = list(contrasts)
    if contrasts:
        qs = d.contrast_quantities(dt, ms)
        n = qs.sizes[MODEL]
        for spec in contrasts:
            c = as_contrast(spec)
            mask_a, mask_b = contrast_groups(qs, c)
            for q in c.quantities or []:
                if q not in qs or mask_a.sum() == 0 or mask_b.sum() == 0:
                    continue
                x = qs[q].transpose("chain", "draw", MODEL)
                fin = x.isel({MODEL: np.flatnonzero(mask_a)}).mean(MODEL) - x.isel(
                    {MODEL: np.flatnonzero(mask_b)}
                ).mean(MODEL)
                out[(q, f"contrast, these {n} models", c.name)] = fin
    if "stage" in post:
        stage = post["stage"].transpose("chain", "draw", MODEL, DAY)
        cells = [(m, t) for m in stage[MODEL].values for t in stage[DAY].values]
        for m, t in cells[:max_model_days]:
            out[("mean stage", "consensus", f"{m}, day {t}")] = stage.sel(
                {MODEL: m, DAY: t}, drop=True
            )
    return out


def replay_reported_draws(tree: Any, baseline: str | None = None) -> dict[Key, xr.DataArray]:
    """The replay fit's reported draws: the prevalence per model x category (``category_
    prevalence``, else ``prevalence``) and the delta of each model from ``baseline`` (default
    :data:`delusion_bayes.models.replay_posterior.ORIGINAL`) per category."""
    from ..data.schema import MODEL
    from .replay_posterior import ORIGINAL

    baseline = ORIGINAL if baseline is None else baseline
    post = tree["posterior"]
    var = "category_prevalence" if "category_prevalence" in post else "prevalence"
    out: dict[Key, xr.DataArray] = {}
    if var not in post:
        return out
    da = post[var]
    dim = next(x for x in da.dims if x not in ("chain", "draw", MODEL))
    models = [str(x) for x in da[MODEL].values]
    for m in da[MODEL].values:
        for lab in da[dim].values:
            x = da.sel({MODEL: m, dim: lab}, drop=True)
            out[("prevalence", "replay", f"{m}, {lab}")] = x
            if baseline in models and str(m) != baseline:
                base = da.sel({MODEL: baseline, dim: lab}, drop=True)
                out[("delta", "replay", f"{m} - {baseline}, {lab}")] = x - base
    return out


def _weights(
    tree: xr.DataTree, group: str, alphas: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """The Pareto-smoothed, normalised weights ``(chain * draw,)`` of power-scaling ``group`` by
    the lower and the upper alpha: ``arviz_stats.psense``'s own
    (``arviz_stats.psense._get_power_scale_weights``)."""
    from arviz_stats.psense import _get_power_scale_weights

    with quiet_psense():
        pair = _get_power_scale_weights(
            tree, alphas=alphas, group=group, sample_dims=["chain", "draw"]
        )
    return tuple(np.asarray(w.transpose("chain", "draw").values, float).ravel() for w in pair)


def pareto_k(tree: xr.DataTree, group: str, alphas: tuple[float, float] = ALPHAS) -> float:
    """Max over ``alphas`` of the Pareto k of the raw power-scaling importance ratios
    ``(alpha - 1) * log p(.)`` of ``group`` ("prior" or "likelihood"): the reliability of the
    importance-sampling approximation (priorsense's ``pareto_k``)."""
    from arviz_stats.base import array_stats

    comp = tree["log_prior" if group == "prior" else "log_likelihood"].to_dataset()
    total = sum(
        comp[v].sum([x for x in comp[v].dims if x not in ("chain", "draw")]) for v in comp.data_vars
    )
    lp = total.transpose("chain", "draw").values
    ks = [
        float(array_stats.pareto_khat((a - 1) * lp, tail="right", log_weights=True)) for a in alphas
    ]
    return max(ks)


def reported_sensitivity(
    dt: Any,
    draws: Mapping[Key, xr.DataArray],
    *,
    threshold: float = THRESHOLD,
    likelihood: str | None = None,
    alphas: tuple[float, float] = ALPHAS,
) -> pd.DataFrame:
    """Prior and likelihood power-scaling sensitivity of every reported number in ``draws``
    (:func:`fit_reported_draws`, :func:`replay_reported_draws`), with the fit's weights.

    Columns (:data:`COLUMNS`): ``quantity``, ``kind``, ``item``, ``median`` (posterior median of
    the number), ``prior``/``likelihood`` (CJS per log2 of the power, as ``sensitivity.csv``),
    ``prior_mean_shift_sd``/``likelihood_mean_shift_sd`` (d E[x] / d log2(alpha) over the
    posterior SD: about how many SDs the mean moves when the prior's power is doubled),
    ``diagnosis``/``verdict`` (priorsense's, at ``threshold``; ``REFIT_NEEDED`` where the
    component's ``pareto_k`` exceeds :data:`K_RELIABLE`), ``pareto_k_prior``,
    ``pareto_k_likelihood``, ``pareto_k_ok``, ``refit_shift_sd`` (NaN: filled by
    :mod:`delusion_bayes.models.refit` where a refit was run), ``threshold``. A number constant
    over the draws (e.g. a milestone never reached) has sensitivity 0. Raises ValueError
    without ``log_prior``/``log_likelihood`` groups or with a NaN draw.
    """
    like = _scaled_likelihood(dt, likelihood)
    keys = list(draws)
    if not keys:
        return pd.DataFrame(columns=list(COLUMNS))
    values = np.stack([_flat(draws[k]) for k in keys], axis=-1)  # (chain, draw, row)
    bad = [keys[i] for i in np.flatnonzero(~np.isfinite(values).all((0, 1)))]
    if bad:
        raise ValueError(
            f"reported_sensitivity: {len(bad)} reported numbers have NaN draws, "
            f"e.g. {bad[:3]}; leave them out"
        )
    out = _power_scaling(_scaling_tree(dt, values, like), values, alphas)
    df = pd.DataFrame(
        {
            "quantity": [k[0] for k in keys],
            "kind": [k[1] for k in keys],
            "item": [k[2] for k in keys],
            "median": np.median(values.reshape(-1, len(keys)), 0),
            "prior": out["prior"],
            "likelihood": out["likelihood"],
            "prior_mean_shift_sd": out["prior_mean_shift_sd"],
            "likelihood_mean_shift_sd": out["likelihood_mean_shift_sd"],
        }
    )
    df["diagnosis"] = [
        _diagnose(p, lk, threshold) for p, lk in zip(df["prior"], df["likelihood"], strict=True)
    ]
    df["verdict"] = df["diagnosis"].map(VERDICTS).fillna("-")
    df["pareto_k_prior"] = out["pareto_k_prior"]
    df["pareto_k_likelihood"] = out["pareto_k_likelihood"]
    ok = max(out["pareto_k_prior"], out["pareto_k_likelihood"]) <= K_RELIABLE
    df["pareto_k_ok"] = ok
    if not ok:
        df["verdict"] = REFIT_NEEDED
    df["refit_shift_sd"] = np.nan
    df["threshold"] = float(threshold)
    df.attrs.update(likelihood=like)
    return df[list(COLUMNS)]


def _scaled_likelihood(dt: Any, likelihood: str | None) -> str:
    """The ``log_likelihood`` variable to power-scale (``likelihood`` or the fit's own);
    ValueError without the groups the check needs."""
    if "log_prior" not in dt.children or "log_likelihood" not in dt.children:
        raise ValueError(
            "reported_sensitivity needs log_prior and log_likelihood groups; the "
            f"fit has {sorted(dt.children)}"
        )
    like = likelihood or likelihood_var(dt)
    if like is None:
        raise ValueError(
            "reported_sensitivity: no log_likelihood variable to scale in "
            f"{sorted(dt['log_likelihood'].data_vars)}"
        )
    return like


def _scaling_tree(dt: Any, values: np.ndarray, like: str) -> xr.DataTree:
    """The reported numbers as one posterior variable ``x`` (``row``) with the fit's
    ``log_prior`` and the ``like`` log-likelihood: what ``psense`` scales."""
    post = dt["posterior"].to_dataset()
    coords = {
        "chain": post["chain"].values,
        "draw": post["draw"].values,
        "row": np.arange(values.shape[-1]),
    }
    ds = xr.Dataset({"x": (("chain", "draw", "row"), values)}, coords=coords)
    return xr.DataTree.from_dict(
        {
            "posterior": ds,
            "log_prior": dt["log_prior"].to_dataset(),
            "log_likelihood": dt["log_likelihood"].to_dataset()[[like]].reset_coords(drop=True),
        }
    )


def _power_scaling(
    tree: xr.DataTree, values: np.ndarray, alphas: tuple[float, float]
) -> dict[str, Any]:
    """Per component (``prior``, ``likelihood``): the CJS sensitivity of every row
    (``arviz_stats.psense``'s, :func:`.sensitivity.power_scale_sense` over all rows at once), its
    mean shift in posterior SDs per doubling of the power, and the component's Pareto k."""
    flat = values.reshape(-1, values.shape[-1])
    sd = flat.std(0)
    out: dict[str, Any] = {}
    for group in ("prior", "likelihood"):
        weights = _weights(tree, group, alphas)
        with np.errstate(invalid="ignore", divide="ignore"):  # constant x: 0/0, set to 0
            cjs = power_scale_sense(flat, *weights, alphas)
        out[group] = np.nan_to_num(cjs)
        lower, upper = (w @ flat for w in weights)
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = (upper - lower) / np.log2(alphas[1] / alphas[0]) / sd
        out[f"{group}_mean_shift_sd"] = np.where(sd > 0, shift, 0.0)
        out[f"pareto_k_{group}"] = pareto_k(tree, group, alphas)
    return out


def _diagnose(prior: float, like: float, threshold: float) -> str:
    """``arviz_stats.psense_summary``'s diagnosis of one row."""
    if prior >= threshold and like >= threshold:
        return "potential prior-data conflict"
    if prior > threshold > like:
        return "potential strong prior / weak likelihood"
    return "✓"


def moved(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`reported_sensitivity` table that a reader must know about: flagged
    by the verdict, or whose Pareto k makes the approximation unreliable."""
    return df[df["verdict"] != "-"]


__all__ = [
    "ALPHAS",
    "COLUMNS",
    "K_RELIABLE",
    "REFIT_NEEDED",
    "fit_reported_draws",
    "moved",
    "pareto_k",
    "replay_reported_draws",
    "reported_sensitivity",
]
