"""Pipeline stages: one module per stage, each with ``NEEDS`` and ``run(ds, cfg, run_dir)``.

A stage module declares ``NEEDS``: the config nodes it reads (the pipeline hands it only those,
never the whole config) and ``KIND``: the study kinds it applies to. ``run`` writes into
``run_dir / <stage name>/`` and returns a small dict of headline results (for logs and sweeps).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .. import results

STAGES: tuple[str, ...] = (
    "baselines",
    "text",
    "models",
    "replay",
    "replicated",
    "design",
    "report",
)


def skip_record(s: Any) -> dict[str, str]:
    """``{analysis, reason[, files]}`` of a skipped analysis (a ``Skipped`` or a mapping)."""
    if not isinstance(s, dict):
        s = {k: getattr(s, k) for k in ("analysis", "reason", "files") if hasattr(s, k)}
    out = {"analysis": str(s.get("analysis", "")), "reason": str(s.get("reason", ""))}
    if s.get("files"):
        out["files"] = [str(f) for f in s["files"]]
    return out


class Outputs:
    """The files a stage writes into ``run_dir/<folder>/`` through the results contract, with the
    descriptions its ``index.json`` lists (``folder`` may be ``models/{fit}``, with ``fit``)."""

    def __init__(self, run_dir: str | Path, folder: str, fit: str | None = None):
        self.run_dir, self.folder, self.fit = Path(run_dir), folder, fit
        self.path = self.run_dir / folder.format(fit=fit)
        self.files: dict[str, str] = {}

    def write(self, name: str, data: Any, desc: str) -> None:
        """``data`` as the declared file ``<folder>/<name>`` listed with ``desc``; None: skipped."""
        if data is not None:
            results.write(self.run_dir, f"{self.folder}/{name}", data, fit=self.fit)
            self.files[name] = desc

    def index(
        self, headline: dict[str, Any], skipped: list | None = None, **extra: Any
    ) -> dict[str, Any]:
        """Write ``index.json`` (the files, ``headline``, the analyses ``skipped`` for want of
        input, each ``{analysis, reason}`` and logged once, and ``extra``); return ``headline``."""
        index = {"files": self.files, "headline": headline, **extra}
        if skipped:
            index["skipped"] = [skip_record(s) for s in skipped]
            log = logging.getLogger(f"delusion_bayes.stages.{self.folder.split('/')[0]}")
            for s in index["skipped"]:
                log.info("%s: skipped (%s)", s["analysis"], s["reason"])
        results.write(self.run_dir, f"{self.folder}/index.json", index, fit=self.fit)
        return headline
