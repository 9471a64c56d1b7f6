"""Build the paper supplement of a run: ``supplement.md`` and ``supplement.html`` at its top.

:func:`build_supplement` reads only what the stages left on disk (it never refits), so it can
rebuild the document of any finished run::

    delusion-bayes report.from_run=outputs/2026-11-29/12-00-00
    python -c "import delusion_bayes as db; db.report.build_supplement('outputs/...')"

Every section is built from whatever results exist; a stage that did not run, or a file it did not
write, becomes a marked "Not run" note, and a file the report cannot parse becomes an "Error" note
naming the file (the rest of the document is still written). Sections follow the paper's
supplement (C reliability, D logistic fits, E milestones, F naive-stage profiles) after the main
tables and figures, then the Bayesian models, the replay study, and provenance.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from delusion_bayes.provenance import versions
from delusion_bayes.report import figures as F
from delusion_bayes.report import tables as T
from delusion_bayes.report.config import ReportConfig
from delusion_bayes.report.document import (
    Bullets,
    Code,
    Document,
    FigureBlock,
    FileList,
    KeyValues,
    Note,
    Paragraph,
    Section,
    TableBlock,
    to_html,
    to_markdown,
)
from delusion_bayes.report.provenance import (
    config_text,
    diagnostics,
    headline_json,
    provenance_rows,
)
from delusion_bayes.report.rundir import SOURCE_STAGES, RunDir
from delusion_bayes.report.table import ReportTable, display_frame

log = logging.getLogger(__name__)

STAGE = "report"


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
    if cfg is None:
        return ReportConfig()
    if isinstance(cfg, ReportConfig):
        return cfg
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
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


class _Builder:
    """Collects sections while writing tables/figures under ``run_dir/report/``."""

    def __init__(self, run: RunDir, cfg: ReportConfig):
        self.run = run
        self.cfg = cfg
        self.out = run.path / STAGE
        self.tables_dir = self.out / "tables"
        self.fig_dir = self.out / "figures"
        self.files: dict[str, str] = {}
        self.used: set[str] = set()  # run-relative paths shown in the document
        self.n_tables = 0
        self.n_figures = 0
        self.errors: list[str] = []
        self.post = T.choose_posterior(run, cfg.posterior_models)
        self.diag = diagnostics(run)

    # --- blocks ----------------------------------------------------------------------------
    def table(self, t: ReportTable, desc: str | None = None) -> TableBlock:
        paths = t.write(self.tables_dir)
        links = {}
        for ext, p in paths.items():
            rel = self.run.rel(p)
            self.files[p.relative_to(self.out).as_posix()] = f"{desc or t.title} ({ext})"
            links[ext.upper() if ext != "tex" else "LaTeX"] = rel
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
        self.n_figures += 1
        src = "; source: " + ", ".join(f"`{s}`" for s in sources) if sources else ""
        return FigureBlock(title, caption + src + ".", png, self.run.rel(png), links)

    def stage_figure(self, stage: str, rel: str, title: str | None = None) -> FigureBlock:
        """A PNG another stage wrote, embedded as it is (PDF twin linked when present)."""
        s = self.run.stage(stage)
        png = s.path / rel
        desc = s.describe(rel)
        links = {}
        pdf = png.with_suffix(".pdf")
        if pdf.is_file():
            links["PDF"] = self.run.rel(pdf)
            self.used.add(f"{stage}/{Path(rel).with_suffix('.pdf').as_posix()}")
        self.used.add(f"{stage}/{rel}")
        self.n_figures += 1
        caption = (
            desc[:1].upper() + desc[1:] if desc else ""
        ) + f" (written by the {stage} stage: `{stage}/{rel}`)."
        return FigureBlock(
            title or Path(rel).stem.replace("_", " "), caption, png, f"{stage}/{rel}", links
        )

    def attempt(self, what: str, fn: Callable[[], list[Any]]) -> list[Any]:
        """Run one builder; a failure becomes an Error note naming ``what`` (never a crash)."""
        try:
            return fn()
        except F.MissingInput as err:
            return [Note("notrun", f"{what}: {err}.")]
        except Exception as err:  # the document must still be written
            log.warning("report: %s failed:\n%s", what, traceback.format_exc())
            self.errors.append(f"{what}: {err}")
            return [Note("error", f"{what} could not be built: {type(err).__name__}: {err}")]

    def one_table(
        self, what: str, make: Callable[[], ReportTable | None], missing: Note
    ) -> list[Any]:
        """``make()``'s table written and wrapped, ``missing`` when it returns None, an Error note
        when it raises."""

        def build() -> list[Any]:
            t = make()
            return [missing] if t is None else [self.table(t)]

        return self.attempt(what, build)

    def not_run(self, stage: str, what: str) -> Note:
        """The note shown where a stage's results are absent: failed, skipped or not run."""
        status = self.run.stage_status(stage)
        if status.get("status") == "failed":
            return Note(
                "error",
                f"The `{stage}` stage FAILED in this run, so {what} is not available. "
                f"Error: {status.get('error', 'see run.json')}",
                "Stage failed",
            )
        if status.get("status") == "skipped":
            return Note("notrun", f"The `{stage}` stage was skipped ({status.get('reason', '')}), "
                        f"so {what} is not available.")  # fmt: skip
        return Note(
            "notrun",
            f"The `{stage}` stage did not run in this run directory, so {what} is not available. "
            f"Run it (e.g. `delusion-bayes stages=[{stage},report]`) and rebuild the report.",
        )

    def post_warning(self, what: str) -> list[Note]:
        """A warning above a table/figure with posterior columns when the chosen model failed
        its diagnostics (empty list otherwise)."""
        bad = [v for v in self.diag.failed if v.model == self.post.name]
        return [
            Note(
                "warning",
                f"The posterior columns of {what} come from `{v.model}`, which FAILED its "
                f"sampling diagnostics ({v.details}); they are not trustworthy.",
                "Diagnostics failed",
            )
            for v in bad
        ]

    def missing(self, stage: str, rel: str, what: str) -> Note:
        return Note("notrun", f"{what}: `{stage}/{rel}` was not written by the {stage} stage.")


