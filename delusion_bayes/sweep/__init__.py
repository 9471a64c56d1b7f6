"""Sweeps and methodology studies: summaries of Hydra multiruns (``delusion-bayes-summarize``,
:func:`summarize_main`), the specification curve, the coverage study of the inference choices
and the study-design experiment. Heavy modules (matplotlib, the models) load only when used.
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
    "true_quantities": ".truth",
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
