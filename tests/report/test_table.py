"""ReportTable rendering (Markdown, LaTeX booktabs, HTML) and number formatting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.report.table import (
    ReportTable,
    breakable,
    display_frame,
    fmt_interval,
    fmt_num,
    fmt_p,
    latex_escape,
)


def test_number_formats():
    assert fmt_num(2.7507, 2) == "2.75"
    assert fmt_num(np.int64(31)) == "31"
    assert fmt_num(float("nan")) == "–"
    assert fmt_num(None) == "–"
    assert fmt_num(2.2e-16, 2) == "2.2e-16"
    assert fmt_num(True) == "yes"
    assert fmt_interval(4.9, 2.4, 22.9, 1) == "4.9 [2.4, 22.9]"
    assert fmt_interval(4.9, np.nan, np.nan, 1) == "4.9"
    assert fmt_p(0.0049) == "0.005"
    assert fmt_p(0.0007) == "<.001"
    assert fmt_p(np.nan) == "–"


def test_display_frame_integers_in_float_columns():
    """Latencies read from CSV are floats (31.0); they display as integers."""
    df = pd.DataFrame({"first_clinical": [3.0, 31.0, np.nan], "t50": [2.751, 9.3, 1.0]})
    d = display_frame(df, 2)
    assert list(d["first_clinical"]) == ["3", "31", "–"]
    assert list(d["t50"]) == ["2.75", "9.30", "1.00"]


def _table() -> ReportTable:
    data = pd.DataFrame(
        {"model": ["GPT-4o", "A_b & c"], "t50": [21.5, 3.25], "t50_low": [20.0, 2.5]}
    )
    disp = pd.DataFrame(
        {
            "Model": ["GPT-4o", "A_b & c"],
            "LS": ["21.50 [20.00, 23.00]", "3.25"],
            "posterior": ["–", "3.00"],
        }
    )
    return ReportTable(
        "tableX",
        "Table X. 95% fits",
        data,
        disp,
        ["baselines/x.csv"],
        ["α note"],
        [("", 1), ("t50", 2)],
    )


def test_latex_is_booktabs_with_spanning_group_and_escapes():
    tex = _table().to_latex()
    lines = tex.splitlines()
    assert lines[0] == r"\begin{table}[htbp]"
    assert r"\caption{Table X. 95\% fits}" in tex
    assert r"\label{tab:tableX}" in tex
    assert r"\begin{tabular}{lrr}" in tex  # text left, numbers right
    # rules in booktabs order
    order = [
        tex.index(r) for r in (r"\toprule", r"\cmidrule(lr){2-3}", r"\midrule", r"\bottomrule")
    ]
    assert order == sorted(order)
    assert r" & \multicolumn{2}{c}{t50} \\" in tex
    assert r"A\_b \& c & 3.25 & 3.00 \\" in tex
    assert r"$\alpha$ note" in tex and r"baselines/x.csv" in tex.replace(r"\_", "_")
    assert "--" in tex  # the en dash of a missing value


def test_markdown_pipe_table():
    md = _table().to_markdown().splitlines()
    assert md[0] == "| Model | t50: LS | t50: posterior |"
    assert md[1] == "|:---|---:|---:|"
    assert md[3] == "| A_b & c | 3.25 | 3.00 |"
    assert len(md) == 4


def test_html_table_has_group_header_and_numeric_cells():
    h = _table().to_html()
    assert '<th colspan="2" class="group">t50</th>' in h
    # the interval may go below its estimate but never breaks inside itself
    assert '<td class="num">21.50 [20.00,\u00a023.00]</td>' in h
    assert "A_b &amp; c" in h
    # a header breaks after "_" (column names like p_level_b_at_stage4_median)
    assert breakable("p_level_b") == "p_<wbr>level_<wbr>b"


def test_write_keeps_unrounded_numbers(tmp_path):
    t = _table()
    paths = t.write(tmp_path)
    assert set(paths) == {"csv", "md", "tex"}
    back = pd.read_csv(paths["csv"])
    assert back["t50"].tolist() == [21.5, 3.25]
    assert "**Table X. 95% fits**" in paths["md"].read_text()


def test_groups_must_span_display():
    with pytest.raises(ValueError, match="span 2 columns but the display has 3"):
        ReportTable(
            "t",
            "T",
            pd.DataFrame({"a": [1]}),
            pd.DataFrame({"a": [1], "b": [2], "c": [3]}),
            groups=[("", 1), ("g", 1)],
        )


def test_latex_escape():
    assert latex_escape("50% of $x_1 ≥ 2") == r"50\% of \$x\_1 $\geq$ 2"
