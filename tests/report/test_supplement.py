"""build_supplement on the output of real runs: content, one source of truth, robustness."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from delusion_bayes import results
from delusion_bayes.report import ReportConfig, build_supplement
from delusion_bayes.report.document import Note
from delusion_bayes.report.table import fmt_interval, num_cell

from .conftest import FAST, copy_run


def _notes(sup, kind: str) -> list[str]:
    return [n.text for n in sup.document.notes(kind)]


def test_every_file_a_run_writes_is_declared_and_reads(smoke_run, replay_run):
    """The results contract covers what the stages really write, and every declared file
    of a real run reads back through it."""
    for run in (smoke_run, replay_run):
        for path in sorted(run.glob("*/**/*")):
            rel = path.relative_to(run).as_posix()
            if path.suffix not in (".csv", ".json", ".nc") or rel.startswith(("report/", ".hydra")):
                continue
            key = re.sub(r"^models/(?!comparison)[^/]+/", "models/{fit}/", rel)
            assert key in results.FILES, f"{rel} is not declared in delusion_bayes/results.py"
            fit = rel.split("/")[1] if "{fit}" in key else None
            assert results.read(run, key, fit=fit) is not None, rel


def test_supplement_has_paper_tables_and_figures(smoke_supplement, smoke_run):
    sup = smoke_supplement
    assert sup.html == smoke_run / "supplement.html" and sup.markdown == smoke_run / "supplement.md"
    assert sup.headline["errors"] == []
    assert sup.headline["not_run"] == ["replay"]
    html = sup.html.read_text()
    for table in (
        "table1_milestones",
        "table2_interventions",
        "tableC1_reliability",
        "tableD1_logistic",
        "contrasts",
        "contrasts_finite",
        "sectionF_naive_profiles",
        "tableC1_posterior_reliability",
        "figure3_entrainment_level_b",
        "figure4_modality_turn",
    ):
        assert f'<table id="{table}">' in html, table
        for ext in ("csv", "md", "tex"):
            assert (smoke_run / "report" / "tables" / f"{table}.{ext}").is_file()
    for fig in (
        "figure1_trajectories",
        "figure2_intensity_by_stage",
        "figure3_entrainment_level_b",
        "figure4_modality_turn",
        "figureE1_milestones",
        "figure_model_comparison",
    ):
        assert (smoke_run / "report" / "figures" / f"{fig}.png").is_file(), fig
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
    assert ids == [
        "overview",
        "main",
        "text",
        "C",
        "D",
        "E",
        "F",
        "bayes",
        "bayes-joint",
        "sensitivity",
        "files",
        "provenance",
    ]
    # the PSIS-LOO table captioned with what it leaves out
    assert (
        "<caption>Model comparison (PSIS-LOO per left-out model-day, its latent stage integrated "
        "out)</caption>" in html
    )
    # the models stage's diagnostic plots are in the gallery of their model
    joint = next(s for s in sup.document.sections if s.id == "bayes-joint")
    assert any(getattr(b, "rel_png", "") == "models/joint/rank.png" for b in joint.blocks)


def test_numbers_come_unchanged_from_stage_tables(smoke_supplement, smoke_run):
    """Every number of the side-by-side tables equals the stage table it came from."""
    tables = smoke_run / "report" / "tables"
    base = results.read(smoke_run, "baselines/tableD1_logistic.csv").set_index("model")
    d1 = pd.read_csv(tables / "tableD1_logistic.csv").set_index("model")
    post = results.read(smoke_run, "models/{fit}/t50_posterior.csv", "joint").set_index("model")
    for q in ("L", "k", "t50"):
        assert d1[q].tolist() == base[q].tolist()
        assert d1[f"{q}_low"].tolist() == base[f"{q}_ci_low"].tolist()
        assert d1[f"{q}_high"].tolist() == base[f"{q}_ci_high"].tolist()
        assert d1[f"{q}_posterior"].tolist() == post[f"{q}_median"].tolist()
        assert d1[f"{q}_posterior_low"].tolist() == post[f"{q}_ci_low"].tolist()
        assert d1[f"{q}_posterior_high"].tolist() == post[f"{q}_ci_high"].tolist()
    assert d1["t50_p_beyond_last_day"].tolist() == post["p_beyond_last_day"].tolist()
    # the rendered cells: least squares [CI] beside the posterior median [CrI]
    html = smoke_supplement.html.read_text()
    m = base.index[0]
    ls = fmt_interval(base.loc[m, "L"], base.loc[m, "L_ci_low"], base.loc[m, "L_ci_high"])
    pl = fmt_interval(post.loc[m, "L_median"], post.loc[m, "L_ci_low"], post.loc[m, "L_ci_high"])
    # (the interval's own spaces are non-breaking in the HTML: it wraps only before the "[")
    assert f'<td>{m}</td><td class="num">{num_cell(ls)}</td><td class="num">{num_cell(pl)}' in html

    t1 = pd.read_csv(tables / "table1_milestones.csv").set_index("model")
    src1 = results.read(smoke_run, "baselines/table1_milestones.csv").set_index("model")
    for q in ("first_clinical", "first_stable", "first_level_b", "days_stage4"):
        assert t1[q].tolist() == src1[q].tolist()
    mp = results.read(smoke_run, "models/{fit}/milestones_posterior.csv", "joint")
    for q in ("first_clinical", "first_stable"):
        rows = mp[mp["milestone"] == q].set_index("model").reindex(t1.index)
        assert t1[f"{q}_posterior"].tolist() == rows["median"].tolist()
        assert t1[f"{q}_posterior_low"].tolist() == rows["ci_low"].tolist()
        assert t1[f"{q}_posterior_high"].tolist() == rows["ci_high"].tolist()
        assert t1[f"{q}_p_censored"].tolist() == rows["p_censored"].tolist()
    assert "never" in (tables / "table1_milestones.md").read_text()  # a censored latency

    con = pd.read_csv(tables / "contrasts.csv")
    src = results.read(smoke_run, "baselines/contrasts.csv")
    pc = results.read(smoke_run, "models/{fit}/contrasts_posterior.csv", "joint")
    assert con["pvalue"].tolist() == src["pvalue"].tolist()
    # the finite-sample contrast: the Bayesian section's descriptive table, the rows formed
    fin = pd.read_csv(tables / "contrasts_finite.csv")
    keyed = pc.rename(columns={"name": "contrast"}).set_index(["contrast", "quantity"])
    keyed = keyed.reindex(pd.MultiIndex.from_frame(fin[["contrast", "quantity"]]))
    assert len(fin) == int(pc["median"].notna().sum())
    for c in ("p_gt_0", "median", "ci_low", "ci_high"):
        np.testing.assert_array_equal(fin[f"{c}_posterior"].to_numpy(), keyed[c].to_numpy())
    r = pc.iloc[0]
    cell = num_cell(fmt_interval(r["median"], r["ci_low"], r["ci_high"]))
    assert cell.replace("−", "-") in html.replace("−", "-")

    # reliability: alpha / ICC from Table C1 beside the joint model's posterior
    rel = pd.read_csv(tables / "tableC1_posterior_reliability.csv").set_index("level")
    c1 = results.read(smoke_run, "baselines/tableC1_reliability.csv").set_index("variable")
    rp = results.read(smoke_run, "models/{fit}/reliability_posterior.csv", "joint")
    assert rel.loc["single", "alpha"] == c1.loc["recognition", "alpha"]
    assert rel.loc["single", "icc2_1"] == c1.loc["recognition", "icc2_1"]
    assert rel.loc["consensus", "icc2_k"] == c1.loc["recognition", "icc2_k"]
    assert rel["posterior"].tolist() == rp["median"].tolist()
    assert rel["posterior_high"].tolist() == rp["ci_high"].tolist()

    # text stage: Figure 3 / 4 data and the correlation in the note
    f3 = pd.read_csv(tables / "figure3_entrainment_level_b.csv")
    mm = results.read(smoke_run, "text/model_means.csv")
    assert f3["entrainment_mean"].tolist() == mm["entrainment_mean"].tolist()
    corr = results.read(smoke_run, "text/correlations.csv")
    rho = corr.query("metric == 'entrainment' and against == 'days_level_b'")["rho"].iloc[0]
    assert f"ρ of mean entrainment with Level-B days = {rho:.3f}" in html.replace("−", "-")
    f4 = pd.read_csv(tables / "figure4_modality_turn.csv")
    tc = results.read(smoke_run, "text/turn_contrast.csv")
    assert f4["before"].tolist() == tc[tc["metric"] == "modality"]["before"].tolist()


def test_markdown_links_and_latex_files(smoke_supplement, smoke_run):
    md = smoke_supplement.markdown.read_text()
    links = re.findall(r"\]\(([^)#][^)]*)\)", md)
    assert any(x.endswith("figure1_trajectories.png") for x in links)
    for link in links:
        assert (smoke_run / link).is_file(), link
    for tex in (smoke_run / "report" / "tables").glob("*.tex"):
        text = tex.read_text()
        assert text.count(r"\toprule") == 1 and text.count(r"\bottomrule") == 1, tex.name
    index = json.loads((smoke_run / "report" / "index.json").read_text())
    for rel in index["files"]:
        assert (smoke_run / "report" / rel).is_file(), rel
    assert index["headline"]["tables"] == smoke_supplement.headline["tables"]


def test_provenance_section(smoke_supplement, smoke_run):
    prov = next(s for s in smoke_supplement.document.sections if s.id == "provenance")
    text = json.dumps([getattr(b, "rows", None) or getattr(b, "text", "") for b in prov.blocks])
    record = json.loads((smoke_run / "run.json").read_text())["provenance"]
    assert record["data_hash"] in text  # recorded in the posterior's attrs
    assert str(record["git_sha"]) in text
    assert '"seed (config)", "7"' in text
    assert "ess_min_per_chain: 100.0" in text  # the resolved config, verbatim
    assert '"pandas"' in text and '"delusion_bayes"' in text


def test_failed_fit_gives_visible_warning(smoke_supplement):
    """The smoke run's joint model fails its gate at 2 x 150 draws: the document says so first."""
    sup = smoke_supplement
    assert sup.headline["diagnostics_failed"] == ["joint"]
    warnings = _notes(sup, "warning")
    assert warnings and "FAILED" in warnings[0] and "max R-hat" in warnings[0]
    html = sup.html.read_text()
    assert html.index('class="note warning" role="alert"') < html.index("<table")
    assert "<td>FAIL</td>" in html