# -------------------------------------------------------------------------------------------
def build_supplement(run_dir: str | Path, cfg: Any = None) -> Supplement:
    """Build ``supplement.md`` and ``supplement.html`` (and the PDF when a converter exists) from
    the results saved in ``run_dir``; tables and figures go to ``run_dir/report/``.

    Parameters
    ----------
    run_dir : a run directory written by ``delusion-bayes`` (holds ``study.nc`` and the stage
        folders). Nothing is refitted.
    cfg : :class:`~delusion_bayes.report.config.ReportConfig`, a dict or the ``report`` config
        node; None uses the defaults.

    Returns
    -------
    Supplement
        Paths of the written documents, the document model, the report's files and a headline.
    """
    cfg = _config(cfg)
    # matplotlib's PDF backend subsets fonts with fontTools, which logs every table at INFO
    logging.getLogger("fontTools").setLevel(logging.WARNING)
    run = RunDir(run_dir)
    b = _Builder(run, cfg)
    b.out.mkdir(parents=True, exist_ok=True)
    diag = b.diag

    sections: list[Section] = [_overview(b, diag)]
    if run.kind == "trajectory":
        sections += [
            _main(b),
            _text(b),
            _section_c(b),
            _section_d(b),
            _section_e(b),
            _section_f(b),
            *_bayes(b, diag),
        ]
    if run.kind == "replay" or run.stage("replay").ran:
        sections.append(_replay(b))
    sections.append(_other_files(b))
    sections.append(_provenance(b, diag))

    doc = Document(cfg.title, _subtitle(run), sections)
    md_path = run.path / "supplement.md"
    html_path = run.path / "supplement.html"
    md_path.write_text(to_markdown(doc))
    html_path.write_text(to_html(doc))
    pdf_path = _pdf(html_path, cfg)

    headline = {
        "tables": b.n_tables,
        "figures": len(doc.figures()),
        "not_run": [s for s in SOURCE_STAGES if not run.stage(s).ran],
        "errors": b.errors,
        "diagnostics_failed": [v.model for v in diag.failed],
        "html": "supplement.html",
        "pdf": pdf_path.name if pdf_path else None,
    }
    files = dict(sorted(b.files.items()))
    index = {
        "files": {
            **files,
            "../supplement.md": "the supplement (Markdown)",
            "../supplement.html": "the supplement, self-contained HTML",
        },
        "headline": headline,
    }
    if pdf_path:
        index["files"]["../supplement.pdf"] = "the supplement (PDF, printed by a headless browser)"
    (b.out / "index.json").write_text(json.dumps(index, indent=2, default=str))
    log.info(
        "supplement written: %s (%d tables, %d figures)", html_path, b.n_tables, headline["figures"]
    )
    return Supplement(run.path, md_path, html_path, pdf_path, doc, files, headline)


