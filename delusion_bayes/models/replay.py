r"""Hierarchical logistic prevalence model of a replay study, fitted on binomial counts.

The Bayesian counterpart of :func:`delusion_bayes.baselines.replay.replay_prevalence`
(DelusionEval, Moore et al. 2026, arXiv:2608.05004). For a cell ``i`` (conversation ``c``,
participant ``p``, model ``m``, effect ``e`` = code or category, depth bin, prior-content bin)
with ``y_i`` hits out of ``n_i`` scored samples:

.. math::

    y_i &\sim \mathrm{Binomial}(n_i, \mathrm{logit}^{-1}\eta_i) \\
    \eta_i &= \theta_{m e} + u_p + v_c
             + \beta_{m g}\, x^{depth}_i + \gamma_{m g}\, (x^{prior}_i - \bar x^{prior}) \\
    u &\sim \mathrm{ZeroSumNormal}(\sigma_p), \quad v \sim \mathrm{ZeroSumNormal}(\sigma_c)
      \quad\text{(centred: each conversation holds thousands of verdicts)}

with ``g`` the category of effect ``e`` (codes without a category form their own group),
``x^depth = (context_depth - 10) / 10`` and ``x^prior`` the share of the original transcript's
earlier assistant turns in the prompt that showed the code
(:func:`delusion_bayes.data.replay.prior_content`). Samples are aggregated into cells on binned
covariates (with their rows' mean covariates); the original's rows count once per user turn.

Sampling coordinates (an exact change of variables, tested in ``tests/replay/test_bayes.py``):
the data pin each conversation's total intercept ``u_p + v_c`` but not its split, and ``theta``
is correlated with the uncentred slopes (``docs/dev/design-notes.md#modelsreplaypy``), so NUTS
moves in

.. math::

    \tilde\theta_{me} &= \theta_{me} + \beta_{mg}\bar x^{depth}_{me}
        + \gamma_{mg}\bar x^{prior}_{me} + s, \qquad
        s = \tfrac1C \textstyle\sum_c u_{p(c)} \\
    a_c &= u_{p(c)} + v_c - s \quad(\textstyle\sum_c a_c = 0)

(``theta_centred`` and ``conversation_total_zerosum``, the ``C - 1`` zero-sum coordinates of
``a``, both flat) next to ``u_participant``, the slopes and scales, with ``\bar x_{me}`` the
cell-size-weighted covariate means of model ``m`` and effect ``e``. Then
``eta = theta_centred + a_c + beta (x^depth - xbar^depth) + gamma (x^prior - xbar^prior)``; the
priors are evaluated on the deterministic ``theta`` and ``v = a + s - u_{p(c)}``. The map is
linear and unit-triangular (no Jacobian). The binomial likelihood is written
``y eta - n softplus(eta) + log C(n, y)`` (as ``pm.Binomial``, half its gradient cost).

The prevalences (the intercepts integrated out) and contrasts are derived after sampling:
:mod:`delusion_bayes.models.replay_posterior`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replay_prior import prior_content_array
from ..data.replay_schema import (
    CATEGORY,
    CODE,
    DEPTH_CENTER,
    DEPTH_UNIT,
    MODEL,
    NO_CATEGORY,
    ORIGINAL,
    SAMPLE,
)
from ..inference.config import SamplerConfig
from .definition import ModelDef
from .priors import make_dist, make_rv, prior_table
from .replay_posterior import (
    UNCATEGORISED,
    finish_replay_fit,
    log_binomial_coefficients,
    replay_posterior_contrasts,
    replay_posterior_prevalence,
    reported_replay_vars,
)

__all__ = [
    "REPLAY_PRIORS",
    "ReplayModelSpec",
    "build_replay_model",
    "finish_replay_fit",
    "fit_replay_model",
    "replay_model_spec",
    "replay_posterior_contrasts",
    "replay_posterior_prevalence",
    "reported_replay_vars",
]

#: default priors (logit scale) in one table
REPLAY_PRIORS: dict[str, dict[str, Any]] = {
    "theta": {"dist": "Normal", "mu": -2.0, "sigma": 2.0},
    "beta_depth": {"dist": "Normal", "mu": 0.0, "sigma": 0.5},
    "gamma_prior": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    "sigma_participant": {"dist": "HalfNormal", "sigma": 1.0},
    "sigma_conversation": {"dist": "HalfNormal", "sigma": 1.0},
}

#: the replay prevalence model's definition; its spec carries it (:class:`ReplayModelSpec`
#: brings its own graph, so no builder here, and it is fitted from a replay study, not by name)
DEFINITION = ModelDef(
    name="replay_prevalence",
    build=None,
    priors=REPLAY_PRIORS,
    math=__doc__,
    study="replay",
    marginal=False,
    inputs=frozenset(),
    target_accept=0.9,
)


@dataclass
class ReplayModelSpec:
    """Everything the graph needs, inspectable without PyMC."""

    level: str
    coords: dict[str, list[str]]
    cells: pd.DataFrame  # one row per cell: indices, covariates, hits, n
    effect_group: np.ndarray  # (effect,) slope-group index of each effect
    priors: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(REPLAY_PRIORS))
    #: one clustering level (one conversation per participant): one cluster intercept
    #: ``u_conversation``, no participant level (two variance components are not identified)
    single_level: bool = False
    name: str = DEFINITION.name

    @property
    def definition(self) -> ModelDef:
        """The model's definition (its sampler default: ``target_accept``)."""
        return DEFINITION

    @property
    def variant(self) -> str:
        return f"{self.name}[{self.level}]"

    def build(self):
        """The PyMC model (:func:`build_replay_model`); ``models.fit`` calls it."""
        return build_replay_model(self)

    def finish(self, tree: xr.DataTree, seed: int = 0, log_likelihood: bool = True):
        """After sampling (:func:`finish_replay_fit`); ``models.fit`` calls it."""
        return finish_replay_fit(tree, self, seed=seed, log_likelihood=log_likelihood)

    @property
    def prior_center(self) -> float:
        """Sample-weighted mean prior content; the graph uses ``prior - prior_center``."""
        n = self.cells["n"].to_numpy(dtype=float)
        return float((self.cells["prior"].to_numpy() * n).sum() / max(n.sum(), 1.0))

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    def prior_table(self) -> pd.DataFrame:
        return prior_table(self.priors)

    def hash(self) -> str:
        """Hash of everything that shapes the compiled graph (the compile cache's key)."""
        h = hashlib.sha256()
        meta = {
            "model": DEFINITION.name,
            "level": self.level,
            "coords": self.coords,
            "priors": self.priors,
            "single_level": self.single_level,
        }
        h.update(json.dumps(meta, sort_keys=True, default=str).encode())
        h.update(pd.util.hash_pandas_object(self.cells, index=True).to_numpy().tobytes())
        h.update(np.ascontiguousarray(self.effect_group).tobytes())
        return h.hexdigest()[:16]