def test_passed_fit_is_said_so(smoke_run, tmp_path):
    run = copy_run(smoke_run, tmp_path / "run")
    gate = results.read(run, "models/{fit}/gate.json", "joint")
    results.write(run, "models/{fit}/gate.json", {**gate, "passed": True, "reasons": []}, "joint")
    sup = build_supplement(run, FAST)
    # the only warnings left are PSIS-LOO's (issue 52: Pareto k > 0.7 is said where it occurs)
    loo = results.read(run, "models/{fit}/loo.csv", "joint")
    bad = int((loo["n_k_bad"] + loo["n_k_very_bad"] > 0).sum())
    warnings = _notes(sup, "warning")
    assert sup.headline["diagnostics_failed"] == [] and len(warnings) == bad
    assert all("points have Pareto k above" in w for w in warnings)
    assert "Every fitted model passed its sampling diagnostics." in _notes(sup, "ok")


def test_missing_stages_are_marked_not_run(smoke_run, tmp_path):
    run = copy_run(smoke_run, tmp_path / "run", drop=("text", "models"))
    sup = build_supplement(run, FAST)
    assert sup.headline["not_run"] == ["text", "models", "replay"]
    assert sup.headline["errors"] == []
    notrun = " ".join(_notes(sup, "notrun"))
    assert "`text` stage did not run" in notrun and "`models` stage did not run" in notrun
    html = sup.html.read_text()
    assert html.count('class="note notrun"') == len(_notes(sup, "notrun")) >= 4
    assert '<table id="tableD1_logistic">' in html  # the baselines are still all there
    d1 = pd.read_csv(run / "report" / "tables" / "tableD1_logistic.csv")
    assert not any("posterior" in c for c in d1.columns)