def _subtitle(run: RunDir) -> str:
    ds = run.study
    parts = []
    if ds is not None:
        dims = ", ".join(
            f"{n} {d}s"
            for d, n in ds.sizes.items()
            if d in ("rater", "model", "day", "sample", "code")
        )
        parts.append(f"{run.kind.capitalize()} study: {dims}.")
    src = run.config_value("data.source")
    if src == "simulate" and run.kind == "trajectory":
        parts.append(f"Simulated data (preset `{run.config_value('data.preset')}`).")
    elif src == "simulate":
        parts.append(f"Simulated data (seed {run.config_value('data.seed')}).")
    elif src:
        parts.append(f"Data: {run.config_value('data.path')}.")
    return " ".join(parts)


# sections ----------------------------------------------------------------------------------
def _overview(b: _Builder, diag) -> Section:
    run = b.run
    s = Section("overview", "Overview")
    for v in diag.failed:
        s.add(
            Note(
                "warning",
                f"The Bayesian model `{v.model}` FAILED its sampling diagnostics "
                f"({v.details}). Its posterior results below are not trustworthy; see "
                f"`{v.source}`.",
                "Diagnostics failed",
            )
        )
    replay_gate = _replay_gate(run.stage("replay"))
    if replay_gate is not None and replay_gate.kind == "warning":
        s.add(replay_gate)
    for name in SOURCE_STAGES:
        status = run.stage_status(name)
        if status.get("status") == "failed":
            s.add(Note("error", f"The `{name}` stage FAILED: {status.get('error', '')}",
                       "Stage failed"))  # fmt: skip
    rows = []
    for name in SOURCE_STAGES:
        st = run.stage(name)
        status = run.stage_status(name).get("status")
        if st.ran:
            head = ", ".join(
                f"{k} = {_short(v)}"
                for k, v in list(st.headline.items())[:6]
                if isinstance(v, int | float | str | bool)
            )
            state = "FAILED, partial output" if status == "failed" else "ran"
            rows.append((name, f"{state}: {len(st.files)} files" + (f"; {head}" if head else "")))
        else:
            rows.append((name, "FAILED" if status == "failed" else status or "not run"))
    s.add(
        Paragraph(
            "This document was generated from the files the pipeline stages saved in the "
            "run directory; every number in it is read from a stage's CSV (linked under "
            'each table). Missing stages are marked "Not run".'
        )
    )
    s.add(KeyValues(rows))
    notes = [(name, n) for name in SOURCE_STAGES for n in run.stage(name).notes]
    if notes:
        s.add(Paragraph("Analysis notes recorded by the stages (rules applied, censoring, "
                        "missing data):"))  # fmt: skip
        s.add(Bullets([f"{name}: {n}" for name, n in notes]))
    return s