def _quantile_bins(x: np.ndarray, n_bins: int) -> np.ndarray:
    if n_bins <= 1:
        return np.zeros(x.size, dtype=np.int64)
    edges = np.unique(np.quantile(x, np.linspace(0, 1, n_bins + 1)[1:-1]))
    return np.searchsorted(edges, x, side="right").astype(np.int64)


def replay_model_spec(
    ds: xr.Dataset,
    level: str = "code",
    depth_bins: int = 4,
    prior_bins: int = 3,
    baseline: str = ORIGINAL,
    priors: dict[str, dict[str, Any]] | None = None,
) -> ReplayModelSpec:
    """Aggregate a replay Dataset into binomial cells and index arrays.

    ``level``: ``code`` (one ``theta`` per model x code) or ``category`` (codes pooled);
    ``depth_bins``, ``prior_bins``: quantile bins of the covariates forming cells; ``baseline``:
    the original-transcript model (source of prior content, counted once per user turn).
    """
    _check_replay_inputs(ds, level)
    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    n_s, n_m, n_k = hit.shape
    models = [str(m) for m in ds[MODEL].values]
    codes = [str(c) for c in ds[CODE].values]
    cats = [str(c) if str(c) != NO_CATEGORY else UNCATEGORISED for c in ds[CATEGORY].values]
    if baseline in models:
        conv, index, ctx = (ds[c].values for c in ("conversation", "index", "context_depth"))
        prior = prior_content_array(hit[:, models.index(baseline)], conv, index, ctx)
    else:
        prior = np.zeros((n_s, n_k))
    depth = (ds["context_depth"].values.astype(float) - DEPTH_CENTER) / DEPTH_UNIT
    part_codes, part_names = pd.factorize(ds["participant"].values)
    conv_codes, conv_names = pd.factorize(ds["conversation"].values)
    d_bin = _quantile_bins(depth, depth_bins)
    # long table of valid (sample, model, code) rows
    s_i, m_i, k_i = np.nonzero(np.isfinite(hit))
    if baseline in models:
        s_i, m_i, k_i = _first_baseline_rows(ds, models.index(baseline), n_k, s_i, m_i, k_i)
    pr = prior[s_i, k_i]
    effects, e_i, effect_group = _effects(level, codes, cats, k_i)
    long = pd.DataFrame(
        {
            "conversation": conv_codes[s_i],
            "model": m_i,
            "effect": e_i,
            "d_bin": d_bin[s_i],
            "p_bin": _prior_bins(pr, prior_bins),
            "depth": depth[s_i],
            "prior": pr,
            "y": hit[s_i, m_i, k_i],
        }
    )
    cells, conv_part = _binned_cells(long, part_codes, conv_codes)
    coords = {
        "participant": [str(p) for p in part_names],
        "conversation": [str(c) for c in conv_names],
        MODEL: models,
        "effect": effects,
        "group": list(dict.fromkeys(cats)),
    }
    # one level when conversations and participants are the same units (one-to-one)
    single = len(part_names) == len(conv_names) and (
        pd.Series(conv_part).nunique() == len(conv_names)
    )
    merged = _merged_priors(priors)
    return ReplayModelSpec(level, coords, cells, effect_group, merged, single_level=bool(single))