def test_run_without_any_stage(smoke_run, tmp_path):
    run = copy_run(smoke_run, tmp_path / "run", drop=("baselines", "text", "models"))
    sup = build_supplement(run, FAST)
    assert sup.html.is_file() and sup.headline["errors"] == []
    assert sup.headline["not_run"] == ["baselines", "text", "models", "replay"]
    # Figure 1 still shows the raters' scores from study.nc
    assert [f.title for f in sup.document.figures()] == ["Figure 1."]
    assert sup.headline["tables"] == 0


def test_file_breaking_the_contract_becomes_an_error_note_not_a_crash(smoke_run, tmp_path):
    run = copy_run(smoke_run, tmp_path / "run")
    (run / "baselines" / "tableD1_logistic.csv").write_text("x;y\n1;2\n")
    (run / "baselines" / "figure2_intensity_by_stage.csv").write_bytes(b"\xff\xfe\x00garbage")
    sup = build_supplement(run, FAST)
    errors = " ".join(_notes(sup, "error"))
    assert "Table D1 could not be built" in errors and "tableD1_logistic.csv" in errors
    assert "results contract" in errors  # names the declaration it breaks
    assert '<table id="table1_milestones">' in sup.html.read_text()
    assert any("Figure 2" in e for e in sup.headline["errors"])


