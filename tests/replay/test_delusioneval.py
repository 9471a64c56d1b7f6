"""The DelusionEval release's real evaluation rows: import and the published prevalence tables.

Data: ``../shared/data/delusioneval/`` (``eval_rows.parquet``, ``cutoffs.csv``; the public
release ``jlcmoore/llm-delusion-eval`` at 8be51db, Apache-2.0; Moore et al. 2026,
arXiv:2608.05004). The tests skip when the folder is absent (and fail under ``CI=true``,
``tests/resources.py``); nothing is copied into the repo.

References, each independent of the package:

1. a plain pandas computation from the parquet as the release defines prevalence: the mean of
   the binary ``score`` column per ``model_label x code_short``, a category pooling its codes'
   rows (facilitates-/discourages- codes split out of ``concerns harm``, validates-* in none);
2. cells copied by hand from the release's published tables (``analysis/data/
   prevalence_by_model_code.csv``, ``prevalence_by_model_category.csv``,
   ``prevalence_ci_by_model_category.csv`` at 8be51db), printed to 0.1 pp.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ..resources import needs, skip_or_fail

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "delusioneval"
ROWS = DATA / "eval_rows.parquet"

pytestmark = needs(
    not ROWS.is_file(),
    f"DelusionEval release rows not found at {ROWS} (../shared/data/delusioneval/)",
)

#: the release's printed precision is 0.1 pp; our numbers must round to it: |diff| <= 0.05 pp
TOL_PP = 0.05 + 1e-9

#: (model_label, code_short) -> % from the release's prevalence_by_model_code.csv
PUBLISHED_CODE = {
    ("GPT-5.4 (high)", "positive-affirmation"): 62.9,
    ("GPT-4o", "grand-significance"): 45.1,
    ("Claude Opus 4.7", "platonic-affinity"): 40.8,
    ("Gemini 2.5 Pro (minimal)", "dismisses-counterevidence"): 13.2,
    ("Qwen3.5-9B (low)", "reflective-summary"): 3.8,
    ("Grok 4.20", "endorses-delusion"): 62.3,
    ("GPT-5.4 Mini", "discourages-self-harm"): 69.1,
    ("Claude Haiku 4.5", "facilitates-violence"): 2.8,
    # the original transcript: the release counts its unscored rows as 0 (unscored="zero")
    ("Original transcript", "positive-affirmation"): 97.9,
    ("Original transcript", "endorses-delusion"): 85.4,
    ("Original transcript", "facilitates-violence"): 14.6,
}
#: (model_label, category) -> (%, CI low %, CI high %) from prevalence_ci_by_model_category.csv
#: (i.i.d. percentile bootstrap of the cell's rows, 10,000 resamples, seed 42)
PUBLISHED_CATEGORY = {
    ("GPT-4o", "sycophancy"): (35.5, 33.5, 37.6),
    ("GPT-5.4 Mini", "sycophancy"): (15.2, 13.7, 16.7),
    ("GPT-5.4 Mini", "discourages harm"): (61.3, 57.3, 65.4),
    ("Claude Sonnet 4.6", "delusional"): (31.0, 28.8, 33.1),
    ("Grok 4.20", "relationship"): (53.4, 50.8, 56.0),
    ("Gemini 3.1 Flash-Lite (minimal)", "facilitates harm"): (8.5, 6.0, 11.0),
    ("Qwen3.5-9B (low)", "discourages harm"): (5.0, 3.1, 6.8),
}
#: the original transcript's category row of prevalence_by_model_category.csv: three categories
#: count unscored rows as 0, the two harm categories (split out of "concerns harm") leave them out
PUBLISHED_ORIGINAL_CATEGORY = {
    "sycophancy": (62.2, "zero"),
    "delusional": (86.2, "zero"),
    "relationship": (67.0, "zero"),
    "facilitates harm": (11.7, "exclude"),
    "discourages harm": (25.0, "exclude"),
}


def _category5(code: str, release_category: str) -> str | None:
    if code.startswith("facilitates-"):
        return "facilitates harm"
    if code.startswith("discourages-"):
        return "discourages harm"
    if code.startswith("validates-"):
        return None
    return release_category


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    df = pd.read_parquet(ROWS)
    df["cat5"] = [_category5(c, k) for c, k in zip(df["code_short"], df["category"], strict=True)]
    return df


@pytest.fixture(scope="module")
def ds():
    from delusion_bayes.data import load_delusioneval

    return load_delusioneval(ROWS)


@pytest.fixture(scope="module")
def iid(ds):
    """The release's i.i.d. percentile bootstrap: samples, only the cell's rows (conditional)."""
    import delusion_bayes as db

    out = {}
    for rule in ("exclude", "zero"):
        t = db.baselines.replay_prevalence(
            ds, cluster="none", support="conditional", n_boot=2000, seed=42, unscored=rule
        )
        t["label"] = t["model"].map(dict(zip(ds["model"].values, ds["label"].values, strict=True)))
        t["cell"] = np.where(t["level"] == "category", t["category"], t["code"])
        out[rule] = t.set_index(["label", "cell"])
    return out


def _reference(rows: pd.DataFrame, rule: str) -> tuple[pd.Series, pd.Series]:
    """Independent pandas prevalence in %, per (label, code) and (label, category)."""
    df = rows.copy()
    orig = df["model"] == "original_transcript"
    # the original's rows repeat 5 times with identical scores: the mean is unaffected
    if rule == "zero":
        df["score"] = df["score"].fillna(0.0)
    code = df.groupby(["model_label", "code_short"])["score"].mean() * 100
    cat = df.dropna(subset=["cat5"]).groupby(["model_label", "cat5"])["score"].mean() * 100
    assert orig.sum() == 5 * 6776
    return code, cat


def test_import_shape_and_provenance(ds, rows, caplog):
    """155,845 rows -> 6,776 samples x 19 models x 18 codes; originals de-duplicated (README)."""
    from delusion_bayes.data import load_delusioneval

    assert dict(ds.sizes) == {"sample": 6776, "model": 19, "code": 18}
    assert ds["model"].values[0] == "original"
    assert ds["label"].values[0] == "Original transcript"
    assert set(ds["label"].values[1:]) == set(
        rows.loc[rows["model"] != "original_transcript", "model_label"]
    )
    assert ds.attrs["n_rows"] == 155_845
    assert ds.attrs["n_original_duplicates_dropped"] == 4 * 6776
    assert ds.attrs["n_original_unscored"] == 188
    assert ds.attrs["verdicts_differing_from_release"] == 0
    assert int(ds["unscored"].sum()) == 188
    # every verdict: 155,845 rows - 4 x 6,776 duplicates - 188 unscored = 128,553 scored cells
    assert int(ds["hit"].notnull().sum()) == 155_845 - 4 * 6776 - 188
    # cutoffs: the release's cutoffs.csv, ten codes at 9
    cut = pd.read_csv(DATA / "cutoffs.csv")
    cut = cut[cut["annotation_id"].str.startswith("bot-")]
    expect = dict(zip(cut["annotation_id"].str[4:], cut["cutoff"].astype(float), strict=True))
    assert {
        str(c): float(v) for c, v in zip(ds["code"].values, ds["cutoff"].values, strict=True)
    } == expect
    assert int((ds["cutoff"] == 9).sum()) == 10
    # windows as clusters, loudly
    assert ds.attrs["clustering"] == "window"
    assert (ds["participant"].values == ds["window"].values).all()
    assert pd.Series(ds["window"].values).nunique() == 725
    with caplog.at_level(logging.WARNING):
        load_delusioneval(ROWS)
    assert any("WINDOW" in r.message and r.levelno == logging.WARNING for r in caplog.records)
    # window turns: message index 0, 2, 4, ... ranked 0, 1, 2, ...
    t = pd.DataFrame({"w": ds["window"].values, "i": ds["index"].values, "t": ds["turn"].values})
    first = t.sort_values(["w", "i"]).groupby("w").head(2)
    assert set(first["t"]) == {0, 1}


def test_cutoffs_file_mapping_and_errors(rows, tmp_path):
    from delusion_bayes.data import load_delusioneval
    from delusion_bayes.data.delusioneval import DelusionEvalFormatError

    small = rows[rows["window_id"].isin(sorted(rows["window_id"].unique())[:20])].drop(
        columns="cat5"
    )
    # the release's cutoffs.csv gives the same verdicts as the built-in codebook
    a = load_delusioneval(small, cutoffs=DATA / "cutoffs.csv")
    b = load_delusioneval(small)
    assert a["hit"].equals(b["hit"])
    # a code without a cutoff is an error naming the code
    partial = {c: 7.0 for c in a["code"].values if c != "romantic-interest"}
    if "romantic-interest" in a["code"].values:
        with pytest.raises(DelusionEvalFormatError, match="romantic-interest"):
            load_delusioneval(small, cutoffs=partial)
    code0 = str(a["code"].values[0])
    with pytest.raises(DelusionEvalFormatError, match=code0):
        load_delusioneval(small, cutoffs={c: 7.0 for c in a["code"].values if c != code0})
    # mapping file: participants and conversations; missing windows are an error
    wins = sorted(small["window_id"].unique())
    mp = pd.DataFrame(
        {"window_id": wins, "participant": [f"p{i % 3}" for i in range(len(wins))],
         "conversation": [f"c{i % 6}" for i in range(len(wins))]}
    )  # fmt: skip
    path = tmp_path / "map.csv"
    mp.to_csv(path, index=False)
    m = load_delusioneval(small, participants=path)
    assert m.attrs["clustering"] == "mapping"
    assert set(m["participant"].values) == {"p0", "p1", "p2"}
    mp.iloc[1:].to_csv(path, index=False)
    with pytest.raises(DelusionEvalFormatError, match="have no participant"):
        load_delusioneval(small, participants=path)
    # disagreeing copies of an original row
    bad = small.copy()
    i = bad.index[(bad["model"] == "original_transcript") & bad["raw_score"].notna()][0]
    bad.loc[i, "raw_score"] = 10.0 if bad.loc[i, "raw_score"] < 5 else 0.0
    with pytest.raises(DelusionEvalFormatError, match="disagree"):
        load_delusioneval(bad)


def test_prevalence_reproduces_the_pandas_reference_every_cell(iid, rows):
    """Every model x code and model x category cell (19 models incl. the original) equals the
    independent pandas computation: exactly (to 1e-9 pp) under each original-transcript rule."""
    for rule in ("exclude", "zero"):
        t = iid[rule]
        ref_code, ref_cat = _reference(rows, rule)
        got_code = t.loc[t["level"] == "code", "estimate"] * 100
        got_cat = t.loc[t["level"] == "category", "estimate"] * 100
        assert len(ref_code) == 19 * 18 and len(ref_cat) == 19 * 5
        np.testing.assert_allclose(
            got_code.reindex(ref_code.index).to_numpy(), ref_code.to_numpy(), atol=1e-9
        )
        np.testing.assert_allclose(
            got_cat.reindex(ref_cat.index).to_numpy(), ref_cat.to_numpy(), atol=1e-9
        )


def test_prevalence_reproduces_the_published_cells(iid):
    """Hand-copied cells of the release's published tables, within 0.05 pp (0.1 pp printing)."""
    zero, excl = iid["zero"], iid["exclude"]
    for (label, code), pct in PUBLISHED_CODE.items():
        got = 100 * float(zero.loc[(label, code), "estimate"])
        assert abs(got - pct) <= TOL_PP, (label, code, got, pct)
    for cat, (pct, rule) in PUBLISHED_ORIGINAL_CATEGORY.items():
        got = 100 * float(iid[rule].loc[("Original transcript", cat), "estimate"])
        assert abs(got - pct) <= TOL_PP, (cat, rule, got, pct)
    # the evaluated models have no unscored rows: both rules give the same numbers
    ev = excl.index.get_level_values(0) != "Original transcript"
    np.testing.assert_array_equal(excl.loc[ev, "estimate"], zero.loc[ev, "estimate"])
    # the default rule differs from the release's only on the original transcript
    assert (
        abs(100 * float(excl.loc[("Original transcript", "delusional"), "estimate"]) - 89.2)
        <= TOL_PP
    )


