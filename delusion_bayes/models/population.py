"""Population group contrasts: how the *populations* of chatbots of groups A and B differ, as a
quantity of one posterior: the model refitted with the contrast's grouping
(:func:`population_spec`, :func:`population_contrasts`).

Two questions about one contrast (docs/dev/design-decisions.md, "Two posterior contrasts"): the
finite-sample contrast (:func:`delusion_bayes.models.derived.posterior_contrasts`) asks how the
means of *these N models* differ; the population contrast asks how the means of the two groups'
populations differ, the question of the permutation test.

**The model** (``spec.population``, :func:`delusion_bayes.models.blocks.onset_trajectory`): the
study's model (``joint`` or ``onset``) whose hyper-means are per group ``g`` of
:data:`~delusion_bayes.models.modelspec.POPULATION_GROUPS` (A, B, and the models in neither):

.. math::

    t_{50,m} \\sim N(T \\mu_{t50}[g_m], T \\sigma_{t50}[g_m]), \\quad
    \\log k_m \\sim N(\\mu_{\\log k}[g_m], \\sigma_{\\log k}), \\quad
    \\log(L_m - 1) \\sim N(\\mu_{\\log L1}[g_m], \\sigma_{\\log L1})

(``log k`` on the soft-bounded scale of the joint model), each ``mu[g]`` with the prior of the
shared ``mu`` (independent per group) and, with ``scale="group"`` (default), each group's t50
spread ``sigma_t50[g]`` (:data:`GROUP_T50_SCALE_PRIOR`); log k's and the day noise's spreads
are one for all models (:data:`~delusion_bayes.models.blocks.GROUP_SCALES` says why);
``scale="shared"``: one ``sigma_t50`` for all groups too. ``L``
gets a population (:data:`~delusion_bayes.models.blocks.POPULATION_PRIORS`) so that a new
chatbot's milestone is defined; its spread ``sigma_log_L1`` is fixed at its prior's root mean
square (0.2), as it is not identified when plateaus sit at the ceiling of the ratings (sampled,
it was a funnel: docs/dev/models.md). The other priors are in the fit, so in its
``log_prior``.

**The contrast: the difference of population means**, per posterior draw
``Delta_q = E[q_new | A, theta] - E[q_new | B, theta]``, ``q_new`` the quantity of a NEW chatbot
drawn from the group's population given the hyper-parameters ``theta``:

- ``t50``: ``T (mu_t50[A] - mu_t50[B])`` (days; exact); ``L``: ``E[L] = 1 + exp(mu + sigma^2/2)``
  (exact);
- ``k`` and the milestones: Monte Carlo over :data:`N_NEW` new chatbots per group and draw (the
  same standard normals for both groups): ``L``, ``k``, ``t50`` from the group's population, the
  latent stage ``1 + (L - 1) sigmoid(k (t - t50))`` on the study's days plus day noise from the
  population of day-noise scales (``joint``; ``onset`` has none), rated by a rater without
  severity or noise (``1 + #{stage > c_j}``, ``c = 1.5, 2.5, 3.5``), and its milestones by the
  baselines' rules (:func:`delusion_bayes.baselines.milestones`: ``stable_run``, censored at
  ``censor_day``, default ``n_days + 1``, like the data). A milestone contrast is thus a
  difference of the EXPECTED censored milestone days of a new chatbot of each group.

The interval is the equal-tailed (or HDI) interval of ``Delta_q`` over the posterior draws;
``p_gt_0`` is ``P(Delta_q > 0)``. It is not the difference between one new chatbot of A and one
of B (that would also carry the between-model spread, about sqrt(n) times wider). A quantity
equal in every draw (e.g. every new chatbot censored) gives a NaN row with a note.

The earlier two-stage contrast (:func:`two_stage_contrasts`: a pooled-SD Student-t second stage
outside the model, Box & Tiao 1973, §2.5) is kept for the comparison in docs/validation.md.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats
from scipy.special import expit

from ..data.schema import DAY, K_MAX, MODEL, STAGE_CUTPOINTS
from ..intervals import interval, sample_dims
from .modelspec import POP_GROUP, POPULATION_GROUPS, STEP_K

SAMPLE_DIMS: tuple[str, ...] = ("chain", "draw")
#: at least this many population draws per contrast (t draws per posterior draw are repeated
#: until there are), so the interval's Monte Carlo error stays below the posterior's own
MIN_DRAWS: int = 4000
#: new chatbots per group and posterior draw for the Monte Carlo population means (k,
#: milestones): the Monte Carlo SD of a group mean is the population SD / 10, which widens a
#: 6-model group's interval by ~3%
N_NEW: int = 100
#: posterior draws per Monte Carlo block (memory: block x N_NEW x days)
BLOCK: int = 200
COLUMNS = ("name", "quantity", "median", "ci_low", "ci_high", "p_gt_0", "mean", "n_a", "n_b")
#: the ``estimand`` column of ``contrasts_population.csv``
ESTIMAND = "difference of population means"
SCALES = ("group", "shared")
#: each group's t50 spread in a ``scale = "group"`` fit (units of ``n_days``: median 8 days of
#: 30, 68% within 3.8-17). A HalfNormal(0.5) (flat below ~15 days; the models' former
#: default) made the groups' mean difference over-cover: the normal model with the t50s
#: censored at the window (experiments/bench/scale_prior_check.py, 6 vs 9 chatbots, 3,000
#: studies per scenario)
#: covers 0.978 / 0.977 / 0.973 at 95% (exchangeable / unequal / never) under it. Jeffreys'
#: 1/sigma (the Behrens-Fisher posterior) is calibrated but improper; this prior is 1/sigma
#: times a bump over the spreads a 30-day study shows: 0.970 / 0.962 / 0.953, and 0.969 with
#: power 0.32 (0.24) at an 8-day shift. Zero-avoiding, as sigma_log_k's: LogNormal(6 days, 1),
#: as calibrated, put 14% below 2 days, and an early turner's wall coordinate then mixed badly
#: (shift seed 351 at the main job's draws: R-hat 1.12 after both refits; this prior and the
#: HalfNormal: 0 divergences, R-hat 1.002-1.003 at the first attempt)
GROUP_T50_SCALE_PRIOR: dict = {"dist": "LogNormal", "mu": float(np.log(8 / 30)), "sigma": 0.75}


def population_spec(
    ds: xr.Dataset, model: str, contrast: Any, *, scale: str = "group", **variant: Any
):
    """The spec of ``model`` (``joint`` or ``onset``) with ``contrast``'s grouping
    (module docstring): ``variant`` as :func:`delusion_bayes.models.build_spec`'s keywords
    (``priors``, ``trajectory``, ``cutpoints``, ``consensus``). The group index is data, so
    every contrast of one study shares one compiled graph (its structure key)."""
    from ..baselines.permutation import contrast_groups

    if scale not in SCALES:
        raise ValueError(f"population scale={scale!r}; expected one of {list(SCALES)}")
    mask_a, mask_b = contrast_groups(ds, contrast)
    group = np.where(mask_a, 0, np.where(mask_b, 1, 2))
    priors = variant.pop("priors", None)
    spec = grouped_spec(ds, model, group, POPULATION_GROUPS, scale, priors, **variant)
    if scale == "group":
        # log k non-centred for every model: the shared steepness spread is small (the groups'
        # chatbots turn alike), the non-centred case of geometry.log_k_centring. Measured on
        # unequal seed 360 at the main job's draws, sampler seeds 0 and 1: 0 divergences, R-hat
        # 1.004-1.006, ESS 972-1,405, 92 s; centred by the study's rule (14 turners): 2 and 0
        # divergences, R-hat 1.006-1.013 (sigma_log_k), ESS 488-610, 175-182 s
        spec.data["log_k_centred"] = np.zeros(len(spec.coords[MODEL]), bool)
        if "sigma_t50" not in dict(priors or {}):
            spec.priors["sigma_t50"] = dict(GROUP_T50_SCALE_PRIOR)
    return spec


def grouped_spec(
    ds: xr.Dataset,
    model: str,
    group: Any,
    names: Iterable[str],
    population: str,
    priors: Mapping[str, Any] | None = None,
    **variant: Any,
):
    """``model``'s spec of ``ds`` (``variant``: :func:`delusion_bayes.models.build_spec`'s
    keywords) with its hyper-means grouped: ``group`` (per model, an index into ``names``) as
    ``pop_group``, the plateau's population priors added
    (:data:`~delusion_bayes.models.blocks.POPULATION_PRIORS`, overridable in ``priors``) and
    ``spec.population`` set (which hyper-parameters split: :func:`delusion_bayes.models.blocks.
    _hyper`). Shared by the population contrasts and the conversation level
    (:mod:`delusion_bayes.models.conversations`)."""
    from .blocks import POPULATION_PRIORS
    from .spec import build_spec

    priors = dict(priors or {})
    base = {k: v for k, v in priors.items() if k not in POPULATION_PRIORS}
    spec = build_spec(ds, model, base, **variant)
    if not spec.definition.population:
        raise ValueError(f"model {model!r} has no grouped fit (joint, onset)")
    for k, v in POPULATION_PRIORS.items():
        spec.priors.setdefault(k, dict(priors.get(k, v)))
    spec.data["pop_group"] = np.asarray(group, np.int64)
    spec.coords[POP_GROUP] = list(names)
    spec.population = population
    return spec


def fit_population(
    ds: xr.Dataset,
    model: str,
    contrast: Any,
    *,
    scale: str = "group",
    variant: Mapping[str, Any] | None = None,
    **fit_kwargs: Any,
) -> xr.DataTree:
    """Fit ``model`` with ``contrast``'s grouping (:func:`population_spec`; ``variant``: its
    keywords) by :func:`delusion_bayes.models.fit` (``fit_kwargs``: the sampler's and the
    groups' keywords); ``attrs`` say the scale, the contrast and each model's group."""
    from ..baselines.permutation import as_contrast
    from .fit import fit

    spec = population_spec(ds, model, contrast, scale=scale, **dict(variant or {}))
    dt = fit(ds, model, spec=spec, **fit_kwargs)
    c = as_contrast(contrast)
    dt.attrs.update(
        population=scale,
        contrast=c.name,
        # the whole spec, so that its numbers can be formed again from the fit alone
        contrast_spec=json.dumps(dataclasses.asdict(c), default=str),
        pop_group=[int(g) for g in spec.data.pop_group],
    )
    return dt


def _flat(post: xr.Dataset, name: str, n_groups: int) -> np.ndarray:
    """Posterior variable ``name`` as ``(samples, groups)``: per group, or one value broadcast."""
    da = post[name]
    dims = sample_dims(da, SAMPLE_DIMS)
    extra = [d for d in da.dims if d not in dims]
    x = da.transpose(*dims, *extra).values.reshape(-1, *(da.sizes[d] for d in extra))
    return np.broadcast_to(x if x.ndim == 2 else x.reshape(-1, 1), (x.shape[0], n_groups))


def new_conversation_t50_scale(post: xr.Dataset, n_groups: int) -> np.ndarray:
    """``(samples, groups)``: the SD of a new conversation's t50 around its chatbot's mean, in
    units of the window, at the conversation level: ``sigma_t50`` and, where the chatbots shared
    prompts or categories, their spreads ``sd_t50_<term>`` added in variance, since a new
    conversation runs a new prompt (their total ``sd_t50_total`` where the graph samples it,
    ``blocks._t50_variance_shares``)."""
    if "sd_t50_total" in post:
        return _flat(post, "sd_t50_total", n_groups)
    var = _flat(post, "sigma_t50", n_groups) ** 2
    for name in (str(n) for n in post.data_vars if str(n).startswith("sd_t50_")):
        var = var + _flat(post, name, n_groups) ** 2
    return np.sqrt(var)


def _new_chatbots(
    hyper: dict, g: int, z: np.ndarray, noise: np.ndarray, days: np.ndarray, info: dict
) -> dict:
    """``L``, ``k``, ``t50`` ``(S, n)`` and the latent ``stage`` ``(S, n, days)`` of new
    chatbots of group ``g`` from the standard normals ``z`` ``(4, S, n)`` and the day noise's
    ``noise`` ``(S, n, days)``."""
    h = {k: v[:, g, None] for k, v in hyper.items()}
    L = 1.0 + np.exp(h["mu_log_L1"] + h["sigma_log_L1"] * z[0])
    if "mu_log_k" in h:
        span = K_MAX - info["k_min"]
        a = h["mu_log_k"] + h["sigma_log_k"] * z[1]
        k = info["k_min"] + span * expit(a - np.log(span))
    else:
        k = np.full_like(L, STEP_K)
    t50 = info["T"] * (h["mu_t50"] + h["sigma_t50"] * z[2])
    from .blocks import trajectory_shape

    x = k[..., None] * (days[None, None, :] - t50[..., None])
    shape = trajectory_shape(x, info["trajectory"], clip=np.clip, sigmoid=expit)
    stage = 1.0 + (L - 1.0)[..., None] * shape
    if "mu_log_eps" in h:
        eps = np.exp(h["mu_log_eps"] + h["sigma_log_eps"] * z[3])
        stage = stage + eps[..., None] * noise
    return {"L": L, "k": k, "t50": t50, "stage": stage}


def population_means(
    dt: xr.DataTree,
    quantities: Iterable[str],
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    n_new: int = N_NEW,
    seed: int = 0,
) -> xr.Dataset:
    """Per posterior draw, the population mean of each of ``quantities`` per group of a
    population-contrast fit (module docstring): ``(sample, population_group)``; besides the
    model's quantities and milestones, ``p_never`` (the share of new chatbots whose first
    clinical framing is censored at the window). A quantity the model cannot form (a Level-B
    milestone) is left out."""
    from ..baselines import milestones

    post = dt["posterior"].to_dataset()
    G = post.sizes[POP_GROUP]
    names = ["mu_t50", "sigma_t50", "mu_log_L1", "sigma_log_L1", "mu_log_k", "sigma_log_k"]
    names += ["mu_log_eps", "sigma_log_eps"]
    hyper = {n: _flat(post, n, G) for n in names if n in post}
    if "mu_log_L1_chatbot" in post:  # a conversation level: each chatbot's plateau mean
        hyper["mu_log_L1"] = _flat(post, "mu_log_L1_chatbot", G)
        hyper["sigma_t50"] = new_conversation_t50_scale(post, G)
    days = np.asarray(post[DAY].values, float)
    info = _fit_info(dt, days)
    S = hyper["mu_t50"].shape[0]
    out: dict[str, np.ndarray] = {
        "t50": info["T"] * hyper["mu_t50"],
        "L": 1.0 + np.exp(hyper["mu_log_L1"] + hyper["sigma_log_L1"] ** 2 / 2),
    }
    mc = [q for q in quantities if q not in out]
    if mc:
        rng = np.random.default_rng([int(seed), 53])
        acc: dict[str, np.ndarray] = {}
        for lo in range(0, S, BLOCK):
            part = {k: v[lo : lo + BLOCK] for k, v in hyper.items()}
            n_s = len(part["mu_t50"])
            # the same normals for every group (common random numbers)
            z = rng.standard_normal((4, n_s, n_new))
            noise = rng.standard_normal((n_s, n_new, days.size))
            for g in range(G):
                new = _new_chatbots(part, g, z, noise, days, info)
                rating = 1.0 + (new["stage"][..., None] > np.asarray(STAGE_CUTPOINTS)).sum(-1)
                da = xr.DataArray(rating, dims=("sample", MODEL, DAY), coords={DAY: days})
                ms = milestones(da, stable_run=stable_run, censor_day=censor_day)
                vals = {"k": new["k"], **{m: ms[m].values for m in ms.data_vars}}
                # P(never): a new chatbot's first clinical framing censored at the window
                cens = ms.attrs.get("censor_day", censor_day or int(days.max()) + 1)
                vals["p_never"] = (ms["first_clinical"].values >= cens).astype(float)
                for q in (q for q in mc if q in vals):
                    acc.setdefault(q, np.full((S, G), np.nan))[lo : lo + n_s, g] = vals[q].mean(1)
        out.update(acc)
    keep = {q: v for q, v in out.items() if q in set(quantities)}
    coords = {POP_GROUP: list(post[POP_GROUP].values)}
    return xr.Dataset({q: (("sample", POP_GROUP), v) for q, v in keep.items()}, coords=coords)


def _fit_info(dt: xr.DataTree, days: np.ndarray) -> dict:
    """What the new chatbots' trajectories need from the fit: ``T`` (the t50 unit, the number
    of days), the steepness's soft lower bound and the trajectory variant."""
    from .registry import model_def

    variant = str(dt.attrs.get("variant", ""))
    trajectory = "linear" if "[linear" in variant else "logistic"
    return {
        "T": float(days.size),
        "k_min": model_def(str(dt.attrs["model"])).k_min,
        "trajectory": trajectory,
    }


