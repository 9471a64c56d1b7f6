"""The paper supplement: tables, figures and one document, built from a run's saved results.

>>> import delusion_bayes as db
>>> db.report.build_supplement("outputs/2026-11-29/12-00-00")   # doctest: +SKIP

Command line (rebuild without refitting): ``delusion-bayes report.from_run=<run dir>``.
"""

from __future__ import annotations

from .config import ReportConfig
from .sources import RunDir
from .supplement import Supplement, build_supplement
from .table import ReportTable

__all__ = ["ReportConfig", "ReportTable", "RunDir", "Supplement", "build_supplement"]
