"""``fit(ds, model=...) -> xarray.DataTree``: spec, graph, sampling, log-likelihood, posterior
predictive, and the bookkeeping that keeps missing model-days missing."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL
from ..inference.config import SamplerConfig, sampler_config
from .modelspec import OBS, OBS_LEVEL, CustomGraphSpec, ModelSpec, observation_coords
from .spec import build_spec

log = logging.getLogger(__name__)

#: posterior variables on (model, day) that must be NaN on a model-day nobody rated
MASKED_VARS = ("stage",)
__all__ = ["MASKED_VARS", "FitGateWarning", "checked", "finish_fit", "fit", "fit_spec"]


def fit(
    ds: xr.Dataset,
    model: str = "joint",
    *,
    sampler: SamplerConfig | str | None = None,
    draws: int | None = None,
    tune: int | None = None,
    chains: int | None = None,
    seed: int | None = None,
    cores: int | None = None,
    target_accept: float | None = None,
    adaptation: str | None = None,
    share_graph: bool | None = None,
    reuse: bool | None = None,
    progressbar: bool | None = None,
    priors: Mapping[str, Any] | None = None,
    trajectory: str = "logistic",
    cutpoints: str = "rater",
    group_terms: Sequence[str] = (),
    consensus: str = "median",
    log_likelihood: bool = True,
    log_prior: bool = True,
    posterior_predictive: bool = True,
    cache_dir: str | Path | None = None,
    spec: ModelSpec | CustomGraphSpec | None = None,
    check: bool | str = False,
) -> xr.DataTree:
    """Fit a registered model (:data:`~delusion_bayes.models.registry.MODELS`: ``joint``,
    ``onset``, ``rater``, ``disengagement``) to a trajectory study, or a replay study with a
    ``spec`` from :func:`delusion_bayes.models.replay.replay_model_spec`.

    ``sampler``: the NUTS settings, a :class:`~delusion_bayes.inference.config.SamplerConfig`
    (the stages pass the ``sampler`` group) or a sampler name; ``draws`` to ``progressbar``
    replace its settings when given (``reuse`` is ``reuse_fits``). ``target_accept=None`` (in
    the config too): the model's own (its definition's). ``priors`` and ``trajectory`` to
    ``consensus``: as in :func:`delusion_bayes.models.build_spec`. ``log_likelihood``,
    ``log_prior``, ``posterior_predictive`` add these groups: ``log_likelihood`` holds ``y`` (one
    term per rating given the latent) and, for the marginal models, ``y_model_day``
    (:mod:`delusion_bayes.models.marginal`); ``log_prior`` one ``(chain, draw)`` variable per
    top-level prior term (:mod:`delusion_bayes.models.sensitivity`). ``cache_dir``: the compile
    cache's root (default ``$DELUSION_BAYES_CACHE`` or ``~/.cache/delusion_bayes``); ``spec``: a
    ready spec (then ``model``, ``priors`` and the variant arguments are ignored); ``reuse``: look
    the fit up in ``<cache_dir>/fits`` first and store it there after sampling (a hit,
    ``attrs["fit_reused"]``, is this call's fit bit for bit: ``inference/cache.py``);
    ``share_graph``: one compile per structure for loops over same-shaped studies, else this
    study's graph with its data frozen in (:class:`~delusion_bayes.inference.config.SamplerConfig`).

    Returns an ``xarray.DataTree``: groups ``posterior`` (``L``, ``k``, ``t50`` on dim ``model``
    for the onset models, with the study's model coords), ``sample_stats``, ``log_likelihood``,
    ``log_prior``, ``posterior_predictive``, ``observed_data``. Observations live on dim ``obs``
    with coords ``obs_rater``, ``obs_model``, ``obs_day``; the latent ``stage (model, day)`` is
    NaN on model-days nobody rated. ``attrs`` hold the model name, variant and spec hash.
    ``check``: the command line's gate; a failed fit warns or raises (:func:`checked`)."""
    from ..inference.cache import configure_pytensor_cache

    nuts = dict(draws=draws, tune=tune, chains=chains, seed=seed, cores=cores, reuse=reuse)
    scfg = sampler_config(sampler, **nuts, target_accept=target_accept, adaptation=adaptation,
                          share_graph=share_graph, progressbar=progressbar)  # fmt: skip
    compiledir = configure_pytensor_cache(cache_dir)  # before PyTensor's first import
    t0 = time.perf_counter()
    if spec is None:
        spec = fit_spec(
            ds,
            model,
            priors=priors,
            consensus=consensus,
            trajectory=trajectory,
            cutpoints=cutpoints,
            group_terms=group_terms,
        )
    scfg = scfg.updated(target_accept=scfg.target_accept or spec.definition.target_accept)
    groups = _Groups(log_likelihood, log_prior, posterior_predictive)
    key = _fit_cache_key(spec, scfg, groups) if scfg.reuse_fits else None
    cached = _cached_fit(key, spec, cache_dir, compiledir, t0) if key is not None else None
    if cached is not None:
        return cached
    dt = _sample_with_groups(spec, scfg, groups, cache_dir, compiledir, t0)
    if key is not None:
        _store_fit(dt, key, cache_dir)
    return checked(dt, check) if check else dt


class FitGateWarning(UserWarning):
    """A fit returned by :func:`fit` with ``check=True`` failed its diagnostics gate."""


def checked(dt: xr.DataTree, check: bool | str) -> xr.DataTree:
    """``dt`` with the verdict of the command line's diagnostics gate
    (:func:`delusion_bayes.inference.diagnostics.gate`: R-hat, ESS, divergences, E-BFMI) in
    ``attrs["gate_passed"]``; a failure warns (:class:`FitGateWarning` naming the reasons) or,
    with ``check="raise"``, raises :class:`~delusion_bayes.inference.diagnostics.BadFitError`.
    Off by default: loops that gate their own fits (the stages, SBC, coverage) would pay twice;
    the command line also refits a failing fit (``inference.refit_*``), which ``fit`` does not."""
    import warnings

    from ..inference.diagnostics import BadFitError, gate

    g = gate(dt)
    dt.attrs["gate_passed"] = bool(g["passed"])
    if not g["passed"]:
        msg = (
            f"the fit of {dt.attrs.get('model', 'this model')} failed its diagnostics gate: "
            f"{'; '.join(g['reasons'])}. Do not use its numbers: refit with more draws or a "
            "higher target_accept (the command line does so by itself)."
        )
        if check == "raise":
            raise BadFitError(msg)
        warnings.warn(msg, FitGateWarning, stacklevel=3)
    return dt


def fit_spec(
    ds: xr.Dataset,
    model: str,
    *,
    priors: Mapping[str, Any] | None = None,
    consensus: str = "median",
    trajectory: str = "logistic",
    cutpoints: str = "rater",
    group_terms: Sequence[str] = (),
    **_: Any,
) -> ModelSpec:
    """The spec :func:`fit` builds for ``model`` from its own keyword arguments (the sampler's
    and the groups' are ignored): the compile prefetch builds the same graphs from it."""
    variant = dict(trajectory=trajectory, cutpoints=cutpoints, group_terms=group_terms)
    return build_spec(ds, model, priors, consensus=consensus, **variant)


def _store_fit(dt: xr.DataTree, key: str, cache_dir: Any) -> None:
    from ..inference.cache import save_fit

    save_fit(dt, key, cache_dir)


@dataclass(frozen=True)
class _Groups:
    """Which optional groups a fit gets."""

    log_likelihood: bool
    log_prior: bool
    posterior_predictive: bool


def _fit_cache_key(spec: ModelSpec | CustomGraphSpec, scfg: SamplerConfig, groups: _Groups) -> str:
    """The key of this fit in ``<cache_dir>/fits``
    (:func:`delusion_bayes.inference.cache.fit_key`)."""
    from ..inference.cache import fit_key

    settings = dict(
        sampler=scfg.name,
        draws=scfg.draws,
        tune=scfg.tune,
        chains=scfg.chains,
        seed=scfg.seed,
        target_accept=scfg.target_accept,
        adaptation=scfg.adaptation,
        share_graph=scfg.share_graph,
        log_likelihood=groups.log_likelihood,
        log_prior=groups.log_prior,
        posterior_predictive=groups.posterior_predictive,
    )
    return fit_key(spec.hash(), settings)


def _cached_fit(
    key: str, spec: ModelSpec | CustomGraphSpec, cache_dir: Any, compiledir: Any, t0: float
) -> xr.DataTree | None:
    """The stored fit of ``key`` with this call's bookkeeping attrs, or None."""
    from ..inference.cache import compiled_kernels, load_fit

    cached = load_fit(key, cache_dir)
    if cached is None:
        return None
    log.info("reusing the cached fit %s of %s", key, spec.variant)
    cached.attrs.update(
        fit_reused=1,
        fit_time=time.perf_counter() - t0,
        after_sampling_time=0.0,
        compile_cache_found=len(compiled_kernels(compiledir)),
        compile_cache_written=0,
    )
    return cached


def _sample_with_groups(
    spec: ModelSpec | CustomGraphSpec,
    scfg: SamplerConfig,
    groups: _Groups,
    cache_dir: Any,
    compiledir: Any,
    t0: float,
) -> xr.DataTree:
    """Build the graph, sample it and add the requested groups and the bookkeeping attrs
    (``fit_time`` since ``t0``, compiled kernels found and written)."""
    from ..inference.cache import compiled_kernels, kernels_written
    from ..inference.sampling import sample
    from .build import model_for

    pm_model, graph_key = model_for(spec)
    log.info(
        "fitting %s (%s, %d chains x %d draws)", spec.variant, scfg.name, scfg.chains, scfg.draws
    )
    kernels = compiled_kernels(compiledir)
    # the graph nutpie compiles: the structure, or with the data frozen in, this spec
    graph = graph_key if scfg.share_graph else spec.hash()
    dt = sample(pm_model, scfg, cache_dir=cache_dir, key=graph_key, label=spec.variant, graph=graph)
    t_sampled = time.perf_counter()
    if "constant_data" in dt.children:  # the spec's arrays (pm.Data): in the spec, not the fit
        del dt["constant_data"]
    prior_group = _log_prior(dt, pm_model, spec) if groups.log_prior else None
    if isinstance(spec, CustomGraphSpec):
        dt = spec.finish(dt, seed=scfg.seed, log_likelihood=groups.log_likelihood)
    else:
        dt = _add_trajectory_groups(dt, pm_model, spec, scfg.seed, groups)
    if prior_group is not None:
        dt["log_prior"] = xr.DataTree(prior_group)
    written = kernels_written(kernels, compiled_kernels(compiledir))
    log.info(
        "compile cache %s: %d kernel(s) found there, %d written by this fit%s",
        compiledir,
        len(kernels),
        written,
        " (the model was compiled already)" if kernels and not written else "",
    )
    if not isinstance(spec, CustomGraphSpec):
        dt = finish_fit(dt, spec)
    if compiledir is not None and dt["posterior"].attrs.get("sampler") == "nutpie":
        marker = _compile_marker(spec, scfg, groups, compiledir)
        marker.parent.mkdir(exist_ok=True)
        marker.touch()
    dt.attrs.update(
        fit_time=time.perf_counter() - t0,
        after_sampling_time=time.perf_counter() - t_sampled,
        compile_cache_found=len(kernels),
        compile_cache_written=written,
        fit_reused=0,
    )
    return dt


def compile_marker(
    spec: ModelSpec | CustomGraphSpec,
    *,
    sampler: SamplerConfig | str | None = None,
    share_graph: bool | None = None,
    log_likelihood: bool = True,
    log_prior: bool = True,
    posterior_predictive: bool = True,
    cache_dir: str | Path | None = None,
    **_: Any,
) -> Path:
    """The file that says a nutpie fit of ``spec`` with these settings (:func:`fit`'s, the
    others ignored) ran to its end here, and so compiled everything it needs into the cache
    (:func:`delusion_bayes.inference.cache.compiled_marker`)."""
    from ..inference.cache import configure_pytensor_cache

    scfg = sampler_config(sampler, share_graph=share_graph)
    groups = _Groups(log_likelihood, log_prior, posterior_predictive)
    return _compile_marker(spec, scfg, groups, configure_pytensor_cache(cache_dir))


def _compile_marker(spec, scfg: SamplerConfig, groups: _Groups, compiledir: Any) -> Path:
    from dataclasses import asdict

    from ..inference.cache import compiled_marker

    settings = {"sampler": scfg.name, "share_graph": scfg.share_graph, **asdict(groups)}
    return compiled_marker(compiledir, spec.hash(), settings)


def _add_trajectory_groups(
    dt: xr.DataTree, pm_model: Any, spec: ModelSpec, seed: int, groups: _Groups
) -> xr.DataTree:
    """The latent stage, log-likelihood and posterior predictive of a trajectory-study fit:
    drawn after sampling (numba, :mod:`.latent`) for the models that integrate the stage out,
    else from the graph and the definition's ``predictive``."""
    from .latent import add_latent_groups

    if spec.integrates_stage:
        t1 = time.perf_counter()
        dt = add_latent_groups(
            dt,
            spec,
            seed=seed,
            log_likelihood=groups.log_likelihood,
            posterior_predictive=groups.posterior_predictive,
        )
        log.info("latent stage drawn, log-likelihood and PPC: %.1f s", time.perf_counter() - t1)
        return dt
    if groups.log_likelihood:
        import pymc as pm

        from .build import start_values_cleared

        # the rebuilt graph refuses start values (blocks._t50's, for the sampler only)
        with start_values_cleared(pm_model):
            dt = pm.compute_log_likelihood(dt, model=pm_model, progressbar=False)
    if groups.posterior_predictive and spec.definition.predictive is not None:
        dt = spec.definition.predictive(dt, spec, seed=seed + 1)
    return dt


def _log_prior(
    dt: xr.DataTree, pm_model: Any, spec: ModelSpec | CustomGraphSpec
) -> xr.Dataset | None:
    """The ``log_prior`` group (:func:`delusion_bayes.models.sensitivity.log_prior_dataset`
    over the spec's top-level prior terms); a failure is a warning, never a lost fit."""
    from .sensitivity import log_prior_dataset, prior_terms

    t1 = time.perf_counter()
    try:
        ds = log_prior_dataset(dt, pm_model, prior_terms(pm_model, spec.priors))
    except Exception as err:  # noqa: BLE001 - a diagnostic's input must not cost the fit
        log.warning(
            "log prior of %s not computed (no sensitivity check): %s: %s",
            spec.variant,
            type(err).__name__,
            err,
        )
        return None
    log.info("log prior (%d terms): %.1f s", len(ds.data_vars), time.perf_counter() - t1)
    return ds


def finish_fit(dt: xr.DataTree, spec: ModelSpec) -> xr.DataTree:
    """Keep the used entries of the sampling coordinates, mask missing model-days, attach
    obs/model coords and spec attrs."""
    post = _used_coordinates(dt["posterior"].to_dataset(), spec)
    missing = xr.DataArray(
        spec.missing, dims=(MODEL, DAY), coords={MODEL: spec.coords[MODEL], DAY: spec.coords[DAY]}
    )
    for v in MASKED_VARS:
        if v in post:
            post[v] = post[v].where(~missing)
    if MODEL in post.dims:
        post = post.assign_coords({k: (MODEL, np.asarray(v)) for k, v in spec.model_coords.items()})
    dt["posterior"] = xr.DataTree(post)
    coords = observation_coords(spec)
    for group in ("observed_data", "posterior_predictive", "log_likelihood"):
        if group in dt.children:
            g = dt[group].to_dataset()
            for dim in (OBS, OBS_LEVEL):
                g = g.assign_coords(coords[dim]) if dim in g.dims else g
            dt[group] = xr.DataTree(g)
    dt.attrs.update(
        model=spec.name,
        variant=spec.variant,
        trajectory=spec.trajectory,
        cutpoints=spec.cutpoints,
        group_terms=",".join(spec.group_terms),
        spec_hash=spec.hash(),
        n_days=int(spec.n_days),
        t50_scale_sampled=int(spec.t50_scale_sampled),
        sampler=str(post.attrs.get("sampler", "")),
    )
    return dt


def _used_coordinates(post: xr.Dataset, spec: ModelSpec) -> xr.Dataset:
    """The posterior with each masked free vector (:func:`~.blocks.sampling_coordinates`) cut
    to the entries the spec's graph uses, numbered from 0 (a vector with none is dropped): the
    other entries are standard normals that stand in for another study's coordinates."""
    from .blocks import sampling_coordinates

    for name, idx in sampling_coordinates(spec).items():
        if name not in post:
            continue
        dim = post[name].dims[-1]
        used = post[name].isel({dim: idx}).drop_vars(dim, errors="ignore")
        post = post.drop_vars([name, dim], errors="ignore")
        if idx.size:
            post[name] = used.assign_coords({dim: np.arange(idx.size)})
    return post