def population_contrasts(
    fits: Mapping[str, xr.DataTree],
    contrasts: Iterable[Any],
    ci_prob: float = 0.95,
    ci_kind: str = "eti",
    *,
    seed: int = 0,
    stable_run: int = 3,
    censor_day: int | None = None,
) -> pd.DataFrame:
    """The difference of population means ``Delta_q`` (module docstring) of each contrast's
    quantities, from ``fits[contrast name]``, a fit of :func:`population_spec`'s spec.

    ``contrasts``: the permutation tests' specs ``{name, by, a, b, alternative, quantities}``;
    ``seed`` seeds the Monte Carlo new chatbots. Returns a ``pandas.DataFrame``: ``name``,
    ``quantity``, ``median``, ``ci_low``, ``ci_high``, ``p_gt_0`` (P(Delta > 0)), ``mean``,
    ``n_a``, ``n_b``, ``sd`` (posterior SD of Delta), ``alternative``, ``estimand``
    (:data:`ESTIMAND`), ``scale`` (the fit's
    between-model scale: per ``group`` or ``shared``), ``note`` (why a row is NaN),
    ``ci_prob``, ``ci_kind``.
    """
    from ..baselines.permutation import as_contrast

    rows = []
    for spec in contrasts:
        c = as_contrast(spec)
        dt = fits.get(c.name)
        qs = list(c.quantities or [])
        means = None
        if dt is not None:
            means = population_means(
                dt, qs, stable_run=stable_run, censor_day=censor_day, seed=seed
            )
        n_a, n_b = _group_sizes(dt)
        for q in qs:
            row: dict[str, Any] = {
                "name": c.name,
                "quantity": q,
                "n_a": n_a,
                "n_b": n_b,
                "alternative": c.alternative,
                "estimand": ESTIMAND,
                "scale": str(dt.attrs.get("population", "")) if dt is not None else "",
                "note": "",
            }
            rows.append(_contrast_row(row, means, q, ci_prob, ci_kind))
    cols = [*COLUMNS, "sd", "alternative", "estimand", "scale", "note"]
    df = pd.DataFrame(rows, columns=cols)
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def _group_sizes(dt: xr.DataTree | None) -> tuple[int, int]:
    """Models in groups A and B of a population-contrast fit (0, 0 without one)."""
    if dt is None or "pop_group" not in dt.attrs:
        return 0, 0
    g = np.asarray(dt.attrs["pop_group"], int)
    return int((g == 0).sum()), int((g == 1).sum())


