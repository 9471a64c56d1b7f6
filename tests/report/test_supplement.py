"""build_supplement on fake run directories: content, one source of truth, robustness."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf

from delusion_bayes.report import ReportConfig, build_supplement
from delusion_bayes.report.document import Note

from .conftest import make_run

FAST = {"pdf": "never", "dpi": 50, "figure_formats": ["png"]}


def _notes(sup, kind: str) -> list[str]:
    return [n.text for n in sup.document.notes(kind)]


def test_supplement_has_paper_tables_and_figures(full_supplement, full_run):
    sup = full_supplement
    assert sup.html == full_run / "supplement.html" and sup.markdown == full_run / "supplement.md"
    assert sup.headline["errors"] == []
    assert sup.headline["not_run"] == ["replay"]
    html = sup.html.read_text()
    for table in ("table1_milestones", "table2_interventions", "tableC1_reliability",
                  "tableD1_logistic", "contrasts", "sectionF_naive_profiles",
                  "tableC1_posterior_reliability", "figure3_entrainment_level_b",
                  "figure4_modality_turn"):  # fmt: skip
        assert f'<table id="{table}">' in html, table
        for ext in ("csv", "md", "tex"):
            assert (full_run / "report" / "tables" / f"{table}.{ext}").is_file()
    for fig in ("figure1_trajectories", "figure2_intensity_by_stage", "figure3_entrainment_level_b",
                "figure4_modality_turn", "figureE1_milestones", "figure_model_comparison"):  # fmt: skip
        for ext in ("png", "pdf"):
            assert (full_run / "report" / "figures" / f"{fig}.{ext}").is_file(), fig
    titles = [f.title for f in sup.document.figures()]
    assert titles[:4] == ["Figure 1.", "Figure 2.", "Figure 3.", "Figure 4."]
    assert "Figure E1." in titles
    # every figure embedded as a data URI, nothing fetched from anywhere
    assert html.count('src="data:image/png;base64,') == len(titles) == sup.headline["figures"]
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "<script" not in html
    assert "default-src 'none'" in html
    # the sections of the paper's supplement, in order
    ids = [s.id for s in sup.document.sections]
    assert ids == ["overview", "main", "text", "C", "D", "E", "F", "bayes", "bayes-joint",
                   "bayes-rater", "files", "provenance"]  # fmt: skip
    # both PSIS-LOO comparisons, each captioned with what it leaves out
    assert (
        "<caption>Model comparison (PSIS-LOO per left-out model-day, its latent stage integrated "
        "out)</caption>" in html
    )
    assert (
        "<caption>Model comparison (PSIS-LOO per left-out rating, given the model-day&#x27;s "
        "latent stage)</caption>" in html
    )
    # the models stage's diagnostic plot is in the gallery of its model
    joint = next(s for s in sup.document.sections if s.id == "bayes-joint")
    assert any(getattr(b, "rel_png", "") == "models/joint/rank_plot.png" for b in joint.blocks)


def test_numbers_come_unchanged_from_stage_csvs(full_supplement, full_run):
    """Every number of the side-by-side tables equals the stage CSV it came from."""
    tables = full_run / "report" / "tables"
    base = pd.read_csv(full_run / "baselines" / "tableD1_logistic.csv").set_index("model")
    d1 = pd.read_csv(tables / "tableD1_logistic.csv").set_index("model")
    post = pd.read_csv(full_run / "models" / "joint" / "t50_posterior.csv").set_index("model")
    for q in ("L", "k", "t50"):
        assert d1[q].tolist() == base[q].tolist()
        assert d1[f"{q}_low"].tolist() == base[f"{q}_ci_low"].tolist()
        assert d1[f"{q}_high"].tolist() == base[f"{q}_ci_high"].tolist()
        # t50_posterior.csv (contract) wins over summary.csv
        assert d1[f"{q}_posterior"].tolist() == post[f"{q}_median"].tolist()
        assert d1[f"{q}_posterior_low"].tolist() == post[f"{q}_ci_low"].tolist()
        assert d1[f"{q}_posterior_high"].tolist() == post[f"{q}_ci_high"].tolist()
    assert d1["t50_p_beyond_last_day"].tolist() == post["p_beyond_last_day"].tolist()
    # the rendered cells: least squares [CI] beside the posterior median [CrI]
    html = full_supplement.html.read_text()
    assert (
        '<td>Early</td><td class="num">3.50 [3.20, 3.90]</td><td class="num">3.12 [2.88, 3.62]'
        in html
    )
    assert '<td class="num">3.25 [2.50, 4.75]</td><td class="num">10.50 [8.25, 12.75]</td>' in html

    t1 = pd.read_csv(tables / "table1_milestones.csv").set_index("model")
    src1 = pd.read_csv(full_run / "baselines" / "table1_milestones.csv").set_index("model")
    for q in src1.columns:
        assert t1[q].tolist() == src1[q].tolist()
    mp = pd.read_csv(full_run / "models" / "joint" / "milestones_posterior.csv")
    for q in ("first_clinical", "first_stable", "first_level_b"):
        rows = mp[mp["milestone"] == q].set_index("model").reindex(t1.index)
        assert t1[f"{q}_posterior"].tolist() == rows["median"].tolist()
        assert t1[f"{q}_posterior_low"].tolist() == rows["ci_low"].tolist()
        assert t1[f"{q}_posterior_high"].tolist() == rows["ci_high"].tolist()
        assert t1[f"{q}_p_censored"].tolist() == rows["p_censored"].tolist()
    assert "never" in (tables / "table1_milestones.md").read_text()  # 13 = censored

    con = pd.read_csv(tables / "contrasts.csv")
    assert con["pvalue"].tolist() == [0.1, 0.3]
    assert con["p_gt_0"].tolist() == [0.07, 0.19]
    assert con["median"].tolist() == [-4.5, -2.0] and con["ci_high"].tolist() == [0.5, 1.0]
    assert '<td class="num">−4.50 [−9.00, 0.50]</td>' in html or "-4.50 [-9.00, 0.50]" in html

    # reliability: alpha / ICC from Table C1 beside the rater model's posterior
    rel = pd.read_csv(tables / "tableC1_posterior_reliability.csv").set_index("level")
    c1 = pd.read_csv(full_run / "baselines" / "tableC1_reliability.csv").set_index("variable")
    rp = pd.read_csv(full_run / "models" / "rater" / "reliability_posterior.csv")
    assert rel.loc["single", "alpha"] == c1.loc["recognition", "alpha"]
    assert rel.loc["single", "icc2_1"] == c1.loc["recognition", "icc2_1"]
    assert rel.loc["consensus", "icc2_k"] == c1.loc["recognition", "icc2_k"]
    assert rel["posterior"].tolist() == rp["median"].tolist()
    assert rel["posterior_high"].tolist() == rp["ci_high"].tolist()
    assert "0.948" in html and "0.912 [0.875, 0.938]" in html

    # text stage: Figure 3 / 4 data and the correlation in the note
    f3 = pd.read_csv(tables / "figure3_entrainment_level_b.csv")
    mm = pd.read_csv(full_run / "text" / "model_means.csv")
    assert f3["entrainment_mean"].tolist() == mm["entrainment_mean"].tolist()
    assert "ρ of mean entrainment with Level-B days = -0.688" in html.replace("−", "-")
    f4 = pd.read_csv(tables / "figure4_modality_turn.csv")
    tc = pd.read_csv(full_run / "text" / "turn_contrast.csv")
    tc = tc[tc["metric"] == "modality"]
    assert f4["before"].tolist() == tc["before"].tolist()


def test_markdown_links_and_latex_files(full_supplement, full_run):
    md = full_supplement.markdown.read_text()
    links = re.findall(r"\]\(([^)#][^)]*)\)", md)
    assert any(x.endswith("figure1_trajectories.png") for x in links)
    for link in links:
        assert (full_run / link).is_file(), link
    for tex in (full_run / "report" / "tables").glob("*.tex"):
        text = tex.read_text()
        assert text.count(r"\toprule") == 1 and text.count(r"\bottomrule") == 1, tex.name
    index = json.loads((full_run / "report" / "index.json").read_text())
    for rel in index["files"]:
        assert (full_run / "report" / rel).is_file(), rel
    assert index["headline"]["tables"] == full_supplement.headline["tables"]


def test_provenance_section(full_supplement):
    prov = next(s for s in full_supplement.document.sections if s.id == "provenance")
    text = json.dumps([getattr(b, "rows", None) or getattr(b, "text", "") for b in prov.blocks])
    assert "abc123fake" in text  # git SHA recorded in the posterior's attrs
    assert "feedface" in text  # data hash recorded in the posterior's attrs
    assert '"seed (config)", "7"' in text
    assert "data=small seed=7" in text  # the command-line overrides
    assert "ess_min_per_chain: 100.0" in text  # the resolved config, verbatim
    assert '"pandas"' in text and '"delusion_bayes"' in text
    assert _notes(full_supplement, "ok")  # diagnostics passed


def test_missing_stages_are_marked_not_run(tmp_path):
    run = make_run(tmp_path / "run", stages=("baselines",))
    sup = build_supplement(run, FAST)
    assert sup.headline["not_run"] == ["text", "models", "replay"]
    assert sup.headline["errors"] == []
    notrun = " ".join(_notes(sup, "notrun"))
    assert "`text` stage did not run" in notrun and "`models` stage did not run" in notrun
    html = sup.html.read_text()
    assert html.count('class="note notrun"') == len(_notes(sup, "notrun")) >= 4
    assert '<table id="tableD1_logistic">' in html  # the baselines are still all there


def test_run_without_any_stage(tmp_path):
    run = make_run(tmp_path / "run", stages=())
    sup = build_supplement(run, FAST)
    assert sup.html.is_file() and sup.headline["errors"] == []
    assert sup.headline["not_run"] == ["baselines", "text", "models", "replay"]
    # Figure 1 still shows the raters' scores from study.nc
    assert [f.title for f in sup.document.figures()] == ["Figure 1."]
    assert sup.headline["tables"] == 0


def test_failed_fit_gives_visible_warning(tmp_path):
    run = make_run(tmp_path / "run", stages=("baselines", "models"), failed_fit=True)
    sup = build_supplement(run, FAST)
    assert sup.headline["diagnostics_failed"] == ["joint"]
    warnings = _notes(sup, "warning")
    assert warnings and "FAILED" in warnings[0] and "max R-hat 1.080" in warnings[0]
    html = sup.html.read_text()
    # first box of the document, before any table
    assert html.index('class="note warning" role="alert"') < html.index("<table")
    assert "<td>FAIL</td>" in html


def test_unparsable_csv_becomes_an_error_note_not_a_crash(tmp_path):
    run = make_run(tmp_path / "run", stages=("baselines",))
    (run / "baselines" / "tableD1_logistic.csv").write_text("x;y\n1;2\n")
    (run / "baselines" / "figure2_intensity_by_stage.csv").write_bytes(b"\xff\xfe\x00garbage")
    sup = build_supplement(run, FAST)
    errors = " ".join(_notes(sup, "error"))
    assert "Table D1 could not be built" in errors and "tableD1_logistic.csv" in errors
    assert '<table id="table1_milestones">' in sup.html.read_text()
    assert any("Figure 2" in e for e in sup.headline["errors"] + _notes(sup, "notrun"))


def test_failed_stage_in_run_json_is_shown(tmp_path):
    run = make_run(tmp_path / "run", stages=("baselines",))
    record = {"stages": {"baselines": {"status": "ok"},
                         "models": {"status": "failed", "error": "SamplingError: boom"}}}  # fmt: skip
    (run / "run.json").write_text(json.dumps(record))
    sup = build_supplement(run, FAST)
    errors = _notes(sup, "error")
    assert any("`models` stage FAILED: SamplingError: boom" in e for e in errors)
    assert 'role="alert"' in sup.html.read_text()


def test_rebuild_is_deterministic(tmp_path, monkeypatch):
    # the checkout's HEAD (shown "at report time") may move between the builds: other commits
    monkeypatch.setattr("delusion_bayes.report.provenance.git_sha", lambda path=None: "f" * 40)
    run = make_run(tmp_path / "run", stages=("baselines",))
    first = build_supplement(run, FAST)
    html1, md1 = first.html.read_bytes(), first.markdown.read_bytes()
    second = build_supplement(run, FAST)
    assert second.html.read_bytes() == html1 and second.markdown.read_bytes() == md1


def test_config_handling(tmp_path):
    yaml = OmegaConf.load(Path(__file__).parents[2] / "conf" / "report" / "default.yaml")
    assert set(yaml) <= set(ReportConfig.__dataclass_fields__)
    assert OmegaConf.to_container(yaml)["from_run"] is None
    with pytest.raises(ValueError, match=r"unknown report config keys \['dpii'\]"):
        build_supplement(tmp_path, {"dpii": 3})
    with pytest.raises(ValueError, match="does not exist"):
        build_supplement(tmp_path / "nope")
    with pytest.raises(ValueError, match="'auto' or 'never'"):
        build_supplement(make_run(tmp_path / "r", stages=()), {**FAST, "pdf": "always"})


def test_stage_module(tmp_path):
    from delusion_bayes.stages import report

    assert report.NEEDS == ("report",) and set(report.KIND) == {"trajectory", "replay"}
    run = make_run(tmp_path / "run", stages=("baselines",))
    cfg = OmegaConf.create({"report": {**FAST, "from_run": None}})
    head = report.run(None, cfg, run)
    assert head["tables"] == 6 and head["errors"] == [] and (run / "supplement.html").is_file()


def test_note_kinds_render():
    from delusion_bayes.report.document import Document, Section, to_html, to_markdown

    doc = Document(
        "T", sections=[Section("s", "S", [Note("warning", "bad `fit`", "Diagnostics failed")])]
    )
    assert "> ⚠ **Diagnostics failed.** bad `fit`" in to_markdown(doc)
    assert '<div class="note warning" role="alert">' in to_html(doc)
    assert "<code>fit</code>" in to_html(doc)


@pytest.mark.slow
def test_rebuild_from_run_through_the_pipeline(tmp_path):
    """`delusion-bayes report.from_run=<dir>` rebuilds the supplement and runs no stage."""
    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import run as run_pipeline

    run = make_run(tmp_path / "run", stages=("baselines",))
    before = (run / "baselines" / "tableD1_logistic.csv").stat().st_mtime_ns
    cfg = compose([f"report.from_run={run}", "report.pdf=never", "report.figure_formats=[png]"])
    out = run_pipeline(cfg, run_dir=tmp_path / "hydra_dir")
    assert out == {"supplement": str(run / "supplement.html")}
    assert (run / "supplement.html").is_file() and not (run / "study_copy").exists()
    assert (run / "baselines" / "tableD1_logistic.csv").stat().st_mtime_ns == before
    assert not (tmp_path / "hydra_dir" / "study.nc").exists()  # nothing was loaded or fitted
    with pytest.raises(ValueError, match="does not exist"):
        run_pipeline(compose([f"report.from_run={tmp_path / 'nope'}"]), run_dir=tmp_path / "h2")


def test_posterior_sources_fall_back(tmp_path):
    """Without t50_posterior.csv, D1 reads summary.csv; without both, posterior.nc draws."""
    from delusion_bayes.report import tables as T
    from delusion_bayes.report.rundir import RunDir

    run = make_run(tmp_path / "run", stages=("baselines", "models"))
    (run / "models" / "joint" / "t50_posterior.csv").unlink()
    rd = RunDir(run)
    post = T.choose_posterior(rd, ["joint"])
    assert post.name == "joint"
    d1 = T.table_d1(rd, post)
    summ = pd.read_csv(run / "models" / "joint" / "summary.csv")
    assert (
        d1.data["t50_posterior"].tolist()
        == summ[summ["label"].str.startswith("t50[")]["median"].tolist()
    )
    assert d1.sources == ["baselines/tableD1_logistic.csv", "models/joint/summary.csv"]
    (run / "models" / "joint" / "summary.csv").unlink()
    d1 = T.table_d1(RunDir(run), post)
    assert d1.sources[-1] == "models/joint/posterior.nc"
    import xarray as xr

    draws = xr.open_datatree(run / "models" / "joint" / "posterior.nc")["posterior"]["t50"]
    med = draws.median(("chain", "draw")).values
    assert d1.data["t50_posterior"].to_numpy() == pytest.approx(med)


def test_no_posterior_tables_without_models(tmp_path):
    from delusion_bayes.report import tables as T
    from delusion_bayes.report.rundir import RunDir

    rd = RunDir(make_run(tmp_path / "run", stages=("baselines",)))
    post = T.choose_posterior(rd, ["joint"])
    assert post.name is None
    assert T.posterior_reliability(rd, post) is None
    d1 = T.table_d1(rd, post)
    assert not any("posterior" in c for c in d1.data.columns)
    con = T.contrasts(rd, post)
    assert con.sources == ["baselines/contrasts.csv"]


def test_replay_section(tmp_path):
    run = make_run(tmp_path / "run", stages=("replay",))
    sup = build_supplement(run, FAST)
    assert sup.headline["errors"] == []
    ids = [s.id for s in sup.document.sections]
    assert "replay" in ids
    html = sup.html.read_text()
    warn = _notes(sup, "warning")
    assert any("prevalence model FAILED" in w and "max rhat 1.03" in w for w in warn)
    assert "replay/onset.csv" in " ".join(_notes(sup, "notrun"))  # absent file: named, no crash
    # model x category tables: the category rows of the stage CSV, unchanged
    src = pd.read_csv(run / "replay" / "prevalence.csv")
    src = src[src["level"] == "category"].reset_index(drop=True)
    prev = pd.read_csv(run / "report" / "tables" / "replay_prevalence_by_category.csv")
    for c in ("estimate", "ci_low", "ci_high"):
        assert prev[c].tolist() == src[c].tolist()
    assert '<td>claude</td><td class="num">0.375 [0.188, 0.750]</td>' in html
    bayes = pd.read_csv(run / "report" / "tables" / "replay_bayes_vs_bootstrap.csv")
    assert (
        bayes["mean"].tolist()
        == pd.read_csv(run / "replay" / "bayes_prevalence.csv")["mean"].tolist()
    )
    assert '<table id="replay_deltas_by_category">' in html
