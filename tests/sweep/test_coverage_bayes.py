"""The coverage study's Bayesian path with real MCMC (issue 34, deliver 4): the command behind
the README's coverage and population-contrast figures, ``delusion-bayes-coverage -m
experiment=population``, at tiny size: ``null`` studies at data seeds 5 and 6 and the same
preset with the known group shift at seed 5 (3 studies, 15 chatbots x 30 days; the onset model,
nutpie 2 x 150 draws after 150 tuning steps; 20 bootstrap replicates), two invocations into one
sweep folder, then ``delusion-bayes-summarize`` on it. The other tests of the coverage study
(test_coverage.py, test_coverage_population.py) score a stand-in posterior; here the rows come from
``models.fit`` and every summary number is recounted by hand from the replicate files.

At S = 2 and 1 studies per preset nothing here is a calibration claim (a rate is 0, 1/2 or 1; the
calibration runs are docs/benchmarks.md's): the checks are that the real path writes the rows
the summaries read, and that the summaries are what the rows say. Hence ``slow`` only.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.sweep.coverage_metrics import BOUND_TOL, REPLICATE_COLUMNS

pytestmark = pytest.mark.slow

#: data seeds per preset (``null_shift``: ``null`` with the known group shift)
SEEDS = {"null": (5, 6), "null_shift": (5,)}
#: experiments/population.yaml's group shift: the late-2025 cohort's t50 8 days earlier
SHIFT = "{by:cohort,level:late-2025,t50:-8.0}"
SHIFT_T50 = -8.0
READ = {"keep_default_na": False, "na_values": ["", "nan", "NaN"]}


@pytest.fixture(scope="module")
def bayes_run(tmp_path_factory):
    """``(folder, replicates, contrast_errors, coverage)`` of the tiny population study."""
    out = tmp_path_factory.mktemp("population")
    for shift, preset in (("null", "null"), (SHIFT, "null_shift")):
        cmd = [sys.executable, "-m", "delusion_bayes.sweep.coverage", "-m",
               "experiment=population", f"+data.overrides.group_shift={shift}",
               f"data.seed={','.join(map(str, SEEDS[preset]))}", "baselines.n_boot=20",
               "sampler.draws=150", "sampler.tune=150", "hydra/launcher=basic",
               f"hydra.sweep.dir={out}", f"hydra.sweep.subdir={preset}-${{data.seed}}"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    summ = subprocess.run([sys.executable, "-m", "delusion_bayes.sweep", str(out), "--no-plot"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert summ.returncode == 0, summ.stderr[-3000:]
    files = sorted((out / "replicates").glob("*.csv"))
    reps = pd.concat([pd.read_csv(f, **READ) for f in files], ignore_index=True)
    errors = pd.read_csv(out / "contrast_errors.csv", **READ)
    cov = pd.read_csv(out / "coverage.csv", **READ)
    return out, files, reps, errors, cov


def test_one_replicate_file_per_study_with_the_bayesian_rows(bayes_run):
    _, files, reps, _, _ = bayes_run
    assert [f.name for f in files] == [f"{p}-{s:04d}.csv" for p, seeds in SEEDS.items()
                                       for s in seeds]  # fmt: skip
    assert list(reps.columns) == list(REPLICATE_COLUMNS)
    assert set(reps["method"]) == {"baselines", "onset", "onset_population"}
    # one fit row per study and method, with the sampler's diagnostics from the real fit
    fits = reps[reps["kind"] == "fit"]
    assert len(fits) == 2 * 3  # baselines and onset, 3 studies
    onset_fits = fits[fits["method"] == "onset"]
    assert (onset_fits["seconds"] > 0).all()
    assert onset_fits["note"].str.fullmatch(r"max_rhat=\d\.\d{3} divergences=\d+").all()
    # the onset model's intervals: 15 models x 5 quantities per study, the posterior median
    # inside nested equal-tailed intervals (90% within 95%), truth from the simulator
    iv = reps[(reps["kind"] == "interval") & (reps["method"] == "onset")]
    assert len(iv) == 3 * 15 * 5
    assert set(iv["quantity"]) == {"t50", "L", "k", "first_clinical", "first_stable"}
    assert iv[["truth", "estimate", "low_90", "high_90", "low_95", "high_95"]].notna().all().all()
    tol = 1e-9
    assert (iv["low_95"] <= iv["low_90"] + tol).all() and (
        iv["high_90"] <= iv["high_95"] + tol
    ).all()
    assert ((iv["low_90"] <= iv["estimate"] + tol) & (iv["estimate"] <= iv["high_90"] + tol)).all()


def test_population_and_finite_sample_rows(bayes_run):
    """Per study, contrast and quantity one finite-sample row (``onset``: truth = these models'
    difference of true group means) and one ``onset_population`` row (bounds, rejection, truth
    = the population difference: 0 on ``null``, the shift for t50 on ``null_shift``, NaN for
    the milestones there)."""
    _, _, reps, _, _ = bayes_run
    con = reps[reps["kind"] == "contrast"]
    fin, pop = con[con["method"] == "onset"], con[con["method"] == "onset_population"]
    # the onset model has t50, first_clinical and first_stable of the configured quantities
    want = {("late-2025 vs earlier cohort", q) for q in ("first_clinical", "first_stable", "t50")}
    want |= {("anthropic vs other vendors", q) for q in ("first_clinical", "first_stable")}
    for frame in (fin, pop):
        for (preset, seed), g in frame.groupby(["preset", "seed"]):
            assert set(zip(g["item"], g["quantity"], strict=True)) == want, (preset, seed)
    assert fin[["stat", "truth_diff"]].notna().all().all()
    assert fin["low_95"].isna().all()  # the finite contrast's rows carry no interval
    assert ((fin["stat"] >= 0.5) & (fin["stat"] <= 1)).all()  # two-sided: max(P(<0), P(>0))
    assert (fin["reject"].astype(bool) == (fin["stat"] >= 0.975)).all()
    b = pop[["low_95", "low_90", "estimate", "high_90", "high_95"]].to_numpy(float)
    assert np.isfinite(b).all() and (np.diff(b, axis=1) >= 0).all()
    assert (pop["reject"].astype(bool) == ((pop["low_95"] > 0) | (pop["high_95"] < 0))).all()
    null, shifted = pop[pop["preset"] == "null"], pop[pop["preset"] == "null_shift"]
    assert (null["truth"] == 0.0).all() and (null["truth_diff"] == 0.0).all()
    cohort_t50 = (shifted["item"] == "late-2025 vs earlier cohort") & (shifted["quantity"] == "t50")
    assert (shifted.loc[cohort_t50, "truth"] == SHIFT_T50).all() and cohort_t50.sum() == 1
    assert shifted.loc[~cohort_t50, "truth"].isna().all()


def _recount_contrasts(reps: pd.DataFrame) -> pd.DataFrame:
    """contrast_errors.csv's numbers by hand from the replicate rows."""
    rows = []
    con = reps[reps["kind"] == "contrast"]
    for (preset, method, item, q), g in con.groupby(["preset", "method", "item", "quantity"]):
        rej = g["reject"].astype(float)
        p = rej.mean()
        row = {"preset": preset, "method": method, "contrast": item, "quantity": q,
               "n": len(g), "rejection_rate": p, "se": np.sqrt(p * (1 - p) / len(g)),
               "truth_diff": g["truth_diff"].mean()}  # fmt: skip
        for tag in ("90", "95"):
            ok = g[[f"low_{tag}", f"high_{tag}", "truth"]].notna().all(axis=1)
            t, lo, hi = (g.loc[ok, c] for c in ("truth", f"low_{tag}", f"high_{tag}"))
            row[f"coverage_{tag}"] = ((lo <= t) & (t <= hi)).mean() if ok.any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows).set_index(["preset", "method", "contrast", "quantity"])


