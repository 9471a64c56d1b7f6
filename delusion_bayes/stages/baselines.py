"""Pipeline stage ``baselines``: the trajectory paper's own analysis, written as tables.

Writes the result of :func:`delusion_bayes.baselines.analyse_trajectory` into
``run_dir/baselines/``: Tables 1, 2, C1, D1, the contrast tests, Figure 2 (data and plot), the
section-F naive profiles, ``consensus.nc``, the rater-bootstrap replicates and ``index.json``.
Every resampling is seeded from ``baselines.seed``: the same seed gives identical tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import xarray as xr

from ..baselines.config import MILESTONES
from ..baselines.profiles import plot_intensity_by_stage
from ..baselines.trajectory import analyse_trajectory, save_rank_figure
from ..plotting import save_figure
from . import Outputs

NEEDS = ("baselines",)
KIND = ("trajectory",)


def run(ds: xr.Dataset, cfg: Any, run_dir: Path) -> dict[str, Any]:
    """Run the baselines (``cfg.baselines``: :class:`~delusion_bayes.baselines.config.
    BaselinesConfig`) on a validated trajectory study, write ``run_dir/baselines/`` and return the
    headline numbers (also in ``index.json``)."""
    b = cfg.baselines if "baselines" in cfg else cfg
    res = analyse_trajectory(ds, b, progress=True)
    out = Outputs(run_dir, "baselines")
    write = out.write
    rule, half = res.consensus.attrs["consensus"], res.consensus.attrs["half_rule"]
    write(
        "consensus.nc",
        res.consensus,
        f"consensus ({rule}, half rule {half}) per model-day, rated variables",
    )
    write("tableC1_reliability.csv", res.reliability.table, res.reliability.title)
    table1 = res.milestones.to_dataframe().reset_index()
    for m in MILESTONES:  # a level-based milestone without adjudication: NaN (and a skip note)
        if m not in table1:
            table1.insert(list(MILESTONES).index(m) + 1, m, float("nan"))
    write(
        "table1_milestones.csv",
        table1,
        f"Table 1: milestone latencies (censored at {res.censor_day}) and day counts per model",
    )
    write("tableD1_logistic.csv", res.logistic.table, res.logistic.title)
    write(
        "logistic_bootstrap.nc",
        res.logistic.extra["replicates"],
        "rater-bootstrap replicates of L, k, t50 (resample x model)",
    )
    for result, key in (
        (res.contrasts, "contrasts.csv"),
        (res.interventions, "table2_interventions.csv"),
        (res.intensity, "figure2_intensity_by_stage.csv"),
        (res.naive, "sectionF_naive_profiles.csv"),
    ):
        if result is not None:
            write(key, result.table, result.title)
    if res.intensity is not None:
        fig = plot_intensity_by_stage(res.intensity.summary)
        for p in save_figure(fig, out.path / "figure2_intensity_by_stage"):
            out.files[p.name] = "Figure 2: mean intervention intensity by consensus stage"

    if res.rankings is not None:
        write("rankings.csv", res.rankings.table, res.rankings.title)
        for p in save_rank_figure(res.rankings.summary, out.path / "figure_ranks"):
            out.files[p.name] = (
                "each model's rank on the milestones with its interval (rater bootstrap)"
            )
    con_notes = res.contrasts.notes if res.contrasts is not None else []
    config = {
        "consensus": rule,
        "half_rule": half,
        "n_days": int(ds["day"].max()),
        "censor_day": res.censor_day,
        "seed": res.settings["seed"],
        "n_boot": int(res.settings["n_boot"]),
    }
    rank_notes = res.rankings.notes if res.rankings is not None else []
    notes = res.notes + res.reliability.notes + res.logistic.notes + con_notes + rank_notes
    return out.index(res.headline, skipped=res.skipped, notes=notes, config=config)
