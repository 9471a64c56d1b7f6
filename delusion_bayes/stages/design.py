"""Pipeline stage ``design``: one cell of the study-design experiment (``experiment=design``).

Writes the replicate rows and per-cell metrics of :func:`delusion_bayes.sweep.design.run_cell`
into ``run_dir/design/`` (every number from simulated studies; the files say so). Seeds: study
``i`` is ``simulate_study(seed=data.seed + i)``, its bootstrap ``baselines.seed + i``, its MCMC
``sampler.seed + i``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import xarray as xr

from ..config import group_config
from ..sweep.config import DesignConfig
from . import Outputs

log = logging.getLogger(__name__)

NEEDS = ("design", "data", "baselines", "sampler")
KIND = ("trajectory", "replicated")


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Simulate and analyse the cell's studies; write ``design/replicates.csv``,
    ``design/cell.csv`` and ``design/index.json``; return the headline (power per contrast of
    the permutation test and of the posterior, seconds per study)."""
    from omegaconf import OmegaConf

    from ..sweep.config import DESIGN_MODELS
    from ..sweep.coverage import replicate_fit_kwargs
    from ..sweep.design import cell_metrics, cell_of, run_cell

    d, data = cfg.design, cfg.data
    if data.source != "simulate":
        raise ValueError(
            f"the design stage simulates its studies; got data.source={data.source!r} (use "
            "data=paper_like as experiment=design, or data=replicated as "
            "experiment=design_replicated)"
        )
    if data.kind == "replicated":
        return run_replicated(cfg, run_dir)
    design = group_config(DesignConfig, d)
    model, n_bayes = design.model, design.n_sims_bayes
    if n_bayes and model not in DESIGN_MODELS:
        raise ValueError(f"design.model = {model!r}; expected one of {list(DESIGN_MODELS)}")
    cell = cell_of(d)
    overrides = OmegaConf.to_container(data.overrides, resolve=True) if data.overrides else {}
    overrides = {k: v for k, v in overrides.items() if k not in cell}  # the cell is design.*
    fit_kwargs = replicate_fit_kwargs(cfg, adaptation=False)
    n_sims = design.n_sims
    preset = str(data.preset)
    label = ", ".join(f"{k}={v:g}" for k, v in cell.items())

    def progress(i: int, seconds: float) -> None:
        kind = f"baselines + {model}" if i < n_bayes else "baselines"
        log.info("design %s: study %d/%d (%s) %.1f s", label, i + 1, n_sims, kind, seconds)

    baselines = OmegaConf.to_container(cfg.baselines, resolve=True)
    reps = run_cell(
        cell,
        baselines=baselines,
        n_sims=n_sims,
        n_sims_bayes=n_bayes,
        method=model,
        fit_kwargs=fit_kwargs,
        preset=preset,
        seed=int(data.seed),
        overrides=overrides,
        progress=progress,
    )
    reps["reject"] = reps["reject"].map(lambda v: float(v) if v == v and v is not None else v)
    source = f"simulated {preset}"
    metrics = cell_metrics(reps, data=source)
    out = Outputs(run_dir, "design")
    out.write("replicates.csv", reps, f"one row per simulated study x method x quantity ({source})")
    out.write(
        "cell.csv", metrics, f"power and precision of this design cell ({source}), with MC SEs"
    )

    power = metrics[metrics["metric"] == "power"]
    headline: dict[str, Any] = {
        f"power:{r['method']}:{r['item']}": round(float(r["value"]), 4) for _, r in power.iterrows()
    }
    for _, r in metrics[metrics["metric"] == "seconds"].iterrows():
        headline[f"seconds_per_study:{r['method']}"] = round(float(r["value"]), 2)
    seed = int(data.seed)
    config = {
        **cell,
        "n_sims": n_sims,
        "n_sims_bayes": n_bayes,
        "model": model,
        "preset": preset,
        "seed": seed,
    }
    note = (
        f"SIMULATED: {n_sims} studies from preset {preset} (seeds {seed}.."
        f"{seed + n_sims - 1}); the first {n_bayes} also fitted with {model}"
    )
    return out.index(headline, notes=[note], config=config)


def run_replicated(cfg: Any, run_dir: Path) -> dict[str, Any]:
    """One replicated design cell (:mod:`delusion_bayes.sweep.replicated_design`): its
    ``design.n_sims`` studies (seeds ``data.seed + i``), the first ``design.n_sims_bayes`` also
    fitted with the behaviour model; writes ``design/replicated_rows.csv``."""
    from ..sweep.config import DesignConfig
    from ..sweep.coverage import replicate_fit_kwargs
    from ..sweep.replicated_design import ROWS, cell_of, design_table, run_design

    design = group_config(DesignConfig, cfg.design)
    cell = cell_of(cfg.design)
    seed, n_bayes = int(cfg.data.seed), int(design.n_sims_bayes)
    fit_kwargs = replicate_fit_kwargs(cfg, adaptation=False)
    fit_kwargs["sampler"] = fit_kwargs["sampler"].updated(share_graph=False)  # own graph per study
    label = ", ".join(f"{k}={v}" for k, v in cell.items())
    log.info(
        "replicated design %s: %d studies, %d with the behaviour model",
        label,
        design.n_sims,
        n_bayes,
    )
    rows = run_design(
        [cell], design.n_sims, seed=seed, n_boot=design.n_boot, n_bayes=n_bayes, bayes=fit_kwargs
    )
    out = Outputs(run_dir, "design")
    out.write(ROWS, rows, "replicated study design, SIMULATED: one row per simulated study")
    table = design_table(rows).iloc[0]
    headline = {k: round(float(table[k]), 4) for k in ("power", "width95", "true_diff")}
    if n_bayes:
        headline.update({k: round(float(table[k]), 4) for k in ("bayes_power", "gate_clean")})
    note = (
        f"SIMULATED: {design.n_sims} replicated studies of preset spiral_like (seeds {seed}.."
        f"{seed + design.n_sims - 1}); the first {n_bayes} also fitted with the behaviour model"
    )
    return out.index(
        headline,
        notes=[note],
        config={**cell, "n_sims": design.n_sims, "n_sims_bayes": n_bayes, "seed": seed},
    )
