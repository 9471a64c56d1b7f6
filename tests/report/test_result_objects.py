"""Declared tables as result objects that render themselves (issue 49, item 4): the contract's
views (``delusion_bayes.results``: title, question, columns with headers and formats) and
:class:`~delusion_bayes.baselines.results.BaselineResult` reading a stage's CSV back with them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from delusion_bayes import results
from delusion_bayes.baselines.results import BaselineResult, cells
from delusion_bayes.results import Column

REPORT = Path(__file__).resolve().parents[2] / "delusion_bayes" / "report"
T50 = "models/{fit}/t50_posterior.csv"
#: the Bayesian tables the report reads column by column: each declares how it reads
READ_BY_THE_REPORT = (
    T50,
    "models/{fit}/milestones_posterior.csv",
    "models/{fit}/contrasts_posterior.csv",
    "models/{fit}/contrasts_population.csv",
    "models/{fit}/reliability_posterior.csv",
    "models/{fit}/sensitivity.csv",
    "models/{fit}/sensitivity_reported.csv",
    "replay/sensitivity_reported.csv",
    "replay/bayes_prevalence.csv",
    "baselines/tableC1_reliability.csv",
    "baselines/contrasts.csv",
)


def test_every_view_shows_columns_the_writer_writes():
    """A view names only declared columns of its file (interval columns too): the columns
    ``results.write`` checks every writer's table against, so reader and writer agree."""
    for f in results.FILES.values():
        for col in f.view:
            unknown = [c for c in col.names if c not in f.dtypes()]
            assert not unknown, f"{f.key}: view column {col.name} names undeclared {unknown}"


@pytest.mark.parametrize("key", READ_BY_THE_REPORT)
def test_tables_the_report_reads_declare_their_view_and_question(key):
    f = results.spec(key)
    assert f.view and f.question and f.question.endswith("?"), key
    required = {c for c, _ in f.columns}
    assert {c.name for c in f.view} <= required | {c for c, _ in f.optional}


def test_headers_are_spelled_once():
    """The headers the views declare (those that are not a name: ``P(> last day)``, ``Δ [CrI]``)
    are not spelled again in the report's modules: they read them from the result object."""
    source = "\n".join(p.read_text() for p in REPORT.glob("*.py"))
    special = {
        c.header
        for f in results.FILES.values()
        for c in f.view
        if not c.label.isidentifier() and c.label != c.name.replace("_", " ")
    }
    special -= {"ICC(2,1)", "ICC(2,k)"}  # also words of a note and of the pair cell
    assert special, "no declared headers found"
    again = sorted(h for h in special if f'"{h}"' in source)
    assert not again, f"headers spelled again in delusion_bayes/report/: {again}"


def _t50(n: int = 2) -> pd.DataFrame:
    spec = results.spec(T50)
    df = pd.DataFrame({c: np.linspace(1, 2, n) for c, t in spec.columns if t == "float"})
    df["model"], df["ci_kind"] = [f"m{i}" for i in range(n)], "eti"
    df["p_beyond_last_day"] = [0.0001, 0.5]
    return df


def test_a_written_table_reads_back_as_a_result_that_renders(tmp_path):
    results.write(tmp_path, T50, _t50(), fit="joint")
    res = BaselineResult.read(tmp_path, T50, fit="joint")
    assert res is not None and res.name == "joint_t50_posterior"
    assert res.title == "Posterior of L, k and t50 per model (`joint`)"
    pd.testing.assert_frame_equal(res.frame, results.read(tmp_path, T50, fit="joint"))
    disp = res.display()
    assert list(disp.columns) == ["model", "L", "k", "t50", "P(> last day)"]
    assert disp["t50"].tolist() == ["1.00 [1.00, 1.00]", "2.00 [2.00, 2.00]"]
    assert disp["P(> last day)"].tolist() == ["<.001", "0.500"]
    assert res.used()[:4] == ["model", "L_median", "L_ci_low", "L_ci_high"]
    md = res.to_markdown()
    assert md.startswith(f"**{res.title}**")
    assert "| model | L | k | t50 | P(> last day) |" in md and res.question in md
    tex = res.to_latex()
    assert "\\caption{Posterior of L, k and t50" in tex and "P(> last day)" in tex
    assert BaselineResult.read(tmp_path, T50, fit="other") is None


def test_an_undeclared_table_shows_every_column_as_written():
    res = BaselineResult("x", pd.DataFrame({"a": [1, 2], "b": [0.5, 1.25]}), "X")
    assert res.display().to_dict("list") == {"a": ["1", "2"], "b": ["0.500", "1.250"]}
    assert res.header("b") == "b" and res.header("b", "B") == "B"
    assert "| a | b |" in res.to_markdown()


def test_column_kinds():
    df = pd.DataFrame(
        {"v": [0.91234, 0.5], "lo": [0.8, np.nan], "hi": [0.95, np.nan], "w": ["a_b", "c"]}
    )
    assert cells(df, Column("v", digits=2, kind="fixed", low="lo", high="hi")) == [
        "0.91 [0.80, 0.95]",
        "0.50",
    ]
    assert cells(df, Column("v", digits=3, kind="range", low="lo", high="hi")) == [
        "0.912 (0.80–0.95)",
        "0.500",
    ]
    assert cells(df, Column("v", kind="p")) == ["0.912", "0.500"]
    assert cells(df, Column("w", kind="words")) == ["a b", "c"]
    assert cells(df, Column("v", digits=1, kind="fixed", low="absent")) == ["0.9", "0.5"]
    with pytest.raises(ValueError, match="kind 'percent'"):
        Column("v", kind="percent")


def test_the_smoke_runs_tables_read_as_results(smoke_run):
    """Every declared CSV of a real run reads back as a result that renders, its view's
    columns all present in what the stage wrote."""
    run = smoke_run
    found = 0
    for key, f in results.FILES.items():
        if f.kind != "csv":
            continue
        for fit in results.fits(run) if "{fit}" in key else [None]:
            res = BaselineResult.read(run, key, fit=fit)
            if res is None:
                continue
            found += 1
            # a view's required columns are all written; an optional one (declared: the test
            # above) only where the writer has it, e.g. az.compare's columns
            optional = {c for c, _ in f.optional}
            assert all(col.name in res.frame or col.name in optional for col in f.view), key
            assert res.to_markdown().count("\n") >= len(res.frame) + 2
    assert found >= 10
