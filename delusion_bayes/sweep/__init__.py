"""Sweeps and methodology studies: summaries of Hydra multiruns, the specification curve, and
the coverage study of the inference choices.

``delusion-bayes-summarize <multirun dir>`` (:func:`summarize_main`) gathers a sweep into
``summary.csv`` and ``multiverse.png``; :mod:`delusion_bayes.sweep.coverage` simulates studies
from known truth and scores every method's intervals and tests. Heavy modules (matplotlib, the
models) are imported only when used.
"""

from __future__ import annotations

from .._lazy import lazy_getattr
from .jobs import Job, collect_jobs, parse_overrides, read_job, sweep_keys
from .quantities import REGIMES, classify_regime, run_quantities
from .summarize import jobs_table, summarize, summarize_main, summary_table

_LAZY = {
    "JobStatusCallback": ".callbacks",
    "plot_multiverse": ".plot",
    "run_coverage": ".coverage",
    "run_replicate": ".coverage",
    "analyse_replicate": ".coverage",
    "aggregate_coverage": ".coverage_metrics",
    "coverage_metrics": ".coverage_metrics",
    "contrast_metrics": ".coverage_metrics",
    "true_quantities": ".coverage",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "REGIMES",
    "Job",
    "classify_regime",
    "collect_jobs",
    "jobs_table",
    "parse_overrides",
    "read_job",
    "run_quantities",
    "summarize",
    "summarize_main",
    "summary_table",
    "sweep_keys",
    *_LAZY,
]
