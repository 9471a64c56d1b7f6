"""Issue 28 items 1, 4 and 5 on the smoke run's real output: the population contrast beside the
permutation test, the finite-sample contrast named "these N models", one question line under
every baseline/posterior pair, prior-driven cells marked, and the sensitivity of the reported
numbers (written by the models stage, opening the sensitivity section)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from delusion_bayes import results
from delusion_bayes.models.sensitivity_reported import COLUMNS
from delusion_bayes.report import questions
from delusion_bayes.report.trajectories import NEVER_TURNER_P


def _md(run, name: str) -> str:
    return (run / "report" / "tables" / f"{name}.md").read_text()


def test_contrasts_show_the_population_contrast_and_name_the_n_models(smoke_run, smoke_supplement):
    con = pd.read_csv(smoke_run / "report" / "tables" / "contrasts.csv")
    pop = results.read(smoke_run, "models/{fit}/contrasts_population.csv", "joint")
    keyed = pop.rename(columns={"name": "contrast"}).set_index(["contrast", "quantity"])
    keyed = keyed.reindex(pd.MultiIndex.from_frame(con[["contrast", "quantity"]]))
    for c in ("median", "ci_low", "ci_high", "p_gt_0"):
        np.testing.assert_array_equal(con[f"{c}_population"].to_numpy(), keyed[c].to_numpy())
    # the smoke study has 5 models; both contrast groups use all of them
    n = int(smoke_supplement_models(smoke_run))
    assert n == 5
    md = _md(smoke_run, "contrasts")
    assert "Population of chatbots (joint): Δ pop. [CrI]" in md
    assert questions.contrasts(n) in md
    # the finite-sample contrast is descriptive: its own table in the Bayesian section
    assert "these 5 models" not in md.split("Questions:")[0]
    fin = _md(smoke_run, "contrasts_finite")
    assert f"Posterior, these {n} models (joint): Δ [CrI]" in fin and "Descriptive:" in fin
    sup = smoke_supplement.markdown.read_text()
    assert sup.index("## Bayesian models") < sup.index("Descriptive contrasts of these 5 models")
    # the smoke run's grouped fits (150 draws) fail their gate like its joint fit: a population
    # contrast from a failed fit is never a number, the row says why (issue 53)
    assert con["median_population"].isna().all()
    assert keyed["note"].str.contains("failed its diagnostics gate").all()
    assert "these 5 models" in smoke_supplement.markdown.read_text()


def smoke_supplement_models(run) -> int:
    return results.read(run, "models/{fit}/t50_posterior.csv", "joint")["model"].nunique()


def test_a_question_line_under_every_baseline_posterior_pair(smoke_run, smoke_supplement):
    for name, line in (
        ("tableD1_logistic", questions.table_d1()),
        ("table1_milestones", questions.table1()),
        ("tableC1_posterior_reliability", questions.table_c1()),
    ):
        assert line in _md(smoke_run, name), name
    md = smoke_supplement.markdown.read_text()
    assert questions.figure1() in md  # Figure 1's caption


def test_never_turner_cells_of_table_d1_are_marked_prior_driven(smoke_run):
    d1 = pd.read_csv(smoke_run / "report" / "tables" / "tableD1_logistic.csv").set_index("model")
    never = d1["t50_p_beyond_last_day"] > NEVER_TURNER_P
    # the smoke study's 'Never' model is one (P = 1.0 in the run measured); 'Early' is not
    assert never["Never"] and not never["Early"]
    for q in ("L", "k", "t50"):
        marks = d1[f"{q}_posterior_mark"].fillna("")
        assert (marks[never] == questions.PRIOR_DRIVEN).all()
    md = _md(smoke_run, "tableD1_logistic")
    row = next(line for line in md.splitlines() if line.startswith("| Never |"))
    assert row.count(questions.PRIOR_DRIVEN) == 3
    assert questions.prior_driven_note(NEVER_TURNER_P) in md


def test_sensitivity_of_reported_numbers_is_written_and_opens_the_section(
    smoke_run, smoke_supplement
):
    df = results.read(smoke_run, "models/{fit}/sensitivity_reported.csv", "joint")
    assert list(df.columns) == list(COLUMNS)
    models = set(results.read(smoke_run, "models/{fit}/t50_posterior.csv", "joint")["model"])
    assert set(df.loc[df["quantity"] == "t50", "item"]) >= models
    kinds = set(df["kind"])
    assert {"per model", "contrast, these 5 models", "consensus"} <= kinds
    # population contrasts are scaled under their grouped fits' priors, and only those whose
    # fit passed its gate are reported (at the smoke run's 150 draws: none, measured)
    pop = results.read(smoke_run, "models/{fit}/contrasts_population.csv", "joint")
    assert ("contrast, population" in kinds) == bool(pop["median"].notna().any())
    assert df[["prior", "likelihood"]].ge(0).all().all() and df["refit_shift_sd"].isna().all()
    assert df["pareto_k_prior"].between(-1, 0.7).all()  # reliable at this size (measured 0.21)
    md = smoke_supplement.markdown.read_text()
    sec = md[md.index("## Prior and likelihood sensitivity") :]
    flagged = int((df["verdict"] != "-").sum())
    proxy = int((df["prior_mean_shift_sd"].abs() >= 0.1).sum())
    # issue 55: led by the numbers predicted to move (the calibrated proxy), then the CJS flag
    head = (
        f"`joint`: {proxy} of {len(df)} reported numbers are predicted to move by at least "
        "0.1 posterior SD when the prior's power is doubled or halved"
    )
    assert head in sec and f"{flagged} are flagged at CJS &gt;= 0.05" in sec
    # the reported numbers come first, the parameter detail (method paragraph) after
    assert sec.index(head) < sec.index("Power-scaling sensitivity (Kallioinen")


def test_refit_shifts_are_reported_as_numbers_that_moved(smoke_run, tmp_path):
    from delusion_bayes.report import build_supplement

    from .conftest import FAST, copy_run

    run = copy_run(smoke_run, tmp_path / "run")
    path = run / "models" / "joint" / "sensitivity_reported.csv"
    df = pd.read_csv(path)
    flag = (df["verdict"] != "-").to_numpy()
    assert flag.sum() >= 2  # the smoke run's 2 x 150 draws flag 19 (measured)
    # as the refit script would: the first flagged row moves 1 SD, every other flag 0.1 SD, the
    # first unflagged row 0.3 SD (>= 0.25: listed although not flagged)
    shift = np.where(flag, 0.1, 0.0)
    shift[np.flatnonzero(flag)[0]] = 1.0
    shift[np.flatnonzero(~flag)[0]] = -0.3
    df["refit_shift_sd"] = shift
    df.to_csv(path, index=False)
    # every listed row inline (the default cap, 40 rows, is checked below)
    md = build_supplement(run, {**FAST, "max_inline_rows": 10_000}).markdown.read_text()
    # issue 55: led by the numbers that moved, no "confirm"
    assert f"2 of {len(df)} reported numbers moved by &gt;= 0.25 posterior SD" in md
    assert "the flag had marked 1 of them (1 moved unflagged, listed too)" in md
    assert f"{int(flag.sum()) - 1} of its {int(flag.sum())} flags did not move" in md
    assert "confirm" not in md.split("Refitted with")[1].split("\n")[0]
    table = pd.read_csv(run / "report" / "tables" / "joint_sensitivity_reported.csv")
    listed = flag | (df["prior_mean_shift_sd"].abs() >= 0.1).to_numpy()
    listed[np.flatnonzero(~flag)[0]] = True  # moved by a refit
    assert len(table) == int(listed.sum()) and (table["refit_shift_sd"] == -0.3).sum() == 1
    # at the default cap the inline table keeps the first 40 listed rows and says so
    capped = build_supplement(run, FAST)
    table = pd.read_csv(run / "report" / "tables" / "joint_sensitivity_reported.csv")
    assert len(table) == min(int(listed.sum()), 40)
    if listed.sum() > 40:
        assert f"(first 40 of {int(listed.sum())})" in capped.markdown.read_text()


def test_fixed_t50_scale_is_marked_under_every_table_that_uses_the_fit(smoke_run, tmp_path):
    """Issue 55: a fit whose ``gate.json`` says ``t50_scale_fixed`` (sigma_t50 fixed: fewer
    than 2 turners) puts ‡ on the posterior columns of Table D1, Table 1 and the contrasts,
    with the line that says what the change does under each."""
    import json

    from delusion_bayes.report import build_supplement
    from delusion_bayes.report.questions import FIXED_SCALE, fixed_scale_note

    from .conftest import FAST, copy_run

    run = copy_run(smoke_run, tmp_path / "run")
    for gate in (run / "models").glob("*/gate.json"):
        g = json.loads(gate.read_text())
        gate.write_text(json.dumps(g | {"t50_scale_fixed": True}))
    md = build_supplement(run, FAST).markdown.read_text()
    note = fixed_scale_note()[:60]
    for title in ("Table D1.", "Table 1.", "Pre-specified contrasts"):
        part = md.split(title, 1)[1][:20000]
        assert FIXED_SCALE in part.split("\n\n#")[0] or FIXED_SCALE in part, title
        assert note in part, title
    plain = copy_run(smoke_run, tmp_path / "plain")
    assert FIXED_SCALE not in build_supplement(plain, FAST).markdown.read_text()


def test_overview_states_the_population_contrasts_beside_their_tests(smoke_run, tmp_path):
    """Issue 52: the overview's population bullet counts the intervals that exclude 0 and quotes
    the clearest one (largest |median| / width) with its permutation p and Holm p from
    contrasts.csv; a run whose grouped fits all failed says why instead."""
    from delusion_bayes.report.overview import population_findings
    from delusion_bayes.report.sources import RunDir
    from delusion_bayes.report.table import label

    from .conftest import copy_run

    run = copy_run(smoke_run, tmp_path / "run")
    path = run / "models" / "joint" / "contrasts_population.csv"
    pop = pd.read_csv(path)
    (failed,) = population_findings(RunDir(run), "joint")
    assert failed.startswith("`joint`: no population contrast reported (the grouped fit failed")
    tests = pd.read_csv(run / "baselines" / "contrasts.csv")
    first, second = tests.iloc[0], tests.iloc[1]
    pop["median"], pop["ci_low"], pop["ci_high"], pop["note"] = np.nan, np.nan, np.nan, ""
    for r, (m, lo, hi) in ((first, (-4.0, -7.0, -1.0)), (second, (1.0, -2.0, 4.0))):
        i = pop.index[(pop["name"] == r["contrast"]) & (pop["quantity"] == r["quantity"])][0]
        pop.loc[i, ["median", "ci_low", "ci_high"]] = m, lo, hi
    pop.to_csv(path, index=False)
    (text,) = population_findings(RunDir(run), "joint")
    p, holm = first["pvalue"], first["p_holm"]
    fmt = lambda x: f"p = {x:.1g}" if x < 0.001 else f"p = {x:.3f}"  # noqa: E731
    assert text == (
        "`joint`, population contrasts (difference of the groups' population means, section "
        f"E): 1 of 2 95% intervals exclude 0; the clearest, {first['contrast']} on "
        f"{label(first['quantity']).lower()}: -4.0 [-7.0, -1.0]; permutation {fmt(p)}, "
        f"Holm {fmt(holm)}."
    )


def test_table1_and_d1_read_as_the_issue_asks(smoke_run):
    """Issue 52 item 2 on the generated Markdown: Table 1 drops the P(never) column no day count
    has and says why its days-at-stage-4 columns differ; Table D1 blanks the least-squares cells
    of no_turn models with the reason (its CSV keeps the optimiser's numbers) and explains an L
    above 4."""
    t1 = _md(smoke_run, "table1_milestones")
    assert "Days at stage 4: P(never)" not in t1 and "First clinical framing: P(never)" in t1
    assert "a median of 3.5 is not 4" in t1
    d1 = _md(smoke_run, "tableD1_logistic")
    assert "an L above 4 is a plateau firmly in stage 4" in d1
    base = results.read(smoke_run, "baselines/tableD1_logistic.csv").set_index("model")
    no_turn = base.index[base["status"] == "no_turn"].tolist()
    assert no_turn, "the smoke study has a never-turner"
    assert f"LS cells are blank for no_turn models ({len(no_turn)})" in d1
    for m in no_turn:
        row = next(line for line in d1.splitlines() if line.startswith(f"| {m} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == "" and cells[-2] == "", row  # L: LS and R² blank
        assert cells[-1] == "no_turn"
    csv = pd.read_csv(smoke_run / "report" / "tables" / "tableD1_logistic.csv").set_index("model")
    assert csv.loc[no_turn, "L"].notna().all()  # nothing lost
