"""The study-design experiment (delusion_bayes/sweep/design.py, experiment=design): the
permutation test's size under the null, a power that is exactly 0 by hand, the per-cell metrics
by hand, and the whole command pair (multirun + summarize) at tiny size."""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.baselines import (
    BaselinesConfig,
    ContrastConfig,
    consensus,
    milestones,
    permutation_contrasts,
    rank_sum_test,
)
from delusion_bayes.data import simulate_study
from delusion_bayes.sweep.design import (
    binomial_se,
    cell_metrics,
    design_table,
    headline,
    run_cell,
)

ROOT = Path(__file__).resolve().parents[2]
COHORT = ContrastConfig(
    name="late-2025 vs earlier cohort",
    by="cohort",
    a=["late-2025"],
    b=["earlier"],
    alternative="two-sided",
    quantities=["first_clinical"],
)


def test_exact_size_of_the_cohort_contrast_by_enumeration():
    """6 late-2025 vs 9 earlier models, continuous data: the two-sided exact rank-sum test
    rejects (p < .05) for 248 of the C(15, 6) = 5005 equally likely arrangements under H0,
    a size of 248 / 5005 = 0.0496 (just below alpha: the test is exact, its p-values discrete)."""
    counts: dict[int, int] = {}
    example: dict[int, tuple[int, ...]] = {}
    for sub in itertools.combinations(range(1, 16), 6):
        counts[sum(sub)] = counts.get(sum(sub), 0) + 1
        example.setdefault(sum(sub), sub)
    assert sum(counts.values()) == math.comb(15, 6) == 5005
    rejecting = 0
    for total, sub in example.items():
        x = np.array(sub, dtype=float)
        y = np.array([r for r in range(1, 16) if r not in sub], dtype=float)
        if rank_sum_test(x, y).pvalue < 0.05:
            rejecting += counts[total]
    assert rejecting == 248


def test_permutation_rejection_rate_under_null_is_alpha():
    """Type-I error of the exact test under the ``null`` preset (exchangeable truth, no group
    differences) over S = 500 simulated studies (seeds 0-499; 2 raters, first clinical framing
    of the median consensus, cohort contrast 6 vs 9): the number of rejections at alpha = .05
    must lie in [10, 37]. Ties at the censoring day make the test conservative: seeds 0-999
    reject at 0.040 (measured), seeds 0-499 22 times.

    Sized from binomial tails (scipy.stats.binom), X ~ Binomial(500, size):
    - false alarm on the correct test: P(X >= 38 | size .05) = 0.0077, P(X <= 9 | size .04)
      = 0.0044;
    - catches a test of doubled size (a one-sided p-value reported as two-sided, or p halved;
      measured on these seeds: 47 of 500 reject): P(X >= 38 | size .10) = 0.973;
    - catches a test of a quarter of its size (too conservative, e.g. ties counted twice):
      P(X <= 9 | size .01) = 0.969.
    The previous window, 3 binomial SEs at S = 200 (rate in [0.0038, 0.0962]), passed a
    test of size .094 with probability 0.6. Measured ~15 s. Not marked ``calibration``: no
    planted-bug plugin (``tests/wrong_impl``) touches the permutation test (issue 55)."""
    S, alpha = 500, 0.05
    rejected = []
    for seed in range(S):
        ds = simulate_study(preset="null", seed=seed, texts=False, n_raters=2)
        cons = consensus(ds[["recognition"]], "median", "keep")
        ms = milestones(cons["recognition"], None, stable_run=3, censor_day=31)
        ms = ms.assign_coords(cohort=ds["cohort"])
        p = permutation_contrasts(ms, [COHORT]).summary["pvalue"].iloc[0]
        rejected.append(p < alpha)
    from scipy import stats

    assert stats.binom.sf(37, S, alpha) < 0.008 and stats.binom.sf(37, S, 0.10) > 0.97
    assert stats.binom.cdf(9, S, 0.04) < 0.005 and stats.binom.cdf(9, S, 0.01) > 0.96
    n = int(np.sum(rejected))
    assert 10 <= n <= 37, f"{n} of {S} null studies rejected at alpha {alpha}; expected 10-37"


