"""Which inference choice keeps its promises: a coverage study on simulated studies.

S studies simulated from known truth (``paper_like``, ``null``) are analysed by the paper's
baselines (least-squares logistic fit and milestones of the median consensus with a rater
bootstrap, exact permutation tests of the contrasts) and by every Bayesian model of
``model.name`` + ``model.also_fit``; :mod:`.coverage_metrics` scores them. Estimands: the
simulator's ``true_L, true_k, true_t50`` and the milestones of the noise-free rating of the true
latent stage (:func:`noise_free_rating`). Seeds: the study ``data.seed``, the bootstrap
``baselines.seed + data.seed``, the sampler ``sampler.seed + data.seed``. One resumable file per
replicate, ``<out>/replicates/<preset>-<seed>.csv``; run as a Hydra multirun (one job per
replicate) or in one loop (:func:`run_coverage`)::

    python -m delusion_bayes.sweep.coverage -m experiment=coverage
    delusion-bayes-summarize multirun/coverage   # coverage.csv, coverage_table.md, coverage.png
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..baselines.config import BaselinesConfig
from ..config import group_config
from ..intervals import eti
from .coverage_metrics import (
    BASELINE,
    LATENCIES,
    LEVELS,
    LOGISTIC,
    REPLICATE_COLUMNS,
    REPLICATE_DIR,
    aggregate_coverage,
    level_tag,
)
from .truth import population_truth, true_milestones, true_quantities

log = logging.getLogger(__name__)


def analyse_baselines(ds: xr.Dataset, bcfg: Any, *, seed: int = 0, progress: bool = False):
    """:func:`baseline_estimates` of one study's baselines (``analyse_trajectory``)."""
    from ..baselines import analyse_trajectory

    res = analyse_trajectory(ds, bcfg, seed=seed, progress=progress, milestone_replicates=True)
    return baseline_estimates(res, ds)


def baseline_estimates(res: Any, ds: xr.Dataset) -> tuple[dict[str, Any], pd.DataFrame]:
    """``{quantity: (point[model], {level: (low[model], high[model])})}`` (90/95% rater-bootstrap
    intervals) and the contrasts' ``summary`` (empty without contrasts) of an
    ``analyse_trajectory(..., milestone_replicates=True)`` result."""
    from ..data.schema import MODEL, RESAMPLE

    models = ds[MODEL].values
    table = res.logistic.summary.reindex(models)
    reps = res.logistic.extra["replicates"]
    use = (reps["converged"] & ~reps["flat"]).values
    estimates: dict[str, Any] = {}
    for p in LOGISTIC:
        vals = np.where(use, reps[p].transpose(RESAMPLE, MODEL).values, np.nan)
        estimates[p] = (table[p].to_numpy(dtype=float), {lv: eti(vals, lv) for lv in LEVELS})
    for m in LATENCIES:
        vals = res.milestone_replicates[m].transpose(RESAMPLE, MODEL).values.astype(float)
        point = res.milestones[m].reindex({MODEL: models}).values.astype(float)
        estimates[m] = (point, {lv: eti(vals, lv) for lv in LEVELS})
    return estimates, res.contrasts.summary if res.contrasts is not None else pd.DataFrame()


def posterior_stage(post: xr.Dataset, days: np.ndarray) -> xr.DataArray:
    """The latent stage draws (chain, draw, model, day): ``stage`` when the model has one (joint),
    else the fitted curve ``1 + (L - 1) sigmoid(k (t - t50))`` (onset)."""
    from ..models.derived import trajectory_stage

    return post["stage"] if "stage" in post else trajectory_stage(post, days)