def test_failed_stage_in_run_json_is_shown(smoke_run, tmp_path):
    run = copy_run(smoke_run, tmp_path / "run", drop=("models",))
    record = json.loads((run / "run.json").read_text())
    record["stages"]["models"] = {"status": "failed", "error": "SamplingError: boom"}
    (run / "run.json").write_text(json.dumps(record))
    sup = build_supplement(run, FAST)
    errors = _notes(sup, "error")
    assert any("`models` stage FAILED: SamplingError: boom" in e for e in errors)
    assert 'role="alert"' in sup.html.read_text()


def test_rebuild_is_deterministic(smoke_run, tmp_path, monkeypatch):
    # the checkout's HEAD (shown "at report time") may move between the builds: other commits
    monkeypatch.setattr("delusion_bayes.report.provenance.git_sha", lambda path=None: "f" * 40)
    run = copy_run(smoke_run, tmp_path / "run", drop=("models",))
    first = build_supplement(run, FAST)
    html1, md1 = first.html.read_bytes(), first.markdown.read_bytes()
    second = build_supplement(run, FAST)
    assert second.html.read_bytes() == html1 and second.markdown.read_bytes() == md1


def test_config_handling(smoke_run, tmp_path):
    yaml = OmegaConf.load(Path(__file__).parents[2] / "conf" / "report" / "default.yaml")
    assert set(yaml) <= set(ReportConfig.__dataclass_fields__)
    from delusion_bayes.config import compose

    assert compose([]).report.from_run is None  # the default: build from this run
    with pytest.raises(ValueError, match=r"unknown report config keys \['dpii'\]"):
        build_supplement(tmp_path, {"dpii": 3})
    with pytest.raises(ValueError, match="does not exist"):
        build_supplement(tmp_path / "nope")
    run = copy_run(smoke_run, tmp_path / "r", drop=("baselines", "text", "models"))
    with pytest.raises(ValueError, match="'auto' or 'never'"):
        build_supplement(run, {**FAST, "pdf": "always"})


