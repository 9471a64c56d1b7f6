"""Build the paper supplement of a run: ``supplement.md`` and ``supplement.html`` at its top.

:func:`build_supplement` reads only what the stages left on disk (it never refits). A stage that
did not run, or a file it did not write, becomes a "Not run" note, a file the report cannot parse
an "Error" note naming it. Sections: overview, main tables and figures, the paper's supplement
(C-F), the Bayesian models and their sensitivity, the replay study, all files, provenance.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delusion_bayes import results
from delusion_bayes.provenance import versions
from delusion_bayes.report import (
    interventions,
    milestones,
    overview,
    questions,
    reliability,
    trajectories,
)
from delusion_bayes.report.bayes import section_bayes
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.config import ReportConfig
from delusion_bayes.report.document import (
    Bullets,
    Code,
    Document,
    Embed,
    FileList,
    KeyValues,
    Note,
    Paragraph,
    Section,
    to_html,
    to_markdown,
)
from delusion_bayes.report.provenance import (
    config_text,
    diagnostics,
    headline_json,
    provenance_rows,
)
from delusion_bayes.report.replay import section_replay
from delusion_bayes.report.replicated import section_replicated
from delusion_bayes.report.sensitivity import section_sensitivity
from delusion_bayes.report.sources import SOURCE_STAGES, RunDir
from delusion_bayes.report.text import section_text

log = logging.getLogger(__name__)


@dataclass
class Supplement:
    """What :func:`build_supplement` wrote (``str()``/``os.fspath()`` give the HTML path)."""

    run_dir: Path
    markdown: Path
    html: Path
    pdf: Path | None
    document: Document
    files: dict[str, str] = field(default_factory=dict)  # report-relative path -> description
    headline: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return str(self.html)

    def __fspath__(self) -> str:
        return str(self.html)


def _config(cfg: Any) -> ReportConfig:
    """A :class:`ReportConfig` from None, a ReportConfig, a dict or an OmegaConf node."""
    from omegaconf import DictConfig, OmegaConf

    if cfg is None or isinstance(cfg, ReportConfig):
        return cfg or ReportConfig()
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=True)
    if not isinstance(cfg, dict):
        raise ValueError(
            f"report config must be a ReportConfig, dict or DictConfig, got {type(cfg)}"
        )
    known = set(ReportConfig.__dataclass_fields__)
    unknown = set(cfg) - known
    if unknown:
        raise ValueError(
            f"unknown report config keys {sorted(unknown)}; valid keys: {sorted(known)}"
        )
    return ReportConfig(**cfg)


def build_supplement(run_dir: str | Path, cfg: Any = None) -> Supplement:
    """Build ``supplement.md`` and ``supplement.html`` (and the PDF when a converter exists) from
    the results saved in the run directory ``run_dir`` (nothing is refitted); tables and figures
    go to ``run_dir/report/``. ``cfg``: a :class:`ReportConfig`, a dict or the ``report`` config
    node (None: the defaults). Returns the written paths, the document, files and headline."""
    cfg = _config(cfg)
    # matplotlib's PDF backend subsets fonts with fontTools, which logs every table at INFO
    logging.getLogger("fontTools").setLevel(logging.WARNING)
    run = RunDir(run_dir)
    diag = diagnostics(run)
    b = Builder(run, cfg, diag)
    b.out.mkdir(parents=True, exist_ok=True)
    sections: list[Section] = [_overview(b, diag)]
    if run.kind == "trajectory":
        sections += [
            _main(b),
            section_text(b),
            reliability.section_c(b),
            trajectories.section_d(b),
            milestones.section_e(b),
            interventions.section_f(b),
            *section_bayes(b),
            section_sensitivity(b),
        ]
    if run.kind == "replicated":
        sections.append(section_replicated(b))
    if run.kind == "replay" or run.stage("replay").ran:
        sections.append(section_replay(b))
        if run.kind == "replay":
            sections.append(section_sensitivity(b))
    sections.append(_other_files(b))
    sections.append(_provenance(b, diag))

    doc = Document(cfg.title, _subtitle(run), sections)
    md_path = run.path / "supplement.md"
    html_path = run.path / "supplement.html"
    md_path.write_text(to_markdown(doc))
    html_path.write_text(to_html(doc, Embed(cfg.embed_colors, cfg.embed_max_dpi)))
    pdf_path = _pdf(html_path, cfg)

    headline = {
        "tables": b.n_tables,
        "figures": len(doc.figures()),
        # the replicated stage runs on replicated studies only: never "not run" elsewhere
        "not_run": [
            s
            for s in SOURCE_STAGES
            if not run.stage(s).ran and (s != "replicated" or run.kind == "replicated")
        ],
        "errors": b.errors,
        "diagnostics_failed": [v.model for v in diag.failed],
        "html": "supplement.html",
        "pdf": pdf_path.name if pdf_path else None,
    }
    files = dict(sorted(b.files.items()))
    listed = {
        **files,
        "../supplement.md": "the supplement (Markdown)",
        "../supplement.html": "the supplement, self-contained HTML",
    }
    if pdf_path:
        listed["../supplement.pdf"] = "the supplement (PDF, printed by a headless browser)"
    results.write(run.path, "report/index.json", {"files": listed, "headline": headline})
    log.info(
        "supplement written: %s (%d tables, %d figures)", html_path, b.n_tables, headline["figures"]
    )
    return Supplement(run.path, md_path, html_path, pdf_path, doc, files, headline)


def _subtitle(run: RunDir) -> str:
    ds, parts = run.study, []
    if ds is not None:
        dims = ", ".join(
            f"{n} {d}s"
            for d, n in ds.sizes.items()
            if d in ("rater", "model", "day", "sample", "code", "conversation", "turn", "item")
        )
        parts.append(f"{run.kind.capitalize()} study: {dims}.")
    sim, path = overview.simulated(run), run.config_value("data.path")
    data_hash = str((run.record.get("provenance") or {}).get("data_hash") or "")[:12]
    if sim:
        parts.insert(0, f"SIMULATED data ({sim}): not real chatbots.")
    elif run.config_value("data.source"):
        source = path or "a study given in Python"
        parts.insert(0, f"Data: {source}" + (f" (data hash {data_hash})." if data_hash else "."))
    return " ".join(parts)


# sections ----------------------------------------------------------------------------------
def _overview(b: Builder, diag) -> Section:
    run = b.run
    s = Section("overview", "Overview")
    # what the study found, then the diagnostics state (a warning when a fit failed)
    s.add(*b.attempt("overview findings", lambda: overview.opening(run, diag)))
    rows = []
    for name in SOURCE_STAGES:
        if name == "replicated" and run.kind != "replicated":
            continue  # a stage of replicated studies only: not "not run" elsewhere
        st, record = run.stage(name), run.stage_status(name)
        status, secs = record.get("status"), record.get("seconds")
        if status == "failed":
            s.add(
                Note(
                    "error", f"The `{name}` stage FAILED: {record.get('error', '')}", "Stage failed"
                )
            )
        if st.ran:
            took = f" in {float(secs):.3g} s" if isinstance(secs, int | float) else ""
            state = "FAILED, partial output" if status == "failed" else "ran"
            rows.append((name, f"{state}{took}: {len(st.files)} files"))
        else:
            rows.append((name, "FAILED" if status == "failed" else status or "not run"))
    s.add(
        Paragraph(
            "This document was generated from the files the pipeline stages saved in the "
            "run directory; every number in it is read from a stage's CSV (linked under "
            'each table). Missing stages are marked "Not run".'
        ),
        Paragraph("Stages (their full headline results are under Provenance):"),
        KeyValues(rows),
    )
    notes = [f"{name}: {n}" for name in SOURCE_STAGES for n in run.stage(name).notes]
    if notes:
        s.add(
            Paragraph(
                "Analysis notes recorded by the stages (rules applied, censoring, missing data):"
            ),
            Bullets(notes),
        )
    return s


def _main(b: Builder) -> Section:
    s = Section("main", "Main tables and figures")
    if not b.run.stage("baselines").ran:
        s.add(b.not_run("baselines", "Table 1, Table 2 and Figure 2"))
    else:
        s.add(*b.post_warning("Table 1 and Figure 1"))
        s.add(
            *b.one_table(
                "Table 1", lambda: milestones.table1(b), b.missing(milestones.T1, "Table 1")
            )
        )
        s.add(
            *b.one_table(
                "Table 2", lambda: interventions.table2(b), b.missing(interventions.T2, "Table 2")
            )
        )
    caption = trajectories.FIGURE1_CAPTION.format(ci=b.cfg.ci_prob) + ". " + questions.figure1()
    s.add(*b.draw("Figure 1.", caption, lambda: trajectories.figure1(b)))
    if b.run.stage("baselines").ran:
        caption = interventions.FIGURE2_CAPTION
        s.add(*b.draw("Figure 2.", caption, lambda: interventions.figure2(b)))
    return s


def _other_files(b: Builder) -> Section:
    s = Section("files", "All result files")
    rows = []
    for name in SOURCE_STAGES:
        for rel, desc in b.run.stage(name).files.items():
            path, shown = f"{name}/{rel}", " — shown above" if desc else "shown above"
            rows.append((path, desc + (shown if path in b.used else "")))
    if not rows:
        return s.add(Note("notrun", "No stage wrote any file in this run directory."))
    s.add(Paragraph("Every file the stages wrote (from their `index.json` and the folders)."))
    return s.add(FileList(rows))


def _provenance(b: Builder, diag) -> Section:
    run = b.run
    s = Section("provenance", "Provenance")
    if diag.failed:
        failed = ", ".join(f"`{v.model}` ({v.details})" for v in diag.failed)
        s.add(Note("warning", "Diagnostics FAILED for: " + failed, "Diagnostics failed"))
    elif diag.verdicts:
        passed = ", ".join(f"`{v.model}`" for v in diag.verdicts if v.passed)
        s.add(Note("ok", f"Diagnostics passed for: {passed}."))
    s.add(
        KeyValues(provenance_rows(run)),
        Paragraph("Package and dependency versions at report time:"),
        KeyValues(list(versions().items())),
    )
    heads = headline_json(run)
    if heads != "{}":
        s.add(
            Paragraph("Headline results of each stage (`<stage>/index.json`):"), Code(heads, "json")
        )
    return s.add(Paragraph("Resolved configuration of the run:"), Code(config_text(run), "yaml"))


# PDF ---------------------------------------------------------------------------------------
def _pdf(html_path: Path, cfg: ReportConfig) -> Path | None:
    """``supplement.pdf`` when ``cfg.pdf == 'auto'`` and Chromium or pandoc is installed."""
    if cfg.pdf == "never":
        return None
    if cfg.pdf != "auto":
        raise ValueError(f"report.pdf must be 'auto' or 'never', got {cfg.pdf!r}")
    from delusion_bayes.report.browser import find_browser, print_pdf

    out = html_path.with_suffix(".pdf")
    if find_browser():
        try:
            return print_pdf(html_path, out)
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            log.warning("PDF not written: %s", err)
            return None
    if shutil.which("pandoc") and shutil.which("pdflatex"):
        md = str(html_path.with_suffix(".md"))
        res = subprocess.run(
            ["pandoc", md, "-o", str(out)],
            cwd=html_path.parent,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if res.returncode == 0 and out.is_file():
            return out
        log.warning("pandoc could not write the PDF: %s", res.stderr[-500:])
    return None
