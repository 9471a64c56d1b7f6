"""Stage ``report``: the paper supplement from the files earlier stages wrote (no refitting).

Writes ``run_dir/report/`` (tables as CSV/Markdown/LaTeX, figures as PNG/PDF, ``index.json``) and
``run_dir/supplement.md`` / ``supplement.html`` (and ``supplement.pdf`` when a converter exists).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

NEEDS = ("report",)
KIND = ("trajectory", "replay", "replicated")


def run(ds: Any, cfg: Any, run_dir: Path) -> dict:
    """Build the supplement of ``run_dir`` (from the files on disk; ``ds`` is unused) and return
    its headline: counts of tables and figures, stages not run, errors, failed models."""
    from delusion_bayes.report import build_supplement

    return build_supplement(Path(run_dir), cfg.report).headline
