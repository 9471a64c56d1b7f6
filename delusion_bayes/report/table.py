"""A report table: numbers copied from a stage CSV, rendered as CSV, Markdown, LaTeX and HTML,
and the per-model tables that set a baseline estimate [CI] beside the posterior median [CrI].

The report only selects, renames, joins and rounds the numbers a stage wrote. Markdown and LaTeX
are written by hand: ``DataFrame.to_markdown``/``to_latex`` need the optional ``tabulate``/
``jinja2`` and cannot share one display frame with spanning column groups.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from delusion_bayes.baselines.results import (
    display_frame,
    fmt_interval,
    fmt_num,
    fmt_p,
    is_missing,
)

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--",
    "−": "$-$", "∞": r"$\infty$", "≥": r"$\geq$", "≤": r"$\leq$", "α": r"$\alpha$",
    "κ": r"$\kappa$", "ρ": r"$\rho$", "×": r"$\times$",
    # OT1 fonts set < > | as other glyphs (a model named "<b>x</b>" would read as "¡b¿x¡/b¿")
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}  # fmt: skip
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_escape(text: str) -> str:
    """Escape LaTeX specials (and a few Unicode signs) in plain text."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group(0)], str(text))


_MD_CODE_SPAN = re.compile(r"(`[^`]+`)")


def md_text(text: Any) -> str:
    """Markdown-safe prose: HTML (``<``, ``>``, entities) escaped outside code spans, so that a
    model named ``<script>`` is no live markup in ``supplement.md``; code spans are kept as
    written (Markdown shows them literally)."""
    parts = _MD_CODE_SPAN.split(str(text))
    return "".join(p if i % 2 else _md_html(p) for i, p in enumerate(parts))


_MD_ENTITY = re.compile(r"&(?=#?\w+;)")


def _md_html(text: str) -> str:
    """``<``/``>`` as entities, and ``&`` where it would start one (``&lt;`` stays text)."""
    return _MD_ENTITY.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")


def md_escape(text: Any) -> str:
    """A Markdown table cell: :func:`md_text`, pipes escaped, one line."""
    return md_text(text).replace("|", r"\|").replace("\n", " ")


#: tables with at least this many columns are set in denser type (``.table-wrap.dense`` in the CSS)
DENSE_COLUMNS = 11

_INTERVAL = re.compile(r"\[[^\]]*\]")


def breakable(text: str) -> str:
    """A header escaped for HTML with a line-break opportunity after each ``_``: column names
    like ``p_level_b_at_stage4_median`` then wrap instead of widening the table."""
    return html.escape(text).replace("_", "_<wbr>")


def num_cell(text: str) -> str:
    """A numeric cell that may wrap only between an estimate and its ``[low, high]`` interval
    (the interval's own spaces are non-breaking), so wide posterior tables fit the page."""
    return html.escape(_INTERVAL.sub(lambda m: m.group(0).replace(" ", "\u00a0"), text))


