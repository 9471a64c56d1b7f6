"""Which inference choice keeps its promises: a coverage study on simulated studies.

S studies are simulated from known truth (``paper_like`` and ``null``,
:func:`delusion_bayes.data.simulate_study`) and each is analysed by

``baselines``
    the paper's analysis (trajectory paper, "Statistical Analysis"): least-squares logistic fit to
    the median consensus with a rater-resampling percentile bootstrap, milestone latencies of the
    consensus with the same rater resamples, exact rank-sum permutation tests of the contrasts;
``onset`` / ``joint`` (any of ``model.name`` + ``model.also_fit``)
    :func:`delusion_bayes.models.fit`; posterior medians and equal-tailed intervals; milestone
    latencies from the posterior of the latent stage; contrasts as the posterior of the
    difference of group means.

Per method and quantity (``t50, L, k, first_clinical, first_stable``) it reports the coverage of
90% and 95% intervals, their mean width, the bias and RMSE of the point estimate; per contrast the
rejection rate (type-I error under ``null``, power under ``paper_like`` where the true groups
differ). Estimands:

* ``L, k, t50``: the simulator's ``true_L, true_k, true_t50``;
* milestones: those of the noise-free rating of the true latent stage,
  ``1 + sum_j [true_stage > c_j]`` with the simulator's cutpoints ``c = (1.5, 2.5, 3.5)`` (what a
  rater with no severity and infinite discrimination would give), under the configured
  ``stable_run`` and censoring day.

Layout on disk (resumable: a finished replicate is never redone)::

    <out>/replicates/<preset>-<seed>.csv   one file per finished replicate (tidy rows)
    <out>/coverage.csv                      per preset x method x quantity x subset
    <out>/coverage_table.csv / .md          coverage and width, methods side by side
    <out>/contrast_errors.csv               rejection rates (type-I error, power)
    <out>/coverage.png / .pdf               the figure

Every replicate is seeded: the study by ``(data.seed)``, the bootstrap by ``baselines.seed +
data.seed``, the sampler by ``sampler.seed + data.seed``.

Run as a Hydra multirun over replicate seeds (one job per replicate, any launcher)::

    python -m delusion_bayes.sweep.coverage -m experiment=coverage
    delusion-bayes-summarize multirun/coverage

or as one loop in Python: :func:`run_coverage`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..intervals import eti
from ..plotting import save_figure

log = logging.getLogger(__name__)

REPLICATE_DIR = "replicates"
LEVELS: tuple[float, ...] = (0.9, 0.95)
#: quantities whose intervals are scored
QUANTITIES: tuple[str, ...] = ("t50", "L", "k", "first_clinical", "first_stable")
LOGISTIC: tuple[str, ...] = ("L", "k", "t50")
LATENCIES: tuple[str, ...] = ("first_clinical", "first_stable")
BASELINE = "baselines"
#: parameter-space bounds of a quantity (the least-squares L is bounded to [1, 4]; the Bayesian
#: L = 1 + exp(l) is not, but its prior keeps it near the scale top)
BOUNDS: dict[str, tuple[float, float]] = {"L": (1.0, 4.0)}
#: an interval end this close to a bound is closed at the bound when scoring coverage
BOUND_TOL = 0.05
#: columns of a replicate file
REPLICATE_COLUMNS: tuple[str, ...] = (
    "preset", "seed", "method", "kind", "quantity", "item", "regime", "truth", "estimate",
    "low_90", "high_90", "low_95", "high_95", "alternative", "stat", "reject", "truth_diff",
    "seconds", "note",
)  # fmt: skip


def _level_tag(level: float) -> str:
    return f"{round(level * 100):d}"


# ------------------------------------------------------------------------------------------
# truth
# ------------------------------------------------------------------------------------------
def noise_free_rating(stage: xr.DataArray, cutpoints: Sequence[float]) -> xr.DataArray:
    """``1 + sum_j [stage > c_j]``: the rating of a rater without severity or noise (NaN kept)."""
    cuts = np.asarray(cutpoints, dtype=float)
    x = stage.values
    with np.errstate(invalid="ignore"):
        cat = 1.0 + (x[..., None] > cuts).sum(axis=-1)
    return stage.copy(data=np.where(np.isnan(x), np.nan, cat))


def true_quantities(
    ds: xr.Dataset, *, stable_run: int = 3, censor_day: int | None = None
) -> xr.Dataset:
    """The estimands of a simulated study per model (see the module docstring).

    Raises
    ------
    ValueError
        When the study carries no truth (``true_L, true_k, true_t50, true_stage``).
    """
    from ..baselines import milestones

    need = ["true_L", "true_k", "true_t50", "true_stage"]
    missing = [v for v in need if v not in ds.data_vars]
    if missing:
        raise ValueError(
            f"the study has no truth variables {missing}: the coverage study needs a simulated "
            "study (delusion_bayes.data.simulate_study)"
        )
    cuts = ds["true_cutpoints"].values if "true_cutpoints" in ds else (1.5, 2.5, 3.5)
    ms = milestones(
        noise_free_rating(ds["true_stage"], cuts), stable_run=stable_run, censor_day=censor_day
    )
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


# ------------------------------------------------------------------------------------------
# one replicate: baselines
# ------------------------------------------------------------------------------------------
def analyse_baselines(ds: xr.Dataset, bcfg: Any, *, seed: int = 0, progress: bool = False):
    """The baselines of one study, as the baselines stage computes them
    (:func:`delusion_bayes.baselines.analyse_trajectory`): point estimates, 90/95% intervals
    from the rater bootstrap (milestones on the same rater resamples), contrast p-values.

    Returns
    -------
    estimates : dict
        ``{quantity: (point[model], {level: (low[model], high[model])})}``.
    contrasts : pandas.DataFrame
        ``permutation_contrasts(...).summary`` (empty without contrasts).
    """
    from ..baselines import analyse_trajectory
    from ..data.schema import MODEL, RESAMPLE

    res = analyse_trajectory(ds, bcfg, seed=seed, progress=progress, milestone_replicates=True)
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
    con = res.contrasts.summary if res.contrasts is not None else pd.DataFrame()
    return estimates, con


# ------------------------------------------------------------------------------------------
# one replicate: Bayesian models
# ------------------------------------------------------------------------------------------
def posterior_stage(post: xr.Dataset, days: np.ndarray) -> xr.DataArray:
    """The latent stage draws (chain, draw, model, day): ``stage`` when the model has one (joint),
    else the fitted curve ``1 + (L - 1) sigmoid(k (t - t50))`` (onset)."""
    from ..data.schema import DAY

    if "stage" in post:
        return post["stage"]
    from scipy.special import expit

    t = xr.DataArray(np.asarray(days, dtype=float), dims=(DAY,), coords={DAY: days})
    # expit, not 1 / (1 + exp(-x)): the same values without overflow warnings far from t50
    return 1.0 + (post["L"] - 1.0) * expit(post["k"] * (t - post["t50"]))


def analyse_posterior(
    post: xr.Dataset,
    ds: xr.Dataset,
    *,
    stable_run: int = 3,
    censor_day: int | None = None,
    contrasts: Iterable[Any] = (),
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Posterior medians, 90/95% equal-tailed intervals (``arviz.eti``) and contrast
    probabilities from a posterior with ``L, k, t50`` (chain, draw, model) and optionally
    ``stage`` (chain, draw, model, day).

    A contrast's posterior is the difference of group means (A - B) of the quantity per draw;
    ``stat`` is the posterior probability of the alternative's direction (for ``two-sided``, the
    larger of P(d < 0) and P(d > 0)); it rejects when that probability is >= 0.95 (one-sided) or
    >= 0.975 (two-sided: the 95% interval of the difference excludes 0), mirroring a 5% test.
    """
    import arviz as az

    from ..baselines import contrast_groups, milestones
    from ..data.schema import DAY, MODEL

    models = ds[MODEL].values
    sample = ("chain", "draw")
    quantities: dict[str, xr.DataArray] = {p: post[p].transpose(*sample, MODEL) for p in LOGISTIC}
    stage = posterior_stage(post, ds[DAY].values).transpose(*sample, MODEL, DAY)
    cuts = ds["true_cutpoints"].values if "true_cutpoints" in ds else (1.5, 2.5, 3.5)
    ms = milestones(noise_free_rating(stage, cuts), stable_run=stable_run, censor_day=censor_day)
    for m in LATENCIES:
        quantities[m] = ms[m].transpose(*sample, MODEL)
    estimates: dict[str, Any] = {}
    for q, da in quantities.items():
        da = da.reindex({MODEL: models})
        ivs = {}
        for lv in LEVELS:
            e = az.eti(da, prob=lv, dim=list(sample))
            ivs[lv] = (e.sel(ci_bound="lower").values, e.sel(ci_bound="upper").values)
        estimates[q] = (da.median(sample).values, ivs)
    rows = []
    for c in contrasts:
        c = dict(c) if not hasattr(c, "name") else {k: getattr(c, k) for k in
                                                     ("name", "by", "a", "b", "alternative", "quantities")}  # fmt: skip
        mask_a, mask_b = contrast_groups(ds, c)
        for q in c.get("quantities", []):
            if q not in quantities:
                continue
            da = quantities[q].reindex({MODEL: models})
            diff = (
                da.isel({MODEL: mask_a}).mean(MODEL) - da.isel({MODEL: mask_b}).mean(MODEL)
            ).values
            p_less, p_greater = float((diff < 0).mean()), float((diff > 0).mean())
            alt = c.get("alternative", "two-sided")
            stat = {"less": p_less, "greater": p_greater}.get(alt, max(p_less, p_greater))
            thresh = 0.975 if alt == "two-sided" else 0.95
            rows.append(
                {"contrast": c["name"], "quantity": q, "alternative": alt, "stat": stat,
                 "reject": bool(stat >= thresh), "median_diff": float(np.median(diff))}
            )  # fmt: skip
    return estimates, pd.DataFrame(rows)