def test_contrast_errors_are_the_replicates_recounted(bayes_run):
    """Every row of contrast_errors.csv: rejection rate = share of rejecting studies, binomial
    SE = sqrt(p (1 - p) / S), population coverage = share of studies whose interval holds the
    true difference, ``what`` from the truth (the null preset: type-I error)."""
    _, _, reps, errors, _ = bayes_run
    hand = _recount_contrasts(reps)
    got = errors.set_index(["preset", "method", "contrast", "quantity"])
    assert set(got.index) == set(hand.index)
    # per preset: the baselines' 12 configured contrast-quantities (conf/baselines), and the 5
    # of them with an onset-model quantity, finite and population
    assert got.groupby(["preset", "method"]).size().to_dict() == {
        (p, m): n for p in ("null", "null_shift")
        for m, n in (("baselines", 12), ("onset", 5), ("onset_population", 5))
    }  # fmt: skip
    got = got.loc[hand.index]
    n = got.index.get_level_values("preset").map(lambda p: len(SEEDS[p]))
    assert (got["n"] == n).all()
    assert got["rejection_rate"].between(0, 1).all()
    for c in ("rejection_rate", "se", "truth_diff", "coverage_90", "coverage_95"):
        np.testing.assert_allclose(got[c], hand[c], rtol=1e-12, atol=1e-12, err_msg=c)
    p = got["rejection_rate"]
    np.testing.assert_allclose(got["se"], np.sqrt(p * (1 - p) / n), rtol=1e-12)
    pop = got.xs("onset_population", level="method")
    assert pop.loc["null", "coverage_95"].notna().all()  # every null truth is 0: scored
    assert got.xs("onset", level="method")["coverage_95"].isna().all()  # no finite intervals
    assert (got.xs("null", level="preset")["what"] == "type-I error").all()
    shifted_t50 = got.loc[("null_shift", "onset_population", "late-2025 vs earlier cohort", "t50")]
    assert shifted_t50["what"] == "power" and shifted_t50["truth_diff"] == SHIFT_T50


