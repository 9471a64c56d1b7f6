"""Typed config of the report stage (Hydra ConfigStore schema; values in ``conf/report/``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReportConfig:
    #: rebuild the supplement of an existing run directory and run no other stage
    #: (``delusion-bayes report.from_run=outputs/2026-11-29/12-00-00``)
    from_run: str | None = None
    #: document title (first heading of ``supplement.md`` / ``supplement.html``)
    title: str = "Supplementary materials"
    #: figure file formats written under ``report/figures/`` (PNG is embedded in the HTML)
    figure_formats: list[str] = field(default_factory=lambda: ["png", "pdf"])
    #: resolution of the PNG figures
    dpi: int = 150
    #: the HTML embeds a copy of each PNG with a palette of at most this many colours (0: the
    #: PNG as written); the files under ``report/`` keep their full colour and resolution
    embed_colors: int = 256
    #: the embedded copy of a PNG above this resolution is scaled down to it (0: never)
    embed_max_dpi: int = 150
    #: which fitted Bayesian model (``models/<name>/``) the side-by-side tables and Figure 1 use;
    #: the first one present in this list wins
    posterior_models: list[str] = field(default_factory=lambda: ["joint", "onset", "rater"])
    #: probability mass of the posterior bands the report itself draws (Figure 1)
    ci_prob: float = 0.95
    #: ``auto`` writes ``supplement.pdf`` when a converter (Chromium, pandoc) is installed;
    #: ``never`` skips it. A PDF is never required.
    pdf: str = "auto"
    #: generic CSVs longer than this are linked, not inlined, in the document
    max_inline_rows: int = 40
    #: embed the figures other stages wrote (diagnostics, replay) in the document
    include_stage_figures: bool = True