def _contrast_row(
    row: dict[str, Any], means: xr.Dataset | None, q: str, ci_prob: float, ci_kind: str
) -> dict[str, Any]:
    """``row`` completed with the summary of ``Delta_q`` (A - B), or NaN and a ``note``."""
    nan = dict.fromkeys(("median", "ci_low", "ci_high", "p_gt_0", "mean", "sd"), np.nan)
    if means is None:
        return {**row, **nan, "note": "no population-contrast fit for this contrast"}
    if q not in means:
        return {**row, **nan, "note": f"{q!r} has no population in this model"}
    diff = means[q].sel({POP_GROUP: "A"}).values - means[q].sel({POP_GROUP: "B"}).values
    if not np.isfinite(diff).all():
        return {**row, **nan, "note": "a group's population mean is not finite in some draws"}
    if np.ptp(diff) == 0:
        note = f"degenerate: Delta = {diff[0]:g} in every draw (e.g. every new chatbot censored)"
        return {**row, **nan, "note": note}
    lo, hi = interval(xr.DataArray(diff, dims="draw"), ci_prob, ci_kind, dims=["draw"])
    return {
        **row,
        "median": float(np.median(diff)),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p_gt_0": float((diff > 0).mean()),
        "mean": float(diff.mean()),
        "sd": float(diff.std()),
    }