def analyse_posterior(
    post: xr.Dataset,
    ds: xr.Dataset,
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    contrasts: Iterable[Any] = (),
    seed: int = 0,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Posterior medians, 90/95% equal-tailed intervals (``arviz.eti``) and contrast rows from a
    posterior with ``L, k, t50`` (chain, draw, model) and optionally ``stage`` (..., day).

    Two rows per contrast and quantity (``scope``): ``finite``, the difference of these
    models' group means (A - B) per draw, and ``population``, the two-stage difference of the
    groups' population means (:func:`_population_row`; ``seed`` seeds its t draws). ``stat`` is
    the posterior probability of the alternative's direction (two-sided: the larger of
    P(d < 0), P(d > 0)); it rejects at >= 0.95 (one-sided) or >= 0.975 (two-sided), mirroring
    a 5% test."""
    import arviz as az

    from ..baselines import contrast_groups
    from ..data.schema import DAY, MODEL

    sample = ("chain", "draw")
    quantities: dict[str, xr.DataArray] = {p: post[p].transpose(*sample, MODEL) for p in LOGISTIC}
    stage = posterior_stage(post, ds[DAY].values).transpose(*sample, MODEL, DAY)
    ms = true_milestones(stage, ds, stable_run, censor_day)
    quantities.update({m: ms[m].transpose(*sample, MODEL) for m in LATENCIES})
    quantities = {q: da.reindex({MODEL: ds[MODEL].values}) for q, da in quantities.items()}
    rng = np.random.default_rng(seed)
    estimates: dict[str, Any] = {}
    for q, da in quantities.items():
        ets = {lv: az.eti(da, prob=lv, dim=list(sample)) for lv in LEVELS}
        ivs = {
            lv: (e.sel(ci_bound="lower").values, e.sel(ci_bound="upper").values)
            for lv, e in ets.items()
        }
        estimates[q] = (da.median(sample).values, ivs)
    rows = []
    fields = ("name", "by", "a", "b", "alternative", "quantities")
    for c in contrasts:
        c = dict(c) if not hasattr(c, "name") else {k: getattr(c, k) for k in fields}
        mask_a, mask_b = contrast_groups(ds, c)
        for q in [q for q in c.get("quantities", []) if q in quantities]:
            a, b = (quantities[q].isel({MODEL: m}).mean(MODEL).values for m in (mask_a, mask_b))
            diff = a - b
            p_less, p_greater = float((diff < 0).mean()), float((diff > 0).mean())
            alt = c.get("alternative", "two-sided")
            stat = {"less": p_less, "greater": p_greater}.get(alt, max(p_less, p_greater))
            thresh = 0.975 if alt == "two-sided" else 0.95
            rows.append(
                {
                    "contrast": c["name"],
                    "quantity": q,
                    "alternative": alt,
                    "stat": stat,
                    "reject": bool(stat >= thresh),
                    "median_diff": float(np.median(diff)),
                    "scope": "finite",
                }
            )
            rows.append(_population_row(quantities[q], mask_a, mask_b, c, q, alt, thresh, rng))
    return estimates, pd.DataFrame(rows)


def _population_row(da, mask_a, mask_b, c, q, alt, thresh, rng) -> dict[str, Any]:
    """The population contrast of one quantity (:func:`delusion_bayes.models.population.
    population_draws`: the two-stage difference of population means mu_A - mu_B,
    between-model variation included): ``stat`` and ``reject`` as for the finite-sample
    contrast, and its median and 90/95% equal-tailed intervals."""
    from ..data.schema import MODEL
    from ..models.population import MIN_DRAWS, population_draws

    x = da.transpose(..., MODEL).values.reshape(-1, da.sizes[MODEL])
    diff = population_draws(x, mask_a, mask_b, rng, max(1, -(-MIN_DRAWS // x.shape[0])))
    row = {"contrast": c["name"], "quantity": q, "alternative": alt, "scope": "population"}
    if not np.isfinite(diff).all():  # a group empty or too small in some draw
        return {**row, "stat": np.nan, "reject": np.nan, "median_diff": np.nan}
    p_less, p_greater = float((diff < 0).mean()), float((diff > 0).mean())
    stat = {"less": p_less, "greater": p_greater}.get(alt, max(p_less, p_greater))
    row.update(stat=stat, reject=bool(stat >= thresh), median_diff=float(np.median(diff)))
    for lv in LEVELS:
        lo, hi = eti(diff, lv)
        row[f"low_{level_tag(lv)}"], row[f"high_{level_tag(lv)}"] = float(lo), float(hi)
    return row


def _diagnostics(dt: Any) -> str:
    """``max_rhat=... divergences=...`` of a fit (NaN where unavailable)."""
    rhat = divergences = np.nan
    try:
        import arviz as az

        post = dt["posterior"].to_dataset()
        r = az.rhat(post[[v for v in LOGISTIC if v in post]])
        rhat = float(max(float(r[v].max()) for v in r.data_vars))
        stats = dt["sample_stats"].to_dataset()
        if "diverging" in stats:
            divergences = float(stats["diverging"].sum())
    except Exception as err:  # noqa: BLE001 - diagnostics are reported, never fatal here
        log.warning("diagnostics unavailable: %s", err)
    return f"max_rhat={rhat:.3f} divergences={divergences:.0f}"


def _rows(method, est, con, stat, reject, ds, truth, contrasts, base) -> list[dict[str, Any]]:
    """Interval and contrast rows of one method (``stat``: a ``con`` column; ``reject(row)``)."""
    from ..baselines import contrast_groups
    from ..data.schema import MODEL

    models = ds[MODEL].values
    rows = []
    regime = truth["regime"].values if "regime" in truth else [""] * len(models)
    for q, (point, ivs) in est.items():
        tv = truth[q].values.astype(float)
        for i, m in enumerate(models):
            row = {
                **base,
                "method": method,
                "kind": "interval",
                "quantity": q,
                "item": str(m),
                "regime": str(regime[i]),
                "truth": tv[i],
                "estimate": float(point[i]),
            }
            for lv, (lo, hi) in ivs.items():
                row[f"low_{level_tag(lv)}"] = float(lo[i])
                row[f"high_{level_tag(lv)}"] = float(hi[i])
            rows.append(row)
    by_name = {(c["name"] if hasattr(c, "keys") else c.name): c for c in reversed(contrasts)}
    for _, r in con.iterrows():
        q, c = r["quantity"], by_name[r["contrast"]]
        diff = np.nan
        if q in truth:
            mask_a, mask_b = contrast_groups(ds, c)
            v = truth[q].transpose(MODEL).values.astype(float)
            diff = float(np.mean(v[mask_a]) - np.mean(v[mask_b]))
        rows.append(
            {
                **base,
                "method": method,
                "kind": "contrast",
                "quantity": q,
                "item": r["contrast"],
                "alternative": r["alternative"],
                "stat": r[stat],
                "reject": reject(r),
                "truth_diff": diff,
            }
        )
    return rows


def seconds_row(base: Mapping[str, Any], method: str, started: float | None, **note: Any):
    seconds = np.nan if started is None else time.perf_counter() - started
    return {
        **base,
        "method": method,
        "kind": "fit",
        "quantity": "seconds",
        "seconds": seconds,
        **note,
    }


def baseline_rows(
    est: Mapping[str, Any],
    con: pd.DataFrame,
    ds: xr.Dataset,
    truth: xr.Dataset,
    contrasts: Sequence[Any],
    base: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The baselines' replicate rows: one interval row per quantity and model, one contrast
    row per contrast and quantity (``stat`` = the permutation p, ``reject`` = p < .05)."""

    def reject(r: pd.Series) -> Any:
        return bool(r["pvalue"] < 0.05) if np.isfinite(r["pvalue"]) else np.nan

    return _rows(BASELINE, est, con, "pvalue", reject, ds, truth, contrasts, base)