def _diagnostics(dt: Any) -> dict[str, float]:
    out = {"max_rhat": np.nan, "divergences": np.nan}
    try:
        import arviz as az

        post = dt["posterior"].to_dataset()
        r = az.rhat(post[[v for v in LOGISTIC if v in post]])
        out["max_rhat"] = float(max(float(r[v].max()) for v in r.data_vars))
        stats = dt["sample_stats"].to_dataset()
        if "diverging" in stats:
            out["divergences"] = float(stats["diverging"].sum())
    except Exception as err:  # noqa: BLE001 - diagnostics are reported, never fatal here
        log.warning("diagnostics unavailable: %s", err)
    return out


# ------------------------------------------------------------------------------------------
# rows of one replicate
# ------------------------------------------------------------------------------------------
def _interval_rows(method, estimates, truth, models, base) -> list[dict[str, Any]]:
    rows = []
    regime = truth["regime"].values if "regime" in truth else [""] * len(models)
    for q, (point, ivs) in estimates.items():
        tv = truth[q].values.astype(float)
        for i, m in enumerate(models):
            row = {**base, "method": method, "kind": "interval", "quantity": q, "item": str(m),
                   "regime": str(regime[i]), "truth": tv[i], "estimate": float(point[i])}  # fmt: skip
            for lv, (lo, hi) in ivs.items():
                row[f"low_{_level_tag(lv)}"] = float(lo[i])
                row[f"high_{_level_tag(lv)}"] = float(hi[i])
            rows.append(row)
    return rows