def test_stage_module(smoke_run, tmp_path):
    from delusion_bayes.stages import report

    assert report.NEEDS == ("report",)
    assert set(report.KIND) == {"trajectory", "replay", "replicated"}
    run = copy_run(smoke_run, tmp_path / "run", drop=("text", "models"))
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
def test_rebuild_from_run_through_the_pipeline(smoke_run, tmp_path):
    """`delusion-bayes report.from_run=<dir>` rebuilds the supplement and runs no stage."""
    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import run as run_pipeline

    run = copy_run(smoke_run, tmp_path / "run", drop=("text", "models"))
    before = (run / "baselines" / "tableD1_logistic.csv").stat().st_mtime_ns
    cfg = compose([f"report.from_run={run}", "report.pdf=never", "report.figure_formats=[png]"])
    out = run_pipeline(cfg, run_dir=tmp_path / "hydra_dir")
    assert out == {"supplement": str(run / "supplement.html")}
    assert (run / "supplement.html").is_file() and not (run / "study_copy").exists()
    assert (run / "baselines" / "tableD1_logistic.csv").stat().st_mtime_ns == before
    assert not (tmp_path / "hydra_dir" / "study.nc").exists()  # nothing was loaded or fitted
    with pytest.raises(ValueError, match="does not exist"):
        run_pipeline(compose([f"report.from_run={tmp_path / 'nope'}"]), run_dir=tmp_path / "h2")


def test_replay_section(replay_run):
    sup = build_supplement(replay_run, FAST)
    assert sup.headline["errors"] == []
    ids = [s.id for s in sup.document.sections]
    assert "replay" in ids and "main" not in ids
    html = sup.html.read_text()
    gate = results.read(replay_run, "replay/bayes_diagnostics.json")
    kind = "warning" if not gate["passed"] else "ok"
    assert any("prevalence model" in n for n in _notes(sup, kind))
    # the overview opens with the replay's headline numbers, then the gate in one line
    first = sup.document.sections[0].blocks
    n = results.read(replay_run, "replay/index.json")["headline"]["n_samples"]
    assert "SIMULATED" in first[0].text and f"Replay study: {n} samples" in first[1].items[0]
    verdict = "passed" if gate["passed"] else "FAILED"
    assert f"replay prevalence model: {verdict} — max R-hat" in first[2].text
    # model x category tables: the category rows of the stage table, unchanged
    src = results.read(replay_run, "replay/prevalence.csv")
    src = src[src["level"] == "category"].reset_index(drop=True)
    prev = pd.read_csv(replay_run / "report" / "tables" / "replay_prevalence_by_category.csv")
    for c in ("estimate", "ci_low", "ci_high"):
        assert prev[c].tolist() == src[c].tolist()
    r = src.iloc[0]
    cell = fmt_interval(r["estimate"], r["ci_low"], r["ci_high"], 3)
    assert f'<td>{r["model"]}</td><td class="num">{num_cell(cell)}</td>' in html
    bayes = pd.read_csv(replay_run / "report" / "tables" / "replay_bayes_vs_bootstrap.csv")
    post = results.read(replay_run, "replay/bayes_prevalence.csv")
    post = post[(post["quantity"] == "prevalence") & (post["level"] == "category")]
    assert bayes["mean"].tolist() == post["mean"].tolist()
    assert '<table id="replay_deltas_by_category">' in html
    # issue 51: the category deltas as one family: Holm, BH, max-T and the pooled sign error,
    # the same numbers as deltas.csv, and the overview's count of survivors
    fam = pd.read_csv(replay_run / "report" / "tables" / "replay_deltas_family.csv")
    dsrc = results.read(replay_run, "replay/deltas.csv")
    dsrc = dsrc[dsrc["level"] == "category"].reset_index(drop=True)
    for c in ("p_holm", "p_bh", "ci_low_maxt", "p_sign_error"):
        np.testing.assert_array_equal(fam[c].to_numpy(), dsrc[c].to_numpy())
    assert "false-discovery rate of 0.05" in md_of(replay_run) and "p (Holm)" in html
    survive = int((dsrc["p_bh"] < 0.05).sum())
    assert f"(category level): {survive} of {len(dsrc)} survive" in " ".join(first[1].items)
    # the replay fit's power-scaling sensitivity (issue 19: every fit has its table), in words
    sens = results.read(replay_run, "replay/sensitivity.csv")
    assert len(sens) and set(sens["variable"]) >= {"theta", "category_prevalence"}
    assert "sensitivity" in ids and '<table id="replay_sensitivity">' in html
    md = (replay_run / "supplement.md").read_text()
    assert f"Replay prevalence model (`replay/sensitivity.csv`): {len(sens)} parameters" in md