def posterior_rows(
    method: str,
    dt: Any,
    ds: xr.Dataset,
    truth: xr.Dataset,
    contrasts: Sequence[Any],
    base: Mapping[str, Any],
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    started: float | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One fitted model's replicate rows (intervals, contrasts, a ``fit`` row: seconds since
    ``started``, a ``time.perf_counter()``, and diagnostics) and its estimates."""
    post = dt["posterior"].to_dataset() if hasattr(dt, "children") else dt.posterior
    est, pcon = analyse_posterior(
        post,
        ds,
        stable_run=stable_run,
        censor_day=censor_day,
        contrasts=contrasts,
        seed=int(base.get("seed", 0)),
    )
    finite = pcon[pcon["scope"] == "finite"] if len(pcon) else pcon
    rows = _rows(method, est, finite, "stat", lambda r: r["reject"], ds, truth, contrasts, base)
    by_name = {(c["name"] if hasattr(c, "keys") else c.name): c for c in reversed(contrasts)}
    for _, r in (pcon[pcon["scope"] == "population"] if len(pcon) else pcon).iterrows():
        pop = population_truth(ds, by_name[r["contrast"]], r["quantity"])
        rows.append(
            {
                **base,
                "method": f"{method}{POPULATION}",
                "kind": "contrast",
                "quantity": r["quantity"],
                "item": r["contrast"],
                "alternative": r["alternative"],
                "stat": r["stat"],
                "reject": r["reject"],
                "estimate": r["median_diff"],
                "truth": pop,
                "truth_diff": pop,
                **{k: r.get(k, np.nan) for k in ("low_90", "high_90", "low_95", "high_95")},
            }
        )
    rows.append(seconds_row(base, method, started, note=_diagnostics(dt)))
    return rows, est


def setup_replicate(ds: xr.Dataset, baselines: Any, seed: int, stable_run: int):
    """``(censor_day, contrasts, truth, base row, bootstrap seed)`` of a simulated study
    analysed under the ``baselines`` node (censoring: the day after the last by default)."""
    from ..data.schema import DAY

    b = group_config(BaselinesConfig, baselines)
    cens = int(b.censor_day) if b.censor_day is not None else int(ds[DAY].max()) + 1
    contrasts = list(b.contrasts or [])
    truth = true_quantities(ds, stable_run=stable_run, censor_day=cens)
    base = {
        "preset": preset_label(ds.attrs.get("preset", ""), "group_shift" in ds.attrs),
        "seed": int(ds.attrs.get("seed", seed)),
    }
    return cens, contrasts, truth, base, b.seed + seed


def fit_rows(method, ds, truth, contrasts, base, *, fit_fn, fit_kwargs, seed, stable_run, cens):
    """Fit ``method`` (seed ``fit_kwargs["seed"] + seed``) and score it (:func:`posterior_rows`)."""
    if fit_fn is None:
        from ..models import fit as fit_fn
    kwargs = dict(fit_kwargs or {})
    first = kwargs.get("seed", getattr(kwargs.get("sampler"), "seed", 0))
    kwargs["seed"] = int(first or 0) + seed
    t0 = time.perf_counter()
    dt = fit_fn(ds, model=method, **kwargs)
    return posterior_rows(
        method, dt, ds, truth, contrasts, base, stable_run=stable_run, censor_day=cens, started=t0
    )


def analyse_replicate(
    ds: xr.Dataset,
    *,
    baselines: Any,
    methods: Sequence[str] = ("onset", "joint"),
    fit_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    fit_fn: Callable[..., Any] | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Analyse one simulated study with the baselines and every Bayesian ``methods`` entry;
    tidy rows with :data:`REPLICATE_COLUMNS`. ``baselines``: the config node (``stable_run = 0``
    or unset means 3); ``fit_fn(ds, model=..., **fit_kwargs) -> DataTree`` defaults to
    :func:`delusion_bayes.models.fit`; ``seed`` is added to ``baselines.seed`` and to
    ``fit_kwargs["seed"]``."""
    # 0 stands for the default run length (a sweep axis may set it so)
    stable_run = group_config(BaselinesConfig, baselines).stable_run or BaselinesConfig.stable_run
    cens, contrasts, truth, base, boot_seed = setup_replicate(ds, baselines, seed, stable_run)
    t0 = time.perf_counter()
    est, con = analyse_baselines(ds, baselines, seed=boot_seed, progress=progress)
    rows = baseline_rows(est, con, ds, truth, contrasts, base)
    rows.append(seconds_row(base, BASELINE, t0))
    for method in methods:
        rows += fit_rows(
            method,
            ds,
            truth,
            contrasts,
            base,
            fit_fn=fit_fn,
            fit_kwargs=fit_kwargs,
            seed=seed,
            stable_run=stable_run,
            cens=cens,
        )[0]
    return pd.DataFrame(rows).reindex(columns=list(REPLICATE_COLUMNS))