def _true_diff(truth: xr.Dataset, ds: xr.Dataset, contrast: Any, quantity: str) -> float:
    from ..baselines import contrast_groups
    from ..data.schema import MODEL

    if quantity not in truth:
        return np.nan
    mask_a, mask_b = contrast_groups(ds, contrast)
    v = truth[quantity].transpose(MODEL).values.astype(float)
    return float(np.mean(v[mask_a]) - np.mean(v[mask_b]))


def _by_name(contrasts: Sequence[Any], name: str) -> Any:
    for c in contrasts:
        if (c["name"] if hasattr(c, "keys") else c.name) == name:
            return c
    raise KeyError(name)


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
    """Analyse one simulated study with the baselines and every Bayesian ``methods`` entry.

    Parameters
    ----------
    ds
        A simulated study (with ``true_*`` variables).
    baselines
        The ``baselines`` config node (consensus rule, ``stable_run``, ``censor_day``,
        ``n_boot``, ``contrasts``, ``seed``, ...).
    methods
        Bayesian models to fit (``onset``, ``joint``); ``()`` for the baselines only.
    fit_kwargs
        Passed to ``fit_fn`` (``draws, tune, chains, sampler, cores, cache_dir, priors``).
    seed
        Replicate seed, added to ``baselines.seed`` (bootstrap) and to ``fit_kwargs["seed"]``.
    fit_fn
        ``fit(ds, model=..., **fit_kwargs) -> DataTree``; default
        :func:`delusion_bayes.models.fit`.

    Returns
    -------
    pandas.DataFrame
        Tidy rows with :data:`REPLICATE_COLUMNS`.
    """
    from ..data.schema import DAY, MODEL

    bget = (
        baselines.get if hasattr(baselines, "get") else (lambda k, d=None: getattr(baselines, k, d))
    )
    stable_run = int(bget("stable_run", 3) or 3)
    cens = bget("censor_day", None)
    cens = int(cens) if cens is not None else int(ds[DAY].max()) + 1
    contrasts = list(bget("contrasts", []) or [])
    truth = true_quantities(ds, stable_run=stable_run, censor_day=cens)
    models = ds[MODEL].values
    base = {"preset": str(ds.attrs.get("preset", "")), "seed": int(ds.attrs.get("seed", seed))}
    rows: list[dict[str, Any]] = []

    t0 = time.perf_counter()
    est, con = analyse_baselines(
        ds, baselines, seed=int(bget("seed", 0) or 0) + seed, progress=progress
    )
    rows += _interval_rows(BASELINE, est, truth, models, base)
    for _, r in con.iterrows():
        c = _by_name(contrasts, r["contrast"])
        rows.append({**base, "method": BASELINE, "kind": "contrast", "quantity": r["quantity"],
                     "item": r["contrast"], "alternative": r["alternative"], "stat": r["pvalue"],
                     "reject": bool(r["pvalue"] < 0.05) if np.isfinite(r["pvalue"]) else np.nan,
                     "truth_diff": _true_diff(truth, ds, c, r["quantity"])})  # fmt: skip
    rows.append({**base, "method": BASELINE, "kind": "fit", "quantity": "seconds",
                 "seconds": time.perf_counter() - t0})  # fmt: skip

    if methods:
        if fit_fn is None:
            from ..models import fit as fit_fn
        kwargs = dict(fit_kwargs or {})
        kwargs["seed"] = int(kwargs.get("seed", 0)) + seed
        for method in methods:
            t0 = time.perf_counter()
            dt = fit_fn(ds, model=method, **kwargs)
            post = dt["posterior"].to_dataset() if hasattr(dt, "children") else dt.posterior
            est, pcon = analyse_posterior(
                post, ds, stable_run=stable_run, censor_day=cens, contrasts=contrasts
            )
            rows += _interval_rows(method, est, truth, models, base)
            for _, r in pcon.iterrows():
                c = _by_name(contrasts, r["contrast"])
                rows.append({**base, "method": method, "kind": "contrast", "quantity": r["quantity"],
                             "item": r["contrast"], "alternative": r["alternative"], "stat": r["stat"],
                             "reject": r["reject"], "truth_diff": _true_diff(truth, ds, c, r["quantity"])})  # fmt: skip
            diag = _diagnostics(dt)
            rows.append({**base, "method": method, "kind": "fit", "quantity": "seconds",
                         "seconds": time.perf_counter() - t0,
                         "note": f"max_rhat={diag['max_rhat']:.3f} divergences={diag['divergences']:.0f}"})  # fmt: skip
    return pd.DataFrame(rows).reindex(columns=list(REPLICATE_COLUMNS))


