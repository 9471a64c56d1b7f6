"""Names are data, never markup (issue 18, items 6-7): a model named with matplotlib mathtext
keeps its figures, and a name holding HTML is escaped in supplement.md as in supplement.html."""

from __future__ import annotations

import pytest

MATH = r"Cost $\foo$ tier"
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def odd_names_run(tmp_path_factory):
    from delusion_bayes.config import compose
    from delusion_bayes.data import save_study, simulate_study
    from delusion_bayes.pipeline import run

    root = tmp_path_factory.mktemp("odd")
    ds = simulate_study(preset="small", seed=0)
    models = [str(m) for m in ds["model"].values]
    models[0], models[1] = MATH, SCRIPT
    study = save_study(ds.assign_coords(model=models), root / "study.nc")
    cfg = compose(
        [
            "experiment=smoke",
            "data=file",
            f"data.path={study}",
            "stages=[baselines,report]",
            "report.pdf=never",
            "report.figure_formats=[png]",
            "baselines.contrasts=[]",
        ]
    )
    run(cfg, root / "run")
    return root / "run"


def test_mathtext_in_a_model_name_keeps_figures_1_and_e1(odd_names_run):
    figs = odd_names_run / "report" / "figures"
    assert (figs / "figure1_trajectories.png").is_file()
    assert (figs / "figureE1_milestones.png").is_file()
    html = (odd_names_run / "supplement.html").read_text()
    assert "Figure 1." in html and "Figure E1." in html


def test_html_in_a_model_name_is_escaped_in_markdown(odd_names_run):
    md = (odd_names_run / "supplement.md").read_text()
    html = (odd_names_run / "supplement.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md  # the model is there, as text
    assert "<script" not in md and "<script" not in html
    for table in (odd_names_run / "report" / "tables").glob("*.md"):
        assert "<script" not in table.read_text(), table.name


def test_md_text_escapes_markup_but_not_code_spans():
    from delusion_bayes.report.table import md_escape, md_text

    assert md_text(f"model {SCRIPT} & co") == "model &lt;script&gt;alert(1)&lt;/script&gt; & co"
    assert md_text("see `models/<name>/`") == "see `models/<name>/`"
    assert md_text("&lt;b&gt;") == "&amp;lt;b&amp;gt;"  # shown as written, not as <b>
    assert md_escape("a|<b>") == r"a\|&lt;b&gt;"