def test_coverage_csv_is_the_replicates_recounted(bayes_run):
    """coverage.csv's onset rows: coverage of the 90/95% intervals (an L bound within
    BOUND_TOL of 4 closed at 4, as coverage_metrics documents), mean width, bias, RMSE and n,
    recounted from the replicate rows; the ``turning`` subset keeps true t50 <= 30."""
    _, _, reps, _, cov = bayes_run
    iv = reps[(reps["kind"] == "interval") & (reps["method"] == "onset")].copy()
    t50 = iv[iv["quantity"] == "t50"].set_index(["preset", "seed", "item"])["truth"]
    iv["turning"] = [t50[(p, s, m)] <= 30 for p, s, m in iv[["preset", "seed", "item"]].values]
    got = cov[cov["method"] == "onset"].set_index(["preset", "quantity", "subset"])
    assert len(got) == 2 * 5 * 2
    for (preset, q, subset), row in got.iterrows():
        g = iv[(iv["preset"] == preset) & (iv["quantity"] == q)]
        g = g[g["turning"]] if subset == "turning" else g
        assert row["n"] == len(g) and row["n_replicates"] == len(SEEDS[preset])
        for tag in ("90", "95"):
            lo, hi = g[f"low_{tag}"].to_numpy(float), g[f"high_{tag}"].to_numpy(float)
            assert row[f"width_{tag}"] == pytest.approx(np.mean(hi - lo), rel=1e-12)
            if q == "L":
                hi = np.where(hi >= 4.0 - BOUND_TOL, np.maximum(hi, 4.0), hi)
                lo = np.where(lo <= 1.0 + BOUND_TOL, np.minimum(lo, 1.0), lo)
            t = g["truth"].to_numpy(float)
            assert row[f"coverage_{tag}"] == pytest.approx(
                np.mean((lo <= t) & (t <= hi)), abs=1e-12
            )
            assert 0 <= row[f"coverage_{tag}"] <= 1
        err = (g["estimate"] - g["truth"]).to_numpy(float)
        assert row["bias"] == pytest.approx(err.mean(), rel=1e-9, abs=1e-12)
        assert row["rmse"] == pytest.approx(np.sqrt(np.mean(err**2)), rel=1e-9)