# ------------------------------------------------------------------------------------------
# resumable replicate files
# ------------------------------------------------------------------------------------------
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
    """Simulate, analyse and save one replicate; skip it when its file already exists.

    The file is written to a temporary name and renamed, so a killed job never leaves a
    half-written replicate that a rerun would skip.
    """
    from ..data import simulate_study

    path = replicate_path(out_dir, preset, seed)
    if path.is_file():
        log.info("replicate %s seed %d: already done (%s), skipped", preset, seed, path)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = simulate_study(preset=preset, seed=int(seed), **dict(simulate_overrides or {}))
    rows = analyse_replicate(
        ds, baselines=baselines, methods=methods, fit_kwargs=fit_kwargs, seed=int(seed),
        fit_fn=fit_fn,
    )  # fmt: skip
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
) -> pd.DataFrame | None:
    """The whole study in one process (a loop with a progress bar), then :func:`aggregate_coverage`.

    For parallel or cluster runs use the Hydra entry point (module docstring) instead.
    """
    from tqdm.auto import tqdm

    if baselines is None:
        from ..baselines import BaselinesConfig

        baselines = BaselinesConfig(n_boot=200)
    jobs = [(p, int(s)) for p in presets for s in seeds]
    for preset, seed in tqdm(jobs, desc="coverage replicates", disable=not progress):
        run_replicate(preset, seed, out_dir, baselines=baselines, methods=methods,
                      fit_kwargs=fit_kwargs, fit_fn=fit_fn)  # fmt: skip
    return aggregate_coverage(Path(out_dir) / REPLICATE_DIR, out_dir) if aggregate else None