def _short(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _main(b: _Builder) -> Section:
    run = b.run
    s = Section("main", "Main tables and figures")
    base = run.stage("baselines")
    if not base.ran:
        s.add(b.not_run("baselines", "Table 1, Table 2 and Figure 2"))
    else:
        s.add(*b.post_warning("Table 1 and Figure 1"))
        s.add(
            *b.one_table(
                "Table 1",
                lambda: T.table1(run, b.post),
                b.missing("baselines", "table1_milestones.csv", "Table 1"),
            )
        )
        s.add(
            *b.one_table(
                "Table 2",
                lambda: T.table2(run),
                b.missing("baselines", "table2_interventions.csv", "Table 2"),
            )
        )
    fig1 = b.attempt(
        "Figure 1",
        lambda: [
            b.figure(
                "Figure 1.",
                "Consensus recognition-stage trajectories of every model (squares), the raters' scores "
                "(grey points, offset per rater), the least-squares logistic fit (black line) and, where a "
                f"Bayesian model was fitted, its posterior median (dashed), {b.cfg.ci_prob:.0%} band (grey) "
                "and posterior mean stage per day (dotted)",
                *F.figure1(run, b.post, b.fig_dir, b.cfg.figure_formats, b.cfg.dpi, b.cfg.ci_prob),
            )
        ],
    )
    s.add(*fig1)
    if base.ran:
        fig2 = b.attempt(
            "Figure 2",
            lambda: [
                b.figure(
                    "Figure 2.",
                    "Mean intervention intensity by consensus recognition stage "
                    "(descriptive: model-days are serially dependent)",
                    *F.figure2(run, b.fig_dir, b.cfg.figure_formats, b.cfg.dpi),
                )
            ],
        )
        s.add(*fig2)
    return s


def _text(b: _Builder) -> Section:
    run = b.run
    s = Section("text", "Computational measures: entrainment and modality")
    text = run.stage("text")
    if not text.ran:
        return s.add(b.not_run("text", "Figures 3 and 4"))
    for name, fn, caption, words in (
        (
            "Figure 3.",
            F.figure3,
            "Mean entrainment per model against its number of Level-B days",
            "entrainment",
        ),
        (
            "Figure 4.",
            F.figure4,
            "Mean modality (boosters − hedges per sentence) on naive vs clinical days",
            "modality",
        ),
    ):
        made = b.attempt(
            name,
            lambda fn=fn, name=name, caption=caption: [
                b.figure(name, caption, *fn(run, b.fig_dir, b.cfg.figure_formats, b.cfg.dpi))
            ],
        )
        own = [p for p in text.glob("**/*.png") if words in p.lower()]
        if made and isinstance(made[0], Note):
            # the report could not draw it: show the text stage's own figure if it made one
            if own:
                made = [b.stage_figure("text", own[0], name)]
        else:  # drawn by the report from the stage's table: the stage's own copy is not repeated
            b.used.update(f"text/{p}" for p in own)
        s.add(*made)
    shown = set()
    for what, fn in (("Figure 3 data", T.figure3_table), ("Figure 4 data", T.figure4_table)):
        t = b.attempt(what, lambda fn=fn: [fn(run)])
        if t and t[0] is not None and not isinstance(t[0], Note):
            shown.add(t[0].sources[0])
            s.add(b.table(t[0]))
        elif t and isinstance(t[0], Note):
            s.add(*t)
    if text.headline.get("skipped"):
        s.add(Note("notrun", "The text stage skipped its analyses: "
                   + str(text.index.get("skipped", "no texts in the study")) + "."))  # fmt: skip
    for rel in text.glob("*.csv"):
        if f"text/{rel}" not in shown:
            s.add(*b.attempt(f"text/{rel}", lambda rel=rel: _generic(b, "text", rel)))
    if b.cfg.include_stage_figures:
        for rel in text.glob("**/*.png"):
            if f"text/{rel}" not in b.used:
                s.add(b.stage_figure("text", rel))
    return s


def _generic(b: _Builder, stage: str, rel: str, title: str | None = None) -> list[Any]:
    t = T.generic(b.run, stage, rel, title)
    if t is None:
        return [b.missing(stage, rel, title or rel)]
    if len(t.data) > b.cfg.max_inline_rows:
        b.used.add(f"{stage}/{rel}")
        desc = b.run.stage(stage).describe(rel)
        return [
            Paragraph(
                f"`{stage}/{rel}` ({len(t.data)} rows{': ' + desc if desc else ''}) is "
                "too long to show here; open the CSV."
            )
        ]
    return [b.table(t)]


def _section_c(b: _Builder) -> Section:
    run = b.run
    s = Section("C", "C. Reliability")
    if not run.stage("baselines").ran:
        s.add(b.not_run("baselines", "Table C1"))
    else:
        s.add(
            *b.one_table(
                "Table C1",
                lambda: T.table_c1(run),
                b.missing("baselines", "tableC1_reliability.csv", "Table C1"),
            )
        )
    if run.stage("models").ran:
        s.add(
            *b.one_table(
                "posterior reliability",
                lambda: T.posterior_reliability(run, b.post),
                Note(
                    "notrun",
                    "The models stage wrote no posterior reliability table "
                    "(`models/**/reliability*.csv`).",
                ),
            )
        )
    else:
        s.add(b.not_run("models", "the posterior reliability of the rater model"))
    return s


def _section_d(b: _Builder) -> Section:
    run = b.run
    s = Section("D", "D. Logistic trajectory fits")
    if not run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "Table D1"))
    s.add(*b.post_warning("Table D1"))
    s.add(
        *b.one_table(
            "Table D1",
            lambda: T.table_d1(run, b.post, b.cfg.ci_prob),
            b.missing("baselines", "tableD1_logistic.csv", "Table D1"),
        )
    )
    if b.post.name is None:
        s.add(b.not_run("models", "the posterior column of Table D1"))
    return s


