"""``delusion-bayes-summarize <multirun dir>``: one table and one picture of a whole sweep.

Writes into the multirun directory (or ``--out``) ``summary.csv`` (one row per job and
quantity: ``job, status, error``, one column per override key, then the :mod:`.quantities`
columns; every job has a ``quantity == "status"`` row, so failed jobs are listed with their
error), ``jobs.csv`` (one row per job) and ``multiverse.png``/``.pdf``; coverage replicates and
study-design jobs are also summarised (:mod:`.coverage_metrics`, :mod:`.design`). Reference:
Steegen, Tuerlinckx, Gelman & Vanpaemel (2016), "Increasing transparency through a multiverse
analysis", Perspectives on Psychological Science 11, 702-712 (specification curve: :mod:`.plot`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import pandas as pd

from ..plotting import save_figure
from .jobs import Job, collect_jobs, sweep_keys
from .quantities import COLUMNS, run_quantities

log = logging.getLogger(__name__)

JOB_COLUMNS: tuple[str, ...] = ("job", "status", "error")


def _override_columns(jobs: list[Job]) -> list[str]:
    varying = sweep_keys(jobs)
    rest = [k for job in jobs for k in job.overrides if k not in varying]
    return [*varying, *dict.fromkeys(rest)]


def jobs_table(jobs: list[Job]) -> pd.DataFrame:
    """One row per job: name, status, error, seconds and the overrides as columns."""
    keys = _override_columns(jobs)
    rows = [
        {
            "job": job.name,
            "status": job.status,
            "error": job.error,
            "seconds": job.seconds,
            **{k: job.overrides.get(k, "") for k in keys},
        }
        for job in jobs
    ]
    return pd.DataFrame(rows, columns=["job", "status", "error", "seconds", *keys])


def summary_table(jobs: list[Job]) -> pd.DataFrame:
    """The tidy ``summary.csv`` frame of a list of jobs (see the module docstring)."""
    keys = _override_columns(jobs)
    frames = []
    for job in jobs:
        q = run_quantities(job.path, job.run) if job.path.is_dir() else pd.DataFrame()
        source = "run.json" if job.run else "job.json / job folder"
        status = ("run", "status", "", 1.0 if job.ok else 0.0, job.status, source)
        status_row = pd.DataFrame([dict(zip(COLUMNS, status, strict=True))])
        q = pd.concat([status_row, q], ignore_index=True) if not q.empty else status_row
        info = {"job": job.name, "status": job.status, "error": job.error}
        frames.append(q.assign(**info, **{k: job.overrides.get(k, "") for k in keys}))
    columns = [*JOB_COLUMNS, *keys, *COLUMNS]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def summarize(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    formats: tuple[str, ...] = ("png", "pdf"),
) -> pd.DataFrame:
    """Summarise a multirun directory into ``out_dir`` (default: the same): ``summary.csv``
    (returned), ``jobs.csv`` and, with ``plot``, the figures in ``formats``."""
    sweep_dir = Path(sweep_dir)
    out = Path(out_dir) if out_dir is not None else sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    from .coverage import has_replicates
    from .coverage_metrics import REPLICATE_DIR, aggregate_coverage

    coverage_only = has_replicates(sweep_dir)
    try:
        jobs = collect_jobs(sweep_dir)
    except ValueError:
        if not coverage_only:
            raise
        jobs = []
    summary = summary_table(jobs)
    summary.to_csv(out / "summary.csv", index=False)
    jobs_table(jobs).to_csv(out / "jobs.csv", index=False)
    n_bad = sum(not j.ok for j in jobs)
    log.info("%d jobs (%d not ok) -> %s", len(jobs), n_bad, out / "summary.csv")
    from . import replicated_design
    from .design import has_design, summarize_design

    design = has_design(sweep_dir)
    replicated = replicated_design.has_design(sweep_dir)
    if (
        plot and any(j.run for j in jobs) and not (design or replicated)
    ):  # coverage: replicates, not run dirs
        from .plot import plot_multiverse

        save_figure(plot_multiverse(summary, sweep_keys(jobs)), out / "multiverse", formats)
    if coverage_only:
        aggregate_coverage(sweep_dir / REPLICATE_DIR, out, plot=plot, formats=formats)
    if design:
        summarize_design(sweep_dir, out, plot=plot, formats=formats)
    if replicated:
        replicated_design.summarize_design(sweep_dir, out, plot=plot, formats=formats)
    return summary


def summarize_main(argv: list[str] | None = None) -> int:
    """Console script ``delusion-bayes-summarize`` (exit status 2 on a bad directory)."""
    parser = argparse.ArgumentParser(
        prog="delusion-bayes-summarize",
        description="Gather a delusion-bayes multirun into summary.csv, jobs.csv and a "
        "multiverse (specification-curve) plot; a coverage study also into coverage.csv; a "
        "study-design sweep (experiment=design) into design_table.csv/.md and power.png/.pdf.",
    )
    parser.add_argument("sweep_dir", help="the multirun directory (hydra.sweep.dir)")
    parser.add_argument("--out", default=None, help="output directory (default: sweep_dir)")
    parser.add_argument("--no-plot", action="store_true", help="write the tables only")
    parser.add_argument(
        "--strict", action="store_true", help="exit with status 1 when any job is not ok"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        summary = summarize(args.sweep_dir, args.out, plot=not args.no_plot)
    except ValueError as err:
        print(f"delusion-bayes-summarize: error: {err}", file=sys.stderr)
        return 2
    status = summary[summary["quantity"] == "status"]
    bad = status[status["status"] != "ok"]
    out = Path(args.out or args.sweep_dir)
    print(f"{len(status)} jobs, {len(bad)} not ok; wrote {out / 'summary.csv'}")
    for _, row in bad.iterrows():
        print(f"  job {row['job']}: {row['status']}: {row['error']}")
    return 1 if (args.strict and len(bad)) else 0
