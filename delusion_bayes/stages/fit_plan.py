"""What the models stage fits, and with which arguments: shared by the stage
(:mod:`.models`) and the compile prefetch (:mod:`.prefetch`), which must compile exactly the
stage's graphs."""

from __future__ import annotations

import json
from typing import Any

import xarray as xr

from ..baselines.config import BaselinesConfig
from ..config import group_config
from ..inference.config import InferenceConfig, SamplerConfig
from ..models.config import ModelConfig
from ..models.registry import missing_inputs, model_def, model_names


def plain(x: Any) -> Any:
    """An OmegaConf node as plain containers (resolved); anything else as it is."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(x, resolve=True) if OmegaConf.is_config(x) else x


def fit_arguments(name: str, cfg: Any, *, primary: bool, overrides: dict | None = None) -> dict:
    """The keyword arguments of :func:`delusion_bayes.models.fit` for fit ``name`` of the models
    stage (:func:`.models.fit_one`; the compile prefetch, :mod:`.prefetch`, compiles the same
    graphs): the model's inputs (its definition's ``inputs``), and the ``sampler`` group as one
    :class:`~delusion_bayes.inference.config.SamplerConfig`, passed on unchanged."""
    m = group_config(ModelConfig, cfg.model)
    inf = group_config(InferenceConfig, cfg.inference)
    defn = model_def(name)
    # a model fitted beside the primary one takes the default variant, not the primary's
    default = ModelConfig()
    kw: dict[str, Any] = {
        "trajectory": m.trajectory if primary else default.trajectory,
        "cutpoints": m.cutpoints if primary else default.cutpoints,
        "group_terms": list(m.group_terms) if primary and "group_terms" in defn.inputs else [],
        "priors": plain(m.priors) if primary else None,
    }
    if "consensus" in defn.inputs:
        # a model of the consensus fits the baselines' least-squares fit's consensus rule
        kw["consensus"] = group_config(BaselinesConfig, cfg.baselines).consensus
    kw.update(overrides or {})
    kw.update(
        sampler=group_config(SamplerConfig, cfg.sampler),
        cache_dir=cfg.get("cache_dir"),
        posterior_predictive=inf.ppc or defn.always_predictive,
    )
    return kw


def fit_names(ds: xr.Dataset, m: ModelConfig) -> tuple[list[str], list[dict]]:
    """The models to fit, the primary first, and ``{analysis, reason}`` of each one skipped: a
    model the study cannot support is skipped with its reason, but an unknown model or an
    unsupported primary is an error."""
    names = list(dict.fromkeys([m.name, *[str(x) for x in m.also_fit]]))
    bad = [n for n in names if n not in model_names()]
    if bad:
        known = list(model_names())
        raise ValueError(f"model.name/also_fit name unknown models {bad}; expected {known}")
    if why := missing_inputs(ds.data_vars, m.name):
        raise ValueError(
            f"model.name={m.name!r} {why}; choose another model (e.g. model=joint) "
            "or add the missing file to the study"
        )
    skipped = [
        {"analysis": f"model {n!r}", "reason": why}
        for n in names
        if (why := missing_inputs(ds.data_vars, n))
    ]
    return [n for n in names if not missing_inputs(ds.data_vars, n)], skipped


def fit_order(names: list[str]) -> list[str]:
    """``names`` (the primary first, :func:`fit_names`) in the order the stage fits them: the
    primary first, then the others by their definition's ``fit_rank``, the longest fit first.
    Each fit's sampling and post-processing then covers the compile prefetch's compiles of the
    later, cheaper ones. In the configured order (onset, rater, disengagement) the two short
    fits did not cover the disengagement model's compile, and a cold main job waited 13-17 s for
    it with a core idle (docs/dev/models.md, "Speed"). The order changes no draw (every fit has the
    sampler's seed) and no output: the stage writes its results in the configured order."""
    return names[:1] + sorted(names[1:], key=lambda n: model_def(n).fit_rank)


def variants(m: ModelConfig) -> list[tuple[str, dict, str | None]]:
    """``(variant, overrides, why not)`` of each of ``model.variants``; ``why not`` is None for
    a variant that applies to the primary model. ValueError names an unknown variant."""
    from ..models import VARIANTS

    names = [str(v) for v in m.variants]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"model.variants {unknown} unknown; expected {sorted(VARIANTS)}")
    out = []
    inputs = model_def(m.name).inputs
    for v in names:
        over = dict(VARIANTS[v])
        why = None
        if not set(over) <= inputs:
            why = f"variant {v!r} does not apply to the {m.name} model"
        out.append((v, over, why))
    return out


def planned_fits(ds: xr.Dataset, cfg: Any) -> list[tuple[str, bool, dict]]:
    """``(model, primary, overrides)`` of every fit the models stage makes, in its order: the
    primary model, ``model.also_fit`` (in :func:`fit_order`), then (with ``inference.compare``)
    the primary's variants that apply."""
    m = group_config(ModelConfig, cfg.model)
    plan = [(n, n == m.name, {}) for n in fit_order(fit_names(ds, m)[0])]
    if group_config(InferenceConfig, cfg.inference).compare and m.variants:
        plan += [(m.name, True, over) for _, over, why in variants(m) if why is None]
    return plan