def _section_e(b: _Builder) -> Section:
    run = b.run
    s = Section("E", "E. Milestones and contrasts")
    if not run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "Figure E1 and the contrast tests"))
    s.add(
        *b.attempt(
            "Figure E1",
            lambda: [
                b.figure(
                    "Figure E1.",
                    "Per-milestone charts: latencies (open circles: never reached, censored) "
                    "and day counts per model, with the posterior median and interval beside where fitted",
                    *F.figure_e1(run, b.fig_dir, b.cfg.figure_formats, b.cfg.dpi, b.post),
                )
            ],
        )
    )
    s.add(
        *b.one_table(
            "contrasts",
            lambda: T.contrasts(run, b.post),
            b.missing("baselines", "contrasts.csv", "The contrast tests"),
        )
    )
    return s


def _section_f(b: _Builder) -> Section:
    s = Section("F", "F. Naive-stage profiles")
    if not b.run.stage("baselines").ran:
        return s.add(b.not_run("baselines", "the naive-stage profiles"))
    s.add(
        *b.one_table(
            "Table F1",
            lambda: T.section_f(b.run),
            b.missing("baselines", "sectionF_naive_profiles.csv", "Table F1"),
        )
    )
    return s


def _bayes(b: _Builder, diag) -> list[Section]:
    """The Bayesian section: verdicts, comparison, then one subsection per fitted model (its
    gate, failing parameters, posterior tables not shown beside the baselines, its plots)."""
    run = b.run
    s = Section("bayes", "Bayesian models")
    models = run.stage("models")
    if not models.ran:
        return [s.add(b.not_run("models", "the Bayesian results"))]
    if b.post.name:
        s.add(
            Paragraph(
                f"The posterior columns beside the baselines (Tables 1, C1, D1, the contrasts, "
                f"Figures 1 and E1) are those of model `{b.post.name}` (`models/{b.post.name}/`)."
            )
        )
    # diagnostics verdicts
    if diag.verdicts:
        import pandas as pd

        vt = pd.DataFrame(
            [
                {"model": v.model, "passed": v.passed, "details": v.details, "source": v.source}
                for v in diag.verdicts
            ]
        )
        disp = display_frame(vt)
        disp["passed"] = [
            "PASS" if v is True else "FAIL" if v is False else "unknown" for v in vt["passed"]
        ]
        s.add(
            b.table(
                ReportTable(
                    "diagnostics_verdicts",
                    "Sampling diagnostics per fitted model",
                    vt,
                    disp,
                    sorted({v.source for v in diag.verdicts}),
                )
            )
        )
        for v in diag.failed:
            s.add(
                Note(
                    "warning",
                    f"`{v.model}` FAILED its diagnostics: {v.details}. Do not interpret its "
                    "posterior summaries.",
                    "Diagnostics failed",
                )
            )
        if not diag.failed and not diag.unknown:
            s.add(Note("ok", "Every fitted model passed its sampling diagnostics."))
    else:
        s.add(
            Note(
                "notrun",
                "No `models/<name>/gate.json` or `diagnostics.csv` found: no diagnostics verdict.",
            )
        )
    # comparison
    if models.has("comparison.csv"):
        s.add(
            *b.attempt(
                "model comparison",
                lambda: _generic(
                    b, "models", "comparison.csv", _comparison_title(models, "comparison.csv")
                ),
            )
        )
        if not any("compar" in p.lower() for p in models.glob("**/*.png")):
            s.add(
                *b.attempt(
                    "comparison plot",
                    lambda: [
                        b.figure(
                            "Model comparison.",
                            "ELPD of the compared models",
                            *F.comparison_plot(run, b.fig_dir, b.cfg.figure_formats, b.cfg.dpi),
                        )
                    ],
                )
            )
    # files of the stage not inside a model folder
    for rel in models.glob("*.csv"):
        if rel != "comparison.csv" and f"models/{rel}" not in b.used:
            title = _comparison_title(models, rel) if rel.startswith("comparison") else None
            s.add(
                *b.attempt(f"models/{rel}", lambda rel=rel, t=title: _generic(b, "models", rel, t))
            )
    if b.cfg.include_stage_figures:
        for rel in models.glob("*.png"):
            if f"models/{rel}" not in b.used:
                s.add(b.stage_figure("models", rel))
    sections = [s]
    names = sorted({p.split("/")[0] for p in models.glob("*/*") if "/" in p})
    verdicts = {v.model: v for v in diag.verdicts}
    for name in names:
        sections.append(_bayes_model(b, name, verdicts.get(name)))
    return sections