@dataclass
class ReportTable:
    """One table of the supplement: ``name`` is its file stem under ``report/tables/``,
    ``data`` the unrounded values (written as its CSV), ``display`` the strings shown (same rows,
    possibly fewer/merged columns; default ``data`` rounded by :func:`display_frame`),
    ``sources`` the run-relative CSVs the numbers come from, ``notes`` sentences printed under
    it and ``groups`` an optional spanning header ``[(label, n_columns), ...]``."""

    name: str
    title: str
    data: pd.DataFrame
    display: pd.DataFrame | None = None
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: list[tuple[str, int]] | None = None

    def __post_init__(self) -> None:
        if self.display is None:
            self.display = display_frame(self.data)
        if self.groups is not None and sum(n for _, n in self.groups) != self.display.shape[1]:
            raise ValueError(
                f"table {self.name!r}: column groups span {sum(n for _, n in self.groups)} "
                f"columns but the display has {self.display.shape[1]}"
            )

    @property
    def label(self) -> str:
        return "tab:" + re.sub(r"[^A-Za-z0-9]+", "-", self.name)

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        disp = self.display
        assert disp is not None  # set in __post_init__
        header = [str(c) for c in disp.columns]
        rows = [["–" if is_missing(v) else str(v) for v in row] for row in disp.itertuples(False)]
        return header, rows

    # renderers ---------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """A GitHub-flavoured pipe table (column groups folded into the headers)."""
        header, rows = self._cells()
        if self.groups:
            names = [g for g, n in self.groups for _ in range(n)]
            header = [f"{g}: {h}" if g else h for g, h in zip(names, header, strict=True)]
        numeric = self._numeric_columns(rows)
        lines = [
            "| " + " | ".join(md_escape(h) for h in header) + " |",
            "|" + "|".join("---:" if n else ":---" for n in numeric) + "|",
        ]
        lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
        return "\n".join(lines)

    def to_latex(self) -> str:
        """A ``table`` environment with a booktabs ``tabular``.

        Needs ``\\usepackage{booktabs}``."""
        header, rows = self._cells()
        numeric = self._numeric_columns(rows)
        spec = "".join("r" if n else "l" for n in numeric)
        out = [
            r"\begin{table}[htbp]",
            r"\centering",
            r"\caption{" + latex_escape(self.title) + "}",
            r"\label{" + self.label + "}",
            r"\begin{tabular}{" + spec + "}",
            r"\toprule",
        ]
        if self.groups:
            cells, rules, col = [], [], 1
            for g, n in self.groups:
                if g:
                    cells.append(f"\\multicolumn{{{n}}}{{c}}{{{latex_escape(g)}}}")
                    rules.append(f"\\cmidrule(lr){{{col}-{col + n - 1}}}")
                else:
                    cells += [""] * n
                col += n
            out.append(" & ".join(cells) + r" \\")
            out.append(" ".join(rules))
        out.append(" & ".join(latex_escape(h) for h in header) + r" \\")
        out.append(r"\midrule")
        out += [" & ".join(latex_escape(c) for c in r) + r" \\" for r in rows]
        out += [r"\bottomrule", r"\end{tabular}"]
        notes = self.notes + ([f"Source: {', '.join(self.sources)}."] if self.sources else [])
        if notes:
            out.append(r"\par\smallskip\footnotesize " + latex_escape(" ".join(notes)))
        out.append(r"\end{table}")
        return "\n".join(out) + "\n"

    def to_html(self) -> str:
        header, rows = self._cells()
        numeric = self._numeric_columns(rows)
        esc = html.escape
        # many columns: a denser type so that the table still fits the page at 1,280 px
        wrap = "table-wrap dense" if len(header) >= DENSE_COLUMNS else "table-wrap"
        parts = [f'<div class="{wrap}"><table id="{esc(self.name)}">']
        parts.append(f"<caption>{esc(self.title)}</caption><thead>")
        if self.groups:
            parts.append("<tr>")
            for g, n in self.groups:
                cls = ' class="group"' if g else ""
                parts.append(f'<th colspan="{n}"{cls}>{esc(g)}</th>')
            parts.append("</tr>")
        parts.append("<tr>" + "".join(f"<th>{breakable(h)}</th>" for h in header) + "</tr></thead>")
        parts.append("<tbody>")
        for r in rows:
            tds = "".join(
                f'<td class="num">{num_cell(c)}</td>' if n else f"<td>{esc(c)}</td>"
                for c, n in zip(r, numeric, strict=True)
            )
            parts.append(f"<tr>{tds}</tr>")
        parts.append("</tbody></table></div>")
        return "".join(parts)

    @staticmethod
    def _numeric_columns(rows: list[list[str]]) -> list[bool]:
        if not rows:
            return []
        pat = re.compile(r"^[\s–<>=≥≤+\-−.,0-9eE\[\]%∞†]*$")
        return [all(pat.match(r[j] or "") for r in rows) for j in range(len(rows[0]))]

    def write(self, folder: str | Path) -> dict[str, Path]:
        """Write ``<name>.csv``, ``.md`` and ``.tex`` into ``folder``; return ``{ext: path}``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {ext: folder / f"{self.name}.{ext}" for ext in ("csv", "md", "tex")}
        self.data.to_csv(paths["csv"], index=False)
        md = f"**{md_text(self.title)}**\n\n{self.to_markdown()}\n"
        if self.notes or self.sources:
            md += "\n" + " ".join(self.notes + [f"Source: {', '.join(self.sources)}."]) + "\n"
        paths["md"].write_text(md)
        paths["tex"].write_text(self.to_latex())
        return paths


#: readable headers for the quantities shared by all stages
LABELS = {
    "first_clinical": "First clinical framing", "first_stable": "First stable framing",
    "first_level_b": "First Level-B", "days_stage4": "Days at stage 4",
    "days_level_a": "Level-A days", "days_level_b": "Level-B days",
    "n_stage4_days": "Stage-4 days", "emotional_support": "Emotional support",
    "education": "Education", "psychoeducation": "Psychoeducation",
    "interpretation": "Interpretation", "recommendation": "Recommendation",
}  # fmt: skip


def label(q: str) -> str:
    return LABELS.get(q, str(q).replace("_", " "))


@dataclass
class Estimate:
    """One quantity for every row: point estimate and (optional) interval bounds, plus extra
    columns shown after it (``{column: (header, values)}``, probabilities)."""

    est: Sequence[float]
    low: Sequence[float] | None = None
    high: Sequence[float] | None = None
    extra: dict[str, tuple[str, Sequence[float]]] = field(default_factory=dict)
    #: a footnote marker per row appended to the cell ("" for none), e.g. a prior-driven cell
    marks: Sequence[str] | None = None


def _cell_text(est, low, high, digits, censor: int | None) -> list[str]:
    if low is not None:
        return [fmt_interval(e, lo, hi, digits) for e, lo, hi in zip(est, low, high, strict=True)]
    if censor is not None:  # a latency: the censoring day reads "never"
        return ["never" if e == censor else fmt_num(e, 0) for e in est]
    whole = all(float(e).is_integer() for e in est if not pd.isna(e))
    return [fmt_num(e, 0 if whole else digits) for e in est]


def side_by_side(
    name: str,
    title: str,
    keys: Sequence[str],
    base: dict[str, Estimate],
    post: dict[str, Estimate] | None,
    labels: tuple[str, str],
    sources: list[str],
    notes: Sequence[str] = (),
    digits: int = 2,
    censor: int | None = None,
    extra_base: dict[str, tuple[str, Sequence[object]]] | None = None,
) -> ReportTable:
    """Per-model table (Tables 1 and D1): for every quantity of ``base``, the baseline estimate
    [CI] beside the posterior's (when ``post`` has that quantity).

    The CSV (``data``) holds the numbers unchanged, as columns ``<q>``, ``<q>_low``, ``<q>_high``
    (baseline), ``<q>_posterior``, ``<q>_posterior_low``, ``<q>_posterior_high`` and
    ``<q>_<extra>``. ``censor``: baseline latencies equal to it read "never".
    """
    data = pd.DataFrame({"model": list(keys)})
    disp = pd.DataFrame({"Model": list(keys)})
    groups: list[tuple[str, int]] = [("", 1)]
    for q, b in base.items():
        data[q] = np.asarray(b.est)
        if b.low is not None:
            data[f"{q}_low"], data[f"{q}_high"] = np.asarray(b.low), np.asarray(b.high)
        is_latency = censor is not None and q.startswith("first_")
        disp[f"{label(q)} · {labels[0]}"] = _cell_text(
            b.est, b.low, b.high, digits, censor if is_latency else None
        )
        n = 1
        p = (post or {}).get(q)
        if p is not None:
            data[f"{q}_posterior"] = np.asarray(p.est)
            data[f"{q}_posterior_low"] = np.asarray(p.low)
            data[f"{q}_posterior_high"] = np.asarray(p.high)
            cells = _cell_text(p.est, p.low, p.high, digits, None)
            if p.marks is not None:
                cells = [c + m for c, m in zip(cells, p.marks, strict=True)]
                data[f"{q}_posterior_mark"] = list(p.marks)
            disp[f"{label(q)} · {labels[1]}"] = cells
            shown_extra = 0
            for col, (header, values) in p.extra.items():
                data[f"{q}_{col}"] = np.asarray(values)
                if all(is_missing(v) for v in values):  # an empty column (the CSV keeps it)
                    continue
                disp[f"{label(q)} · {header}"] = [fmt_p(v) for v in values]
                shown_extra += 1
            n += 1 + shown_extra
        groups.append((label(q), n))
    for col, (header, values) in (extra_base or {}).items():
        data[col] = list(values)
        disp[header] = [fmt_num(v, digits) for v in values]
        groups.append(("", 1))
    if all(n == 1 for _, n in groups):  # no posterior beside any quantity: one header row
        disp.columns = [c.split(" · ")[0] for c in disp.columns]
        return ReportTable(name, title, data, disp, sources, list(notes))
    disp.columns = [c.split(" · ")[-1] for c in disp.columns]
    return ReportTable(name, title, data, disp, sources, list(notes), groups)