def fit_one(ds, name: str, cfg: Any, *, primary: bool, overrides: dict | None = None):
    """Fit ``name`` as this stage does (:func:`fit_arguments`), refitted by the gate's remedies
    (:func:`delusion_bayes.inference.refits.fit_with_refits`)."""
    from ..inference.refits import fit_with_refits
    from ..models import fit

    kw = fit_arguments(name, cfg, primary=primary, overrides=overrides)
    inf = group_config(InferenceConfig, cfg.inference)
    return fit_with_refits(lambda **more: fit(ds, name, **{**kw, **more}), inf)


def study_contrasts(ds: xr.Dataset, contrasts: Any) -> tuple[list[dict], list[dict]]:
    """The configured contrasts this study's metadata and variables support (as plain dicts),
    and ``{analysis, reason}`` for each one (or quantity) it cannot
    (:func:`delusion_bayes.baselines.applicable_contrasts`)."""
    from dataclasses import asdict

    from ..baselines import applicable_contrasts
    from ..baselines.config import QUANTITIES, QUANTITY_NEEDS

    available = [q for q in QUANTITIES if QUANTITY_NEEDS.get(q, "recognition") in ds]
    usable, cannot = applicable_contrasts(ds, [plain(c) for c in contrasts or []], available)
    skipped = [{"analysis": f"posterior {c.analysis}", "reason": c.reason} for c in cannot]
    return [asdict(c) for c in usable], skipped


def latent_kernel_while_waiting(names: list[str]):
    """If a fit of ``names`` draws the latent stage after sampling, compile the latent pass's
    kernel while the stage would wait for the compile prefetch's compile of a log-density (the
    kernel shares no numba code with them; ``sampling.while_waiting``). Measured on the main job
    from cold: the stage waited ~15 s for the joint model's log-density with a core idle, and
    the child then spent ~10 s on this kernel before it went on to the next fits."""
    import contextlib

    from ..inference.sampling import while_waiting
    from ..models.latent import compile_kernels

    if not any(model_def(n).marginal for n in names):
        return contextlib.nullcontext()
    return while_waiting(compile_kernels)


#: the between-model scale of the main job's population-contrast fits (per group: the choice
#: docs/validation.md, "Population contrasts", measured under unequal spread)
POPULATION_SCALE = "group"


def population_fits(ds: xr.Dataset, name: str, cfg: Any, contrasts: list) -> dict[str, Any]:
    """Per contrast, the fit of model ``name`` with the contrast's grouping
    (:func:`delusion_bayes.models.population.fit_population`), refitted by the gate's remedies;
    ``{}`` for a model without one (its definition's ``population``) or without contrasts. The
    primary's variant and sampler; one compiled graph serves every contrast (the group index
    is data: ``share_graph``); no predictive; the log-likelihood and log prior are kept for the
    power-scaling check of the contrasts (``sensitivity_reported.csv``)."""
    from ..inference.refits import fit_with_refits
    from ..models.population import fit_population

    if not contrasts or not model_def(name).population:
        return {}
    kw = fit_arguments(name, cfg, primary=True)
    keys = ("trajectory", "cutpoints", "priors", "consensus")
    variant = {k: kw.pop(k) for k in keys if k in kw}
    kw.pop("group_terms", None)
    inf = group_config(InferenceConfig, cfg.inference)
    # the grouped hierarchy samples at the refit target from the start: on paper_like each of
    # the three contrasts' joint fits had 1-7 divergences at 0.9 and was refitted at 0.99, so
    # a first attempt at 0.9 only cost its sampling time (~1/2 of these fits' time)
    start = kw["sampler"].target_accept or inf.refit_target_accept
    kw.update(
        sampler=kw["sampler"].updated(share_graph=True, target_accept=start),
        posterior_predictive=False,
        log_likelihood=True,
        log_prior=True,
    )
    out = {}
    for c in contrasts:

        def one(c=c, **more):
            return fit_population(
                ds, name, c, scale=POPULATION_SCALE, variant=variant, **{**kw, **more}
            )

        out[str(c["name"])] = gated(fit_with_refits(one, inf), inf)
    return out


def gated(dt: Any, inf: InferenceConfig) -> Any:
    """``dt`` with its diagnostics gate's verdict in ``attrs`` (``gate_passed``,
    ``gate_reasons``): a population fit's contrasts are not reported when it fails."""
    from ..inference.diagnostics import gate

    g = gate(dt, cfg=inf)
    dt.attrs.update(
        gate_passed=bool(g["passed"]),
        gate_reasons="; ".join(g["reasons"]),
        gate_verdict=json.dumps(g, default=lambda v: v.item() if hasattr(v, "item") else str(v)),
    )
    return dt
