"""A report table: numbers copied from a stage CSV, rendered as CSV, Markdown, LaTeX and HTML.

The report only selects, renames, joins and rounds the numbers a stage wrote. Markdown and LaTeX
are written by hand: ``DataFrame.to_markdown``/``to_latex`` need the optional ``tabulate``/
``jinja2`` and cannot share one display frame with spanning column groups.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def fmt_num(value: object, digits: int = 2) -> str:
    """A number for display: ``digits`` decimals, integers as integers, missing as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return str(int(value))
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return "–"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x != 0 and abs(x) < 0.5 * 10 ** (-digits):
        return f"{x:.1e}"
    return f"{x:.{digits}f}"


def fmt_interval(est: object, low: object, high: object, digits: int = 2) -> str:
    """``est [low, high]`` (or just ``est`` when the bounds are missing)."""
    e = fmt_num(est, digits)
    if _missing(low) and _missing(high):
        return e
    return f"{e} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


def fmt_p(p: object) -> str:
    """A p-value / probability: three decimals, ``<.001`` below that."""
    if _missing(p):
        return "–"
    x = float(p)  # type: ignore[arg-type]
    if x < 0.001:
        return "<.001"
    return f"{x:.3f}"


def _missing(x: object) -> bool:
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def display_frame(df: pd.DataFrame, digits: int | dict[str, int] = 2) -> pd.DataFrame:
    """Every cell of ``df`` as a display string (numbers rounded to ``digits``)."""
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        d = digits.get(str(col), 2) if isinstance(digits, dict) else digits
        series = df[col]
        if pd.api.types.is_integer_dtype(series):
            out[col] = [fmt_num(v, 0) for v in series]
        elif pd.api.types.is_float_dtype(series) and series.dropna().apply(float.is_integer).all():
            out[col] = [fmt_num(v, 0) if not _missing(v) else "–" for v in series]
        else:
            out[col] = [fmt_num(v, d) for v in series]
    return out


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--",
    "−": "$-$", "∞": r"$\infty$", "≥": r"$\geq$", "≤": r"$\leq$", "α": r"$\alpha$",
    "κ": r"$\kappa$", "ρ": r"$\rho$", "×": r"$\times$",
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
        rows = [["–" if _missing(v) else str(v) for v in row] for row in disp.itertuples(False)]
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
        """A ``table`` environment with a booktabs ``tabular`` (needs ``\\usepackage{booktabs}``)."""
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
        pat = re.compile(r"^[\s–<>=≥≤+\-−.,0-9eE\[\]%∞]*$")
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