def _binned_cells(long: pd.DataFrame, part_codes: np.ndarray, conv_codes: np.ndarray):
    """One binomial cell per (conversation, model, effect, depth bin, prior bin): hits ``y`` of
    ``n`` and the mean covariates; with each conversation's participant (also returned)."""
    cells = (
        long.groupby(["conversation", "model", "effect", "d_bin", "p_bin"], sort=True)
        .agg(y=("y", "sum"), n=("y", "size"), depth=("depth", "mean"), prior=("prior", "mean"))
        .reset_index()
    )
    conv_part = pd.Series(part_codes).groupby(conv_codes).first().sort_index().to_numpy()
    cells["participant"] = conv_part[cells["conversation"].to_numpy()]
    return cells, conv_part


def _effects(level: str, codes: list[str], cats: list[str], k_i: np.ndarray):
    """The effects (``code``: the codes; ``category``: the code groups), the effect of each row
    with code ``k_i``, and each effect's group index."""
    groups = list(dict.fromkeys(cats))
    if level == "code":
        return codes, k_i, np.array([groups.index(c) for c in cats], dtype=np.int64)
    e_i = np.array([groups.index(cats[k]) for k in k_i], dtype=np.int64)
    return groups, e_i, np.arange(len(groups), dtype=np.int64)


def _check_replay_inputs(ds: xr.Dataset, level: str) -> None:
    if level not in ("code", "category"):
        raise ValueError(f"level must be 'code' or 'category', got {level!r}")
    for c in ("participant", "conversation", "context_depth", "index"):
        if c not in ds.coords:
            raise ValueError(f"the replay model needs the sample coord {c!r}")


def _first_baseline_rows(ds: xr.Dataset, b: int, n_k: int, s_i, m_i, k_i):
    """The rows ``(sample, model, code)`` without the baseline's repeats: the original's
    verdict is per transcript message and code, so its first sample per (user turn, code)."""
    turn_key = pd.factorize(
        pd.Series(ds["conversation"].values.astype(str))
        + "#"
        + pd.Series(ds["index"].values.astype(str))
    )[0]
    is_b = m_i == b
    row_key = turn_key[s_i] * n_k + k_i
    first = np.ones(s_i.size, dtype=bool)
    first[np.flatnonzero(is_b)] = ~pd.Series(row_key[is_b]).duplicated().to_numpy()
    keep = ~is_b | first
    return s_i[keep], m_i[keep], k_i[keep]


def _prior_bins(pr: np.ndarray, prior_bins: int) -> np.ndarray:
    """Bin 0 for no prior content, quantile bins ``1..prior_bins - 1`` of the positive rest."""
    p_bin = np.zeros(pr.size, dtype=np.int64)
    if prior_bins > 1:
        pos = pr > 0
        if pos.any():
            p_bin[pos] = 1 + _quantile_bins(pr[pos], prior_bins - 1)
    return p_bin