def test_category_cis_match_the_release_within_monte_carlo_error(iid):
    """The release's i.i.d. category CIs (its own 10,000 resamples) vs ours (2,000 resamples):
    the percentile endpoints of a proportion with n >= 481 move by ~0.3 pp between independent
    bootstrap runs of these sizes; tolerance 0.5 pp, and the n must match exactly."""
    t = iid["exclude"]
    for (label, cat), (pct, lo, hi) in PUBLISHED_CATEGORY.items():
        row = t.loc[(label, cat)]
        assert abs(100 * row["estimate"] - pct) <= TOL_PP
        assert abs(100 * row["ci_low"] - lo) <= 0.5, (label, cat, 100 * row["ci_low"], lo)
        assert abs(100 * row["ci_high"] - hi) <= 0.5, (label, cat, 100 * row["ci_high"], hi)
    assert t.loc[("GPT-5.4 Mini", "sycophancy"), "n"] == 2139  # 3 samples absent from the release
    assert t.loc[("GPT-4o", "facilitates harm"), "n"] == 481


def test_release_rule_puts_original_estimates_outside_their_ci(iid):
    """The release's rule (unscored = 0 in the estimate, left out of the CI) puts original-
    transcript point estimates outside their own interval (issue 16, item 6); the default
    rule never does."""
    zero, excl = iid["zero"], iid["exclude"]
    o = zero.loc["Original transcript"]
    outside = ((o["estimate"] < o["ci_low"]) | (o["estimate"] > o["ci_high"])).sum()
    assert outside >= 8  # measured: 12 of 23 cells at n_boot 2000, seed 42
    e = excl.loc["Original transcript"]
    assert ((e["estimate"] >= e["ci_low"]) & (e["estimate"] <= e["ci_high"])).all()
    codes = zero.loc[zero["level"] == "code"].loc["Original transcript"]
    assert int(codes["n_unscored"].sum()) == 188


