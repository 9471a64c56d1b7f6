"""Result objects that render themselves (after lifelines' ``StatisticalResult``).

Every study-level baseline returns a :class:`BaselineResult`; reports read only these objects
(or their CSV), never refit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class BaselineResult:
    """A table-shaped result with provenance."""

    name: str  #: short name, e.g. ``"table1_milestones"``
    summary: pd.DataFrame  #: the result table
    title: str = ""  #: one-line caption (``to_latex`` and ``index.json``)
    #: rules applied (consensus rule, censoring, missing days, exact vs Monte Carlo, ...)
    notes: list[str] = field(default_factory=list)
    #: anything else a caller may want (e.g. bootstrap replicates as an ``xr.Dataset``)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_latex(self, float_format: str = "{:.3g}".format, **kwargs: Any) -> str:
        """The summary as a LaTeX ``table`` with the title as caption and notes below."""
        body = self.summary.to_latex(float_format=float_format, **kwargs)
        notes = "".join(f"\\\\\n\\footnotesize {n}" for n in self.notes)
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