def population_delta_draws(
    dt: xr.DataTree,
    contrast: Any,
    *,
    seed: int = 0,
    stable_run: int = 3,
    censor_day: int | None = None,
) -> dict[tuple[str, str, str], xr.DataArray]:
    """``{(quantity, "contrast, population", contrast name): Delta over (chain, draw)}``: the
    difference of population means (A - B) per posterior draw of the grouped fit ``dt``, the
    draws :func:`population_contrasts` summarises (same ``seed``, same Monte Carlo), for the
    power-scaling check of these numbers with the grouped fit's own ``log_prior``. A quantity
    not finite in every draw, or equal in every draw, is left out."""
    from ..baselines.permutation import as_contrast

    c = as_contrast(contrast)
    qs = list(c.quantities or [])
    means = population_means(dt, qs, stable_run=stable_run, censor_day=censor_day, seed=seed)
    post = dt["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    coords = {d: post[d].values for d in ("chain", "draw") if d in post.coords}
    out = {}
    for q in (q for q in qs if q in means):
        diff = means[q].sel({POP_GROUP: "A"}).values - means[q].sel({POP_GROUP: "B"}).values
        if np.isfinite(diff).all() and np.ptp(diff) > 0:
            da = xr.DataArray(diff.reshape(shape), dims=("chain", "draw"), coords=coords)
            out[(q, "contrast, population", c.name)] = da
    return out


def population_draws(
    x: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray, rng: np.random.Generator, reps: int = 1
) -> np.ndarray:
    """Draws of ``mu_A - mu_B`` (module docstring, :func:`population_contrasts`) from per-model
    draws ``x`` ``(n_samples, n_models)``: per posterior draw and replicate,
    ``xbar_A - xbar_B + s_p sqrt(1/n_A + 1/n_B) t``, ``t ~ Student-t(n_A + n_B - 2)``.

    Models with a NaN draw are left out of that draw (NaN if a group is then empty or fewer
    than 3 models remain). Returns ``(n_samples * reps,)``.
    """
    x = np.asarray(x, float)
    xa, xb = x[:, mask_a], x[:, mask_b]
    na, nb = np.isfinite(xa).sum(1), np.isfinite(xb).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = np.nanmean(xa, 1) if xa.size else na * np.nan, np.nanmean(xb, 1)
        ss = np.nansum((xa - ma[:, None]) ** 2, 1) + np.nansum((xb - mb[:, None]) ** 2, 1)
        df = na + nb - 2
        sp = np.sqrt(ss / df)
        se = sp * np.sqrt(1.0 / na + 1.0 / nb)
    ok = (na >= 1) & (nb >= 1) & (df >= 1)
    dfs = np.where(ok, df, 1).astype(float)
    t = stats.t.rvs(np.repeat(dfs, reps), random_state=rng)
    out = np.repeat(ma - mb, reps) + np.repeat(se, reps) * t
    return np.where(np.repeat(ok, reps), out, np.nan)


def two_stage_contrasts(
    quantities: xr.Dataset,
    contrasts: Iterable[Any],
    ci_prob: float = 0.95,
    ci_kind: str = "eti",
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """The two-stage population contrast (kept for comparison; the main job's is
    :func:`population_contrasts`, from a fit with the grouping).

    The quantity: ``mu_A - mu_B``, where ``mu_g`` is the expected value of the quantity (t50, a
    milestone day censored at ``n_days + 1``, a day count) for a NEW chatbot drawn from the
    population of group g. Second stage: the study's models of group g are draws
    ``x_m ~ N(mu_g, sigma^2)`` with one between-model SD ``sigma`` for both groups (as the
    fitted hierarchy has one ``sigma_t50``, ``sigma_log_k`` for all models) and the reference
    prior ``p(mu_A, mu_B, sigma) ∝ 1/sigma``. Given the models' values the posterior is
    ``mu_A - mu_B = xbar_A - xbar_B + s_p sqrt(1/n_A + 1/n_B) t_{n_A+n_B-2}`` with ``s_p`` the
    pooled SD (Box & Tiao 1973, *Bayesian Inference in Statistical Analysis*, §2.5); this is
    drawn per posterior draw of the per-model quantities (``quantities``, the same draws as
    :func:`delusion_bayes.models.derived.posterior_contrasts`), so the interval carries each
    model's measurement uncertainty and the between-model variation. Its 95% interval excludes
    0 in about 5% of studies whose groups share one population (normal populations).

    Why not group terms on the fitted hyper-means (``model.group_terms``): a contrast's groups
    are often two levels (cohort) of 2-6 models, where a group-effect SD is set by its prior;
    and a milestone of a new chatbot needs its plateau ``L``, which has a fixed prior per model
    and no population in these fits (``models.blocks.onset_trajectory``), so it would be
    prior-driven. Caveats: the fit's hierarchy shrinks each model towards the common mean,
    which pulls the difference towards 0 (conservative); censored milestones and never-turners'
    prior-driven t50 are not normal across models; groups of 2-3 give heavy t tails.

    ``contrasts``: the permutation tests' specs ``{name, by, a, b, alternative, quantities}``;
    ``seed`` seeds the t draws (same seed, same table). Returns a ``pandas.DataFrame`` with the
    columns of ``contrasts_posterior.csv``: ``name``, ``quantity``, ``median``, ``ci_low``,
    ``ci_high``, ``p_gt_0`` (P(mu_A > mu_B)), ``mean``, ``n_a``, ``n_b``, ``alternative``,
    ``note`` (why a row is NaN), ``ci_prob``, ``ci_kind``.
    """
    from ..baselines.permutation import as_contrast, contrast_groups

    rng = np.random.default_rng(seed)
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
                "note": "",
            }
            rows.append(_two_stage_row(row, quantities, q, (mask_a, mask_b), rng, ci_prob, ci_kind))
    df = pd.DataFrame(rows, columns=[*COLUMNS, "alternative", "note"])
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def _two_stage_row(
    row: dict[str, Any],
    quantities: xr.Dataset,
    q: str,
    masks: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    ci_prob: float,
    ci_kind: str,
) -> dict[str, Any]:
    """``row`` completed with the posterior summary of quantity ``q``'s population contrast
    between the models of ``masks`` (A, B), or NaN and a ``note`` saying why not."""
    nan = dict.fromkeys(("median", "ci_low", "ci_high", "p_gt_0", "mean"), np.nan)
    if q not in quantities:
        return {**row, **nan, "note": f"{q!r} is not a quantity of this model"}
    if row["n_a"] + row["n_b"] < 3:
        return {**row, **nan, "note": "a population contrast needs >= 3 models"}
    da = quantities[q]
    dims = sample_dims(da, SAMPLE_DIMS)
    x = da.transpose(*dims, MODEL).values.reshape(-1, da.sizes[MODEL])
    reps = max(1, -(-MIN_DRAWS // x.shape[0]))
    diff = population_draws(x, *masks, rng, reps)
    if not np.isfinite(diff).all():
        return {**row, **nan, "note": "a group has no finite value in some draws"}
    lo, hi = interval(xr.DataArray(diff, dims="draw"), ci_prob, ci_kind, dims=["draw"])
    row.update(
        median=float(np.median(diff)),
        ci_low=float(lo),
        ci_high=float(hi),
        p_gt_0=float((diff > 0).mean()),
        mean=float(diff.mean()),
    )
    return row


__all__ = [
    "ESTIMAND",
    "fit_population",
    "population_contrasts",
    "population_delta_draws",
    "population_draws",
    "population_means",
    "population_spec",
    "two_stage_contrasts",
]