@pytest.mark.slow
@pytest.mark.calibration
def test_bayesian_prevalence_passes_its_gate_on_the_real_rows(ds):
    """Issue 16's gate on the real rows: R-hat <= 1.01 on the prevalence variables themselves,
    bulk and tail ESS >= 400, no divergences. Clusters are the 725 windows (one level: one
    variance component); the settings of ``experiments/replay.yaml``. Measured: R-hat 1.0075,
    ESS 2,675 / 1,458, 0 divergences. Its time is a benchmark's business
    (``experiments/bench/bench_replay_bayes.py``, docs/real_data.md), not a test's."""
    pytest.importorskip("pymc")
    import delusion_bayes as db
    from delusion_bayes.models.replay import fit_replay_model

    tree = fit_replay_model(ds, level="code", draws=1500, tune=200, chains=2, seed=0,
                            target_accept=0.8, depth_bins=3, prior_bins=2)  # fmt: skip
    a = tree.attrs
    assert a["clustering_levels"] == "cluster" and "sigma_participant" not in tree["posterior"]
    assert a["max_rhat_prevalence"] <= 1.01, a
    assert a["min_ess_bulk_prevalence"] >= 400 and a["min_ess_tail_prevalence"] >= 400, a
    assert a["divergences"] == 0, a
    # the posterior population prevalence beside the pooled ratio (the study's own windows),
    # in units of the cell's own posterior SD (0.3-3.0 pp for categories, 0.3-5.4 pp for
    # codes): within 2 SDs in every cell. Measured: max 1.50 SDs (95 category cells, mean
    # -0.33: the population value leaves out the windows' mean intercept, so it sits a little
    # below the pooled ratio), max 1.54 (342 code cells, mean -0.11); the Monte-Carlo error of a
    # cell's posterior mean is ~0.03 SD at these ESS. A posterior shifted by +0.7 SD
    # (tests/wrong_impl/shift_posterior.py) puts the worst category cell at 2.19 SDs and
    # fails. (Before issue 34: a flat 3 pp / 6 pp, more than many cells' prevalence.)
    boot = db.baselines.replay_prevalence(ds, n_boot=1).set_index(["model", "level", "category",
                                                                   "code"])["estimate"]  # fmt: skip
    post = tree["posterior"]
    for var, level, other in (("category_prevalence", "category", "code"),
                              ("prevalence", "code", "category")):  # fmt: skip
        mean = post[var].mean(("chain", "draw")).to_series()
        sd = post[var].std(("chain", "draw")).to_series()
        ref = boot.xs(level, level="level").droplevel(other).reindex(mean.index)
        assert ref.notna().all(), ref[ref.isna()]
        z = (mean - ref) / sd
        assert z.abs().max() <= 2.0, (var, z.abs().sort_values().tail(5))


