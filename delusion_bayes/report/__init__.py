"""The paper supplement: tables, figures and one document, built from a run's saved results.

>>> import delusion_bayes as db
>>> db.report.build_supplement("outputs/2026-11-29/12-00-00")   # doctest: +SKIP

Command line (rebuild without refitting): ``delusion-bayes report.from_run=<run dir>``.
The figure style other stages share: :func:`apply_style`, :func:`style`, :func:`save_figure`.
"""

from __future__ import annotations

from ..plotting import apply_style, save_figure, series_style, style
from .config import ReportConfig
from .sources import RunDir
from .supplement import Supplement, build_supplement
from .table import ReportTable

__all__ = [
    "ReportConfig",
    "ReportTable",
    "RunDir",
    "Supplement",
    "apply_style",
    "build_supplement",
    "save_figure",
    "series_style",
    "style",
]