#: the method suffix of the population-contrast rows (``joint_population``)
POPULATION = "_population"


def preset_label(preset: str, shifted: bool) -> str:
    """``null`` with a ``group_shift`` override is its own preset in the tables
    (``null_shift``): its contrasts have a true population difference."""
    return f"{preset}_shift" if shifted else str(preset)


def replicate_path(out_dir: str | Path, preset: str, seed: int) -> Path:
    """``<out_dir>/replicates/<preset>-<seed:04d>.csv``."""
    return Path(out_dir) / REPLICATE_DIR / f"{preset}-{int(seed):04d}.csv"


def has_replicates(path: str | Path) -> bool:
    """True when ``path`` holds coverage replicate files (``replicates/*.csv``)."""
    return any((Path(path) / REPLICATE_DIR).glob("*.csv"))


def run_replicate(
    preset: str,
    seed: int,
    out_dir: str | Path,
    *,
    baselines: Any,
    methods: Sequence[str] = ("onset", "joint"),
    fit_kwargs: Mapping[str, Any] | None = None,
    simulate_overrides: Mapping[str, Any] | None = None,
    fit_fn: Callable[..., Any] | None = None,
) -> Path:
    """Simulate, analyse and save one replicate; skip it when its file already exists (it is
    written to a temporary name and renamed, so a killed job never leaves a half-written one)."""
    from ..data import simulate_study

    overrides = dict(simulate_overrides or {})
    path = replicate_path(out_dir, preset_label(preset, bool(overrides.get("group_shift"))), seed)
    if path.is_file():
        log.info("replicate %s seed %d: already done (%s), skipped", preset, seed, path)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = simulate_study(preset=preset, seed=int(seed), **overrides)
    rows = analyse_replicate(
        ds,
        baselines=baselines,
        methods=methods,
        fit_kwargs=fit_kwargs,
        seed=int(seed),
        fit_fn=fit_fn,
    )
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    rows.to_csv(tmp, index=False)
    tmp.replace(path)
    return path