def _merged_priors(priors: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """:data:`REPLAY_PRIORS` updated entry-wise by ``priors``; ValueError for an unknown one."""
    merged = dict(REPLAY_PRIORS)
    for name, spec in (priors or {}).items():
        if name not in REPLAY_PRIORS:
            raise ValueError(
                f"unknown replay prior {name!r}; expected one of {list(REPLAY_PRIORS)}"
            )
        merged[name] = {**REPLAY_PRIORS[name], **spec}
    return merged


def _slopes_and_scales(spec: ReplayModelSpec, participant: bool = True) -> tuple:
    """``(beta_depth, gamma_prior, sigma_participant or None, sigma_conversation)``, created in
    this order."""
    p = spec.priors
    beta = make_rv("beta_depth", p["beta_depth"], dims=(MODEL, "group"))
    gamma = make_rv("gamma_prior", p["gamma_prior"], dims=(MODEL, "group"))
    sigma_p = make_rv("sigma_participant", p["sigma_participant"]) if participant else None
    return beta, gamma, sigma_p, make_rv("sigma_conversation", p["sigma_conversation"])


def _design(spec: ReplayModelSpec) -> dict[str, Any]:
    """Index arrays and centred covariates of the cells (shared by the graph and the mapping)."""
    c = spec.cells
    n_m, n_e = len(spec.coords[MODEL]), len(spec.coords["effect"])
    n_g = len(spec.coords["group"])
    n_p, n_c = len(spec.coords["participant"]), len(spec.coords["conversation"])
    m, e = c["model"].to_numpy(), c["effect"].to_numpy()
    # flat 1-d gathers: much cheaper gradients than 2-d advanced indexing
    me, mg = m * n_e + e, m * n_g + spec.effect_group[e]
    conv = c["conversation"].to_numpy()
    n, y, depth = (c[k].to_numpy().astype(float) for k in ("n", "y", "depth"))
    prior = c["prior"].to_numpy().astype(float) - spec.prior_center
    # cell-size-weighted covariate means per (model, effect): theta_centred is the logit there
    w = np.bincount(me, weights=n, minlength=n_m * n_e)
    w = np.where(w > 0, w, 1.0)
    depth_bar = np.bincount(me, weights=n * depth, minlength=n_m * n_e) / w
    prior_bar = np.bincount(me, weights=n * prior, minlength=n_m * n_e) / w
    group_of_me = (np.arange(n_m)[:, None] * n_g + spec.effect_group[None, :]).ravel()
    conv_part = c.groupby("conversation")["participant"].first()
    conv_part = conv_part.reindex(range(n_c)).to_numpy().astype(np.int64)
    conv_per_part = np.bincount(conv_part, minlength=n_p).astype(float)
    return {
        "n_m": n_m,
        "n_e": n_e,
        "n_g": n_g,
        "n_p": n_p,
        "n_c": n_c,
        "me": me,
        "mg": mg,
        "conv": conv,
        "n": n,
        "y": y,
        "depth": depth,
        "prior": prior,
        "depth_bar": depth_bar,
        "prior_bar": prior_bar,
        "group_of_me": group_of_me,
        "conv_part": conv_part,
        "conv_per_part": conv_per_part,
    }


def to_sampling_coordinates(
    spec: ReplayModelSpec,
    theta: np.ndarray,
    beta: np.ndarray,
    gamma: np.ndarray,
    u_participant: np.ndarray,
    u_conversation: np.ndarray,
) -> dict[str, np.ndarray]:
    """``theta_centred`` and the zero-sum ``conversation_total`` of the docstring's parameters:
    the inverse of the graph's deterministic ``theta`` and ``u_conversation``."""
    d = _design(spec)
    shift = d["conv_per_part"] @ u_participant / d["n_c"]
    gm = d["group_of_me"]
    theta_c = (
        np.ravel(theta)
        + np.ravel(beta)[gm] * d["depth_bar"]
        + np.ravel(gamma)[gm] * d["prior_bar"]
        + shift
    )
    total = u_participant[d["conv_part"]] + u_conversation - shift
    return {"theta_centred": theta_c.reshape(d["n_m"], d["n_e"]), "conversation_total": total}


def build_replay_model(spec: ReplayModelSpec):
    """The ``pm.Model`` of the module docstring, in its sampling coordinates (``theta`` and
    ``u_conversation`` deterministic)."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ZeroSumTransform

    if spec.single_level:
        return _build_single_level(spec)
    d = _design(spec)
    n_c, conv_part, conv_per_part = d["n_c"], d["conv_part"], d["conv_per_part"]
    with pm.Model(coords=spec.coords) as model:
        beta, gamma, sigma_p, sigma_c = _slopes_and_scales(spec)
        u_p = pm.ZeroSumNormal("u_participant", sigma=sigma_p, dims="participant")
        # the data pin these two; their priors enter through theta and u_conversation below
        theta_c = pm.Flat("theta_centred", dims=(MODEL, "effect"))
        total_raw = pm.Flat("conversation_total_zerosum", shape=max(n_c - 1, 0))
        total = ZeroSumTransform([-1]).backward(total_raw)  # zero-sum over conversations
        shift = pt.dot(conv_per_part, u_p) / n_c
        u_c = pm.Deterministic(
            "u_conversation", total + shift - u_p[conv_part], dims="conversation"
        )
        pm.Potential(
            "u_conversation_prior",
            pm.logp(pm.ZeroSumNormal.dist(sigma=sigma_c, support_shape=(n_c,)), u_c),
        )
        _theta_and_likelihood(spec, d, theta_c, beta, gamma, shift, total[d["conv"]])
    return model


def _theta_and_likelihood(spec, d: dict, theta_c, beta, gamma, cluster_mean, cluster_dev):
    """Shared by both clusterings: ``theta`` from ``theta_centred`` (minus the covariate means'
    effects and ``cluster_mean`` per model-effect), its prior, and the binomial log-likelihood
    with each data cell's cluster deviation ``cluster_dev``."""
    import pymc as pm
    import pytensor.tensor as pt

    n_m, n_e = d["n_m"], d["n_e"]
    group_of_me, depth_bar, prior_bar = d["group_of_me"], d["depth_bar"], d["prior_bar"]
    me, mg, depth, prior, n, y = d["me"], d["mg"], d["depth"], d["prior"], d["n"], d["y"]
    beta_f, gamma_f = beta.reshape((-1,)), gamma.reshape((-1,))
    theta_flat = (
        theta_c.reshape((-1,))
        - beta_f[group_of_me] * depth_bar
        - gamma_f[group_of_me] * prior_bar
        - cluster_mean
    )
    theta = pm.Deterministic("theta", theta_flat.reshape((n_m, n_e)), dims=(MODEL, "effect"))
    pm.Potential("theta_prior", pm.logp(make_dist(spec.priors["theta"]), theta).sum())
    eta = (
        theta_c.reshape((-1,))[me]
        + cluster_dev
        + beta_f[mg] * (depth - depth_bar[me])
        + gamma_f[mg] * (prior - prior_bar[me])
    )
    pm.Potential(
        "y_loglik",
        pt.dot(y, eta) - pt.dot(n, pt.softplus(eta)) + log_binomial_coefficients(n, y),
    )


def single_level_groups(spec: ReplayModelSpec) -> tuple[np.ndarray, np.ndarray]:
    """``(group of each cluster, group of each effect)`` of the single-level graph: the effects
    when every cluster holds one effect only (DelusionEval's windows), else one group."""
    c = spec.cells
    n_c, n_e = len(spec.coords["conversation"]), len(spec.coords["effect"])
    per = c.groupby("conversation")["effect"].agg(["nunique", "first"]).reindex(range(n_c))
    if per["nunique"].fillna(0).max() <= 1 and per["first"].notna().all():
        return per["first"].to_numpy().astype(np.int64), np.arange(n_e, dtype=np.int64)
    return np.zeros(n_c, dtype=np.int64), np.zeros(n_e, dtype=np.int64)


def _build_single_level(spec: ReplayModelSpec):
    """One clustering level: ``eta = theta + u_c + slopes``, ``u_c ~ Normal(0, sigma_conversation)``
    i.i.d. (``theta`` is the population location). With one effect per cluster an effect's model
    intercepts and its clusters' mean intercept are confounded, so with ``g`` the group (effect)
    of a cluster and ``n_g`` its number of clusters the sampling coordinates are::

        u_c = ubar_g + z_c - zbar_g,   ubar_g ~ Normal(0, sigma / sqrt(n_g)),  z ~ Normal(0, sigma)
        theta_centred[m, e] = theta[m, e] + ubar_e + beta xbar^depth + gamma xbar^prior

    (``u`` keeps its i.i.d. law: a group mean and the deviations are independent; ``zbar_g`` is
    a redundant direction held by its prior).
    """
    import pymc as pm
    import pytensor.tensor as pt

    d = _design(spec)
    n_m, n_c = d["n_m"], d["n_c"]
    grp_c, grp_e = single_level_groups(spec)
    n_grp = int(grp_e.max()) + 1
    size = np.bincount(grp_c, minlength=n_grp).astype(float)
    member = np.zeros((n_grp, n_c))
    member[grp_c, np.arange(n_c)] = 1.0 / size[grp_c]
    grp_of_me = np.tile(grp_e, n_m)
    with pm.Model(coords=spec.coords) as model:
        beta, gamma, _, sigma_c = _slopes_and_scales(spec, participant=False)
        z = pm.Normal("conversation_z", 0.0, sigma_c, dims="conversation")
        ubar = pm.Normal("cluster_group_mean", 0.0, sigma_c / np.sqrt(size), shape=n_grp)
        dev = z - pt.dot(member, z)[grp_c]
        pm.Deterministic("u_conversation", ubar[grp_c] + dev, dims="conversation")
        theta_c = pm.Flat("theta_centred", dims=(MODEL, "effect"))
        _theta_and_likelihood(spec, d, theta_c, beta, gamma, ubar[grp_of_me], dev[d["conv"]])
    return model


def build_reference_model(spec: ReplayModelSpec):
    """The docstring's parameterisation sampled directly (``pm.Binomial``): the model before the
    change of variables, for the exactness test and the benchmark."""
    import pymc as pm

    c, d = spec.cells, _design(spec)
    with pm.Model(coords=spec.coords) as model:
        theta = make_rv("theta", spec.priors["theta"], dims=(MODEL, "effect"))
        beta, gamma, sigma_p, sigma_c = _slopes_and_scales(spec)
        u_p = pm.ZeroSumNormal("u_participant", sigma=sigma_p, dims="participant")
        u_c = pm.ZeroSumNormal("u_conversation", sigma=sigma_c, dims="conversation")
        eta = (
            theta.reshape((-1,))[d["me"]]
            + u_p[c["participant"].to_numpy()]
            + u_c[d["conv"]]
            + beta.reshape((-1,))[d["mg"]] * d["depth"]
            + gamma.reshape((-1,))[d["mg"]] * d["prior"]
        )
        pm.Binomial("y", n=c["n"].to_numpy(), logit_p=eta, observed=c["y"].to_numpy())
    return model


def fit_replay_model(
    ds: xr.Dataset,
    level: str = "code",
    *,
    sampler: SamplerConfig | str | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int | None = None,
    target_accept: float | None = None,
    cores: int | None = None,
    depth_bins: int = 4,
    prior_bins: int = 3,
    baseline: str = ORIGINAL,
    priors: dict[str, dict[str, Any]] | None = None,
    cache_dir: str | Path | None = None,
    reuse: bool | None = None,
    progressbar: bool | None = None,
    adaptation: str | None = None,
    share_graph: bool | None = None,
) -> xr.DataTree:
    """Fit the hierarchical prevalence model through :func:`delusion_bayes.models.fit` (spec:
    :func:`replay_model_spec`): ``sampler`` and ``draws`` to ``share_graph`` as there (the stage
    passes the ``sampler`` group; ``target_accept=None``: the definition's, :data:`DEFINITION`).

    The posterior gains ``category_prevalence (model, category)`` and, at ``level="code"``,
    ``prevalence (model, code)`` (:func:`replay_posterior_prevalence`); ``tree.attrs`` hold the
    sampler, level, cells and diagnostics (``max_rhat``, ``min_ess_bulk``, ``min_ess_tail`` over
    the parameters, the same with suffix ``_prevalence``, ``divergences``).
    """
    from .fit import fit

    spec = replay_model_spec(ds, level, depth_bins, prior_bins, baseline, priors)
    settings = dict(draws=draws, tune=tune, chains=chains, seed=seed, cores=cores)
    settings.update(target_accept=target_accept, adaptation=adaptation, share_graph=share_graph)
    return fit(
        ds,
        spec=spec,
        sampler=sampler,
        **settings,
        cache_dir=cache_dir,
        reuse=reuse,
        progressbar=progressbar,
    )