@pytest.mark.slow
def test_real_rows_run_end_to_end_and_the_supplement_renders(tmp_path):
    """``delusion-bayes experiment=replay data.source=file data.path=<eval_rows.parquet>``
    (here without the Bayesian fit and with 500 resamples, to stay short): the run finishes,
    its tables hold the 19 models, and the supplement renders in headless Chromium and states
    that the data are real and that the clusters are windows."""
    from delusion_bayes.config import compose
    from delusion_bayes.pipeline import run
    from delusion_bayes.report.browser import find_browser

    from ..report.render_check import check_html

    cfg = compose(["experiment=replay", "data.source=file", f"data.path={ROWS}",
                   "replay.bayes=false", "replay.n_boot=500", "replay.also_iid=false"])  # fmt: skip
    record = run(cfg, tmp_path / "run")
    assert record["stages"]["replay"]["status"] == "ok", record["stages"]["replay"]
    head = record["stages"]["replay"]["headline"]
    assert head["clustering"] == "window" and head["source"] == "delusioneval"
    prev = pd.read_csv(tmp_path / "run" / "replay" / "prevalence.csv", keep_default_na=False)
    assert prev["model"].nunique() == 19
    html = tmp_path / "run" / "supplement.html"
    text = html.read_text()
    assert "CLUSTERS ARE WINDOWS, NOT PARTICIPANTS" in text
    assert "real DelusionEval release" in text
    if find_browser() is None:
        skip_or_fail("no Chromium installed: the browser check of the supplement cannot run")
    check = check_html(html)
    assert check.errors == [] and check.console == [] and check.broken == []
    assert check.images >= 3 and check.body_text > 3000


def test_the_config_source_delusioneval_loads_the_release_rows():
    """``data.source=delusioneval data.path=<eval_rows.parquet>`` (``experiment=replay``) goes
    through ``load_delusioneval``: the same dataset as the direct call; a trajectory ``kind``
    or a missing path is refused by name."""
    from omegaconf import OmegaConf

    from delusion_bayes.data import load_delusioneval
    from delusion_bayes.pipeline import load_data

    cfg = OmegaConf.create({"kind": "replay", "source": "delusioneval", "path": str(ROWS)})
    ds = load_data(cfg)
    ref = load_delusioneval(ROWS)
    assert ds.sizes == ref.sizes and ds["model"].values.tolist() == ref["model"].values.tolist()
    assert int(ds["hit"].sum()) == int(ref["hit"].sum())
    with pytest.raises(ValueError, match="data.kind=replay"):
        load_data(OmegaConf.create({"kind": "trajectory", "source": "delusioneval", "path": "x"}))
    with pytest.raises(ValueError, match="needs data.path"):
        load_data(OmegaConf.create({"kind": "replay", "source": "delusioneval", "path": None}))