# ------------------------------------------------------------------------------------------
# aggregation
# ------------------------------------------------------------------------------------------
def load_replicates(rep_dir: str | Path) -> pd.DataFrame:
    """All replicate files of a directory, concatenated.

    Raises
    ------
    ValueError
        When the directory holds no replicate file.
    """
    files = sorted(Path(rep_dir).glob("*.csv"))
    if not files:
        raise ValueError(
            f"{str(rep_dir)!r} holds no replicate file (*.csv); run the coverage study first "
            "(python -m delusion_bayes.sweep.coverage -m experiment=coverage)"
        )
    # keep_default_na=False: the preset "null" must stay a string, not become NaN
    read = {"keep_default_na": False, "na_values": ["", "nan", "NaN"]}
    return pd.concat([pd.read_csv(f, **read) for f in files], ignore_index=True)


def close_at_bounds(
    quantity: str, low: np.ndarray, high: np.ndarray, tol: float = BOUND_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """Close an interval at the parameter-space bound it approaches (within ``tol``).

    A posterior on an open parameter space cannot put an interval end exactly on its bound:
    the simulator's ``true_L = 4`` (a model that reaches stage 4) is the supremum of the onset
    models' ``L = 1 + 3 sigmoid(l)``, so a 95% interval (3.68, 3.994) would "miss" it by 0.006
    and every such model would count as not covered. An end within ``tol`` (0.05 on the 1-4
    stage scale, a tenth of the rating resolution) of a bound of :data:`BOUNDS` is set to the
    bound. Quantities without bounds are returned unchanged.
    """
    if quantity not in BOUNDS:
        return low, high
    lower, upper = BOUNDS[quantity]
    low = np.where(low <= lower + tol, np.minimum(low, lower), low)
    high = np.where(high >= upper - tol, np.maximum(high, upper), high)
    return low, high


def coverage_metrics(reps: pd.DataFrame, n_days: int = 30) -> pd.DataFrame:
    """Coverage, width, bias and RMSE per preset x method x quantity x subset.

    ``subset`` is ``all`` (every model) or ``turning`` (models whose true t50 lies within the
    study, ``true_t50 <= n_days``): a never-turning model's t50 is beyond the data and would
    dominate widths and RMSE. ``n`` counts model-replicates, ``defined`` the fraction with a
    finite interval (a flat least-squares fit has none); coverage and width are over those.
    Intervals of bounded quantities (``L``) are closed at the bound they approach
    (:func:`close_at_bounds`) before coverage is scored; widths use the intervals as reported.
    """
    iv = reps[reps["kind"] == "interval"].copy()
    if iv.empty:
        return pd.DataFrame()
    t50 = iv[iv["quantity"] == "t50"].set_index(["preset", "seed", "method", "item"])["truth"]
    key = pd.MultiIndex.from_frame(iv[["preset", "seed", "method", "item"]])
    iv["turning"] = t50.reindex(key).to_numpy() <= n_days
    rows = []
    for subset, frame in (("all", iv), ("turning", iv[iv["turning"]])):
        for (preset, method, q), g in frame.groupby(["preset", "method", "quantity"], sort=False):
            row: dict[str, Any] = {"preset": preset, "method": method, "quantity": q,
                                   "subset": subset, "n": len(g)}  # fmt: skip
            for lv in LEVELS:
                tag = _level_tag(lv)
                lo, hi = g[f"low_{tag}"].to_numpy(float), g[f"high_{tag}"].to_numpy(float)
                width = hi - lo
                lo, hi = close_at_bounds(q, lo, hi)
                ok = np.isfinite(lo) & np.isfinite(hi)
                tr = g["truth"].to_numpy(float)
                cov = (lo[ok] <= tr[ok]) & (tr[ok] <= hi[ok])
                row[f"coverage_{tag}"] = float(cov.mean()) if ok.any() else np.nan
                row[f"width_{tag}"] = float(np.mean(width[ok])) if ok.any() else np.nan
                row[f"defined_{tag}"] = float(ok.mean())
            err = (g["estimate"] - g["truth"]).to_numpy(float)
            err = err[np.isfinite(err)]
            row["bias"] = float(err.mean()) if err.size else np.nan
            row["rmse"] = float(np.sqrt(np.mean(err**2))) if err.size else np.nan
            row["n_replicates"] = g["seed"].nunique()
            rows.append(row)
    return pd.DataFrame(rows)


def contrast_metrics(reps: pd.DataFrame, tol: float = 1e-9) -> pd.DataFrame:
    """Rejection rates per preset x method x contrast x quantity.

    ``what`` is ``type-I error`` where the truth has no group difference (every ``null``
    contrast; ``paper_like`` contrasts whose true difference is 0) and ``power`` elsewhere.

    The two families test different nulls. The permutation test asks whether the group labels
    are exchangeable (no systematic difference between the populations the models come from);
    the posterior contrast is about the difference of group means of *these* models' quantities,
    which under ``null`` is still non-zero by chance (``truth_diff``; its mean absolute value is
    ``mean_abs_truth_diff``). A precise posterior therefore "rejects" a null-preset contrast
    whenever the realised models happen to differ: its rejection rate under ``null`` is the
    type-I error against the population null, not a calibration failure of the posterior for
    its own (finite-population) estimand. First measurement (2 replicates per preset): 0.60
    for onset and joint vs 0.00 for the permutation tests.
    """
    c = reps[reps["kind"] == "contrast"].copy()
    if c.empty:
        return pd.DataFrame()
    c["reject"] = c["reject"].astype(float)
    rows = []
    for (preset, method, item, q), g in c.groupby(
        ["preset", "method", "item", "quantity"], sort=False
    ):
        null_true = preset == "null" or bool(np.all(np.abs(g["truth_diff"].to_numpy(float)) <= tol))
        rows.append(
            {"preset": preset, "method": method, "contrast": item, "quantity": q,
             "what": "type-I error" if null_true else "power", "n": int(g["reject"].notna().sum()),
             "rejection_rate": float(g["reject"].mean()), "mean_stat": float(g["stat"].mean()),
             "truth_diff": float(g["truth_diff"].mean()),
             "mean_abs_truth_diff": float(g["truth_diff"].abs().mean())}
        )  # fmt: skip
    return pd.DataFrame(rows)


def coverage_table(cov: pd.DataFrame, level: float = 0.95, subset: str = "all") -> pd.DataFrame:
    """Methods side by side: coverage and mean width of the ``level`` intervals per quantity."""
    tag = _level_tag(level)
    sub = cov[cov["subset"] == subset]
    wide = sub.pivot_table(
        index=["preset", "quantity"], columns="method", values=[f"coverage_{tag}", f"width_{tag}"]
    )
    wide.columns = [f"{m} {v.split('_')[0]} {tag}%" for v, m in wide.columns]
    methods = list(dict.fromkeys(sub["method"]))
    order = [f"{m} {w} {tag}%" for m in methods for w in ("coverage", "width")]
    return wide[[c for c in order if c in wide.columns]].reset_index()


def plot_coverage(cov: pd.DataFrame, errors: pd.DataFrame, subset: str = "all"):
    """Coverage of 90/95% intervals and widths per method and quantity; rejection rates."""
    import matplotlib.pyplot as plt

    sub = cov[cov["subset"] == subset]
    presets = list(dict.fromkeys(sub["preset"]))
    methods = list(dict.fromkeys(sub["method"]))
    fig, axes = plt.subplots(
        len(presets) + 1, 2, figsize=(11, 3.0 * (len(presets) + 1)), squeeze=False
    )
    markers = {0.9: "o", 0.95: "s"}
    for r, preset in enumerate(presets):
        g = sub[sub["preset"] == preset]
        qs = list(dict.fromkeys(g["quantity"]))
        for j, m in enumerate(methods):
            gm = g[g["method"] == m].set_index("quantity").reindex(qs)
            x = np.arange(len(qs)) + (j - (len(methods) - 1) / 2) * 0.22
            for lv in LEVELS:
                tag = _level_tag(lv)
                axes[r, 0].scatter(x, gm[f"coverage_{tag}"], marker=markers[lv], color=f"C{j}",
                                   label=f"{m} {tag}%" if r == 0 else None, s=24)  # fmt: skip
            axes[r, 1].bar(x, gm["width_95"], width=0.2, color=f"C{j}", label=m if r == 0 else None)
        for lv in LEVELS:
            axes[r, 0].axhline(lv, color="k", lw=0.6, ls="--")
        for ax in axes[r]:
            ax.set_xticks(range(len(qs)), qs, fontsize=8)
        axes[r, 0].set_ylim(-0.03, 1.03)
        axes[r, 0].set_title(
            f"{preset}: interval coverage (dashed = nominal 90/95%)", fontsize=9, loc="left"
        )
        axes[r, 1].set_title(f"{preset}: mean width of 95% intervals", fontsize=9, loc="left")
        axes[r, 1].set_yscale("log")
    axes[0, 0].legend(fontsize=6, ncol=2)
    axes[0, 1].legend(fontsize=6)
    ax_t, ax_p = axes[-1]
    if not errors.empty:
        for ax, what in ((ax_t, "type-I error"), (ax_p, "power")):
            e = errors[errors["what"] == what]
            labels = list(dict.fromkeys(e["contrast"] + ": " + e["quantity"]))
            for j, m in enumerate(methods):
                em = e[e["method"] == m]
                em = em.set_index(em["contrast"] + ": " + em["quantity"]).reindex(labels)
                y = np.arange(len(labels)) + (j - (len(methods) - 1) / 2) * 0.22
                ax.barh(y, em["rejection_rate"], height=0.2, color=f"C{j}", label=m)
            ax.set_yticks(range(len(labels)), [lab[:45] for lab in labels], fontsize=6)
            ax.set_xlim(0, 1)
            ax.set_title(f"{what} (rejection rate at 5%)", fontsize=9, loc="left")
            if what == "type-I error":
                ax.axvline(0.05, color="k", lw=0.6, ls="--")
        ax_t.legend(fontsize=6)
    fig.tight_layout()
    return fig


def aggregate_coverage(
    rep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    formats: Sequence[str] = ("png", "pdf"),
) -> pd.DataFrame:
    """Aggregate replicate files into ``coverage.csv``, ``coverage_table.csv``/``.md``,
    ``contrast_errors.csv``, ``fit_times.csv`` and the figure; returns the coverage frame."""
    rep_dir = Path(rep_dir)
    out = Path(out_dir) if out_dir is not None else rep_dir.parent
    out.mkdir(parents=True, exist_ok=True)
    reps = load_replicates(rep_dir)
    cov = coverage_metrics(reps)
    errors = contrast_metrics(reps)
    cov.to_csv(out / "coverage.csv", index=False)
    errors.to_csv(out / "contrast_errors.csv", index=False)
    table = coverage_table(cov)
    table.to_csv(out / "coverage_table.csv", index=False)
    turning = coverage_table(cov, subset="turning") if not cov.empty else table
    (out / "coverage_table.md").write_text(
        "All models:\n\n" + _markdown(table)
        + "\nModels whose true t50 lies within the study (a never-turning model's t50, L and k"
        " are beyond the data):\n\n" + _markdown(turning)
    )  # fmt: skip
    fits = reps[reps["kind"] == "fit"]
    if not fits.empty:
        fits.groupby(["preset", "method"])["seconds"].describe().to_csv(out / "fit_times.csv")
    if plot and not cov.empty:
        fig = plot_coverage(cov, errors)
        save_figure(fig, out / "coverage", formats)
    log.info("coverage of %d replicates -> %s", reps["seed"].nunique(), out / "coverage.csv")
    return cov


def _markdown(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(map(str, cols)) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in r.values]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------
# Hydra entry point: one replicate per job
# ------------------------------------------------------------------------------------------
def replicate_job(cfg: Any) -> str:
    """The task of one Hydra job: replicate ``(data.preset, data.seed)`` into
    ``<hydra.sweep.dir>/replicates/`` (``hydra.run.dir`` outside a multirun)."""
    from omegaconf import OmegaConf

    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        from hydra.types import RunMode

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
    s = cfg.sampler
    fit_kwargs = {
        "draws": int(s.draws), "tune": int(s.tune), "chains": int(s.chains), "sampler": str(s.name),
        "cores": int(s.cores), "seed": int(s.seed), "target_accept": None if s.get("target_accept") is None else float(s.target_accept),
        "cache_dir": cfg.get("cache_dir"), "log_likelihood": False, "posterior_predictive": False,
    }  # fmt: skip
    path = run_replicate(
        str(cfg.data.preset), int(cfg.data.seed), root,
        baselines=OmegaConf.to_container(cfg.baselines, resolve=True), methods=methods,
        fit_kwargs=fit_kwargs, simulate_overrides=OmegaConf.to_container(cfg.data.overrides),
    )  # fmt: skip
    return str(path)


def main() -> None:
    """``python -m delusion_bayes.sweep.coverage -m experiment=coverage`` (Hydra CLI)."""
    import hydra

    from ..config import conf_dir, register_configs

    register_configs()
    task = hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")(
        replicate_job
    )
    task()


if __name__ == "__main__":  # pragma: no cover
    main()
