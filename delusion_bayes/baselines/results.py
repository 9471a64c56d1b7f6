"""Result objects that render themselves (after lifelines' ``StatisticalResult``).

Every study-level baseline returns a :class:`BaselineResult`; a declared table a stage wrote (the
baselines' and the Bayesian models' alike) reads back as one with :meth:`BaselineResult.read`,
its columns, headers, formats, title and question taken from its declaration in
:mod:`delusion_bayes.results` (the same declaration :func:`~delusion_bayes.results.write`
checks the writer's columns against). Reports read only these objects (or their CSV), never refit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from delusion_bayes import results
from delusion_bayes.results import Column


def is_missing(x: object) -> bool:
    """None or NaN (a cell shown as an en dash)."""
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


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
    if is_missing(low) and is_missing(high):
        return e
    return f"{e} [{fmt_num(low, digits)}, {fmt_num(high, digits)}]"


def fmt_p(p: object) -> str:
    """A p-value / probability: three decimals, ``<.001`` below that."""
    if is_missing(p):
        return "–"
    x = float(p)  # type: ignore[arg-type]
    return "<.001" if x < 0.001 else f"{x:.3f}"


def fmt_column(series: pd.Series, digits: int = 2) -> list[str]:
    """One column's cells: integer columns (and float columns of whole numbers) without
    decimals, anything else with ``digits``."""
    if pd.api.types.is_integer_dtype(series):
        return [fmt_num(v, 0) for v in series]
    if pd.api.types.is_float_dtype(series) and series.dropna().apply(float.is_integer).all():
        return [fmt_num(v, 0) if not is_missing(v) else "–" for v in series]
    return [fmt_num(v, digits) for v in series]


def display_frame(df: pd.DataFrame, digits: int | dict[str, int] = 2) -> pd.DataFrame:
    """Every cell of ``df`` as a display string (numbers rounded to ``digits``)."""
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        d = digits.get(str(col), 2) if isinstance(digits, dict) else digits
        out[col] = fmt_column(df[col], d)
    return out


def cells(df: pd.DataFrame, col: Column) -> list[str]:
    """The display cells of the declared column ``col`` of ``df`` (an absent interval column
    reads as missing bounds)."""
    none = pd.Series([None] * len(df), index=df.index)
    v, lo, hi = (df[c] if c and c in df else none for c in (col.name, col.low, col.high))
    if col.kind == "range":
        d = col.digits
        return [
            f"{fmt_num(e, d)} ({fmt_num(a, d - 1)}–{fmt_num(z, d - 1)})"
            if pd.notna(a)
            else fmt_num(e, d)
            for e, a, z in zip(v, lo, hi, strict=True)
        ]
    if col.low:
        return [fmt_interval(e, a, z, col.digits) for e, a, z in zip(v, lo, hi, strict=True)]
    if col.kind == "p":
        return [fmt_p(x) for x in v]
    if col.kind == "fixed":
        return [fmt_num(x, col.digits) for x in v]
    if col.kind == "words":
        return [str(x).replace("_", " ") for x in v]
    return fmt_column(v, col.digits)


@dataclass
class BaselineResult:
    """A table-shaped result with provenance; ``columns`` (when declared) say how it reads."""

    name: str  #: short name, e.g. ``"table1_milestones"``
    summary: pd.DataFrame  #: the result table
    title: str = ""  #: one-line caption (``to_latex`` and ``index.json``)
    #: rules applied (consensus rule, censoring, missing days, exact vs Monte Carlo, ...)
    notes: list[str] = field(default_factory=list)
    #: anything else a caller may want (e.g. bootstrap replicates as an ``xr.Dataset``)
    extra: dict[str, Any] = field(default_factory=dict)
    #: the columns shown, in order, with their headers and formats (empty: every column as is)
    columns: tuple[Column, ...] = ()
    #: the one question the table answers
    question: str = ""

    @classmethod
    def read(cls, run_dir: str | Path, key: str, fit: str | None = None) -> BaselineResult | None:
        """The declared table ``key`` of ``run_dir`` (``fit`` for ``models/{fit}/...``) as a
        result object, None when the file is absent (:func:`delusion_bayes.results.read`)."""
        return cls.from_file(key, results.read(run_dir, key, fit=fit), fit)

    @classmethod
    def from_file(
        cls, key: str, frame: pd.DataFrame | None, fit: str | None = None
    ) -> BaselineResult | None:
        """``frame`` (as :func:`delusion_bayes.results.read` returned the file ``key``) with the
        file's declared view, title and question; None for None."""
        if frame is None:
            return None
        f = results.spec(key)
        name = Path(f.name.format(fit=fit)).with_suffix("").as_posix().replace("/", "_")
        title = f.title.format(fit=fit) if f.title else f.meaning
        return cls(name, frame, title, columns=f.view, question=f.question)

    @property
    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame in the layout of its results file."""
        return self.table

    def column(self, name: str) -> Column:
        """The declared column ``name`` (an undeclared one: as is)."""
        return next((c for c in self.columns if c.name == name), Column(name))

    def header(self, name: str, default: str | None = None) -> str:
        """The header of column ``name``: declared, else ``default``, else the name."""
        col = next((c for c in self.columns if c.name == name), None)
        return col.label if col is not None else default or name

    def shown(self, frame: pd.DataFrame | None = None) -> tuple[Column, ...]:
        """The declared columns ``frame`` (default: the table) has, else all its columns."""
        df = self.frame if frame is None else frame
        if not self.columns:
            return tuple(Column(str(c)) for c in df.columns)
        return tuple(c for c in self.columns if c.name in df)

    def used(self, frame: pd.DataFrame | None = None) -> list[str]:
        """The file's columns the shown ones display (intervals included), in order."""
        return list(dict.fromkeys(n for c in self.shown(frame) for n in c.names))

    def display(self, frame: pd.DataFrame | None = None) -> pd.DataFrame:
        """The shown columns of ``frame`` (default: the table) as display strings under their
        headers."""
        df = self.frame if frame is None else frame
        cols = self.shown(df)
        out = pd.DataFrame({c.label: cells(df, c) for c in cols}, columns=[c.label for c in cols])
        return out.set_axis(df.index)

    def to_markdown(self) -> str:
        """The shown columns as a GitHub pipe table under the title, the question below."""
        disp = self.display()

        def row(values: Any) -> str:
            return "| " + " | ".join(str(v).replace("|", r"\|") for v in values) + " |"

        lines = [row(disp.columns), "|" + "|".join("---" for _ in disp.columns) + "|"]
        lines += [row(r) for r in disp.itertuples(index=False)]
        below = " ".join(([self.question] if self.question else []) + self.notes)
        head = f"**{self.title}**\n\n" if self.title else ""
        return head + "\n".join(lines) + (f"\n\n{below}" if below else "") + "\n"

    def to_latex(self, float_format: str = "{:.3g}".format, **kwargs: Any) -> str:
        """The summary (its shown columns when declared) as a LaTeX ``table`` with the title as
        caption and the question and notes below."""
        if self.columns:
            body = self.display().to_latex(index=False, **kwargs)
        else:
            body = self.summary.to_latex(float_format=float_format, **kwargs)
        below = ([self.question] if self.question else []) + self.notes
        notes = "".join(f"\\\\\n\\footnotesize {n}" for n in below)
        return (
            "\\begin{table}\n\\centering\n"
            f"\\caption{{{self.title}}}\n{body}{notes}\n\\end{{table}}\n"
        )

    @property
    def _named_index(self) -> bool:
        return any(n is not None for n in self.summary.index.names)

    @property
    def table(self) -> pd.DataFrame:
        """The summary with a named index as a column (the layout of the results file)."""
        return self.summary.reset_index() if self._named_index else self.summary

    def to_csv(self, path: str | Path, **kwargs: Any) -> Path:
        """Write the summary to ``path`` (index included when it is named)."""
        self.summary.to_csv(path, index=self._named_index, **kwargs)
        return Path(path)

    def _repr_html_(self) -> str:
        return f"<p><b>{self.title}</b></p>" + self.summary._repr_html_()

    def __repr__(self) -> str:
        notes = "\n".join(f"  note: {n}" for n in self.notes)
        with pd.option_context("display.width", 120, "display.max_columns", 30):
            return f"<{type(self).__name__} {self.name}: {self.title}>\n{self.summary}\n{notes}"