def md_of(run) -> str:
    return (run / "supplement.md").read_text()


def test_replay_section_without_optional_files(replay_run, tmp_path):
    run = copy_run(replay_run, tmp_path / "run")
    (run / "replay" / "onset.csv").unlink()
    sup = build_supplement(run, FAST)
    assert sup.headline["errors"] == []
    assert "replay/onset.csv" in " ".join(_notes(sup, "notrun"))  # absent file: named, no crash


def test_overview_opens_with_findings_then_diagnostics(smoke_supplement, smoke_run):
    """Issue 20: the first screen says what the study found (the stages' headline numbers in
    run.json), labelled as simulated, then one line per fit with its diagnostics."""
    from delusion_bayes.report.document import Bullets, Paragraph

    overview = smoke_supplement.document.sections[0]
    lead, found, diag = overview.blocks[:3]
    assert isinstance(lead, Paragraph) and "SIMULATED data, preset `small`" in lead.text
    assert isinstance(found, Bullets)
    head = json.loads((smoke_run / "run.json").read_text())["stages"]["baselines"]["headline"]
    text = " ".join(found.items)
    assert f"α = {head['alpha_recognition']:.2f}" in text
    assert f"ICC(2,k) = {head['icc2k_recognition']:.2f}" in text
    assert f"day {head['median_first_clinical']:g}" in text
    assert f"{head['n_never_clinical']} of {head['n_models']} models never" in text
    # issue 52: no smallest-p headline; the family's adjusted counts instead (issue 51)
    assert "Smallest p" not in text
    assert (f"{head['n_contrast_holm_05']} of {head['n_contrast_tests']} tests have p below 0.05 "
            "after Holm's adjustment") in text  # fmt: skip
    # one finding per fitted model, or the word that its gate failed (the smoke joint fails)
    assert "`joint`: failed its diagnostics gate" in text
    # the compact diagnostics block: one line per fit after the thresholds
    assert isinstance(diag, Note) and diag.kind == "warning"  # the smoke joint fit fails
    lines = diag.text.splitlines()
    assert lines[0].startswith("Gate: R-hat ≤")
    fits = [f.name for f in sorted((smoke_run / "models").iterdir()) if f.is_dir()]
    assert [ln.split("`")[1] for ln in lines[1:]] == fits
    assert all(re.search(r"max R-hat [\d.]+, min ESS \d+, \d+ divergences", ln) for ln in lines[1:])
    assert "`joint`: FAILED" in diag.text
    # the subtitle keeps saying so too
    assert smoke_supplement.document.subtitle.startswith("SIMULATED data")


def test_supplement_html_is_small(smoke_supplement, smoke_run):
    """Issue 20: figures are embedded as palette PNGs (the files keep full colour), so the
    bundled study's HTML stays under ~3 MB; the smoke run's has the same figures for fewer
    models and no replay."""
    from PIL import Image

    size = smoke_supplement.html.stat().st_size
    assert size < 600_000, size  # 309 kB with palette figures, 713 kB without
    # the figure files themselves are untouched: full colour at report.dpi
    fig = smoke_run / "report" / "figures" / "figure1_trajectories.png"
    with Image.open(fig) as im:
        assert im.mode in ("RGB", "RGBA") and round(im.info["dpi"][0]) == 150