def test_power_is_exactly_zero_when_the_groups_are_too_small():
    """The ``small`` preset has 5 models: cohort late-2025 = {Early, Late} vs earlier =
    {Middle, Never, Oscillating}. The exact two-sided rank-sum test has C(5, 2) = 10 equally
    likely arrangements; the most extreme one on each side has probability 1/10, so the
    smallest attainable p-value is 2/10 = 0.2 > .05: no study can reject, power = 0 exactly,
    with binomial SE 0, however large the true difference."""
    bcfg = BaselinesConfig(n_boot=5, alpha_boot=0, contrasts=[COHORT])
    cell = {"n_raters": 3, "n_models": 5, "n_days": 12, "discrimination_mean": 3.5}
    reps = run_cell(cell, baselines=bcfg, n_sims=4, n_sims_bayes=0, method=None, preset="small")
    con = reps[reps["kind"] == "contrast"]
    assert len(con) == 4 and (con["stat"] >= 0.2 - 1e-12).all()
    m = cell_metrics(reps)
    power = m[(m["metric"] == "power") & (m["method"] == "baselines")].iloc[0]
    assert power["value"] == 0.0 and power["se"] == 0.0 and power["n"] == 4
    # the cell, the replicate numbers and the simulated seeds are in every row
    assert set(reps["replicate"]) == {0, 1, 2, 3} and set(reps["seed"]) == {0, 1, 2, 3}
    assert (reps["n_models"] == 5).all() and (reps["n_days"] == 12).all()
    kinds = set(reps["kind"])
    assert {"interval", "contrast", "reliability", "classify", "fit"} <= kinds


def _row(rep, method, kind, quantity, item="", **kw):
    base = {
        "n_raters": 4,
        "n_models": 8,
        "n_days": 30,
        "discrimination_mean": 3.5,
        "replicate": rep,
        "method": method,
        "kind": kind,
        "quantity": quantity,
        "item": item,
    }
    return {**base, **kw}


def test_cell_metrics_by_hand():
    """4 studies: the contrast rejects in 3 (power .75, SE sqrt(.75 * .25 / 4) = .2165); the
    t50 interval of the turning model (truth 10) has widths 2, 4, 2, 4 (mean 3) and covers 3
    of 4; the never-turner is classified never in 2 of 4 studies, the turner never."""
    rows = []
    for rep, (rej, lo, hi, never) in enumerate(
        [(1.0, 9, 11, 1.0), (1.0, 8, 12, 0.0), (0.0, 11, 13, 1.0), (1.0, 7, 11, 0.0)]
    ):
        rows.append(_row(rep, "baselines", "contrast", "first_stable", "cohort", reject=rej))
        rows.append(
            _row(rep, "baselines", "interval", "t50", "m1", truth=10.0, low_95=lo, high_95=hi)
        )
        rows.append(
            _row(rep, "baselines", "interval", "t50", "m2", truth=50.0, low_95=0, high_95=100)
        )  # never-turner: not a turning model
        rows.append(_row(rep, "baselines", "classify", "never", "m1", truth=0.0, estimate=0.0))
        rows.append(_row(rep, "baselines", "classify", "never", "m2", truth=1.0, estimate=never))
        rows.append(
            _row(
                rep,
                "baselines",
                "reliability",
                "alpha",
                "recognition",
                estimate=0.8,
                low_95=0.75 - 0.01 * rep,
                high_95=0.85,
            )
        )
    m = cell_metrics(pd.DataFrame(rows)).set_index("metric")
    assert m.loc["power", "value"] == 0.75
    assert m.loc["power", "se"] == pytest.approx(binomial_se(0.75, 4))
    assert m.loc["power", "se"] == pytest.approx(0.21651, abs=1e-5)
    assert m.loc["t50_width", "value"] == 3.0
    assert m.loc["t50_width", "se"] == pytest.approx(np.std([2, 4, 2, 4], ddof=1) / 2)
    assert m.loc["t50_coverage", "value"] == 0.75 and m.loc["t50_coverage", "n"] == 4
    assert m.loc["never_correct", "value"] == 0.5 and m.loc["never_false", "value"] == 0.0
    assert m.loc["alpha_ci_width", "value"] == pytest.approx(0.1 + 0.015)
    assert (m["data"] == "simulated").all()
    wide = design_table(cell_metrics(pd.DataFrame(rows)))
    assert len(wide) == 1 and "power: cohort: first_stable" in wide.columns