#: what one left-out point of a PSIS-LOO comparison is, by its ``unit`` column
LOO_UNIT_TITLES = {
    "model_day": "per left-out model-day, its latent stage integrated out",
    "rating": "per left-out rating, given the model-day's latent stage",
}


def _comparison_title(models, rel: str) -> str:
    """``Model comparison (PSIS-LOO ...)`` naming the unit the table's ``unit`` column holds."""
    df = models.csv(rel)
    # runs made before the unit column existed get the plain title
    units = set(df["unit"].astype(str)) if df is not None and "unit" in df else set()
    if len(units) == 1:
        unit = units.pop()
        return f"Model comparison (PSIS-LOO {LOO_UNIT_TITLES.get(unit, 'per ' + unit)})"
    return "Model comparison (PSIS-LOO)"


#: titles of the per-model tables of the models stage (team contract)
MODEL_TABLES = {
    "summary.csv": "Posterior summary of `{name}`",
    "t50_posterior.csv": "Posterior of L, k and t50 per model (`{name}`)",
    "milestones_posterior.csv": "Posterior milestone latencies (`{name}`)",
    "contrasts_posterior.csv": "Posterior contrasts (`{name}`)",
    "consensus_posterior.csv": "Posterior consensus stage per model-day (`{name}`)",
    "reliability_posterior.csv": "Posterior reliability (`{name}`)",
    "raters_posterior.csv": "Posterior rater severity and discrimination (`{name}`)",
    "level_b_posterior.csv": "Posterior probability of Level-B disengagement (`{name}`)",
    "loo.csv": "PSIS-LOO of `{name}`",
}


def _bayes_model(b: _Builder, name: str, verdict) -> Section:
    """Subsection of one fitted model ``models/<name>/``."""
    models = b.run.stage("models")
    s = Section(f"bayes-{name}", f"Model `{name}`", level=3)
    if verdict is not None and verdict.passed is False:
        s.add(Note("warning", f"`{name}` FAILED its diagnostics: {verdict.details}.",
                   "Diagnostics failed"))  # fmt: skip
    elif verdict is not None and verdict.passed:
        s.add(Note("ok", f"`{name}` passed its diagnostics: {verdict.details}."))
    diag_rel = f"{name}/diagnostics.csv"
    if models.has(diag_rel):
        s.add(*b.attempt(diag_rel, lambda: _diagnostics_rows(b, name)))
    shown = [f for f in models.glob(f"{name}/*.csv") if f"models/{f}" in b.used and f != diag_rel]
    for rel in models.glob(f"{name}/*.csv"):
        if rel != diag_rel and f"models/{rel}" not in b.used:
            base = rel.split("/")[-1]
            title = MODEL_TABLES.get(base, rel).format(name=name)
            s.add(
                *b.attempt(f"models/{rel}", lambda rel=rel, t=title: _generic(b, "models", rel, t))
            )
    if shown:
        s.add(Paragraph("Shown beside the baselines above: "
                        + ", ".join(f"`models/{f}`" for f in shown) + "."))  # fmt: skip
    if b.cfg.include_stage_figures:
        pngs = [p for p in models.glob(f"{name}/**/*.png") if f"models/{p}" not in b.used]
        if pngs:
            s.add(Paragraph("Diagnostic plots as the models stage drew them (rank plots, "
                            "posterior predictive checks, LOO Pareto-k):"))  # fmt: skip
            for rel in pngs:
                s.add(b.stage_figure("models", rel))
    if len(s.blocks) == 0:
        s.add(Note("notrun", f"`models/{name}/` holds no table or figure the report can show."))
    return s