def test_embedded_png_is_a_smaller_palette_copy_of_the_same_size(smoke_run):
    import io

    from PIL import Image

    from delusion_bayes.report.document import Embed, embedded_png, png_css_width

    fig = smoke_run / "report" / "figures" / "figure1_trajectories.png"
    raw = fig.read_bytes()
    assert embedded_png(fig) == raw  # no reduction asked: as written
    small = embedded_png(fig, Embed(colors=256))
    assert len(small) < 0.7 * len(raw)
    with Image.open(io.BytesIO(small)) as a, Image.open(fig) as b:
        assert a.mode == "P" and a.size == b.size
    # shown at the same physical size (same pixels and dpi recorded)
    tmp = smoke_run / "report" / ".embed_check.png"
    try:
        tmp.write_bytes(small)
        assert png_css_width(tmp) == png_css_width(fig)
        half = embedded_png(fig, Embed(max_dpi=75))
        tmp.write_bytes(half)
        with Image.open(tmp) as a, Image.open(fig) as b:
            assert abs(a.size[0] - b.size[0] / 2) <= 1
        assert abs(png_css_width(tmp) - png_css_width(fig)) <= 1
    finally:
        tmp.unlink(missing_ok=True)


def test_sensitivity_section_says_in_words_what_sensitivity_csv_holds(smoke_supplement, smoke_run):
    """The section "Prior and likelihood sensitivity": says the data are simulated, names the
    prior-dominated parameters and the conflicts of ``models/joint/sensitivity.csv``, shows its
    table and figure; the fit's own subsection does not repeat them."""
    from delusion_bayes.report.document import FigureBlock, Paragraph, TableBlock

    df = results.read(smoke_run, "models/{fit}/sensitivity.csv", fit="joint")
    assert df is not None and len(df) > 0
    sec = next(s for s in smoke_supplement.document.sections if s.id == "sensitivity")
    assert sec.title == "Prior and likelihood sensitivity"
    text = " ".join(b.text for b in sec.blocks if isinstance(b, Paragraph))
    assert "SIMULATED data (preset `small`)" in text
    # 2 x 150 draws: the note that the flags are mostly Monte Carlo noise at that size
    few = [b for b in sec.blocks if isinstance(b, Note) and b.title == "Few draws"]
    assert len(few) == 1 and "drew 300 posterior draws per fit" in few[0].text
    assert "threshold 0.05" in text.lower()
    weak = df.loc[df["verdict"] == "weak likelihood", "parameter"].tolist()
    conflict = df.loc[df["verdict"] == "prior-data conflict", "parameter"].tolist()
    if weak:
        assert f"{len(weak)} prior-dominated (weak likelihood): `{weak[0]}`" in text
    else:
        assert "none prior-dominated" in text
    if conflict:
        assert f"{len(conflict)} with a potential prior-data conflict: `{conflict[0]}`" in text
        assert "A potential prior-data conflict was flagged in `joint`" in text
    else:
        assert "No prior-data conflict was flagged in any fit." in text
    # the never-turners (P(t50 beyond the last day) >= 0.5) are named with their t50 verdict
    t50 = results.read(smoke_run, "models/{fit}/t50_posterior.csv", fit="joint")
    never = t50.loc[t50["p_beyond_last_day"] >= 0.5, "model"].tolist()
    assert never, "the small study has a never-turner"
    for m in never:
        row = df.set_index("parameter").loc[f"t50[{m}]"]
        said = row["verdict"] if row["verdict"] != "-" else "not flagged"
        assert f"`{m}`: {said} (prior {row['prior']:.3f}" in text
    tables = [b.table for b in sec.blocks if isinstance(b, TableBlock)]
    # the reported numbers' table first (issue 28), then the parameter detail
    assert [t.name for t in tables] == ["joint_sensitivity_reported", "models_joint_sensitivity"]
    shown = tables[1].data
    assert shown["verdict"].tolist() == (
        df["verdict"].tolist() if len(df) <= 40 else [v for v in df["verdict"] if v != "-"]
    )
    assert (smoke_run / "report" / "tables" / "models_joint_sensitivity.csv").is_file()
    assert [b.rel_png for b in sec.blocks if isinstance(b, FigureBlock)] == [
        "models/joint/sensitivity.png"
    ]
    joint = next(s for s in smoke_supplement.document.sections if s.id == "bayes-joint")
    assert not any(
        "sensitivity" in getattr(getattr(b, "table", None), "name", "") for b in joint.blocks
    )
    assert not any("sensitivity" in getattr(b, "rel_png", "") for b in joint.blocks)