def test_headline_finds_the_smallest_study_with_enough_power():
    def cell(n, p):
        return {
            "data": "simulated paper_like",
            "n_raters": 4,
            "n_models": n,
            "n_days": 30,
            "discrimination_mean": 3.5,
            "method": "baselines",
            "metric": "power",
            "item": "late-2025 vs earlier cohort: first_stable",
            "value": p,
            "se": binomial_se(p, 100),
            "n": 100,
            "n_sims": 100,
        }

    text = headline(pd.DataFrame([cell(8, 0.41), cell(15, 0.86), cell(30, 1.0)]))
    assert "you need >= 15 models" in text and "8 models: 0.41" in text
    assert text.startswith("Simulated paper_like studies")
    text = headline(pd.DataFrame([cell(8, 0.41), cell(15, 0.6)]))
    assert "80% power is not reached with up to 15 models" in text


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def _design_sweep(tmp_path: Path, *overrides: str) -> Path:
    sweep = tmp_path / "design"
    proc = _run(
        [
            "-m",
            "delusion_bayes",
            "-m",
            "experiment=design",
            "hydra/launcher=basic",
            "baselines.n_boot=10",
            "baselines.alpha_boot=20",
            "design.n_sims=2",
            f"cache_dir={tmp_path / 'cache'}",
            f"hydra.sweep.dir={sweep}",
            *overrides,
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run(["-m", "delusion_bayes.sweep", str(sweep)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Simulated paper_like studies: to detect the late-2025 vs earlier cohort" in proc.stdout
    for name in (
        "design_table.csv",
        "design_table.md",
        "design_cells.csv",
        "power.png",
        "power.pdf",
        "design_headline.md",
    ):
        assert (sweep / name).is_file(), name
    assert "SIMULATED" in (sweep / "design_table.md").read_text()
    return sweep


@pytest.mark.slow
def test_design_command_pair_baselines_only(tmp_path):
    """``delusion-bayes -m experiment=design`` over 2 cells (2 and 3 raters, 8 models, 20 days),
    2 studies each, baselines only; then the summary's table has one row per cell."""
    sweep = _design_sweep(
        tmp_path,
        "design.n_raters=2,3",
        "design.n_models=8",
        "design.n_days=20",
        "design.n_sims_bayes=0",
    )
    table = pd.read_csv(sweep / "design_table.csv")
    assert table[["n_raters", "n_models", "n_days", "method"]].values.tolist() == [
        [2, 8, 20, "baselines"],
        [3, 8, 20, "baselines"],
    ]
    assert (table["n_sims"] == 2).all() and (table["data"] == "simulated paper_like").all()
    assert "power: late-2025 vs earlier cohort: first_stable" in table.columns
    jobs = sorted(p.name for p in sweep.iterdir() if (p / "design" / "cell.csv").is_file())
    assert jobs == ["r2-m8-d20-disc3.5", "r3-m8-d20-disc3.5"]
    # the job's study.nc is the cell's first simulated study
    import xarray as xr

    with xr.open_dataset(sweep / jobs[0] / "study.nc", engine="h5netcdf") as ds:
        assert dict(ds.sizes)["rater"] == 2 and ds.sizes["model"] == 8 and ds.sizes["day"] == 20


@pytest.mark.slow
def test_design_command_pair_with_the_onset_model(tmp_path):
    """One cell, 2 studies, the first also fitted with the onset model (2 chains x 200 draws):
    the table has a baselines row and an onset row, the onset row from 1 study."""
    sweep = _design_sweep(
        tmp_path,
        "design.n_raters=3",
        "design.n_models=8",
        "design.n_days=20",
        "design.n_sims_bayes=1",
        "design.model=onset",  # the fastest Bayesian model (the default is joint)
        "sampler.draws=200",
        "sampler.tune=200",
    )
    table = pd.read_csv(sweep / "design_table.csv").set_index("method")
    # the onset row's power is the population contrast's (issue 28): no separate row
    assert sorted(table.index) == ["baselines", "onset"]
    assert table.loc["onset", "n_sims"] == 1 and table.loc["baselines", "n_sims"] == 2
    assert np.isfinite(table.loc["onset", "t50_width"])
    assert 0.0 <= table.loc["onset", "power: late-2025 vs earlier cohort: first_stable"] <= 1.0


def test_bayesian_power_is_the_population_contrasts():
    """The design's Bayesian contrast rows are the population contrast's (the difference of
    population means; its 95% interval excludes 0), the permutation test's question, labelled
    with the fitted method; the finite-sample contrast of these models is not scored here. With
    a stand-in posterior the only population column there can be is the two-stage one
    (``population=None`` chooses it when a ``fit_fn`` is given). With an oracle posterior
    (every model's true t50 and stage, SD 0.02) on one ``null`` study the
    population interval of first clinical framing is the pooled-t interval of the true
    milestones: (-8.48, 8.04) at seed 3 (t draws seeded by the study's seed)."""
    from delusion_bayes.sweep.design import analyse_study
    from tests.sweep.test_coverage import _oracle_fit

    bcfg = BaselinesConfig(n_boot=5, alpha_boot=0, contrasts=[COHORT])
    rows = analyse_study(
        simulate_study("null", seed=3),
        baselines=bcfg,
        method="onset",
        fit_fn=_oracle_fit,
        fit_kwargs={"sd": 0.02},
        seed=3,
    )
    con = rows[rows["kind"] == "contrast"]
    assert set(con["method"]) == {"baselines", "onset"}
    onset = con[con["method"] == "onset"].set_index("quantity")
    assert onset["low_95"].notna().all() and (onset["truth_diff"] == 0.0).all()
    lo, hi = onset.loc["first_clinical", ["low_95", "high_95"]]
    assert (lo, hi) == pytest.approx((-8.475, 8.041), abs=2e-3)


@pytest.mark.slow
def test_bayesian_power_comes_from_the_grouped_fit():
    """Issue 53 item 5: with real fits (no ``fit_fn``) the design's Bayesian contrast rows are
    the grouped fit's (models.population), the same numbers a direct ``fit_population`` with
    the same seed and settings gives, with its gate's verdict in ``note``; the two-stage rows
    are gone. onset, 2 chains x 300 draws, one null study."""
    from delusion_bayes.models.population import fit_population, population_contrasts
    from delusion_bayes.sweep.design import analyse_study

    ds = simulate_study("null", seed=3, n_raters=3)
    bcfg = BaselinesConfig(n_boot=5, alpha_boot=0, contrasts=[COHORT])
    kw = dict(
        sampler="nutpie",
        draws=300,
        tune=300,
        chains=2,
        seed=11,
        progressbar=False,
        posterior_predictive=False,
        log_likelihood=False,
        log_prior=False,
    )
    rows = analyse_study(ds, baselines=bcfg, method="onset", fit_kwargs=kw, seed=0)
    con = rows[(rows["kind"] == "contrast") & (rows["method"] == "onset")].set_index("quantity")
    assert len(con) and con["note"].str.startswith("gate ").all()
    direct = fit_population(ds, "onset", COHORT, **{**kw, "target_accept": 0.99})
    ref = population_contrasts({COHORT.name: direct}, [COHORT], 0.95, seed=3).set_index("quantity")
    for q in con.index:
        assert con.loc[q, "low_95"] == pytest.approx(ref.loc[q, "ci_low"], abs=1e-9), q
        assert con.loc[q, "high_95"] == pytest.approx(ref.loc[q, "ci_high"], abs=1e-9), q
    assert (con["truth_diff"] == 0.0).all()
    assert not (rows["method"] == "onset_population").any()
