"""The supplement builder's shared machinery: writing tables and figures under ``report/``,
turning a failure into a note, and the notes for what did not run (each topic module builds its
section with a :class:`Builder`)."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from delusion_bayes.baselines.results import BaselineResult
from delusion_bayes.plotting import save_figure
from delusion_bayes.report.config import ReportConfig
from delusion_bayes.report.document import FigureBlock, Note, Paragraph, TableBlock
from delusion_bayes.report.provenance import Diagnostics
from delusion_bayes.report.sources import RunDir
from delusion_bayes.report.table import ReportTable, display_frame

log = logging.getLogger(__name__)


class MissingInput(LookupError):
    """A table or figure cannot be built because an input file is absent (message says which)."""


def capital(text: str) -> str:
    """``text`` with its first letter upper case (a stage's file description as a sentence)."""
    return text[:1].upper() + text[1:]


class Builder:
    """Collects what the document uses while writing tables/figures under ``run_dir/report/``."""

    def __init__(self, run: RunDir, cfg: ReportConfig, diag: Diagnostics):
        self.run, self.cfg, self.diag = run, cfg, diag
        self.out = run.path / "report"
        self.tables_dir, self.fig_dir = self.out / "tables", self.out / "figures"
        self.files: dict[str, str] = {}
        self.used: set[str] = set()  # run-relative paths shown in the document
        self.n_tables = 0
        self.errors: list[str] = []
        #: the fitted model whose posterior sits beside the baselines (None: no models stage)
        self.post = run.posterior_fit(list(cfg.posterior_models))

    # blocks --------------------------------------------------------------------------------
    def table(self, t: ReportTable, desc: str | None = None) -> TableBlock:
        links = {}
        for ext, p in t.write(self.tables_dir).items():
            self.files[p.relative_to(self.out).as_posix()] = f"{desc or t.title} ({ext})"
            links[ext.upper() if ext != "tex" else "LaTeX"] = self.run.rel(p)
        self.used.update(t.sources)
        self.n_tables += 1
        return TableBlock(t, links)

    def figure(
        self, title: str, caption: str, paths: list[Path], sources: list[str]
    ) -> FigureBlock:
        png = next(p for p in paths if p.suffix == ".png")
        links = {}
        for p in paths:
            self.files[p.relative_to(self.out).as_posix()] = f"{title} ({p.suffix[1:]})"
            if p.suffix != ".png":
                links[p.suffix[1:].upper()] = self.run.rel(p)
        self.used.update(sources)
        src = "; source: " + ", ".join(f"`{s}`" for s in sources) if sources else ""
        return FigureBlock(title, caption + src + ".", png, self.run.rel(png), links)

    def stage_figure(self, stage: str, rel: str, title: str | None = None) -> FigureBlock:
        """A PNG another stage wrote, embedded as it is (PDF twin linked when present)."""
        s = self.run.stage(stage)
        png = s.path / rel
        links = {}
        if png.with_suffix(".pdf").is_file():
            links["PDF"] = self.run.rel(png.with_suffix(".pdf"))
            self.used.add(f"{stage}/{Path(rel).with_suffix('.pdf').as_posix()}")
        self.used.add(f"{stage}/{rel}")
        caption = capital(s.describe(rel)) + f" (written by the {stage} stage: `{stage}/{rel}`)."
        name = title or Path(rel).stem.replace("_", " ")
        return FigureBlock(name, caption, png, f"{stage}/{rel}", links)

    def need(self, key: str) -> Any:
        """The declared table ``key`` of the run; :class:`MissingInput` when it is absent."""
        df = self.run.table(key)
        if df is None:
            raise MissingInput(f"{key} is missing")
        return df

    def save(self, fig: Any, stem: str) -> list[Path]:
        """``fig`` under ``report/figures/<stem>`` in the configured formats."""
        return save_figure(fig, self.fig_dir / stem, self.cfg.figure_formats, self.cfg.dpi)

    def draw(self, title: str, caption: str, make: Callable[[], tuple[list[Path], list[str]]]):
        """A figure the report draws itself (``make`` returns its paths and sources), as blocks."""
        return self.attempt(title.rstrip("."), lambda: [self.figure(title, caption, *make())])

    def attempt(self, what: str, fn: Callable[[], list[Any]]) -> list[Any]:
        """Run one builder; a failure becomes a note naming ``what`` (never a crash)."""
        try:
            return fn()
        except MissingInput as err:
            return [Note("notrun", f"{what}: {err}.")]
        except Exception as err:  # noqa: BLE001 - the document must still be written
            log.warning("report: %s failed:\n%s", what, traceback.format_exc())
            self.errors.append(f"{what}: {err}")
            return [Note("error", f"{what} could not be built: {type(err).__name__}: {err}")]

    def one_table(self, what: str, make: Callable[[], ReportTable | None], missing: Note) -> list:
        """``make()``'s table written and wrapped, ``missing`` when it returns None."""

        def build() -> list[Any]:
            t = make()
            return [missing] if t is None else [self.table(t)]

        return self.attempt(what, build)

    def generic(self, key: str, fit: str | None = None, title: str | None = None) -> list[Any]:
        """A declared table shown as written (linked instead when it is long)."""
        df = self.run.table(key, fit)
        src = self.run.source(key, fit)
        stage, rel = src.split("/", 1)
        if df is None:
            return [self.missing(src, title or rel)]
        desc = self.run.stage(stage).describe(rel)
        if len(df) > self.cfg.max_inline_rows:
            self.used.add(src)
            return [
                Paragraph(
                    f"`{src}` ({len(df)} rows{': ' + desc if desc else ''}) is too "
                    "long to show here; open the CSV."
                )
            ]
        caption = title or capital(desc) or rel
        name = src.replace("/", "_").removesuffix(".csv")
        res = self.run.result(key, fit)
        if res is not None and res.columns:  # a declared view: headers in words, its question
            notes = [res.question] if res.question else []
            return [self.table(ReportTable(name, caption, df, res.display(df), [src], notes))]
        return [self.table(ReportTable(name, caption, df, display_frame(df, 3), [src]))]

    # notes ---------------------------------------------------------------------------------
    def not_run(self, stage: str, what: str) -> Note:
        """The note shown where a stage's results are absent: failed, skipped or not run."""
        status = self.run.stage_status(stage)
        if status.get("status") == "failed":
            return Note(
                "error",
                f"The `{stage}` stage FAILED in this run, so {what} is not "
                f"available. Error: {status.get('error', 'see run.json')}",
                "Stage failed",
            )
        if status.get("status") == "skipped":
            return Note(
                "notrun",
                f"The `{stage}` stage was skipped ({status.get('reason', '')}), "
                f"so {what} is not available.",
            )
        return Note(
            "notrun",
            f"The `{stage}` stage did not run in this run directory, so {what} is not available. "
            f"Run it (e.g. `delusion-bayes stages=[{stage},report]`) and rebuild the report.",
        )

    def missing(self, src: str, what: str) -> Note:
        stage, rel = src.split("/", 1)
        reasons = [
            f"{s.get('analysis')}: {s.get('reason')}"
            for s in self.run.stage(stage).index.get("skipped") or []
            if isinstance(s, dict) and rel in (s.get("files") or [])
        ]
        if reasons:
            return Note("notrun", f"{what}: not computed for this study ({'; '.join(reasons)}).")
        return Note("notrun", f"{what}: `{src}` was not written by the {stage} stage.")

    def post_warning(self, what: str) -> list[Note]:
        """A warning above a table/figure with posterior columns when the chosen model failed
        its diagnostics (empty list otherwise)."""
        return [
            Note(
                "warning",
                f"The posterior columns of {what} come from `{v.model}`, which FAILED "
                f"its sampling diagnostics ({v.details}); they are not trustworthy.",
                "Diagnostics failed",
            )
            for v in self.diag.failed
            if v.model == self.post
        ]

    def fixed_scale(self) -> bool:
        """Whether the chosen model's fit fixed the t50 population scale (its ``gate.json``
        says ``t50_scale_fixed``): its tables carry :data:`questions.FIXED_SCALE`."""
        gate, _ = self.posterior("gate.json")
        return bool((gate or {}).get("t50_scale_fixed", False))

    def posterior_result(self, key: str) -> tuple[BaselineResult | None, str | None]:
        """``models/<post>/<key>`` of the chosen model as a result object and its source path,
        (None, None) when there is no model or no such file."""
        _, src = self.posterior(key)
        return self.run.result(f"models/{{fit}}/{key}", self.post) if src else None, src

    def posterior(self, key: str) -> tuple[Any, str | None]:
        """``models/<post>/<key>`` of the chosen model and its source path, (None, None) when
        there is no model or no such file."""
        if self.post is None:
            return None, None
        full = f"models/{{fit}}/{key}"
        df = self.run.table(full, self.post)
        return (df, self.run.source(full, self.post)) if df is not None else (None, None)