#: failing parameters listed in the document (all of them are in ``diagnostics.csv``)
WORST_PARAMETERS = 15


def _diagnostics_rows(b: _Builder, name: str) -> list[Any]:
    """Per-parameter diagnostics: the failing rows as a table (all rows when short), the file
    linked otherwise."""
    import pandas as pd

    from delusion_bayes.report.frames import find_col
    from delusion_bayes.report.provenance import _as_bool

    rel = f"{name}/diagnostics.csv"
    df = b.run.stage("models").csv(rel)
    if df is None:
        return [b.missing("models", rel, "Diagnostics")]
    if len(df) <= b.cfg.max_inline_rows:
        return _generic(b, "models", rel, f"Per-parameter diagnostics of `{name}`")
    b.used.add(f"models/{rel}")
    pcol = find_col(df, "passed", "pass", "ok")
    out: list[Any] = []
    if pcol is not None:
        bad = df[[_as_bool(v) is False for v in df[pcol]]]
        out.append(Paragraph(f"`models/{rel}`: {len(df)} parameters, {len(bad)} failing the gate "
                             "(open the CSV for all rows)."))  # fmt: skip
        if len(bad):
            n_bad = len(bad)
            rhat, ess = find_col(bad, "r_hat", "rhat"), find_col(bad, "ess_bulk", "ess")
            if rhat is not None:  # the worst first: highest R-hat, then lowest ESS
                keys = [rhat] + ([ess] if ess is not None else [])
                bad = bad.sort_values(keys, ascending=[False] + [True] * (len(keys) - 1))
            bad = bad.head(WORST_PARAMETERS)
            t = ReportTable(
                f"models_{name}_diagnostics_failing",
                f"Parameters of `{name}` failing the diagnostics gate"
                + (f" (the {len(bad)} worst of {n_bad})" if n_bad > len(bad) else ""),
                bad,
                display_frame(pd.DataFrame(bad), 3),
                [f"models/{rel}"],
            )
            out.append(b.table(t))
    else:
        out.append(Paragraph(f"`models/{rel}`: {len(df)} parameters; open the CSV."))
    return out


#: the replay stage's tables (team contract), in document order, with their titles
REPLAY_TABLES = {
    "prevalence.csv": "Prevalence per model × category and code (cluster bootstrap CIs)",
    "bayes_prevalence.csv": "Posterior prevalence beside the bootstrap CIs (Bayesian model)",
    "deltas.csv": "Each model minus the original transcript (paired resamples)",
    "cluster_bootstrap.csv": "Category CIs under every resampling scheme, width relative to i.i.d.",
    "lopo.csv": "Leave-one-participant-out prevalence and deltas",
    "family.csv": "Model-family comparison",
    "context_depth.csv": "Prevalence per context-depth bin",
    "context_depth_lpm.csv": "Linear probability model of context depth",
    "onset.csv": "Onset and persistence over the user turns of a window",
    "turn_profile.csv": "Prevalence by user turn",
}


def _replay_gate(rp) -> Note | None:
    """The verdict of ``replay/bayes_diagnostics.json`` (Bayesian prevalence model), if any."""
    path = rp.path / "bayes_diagnostics.json"
    if not path.is_file():
        return None
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        return Note("error", f"`replay/bayes_diagnostics.json` is unreadable: {err}")
    if not isinstance(d, dict) or "passed" not in d:
        return None
    facts = ", ".join(
        f"{k.replace('_', ' ')} {v:.3g}" for k, v in d.items()
        if k != "passed" and isinstance(v, int | float) and not isinstance(v, bool)
    )  # fmt: skip
    if d["passed"] is False or str(d["passed"]).lower() == "false":
        return Note("warning", "The Bayesian prevalence model FAILED its sampling diagnostics "
                    f"({facts}); `bayes_prevalence.csv` is provisional.", "Diagnostics failed")  # fmt: skip
    return Note("ok", f"The Bayesian prevalence model passed its diagnostics ({facts}).")