def run_coverage(
    out_dir: str | Path,
    *,
    presets: Sequence[str] = ("paper_like", "null"),
    seeds: Iterable[int] = range(20),
    baselines: Any = None,
    methods: Sequence[str] = ("onset", "joint"),
    fit_kwargs: Mapping[str, Any] | None = None,
    fit_fn: Callable[..., Any] | None = None,
    aggregate: bool = True,
    progress: bool = True,
    simulate_overrides: Mapping[str, Any] | None = None,
) -> pd.DataFrame | None:
    """The whole study in one process (a loop with a progress bar), then
    :func:`aggregate_coverage`; for parallel or cluster runs use the Hydra entry point.
    ``simulate_overrides`` go to every simulated study (e.g. ``{"group_shift": {...}}``)."""
    from tqdm.auto import tqdm

    if baselines is None:
        from ..baselines import BaselinesConfig

        baselines = BaselinesConfig(n_boot=200)
    jobs = [(p, int(s)) for p in presets for s in seeds]
    for preset, seed in tqdm(jobs, desc="coverage replicates", disable=not progress):
        run_replicate(
            preset,
            seed,
            out_dir,
            baselines=baselines,
            methods=methods,
            fit_kwargs=fit_kwargs,
            fit_fn=fit_fn,
            simulate_overrides=simulate_overrides,
        )
    return aggregate_coverage(Path(out_dir) / REPLICATE_DIR, out_dir) if aggregate else None


def replicate_job(cfg: Any) -> str:
    """The task of one Hydra job: replicate ``(data.preset, data.seed)`` into
    ``<hydra.sweep.dir>/replicates/`` (``hydra.run.dir`` outside a multirun)."""
    from omegaconf import OmegaConf

    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        root = Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else Path(hc.run.dir)
    except (ImportError, ValueError):
        root = Path.cwd()
    if cfg.data.source != "simulate" or cfg.data.kind != "trajectory":
        raise ValueError(
            f"the coverage study simulates trajectory studies; got data.source={cfg.data.source!r},"
            f" data.kind={cfg.data.kind!r} (use data=paper_like or data=null_effect)"
        )
    names = [str(cfg.model.name), *[str(m) for m in cfg.model.get("also_fit", [])]]
    methods = [m for m in dict.fromkeys(names) if m in ("onset", "joint")]
    baselines = OmegaConf.to_container(cfg.baselines, resolve=True)
    path = run_replicate(
        str(cfg.data.preset),
        int(cfg.data.seed),
        root,
        baselines=baselines,
        methods=methods,
        fit_kwargs=replicate_fit_kwargs(cfg),
        simulate_overrides=OmegaConf.to_container(cfg.data.overrides),
    )
    return str(path)


def replicate_fit_kwargs(cfg: Any, *, adaptation: bool = True) -> dict[str, Any]:
    """:func:`delusion_bayes.models.fit` arguments of a simulated replicate: the ``sampler``
    group as one :class:`~delusion_bayes.inference.config.SamplerConfig` (as the models stage
    passes it), sharing one compiled graph between the replicates and with no fit cache, and
    ``cfg.cache_dir``; no groups nothing scores. ``adaptation=False`` keeps the sampler's
    default adaptation, not ``sampler.adaptation`` (the design stage's fits)."""
    from ..config import group_config
    from ..models import SamplerConfig

    s = group_config(SamplerConfig, cfg.sampler)
    # every replicate has the design's shapes: one compiled graph for them all
    s = s.updated(share_graph=True, reuse=False, progressbar=False)
    if not adaptation:
        s = s.updated(adaptation=SamplerConfig.adaptation)
    return {
        "sampler": s,
        "cache_dir": cfg.get("cache_dir"),
        "log_likelihood": False,
        "log_prior": False,
        "posterior_predictive": False,
    }


def main() -> int | None:
    """``python -m delusion_bayes.sweep.coverage -m experiment=coverage`` (Hydra CLI); a user
    error is one line with exit status 2 (:func:`delusion_bayes.hydra_app.run_hydra`)."""
    from ..hydra_app import run_hydra

    return run_hydra(replicate_job)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