def _replay(b: _Builder) -> Section:
    run = b.run
    s = Section("replay", "Replay study (DelusionEval)")
    rp = run.stage("replay")
    if not rp.ran:
        return s.add(b.not_run("replay", "the replay-study results"))
    gate = _replay_gate(rp)
    if gate is not None:
        s.add(gate)
    headline_tables = (
        ("prevalence", lambda: T.replay_pivot(
            run, "prevalence.csv", "replay_prevalence_by_category",
            "Replay: prevalence per model and category [95% CI]",
            "Share of samples the judge flagged, pooled over each category's codes.")),
        ("deltas", lambda: T.replay_pivot(
            run, "deltas.csv", "replay_deltas_by_category",
            "Replay: each model minus the original transcript [95% CI]",
            "Differences in prevalence, paired resamples.")),
        ("Bayesian prevalence", lambda: T.replay_bayes(run)),
    )  # fmt: skip
    for what, make in headline_tables:
        made = b.attempt(f"replay {what}", lambda make=make: [make()])
        if made and made[0] is not None:
            s.add(made[0] if isinstance(made[0], Note) else b.table(made[0]))
    found = rp.glob("**/*.csv")
    known = [r for r in REPLAY_TABLES if r in found]
    for rel in known + [r for r in found if r not in REPLAY_TABLES]:
        if f"replay/{rel}" in b.used:
            continue  # shown above as a model x category table
        title = REPLAY_TABLES.get(rel)
        s.add(*b.attempt(f"replay/{rel}", lambda rel=rel, t=title: _generic(b, "replay", rel, t)))
    missing = [r for r in REPLAY_TABLES if r not in found]
    if missing:
        s.add(Note("notrun", "Not written by the replay stage in this run: "
                   + ", ".join(f"`replay/{r}`" for r in missing) + "."))  # fmt: skip
    if b.cfg.include_stage_figures:
        for rel in rp.glob("**/*.png"):
            s.add(b.stage_figure("replay", rel))
    return s


def _other_files(b: _Builder) -> Section:
    s = Section("files", "All result files")
    rows = []
    for name in SOURCE_STAGES:
        st = b.run.stage(name)
        for rel, desc in st.files.items():
            path = f"{name}/{rel}"
            rows.append(
                (
                    path,
                    desc
                    + ("" if path not in b.used else (" — shown above" if desc else "shown above")),
                )
            )
    if not rows:
        return s.add(Note("notrun", "No stage wrote any file in this run directory."))
    s.add(Paragraph("Every file the stages wrote (from their `index.json` and the folders)."))
    return s.add(FileList(rows))


def _provenance(b: _Builder, diag) -> Section:
    run = b.run
    s = Section("provenance", "Provenance")
    if diag.failed:
        s.add(
            Note(
                "warning",
                "Diagnostics FAILED for: "
                + ", ".join(f"`{v.model}` ({v.details})" for v in diag.failed),
                "Diagnostics failed",
            )
        )
    elif diag.verdicts:
        s.add(
            Note(
                "ok",
                "Diagnostics passed for: "
                + ", ".join(f"`{v.model}`" for v in diag.verdicts if v.passed)
                + ".",
            )
        )
    s.add(KeyValues(provenance_rows(run)))
    s.add(Paragraph("Package and dependency versions at report time:"))
    s.add(KeyValues(list(versions().items())))
    heads = headline_json(run)
    if heads != "{}":
        s.add(Paragraph("Headline results of each stage (`<stage>/index.json`):"))
        s.add(Code(heads, "json"))
    s.add(Paragraph("Resolved configuration of the run:"))
    s.add(Code(config_text(run), "yaml"))
    return s


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
        md = html_path.with_suffix(".md")
        res = subprocess.run(
            ["pandoc", str(md), "-o", str(out)],
            cwd=html_path.parent,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if res.returncode == 0 and out.is_file():
            return out
        log.warning("pandoc could not write the PDF: %s", res.stderr[-500:])
    return None
