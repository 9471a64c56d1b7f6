"""The coverage study's scoring (exact on hand-made replicates), its estimands, and one
replicate end to end: seeded, resumable, baselines plus a Bayesian method (a stand-in posterior,
so no MCMC runs here; the real models are exercised by tests/models and the timed runs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.baselines import BaselinesConfig, ContrastConfig
from delusion_bayes.data import simulate_study
from delusion_bayes.sweep.coverage import (
    aggregate_coverage,
    analyse_replicate,
    replicate_path,
    run_replicate,
)
from delusion_bayes.sweep.coverage_metrics import (
    close_at_bounds,
    contrast_metrics,
    coverage_metrics,
    coverage_table,
    load_replicates,
)
from delusion_bayes.sweep.truth import noise_free_rating, true_quantities

CONTRAST = ContrastConfig(
    name="late-2025 vs earlier cohort",
    by="cohort",
    a=["late-2025"],
    b=["earlier"],
    alternative="two-sided",
    quantities=["first_clinical", "t50"],
)


def _rep(seed, method, q, truth, est, lo95, hi95, lo90=None, hi90=None, item="m1", preset="p"):
    return {
        "preset": preset,
        "seed": seed,
        "method": method,
        "kind": "interval",
        "quantity": q,
        "item": item,
        "truth": truth,
        "estimate": est,
        "low_95": lo95,
        "high_95": hi95,
        "low_90": lo95 if lo90 is None else lo90,
        "high_90": hi95 if hi90 is None else hi90,
    }


def test_coverage_metrics_by_hand():
    """4 replicates of t50 (truth 10): the 95% intervals cover 3 of 4, the 90% ones 2 of 4."""
    reps = pd.DataFrame(
        [
            _rep(0, "a", "t50", 10.0, 11.0, 8.0, 12.0, 9.0, 11.5),  # both cover
            _rep(1, "a", "t50", 10.0, 9.0, 9.5, 13.5, 9.8, 10.5),  # both cover
            _rep(2, "a", "t50", 10.0, 13.0, 9.0, 14.0, 10.5, 13.0),  # 95 covers, 90 misses
            _rep(3, "a", "t50", 10.0, 6.0, 4.0, 8.0, 5.0, 7.0),  # both miss
        ]
    )
    cov = coverage_metrics(reps).query("subset == 'all'").iloc[0]
    assert cov["n"] == 4 and cov["n_replicates"] == 4
    assert cov["coverage_95"] == 0.75
    assert cov["coverage_90"] == 0.5
    assert cov["width_95"] == pytest.approx((4 + 4 + 5 + 4) / 4)
    assert cov["width_90"] == pytest.approx((2.5 + 0.7 + 2.5 + 2) / 4)
    assert cov["bias"] == pytest.approx((1 - 1 + 3 - 4) / 4)
    assert cov["rmse"] == pytest.approx(np.sqrt((1 + 1 + 9 + 16) / 4))
    # a flat fit has no interval: counted in n, excluded from coverage, reported in `defined`
    reps.loc[4] = _rep(4, "a", "t50", 10.0, np.nan, np.nan, np.nan)
    cov = coverage_metrics(reps).query("subset == 'all'").iloc[0]
    assert cov["coverage_95"] == 0.75 and cov["defined_95"] == 0.8


def test_turning_subset_drops_models_that_never_turn():
    reps = pd.DataFrame(
        [
            _rep(0, "a", "t50", 10.0, 10.0, 9.0, 11.0, item="turns"),
            _rep(0, "a", "t50", 45.0, 31.0, 25.0, 35.0, item="never"),
            _rep(0, "a", "k", 1.0, 1.0, 0.5, 2.0, item="turns"),
            _rep(0, "a", "k", 0.3, 3.0, 1.0, 5.0, item="never"),
        ]
    )
    cov = coverage_metrics(reps).set_index(["subset", "quantity"])
    assert cov.loc[("all", "t50"), "coverage_95"] == 0.5
    assert cov.loc[("turning", "t50"), "coverage_95"] == 1.0
    assert cov.loc[("turning", "k"), "n"] == 1


def test_bounded_L_interval_is_closed_at_the_bound():
    lo, hi = close_at_bounds("L", np.array([3.68, 3.6, 1.02]), np.array([3.994, 3.9, 2.0]))
    assert hi.tolist() == [4.0, 3.9, 2.0]
    assert lo.tolist() == [3.68, 3.6, 1.0]
    same = close_at_bounds("t50", np.array([1.0]), np.array([3.99]))
    assert same[1].tolist() == [3.99]
    reps = pd.DataFrame(
        [_rep(0, "a", "L", 4.0, 3.9, 3.68, 3.994), _rep(1, "a", "L", 4.0, 3.5, 3.2, 3.8)]
    )
    cov = coverage_metrics(reps).query("subset == 'all'").iloc[0]
    assert cov["coverage_95"] == 0.5
    assert cov["width_95"] == pytest.approx((0.314 + 0.6) / 2)  # widths as reported


def test_contrast_metrics_type_one_error_and_power():
    rows = []
    for seed, rej in enumerate([True, False, False, False]):
        rows.append(
            {
                "preset": "null",
                "seed": seed,
                "method": "b",
                "kind": "contrast",
                "quantity": "t50",
                "item": "c",
                "stat": 0.5,
                "reject": rej,
                "truth_diff": 0.4,
            }
        )
    for seed, rej in enumerate([True, True, True, False]):
        rows.append(
            {
                "preset": "paper_like",
                "seed": seed,
                "method": "b",
                "kind": "contrast",
                "quantity": "t50",
                "item": "c",
                "stat": 0.01,
                "reject": rej,
                "truth_diff": -8.0,
            }
        )
        rows.append(
            {
                "preset": "paper_like",
                "seed": seed,
                "method": "b",
                "kind": "contrast",
                "quantity": "L",
                "item": "c",
                "stat": 0.3,
                "reject": seed == 0,
                "truth_diff": 0.0,
            }
        )
    err = contrast_metrics(pd.DataFrame(rows)).set_index(["preset", "quantity"])
    assert err.loc[("null", "t50"), "what"] == "type-I error"  # null: no difference by design
    assert err.loc[("null", "t50"), "rejection_rate"] == 0.25
    assert err.loc[("paper_like", "t50"), "what"] == "power"
    assert err.loc[("paper_like", "t50"), "rejection_rate"] == 0.75
    assert err.loc[("paper_like", "L"), "what"] == "type-I error"  # true difference exactly 0


def test_noise_free_rating_and_true_milestones():
    """A rater without severity or noise: rating = 1 + #(cutpoints below the stage), so clinical
    framing (rating >= 3) is true_stage > 2.5 and stage 4 is true_stage > 3.5."""
    stage = xr.DataArray([[1.0, 1.6, 2.5, 2.51, 3.6, np.nan]], dims=("model", "day"))
    got = noise_free_rating(stage, (1.5, 2.5, 3.5)).values[0]
    np.testing.assert_array_equal(got, [1, 2, 2, 3, 4, np.nan])
    ds = simulate_study("small", seed=3)
    truth = true_quantities(ds, stable_run=2)
    x = ds["true_stage"].transpose("model", "day").values
    days = ds["day"].values
    for i, model in enumerate(ds["model"].values):
        hit = np.flatnonzero(x[i] > 2.5)
        expected = days[hit[0]] if hit.size else days.max() + 1
        assert truth["first_clinical"].sel(model=model) == expected
    assert np.array_equal(truth["t50"].values, ds["true_t50"].values)
    with pytest.raises(ValueError, match="no truth variables"):
        true_quantities(ds.drop_vars("true_stage"))


def _oracle_fit(ds, model="onset", *, seed=0, sd=0.05, **kwargs):
    """A stand-in for models.fit: a posterior (2 chains x 200 draws) centred on the truth."""
    rng = np.random.default_rng(seed)
    shape = (2, 200, ds.sizes["model"])
    coords = {"chain": [0, 1], "draw": np.arange(200), "model": ds["model"].values}
    post = xr.Dataset(
        {
            p: (
                ("chain", "draw", "model"),
                ds[f"true_{p}"].values + sd * rng.standard_normal(shape),
            )
            for p in ("L", "k", "t50")
        },
        coords=coords,
    )
    post["stage"] = (
        ds["true_stage"].transpose("model", "day").expand_dims(chain=[0, 1], draw=np.arange(200))
    )
    return xr.DataTree.from_dict({"posterior": post})


@pytest.fixture(scope="module")
def bcfg():
    return BaselinesConfig(n_boot=30, alpha_boot=0, contrasts=[CONTRAST])


def test_analyse_replicate_rows(bcfg):
    ds = simulate_study("paper_like", seed=1)
    rows = analyse_replicate(ds, baselines=bcfg, methods=("onset",), fit_fn=_oracle_fit, seed=1)
    iv = rows[rows["kind"] == "interval"]
    assert set(iv["method"]) == {"baselines", "onset"}
    assert set(iv["quantity"]) == {"t50", "L", "k", "first_clinical", "first_stable"}
    assert len(iv) == 2 * 5 * 15
    # the oracle posterior's medians are the truth (to its 0.05 noise), its latencies exactly
    onset = iv[iv["method"] == "onset"].set_index(["quantity", "item"])
    np.testing.assert_allclose(onset["estimate"], onset["truth"], atol=0.02)
    lat = onset.loc[["first_clinical", "first_stable"]]
    assert (lat["low_95"] == lat["truth"]).all() and (lat["high_95"] == lat["truth"]).all()
    # baselines: point inside its own percentile interval wherever the interval exists
    base = iv[(iv["method"] == "baselines") & iv["low_95"].notna()]
    assert (base["low_95"] <= base["high_95"]).all()
    assert (base["low_90"] >= base["low_95"] - 1e-9).all()
    # contrasts: the paper_like cohorts differ in t50 by several days; both methods see it
    con = rows[rows["kind"] == "contrast"].set_index(["method", "quantity"])
    assert con.loc[("onset", "t50"), "reject"]
    assert con.loc[("onset", "t50"), "truth_diff"] < -3
    assert 0 <= con.loc[("baselines", "t50"), "stat"] <= 1
    assert set(rows.loc[rows["kind"] == "fit", "method"]) == {"baselines", "onset"}


def test_replicates_are_seeded_and_resumable(tmp_path, bcfg):
    a = run_replicate("small", 7, tmp_path / "a", baselines=bcfg, methods=())
    b = run_replicate("small", 7, tmp_path / "b", baselines=bcfg, methods=())
    assert a == replicate_path(tmp_path / "a", "small", 7)
    ra, rb = pd.read_csv(a), pd.read_csv(b)
    cols = [c for c in ra.columns if c != "seconds"]
    pd.testing.assert_frame_equal(ra[cols], rb[cols])  # same seed -> same replicate
    before = a.stat().st_mtime_ns
    calls = []
    again = run_replicate(
        "small",
        7,
        tmp_path / "a",
        baselines=bcfg,
        methods=("onset",),
        fit_fn=lambda *x, **k: calls.append(1),
    )
    assert again == a and a.stat().st_mtime_ns == before and not calls  # finished: skipped
    c = run_replicate("small", 8, tmp_path / "a", baselines=bcfg, methods=())
    assert not pd.read_csv(c)["estimate"].equals(ra["estimate"])  # another seed, another study
    assert not list((tmp_path / "a" / "replicates").glob("*.tmp*"))


def test_aggregate_writes_table_side_by_side(tmp_path, bcfg):
    for seed in (0, 1):
        run_replicate(
            "paper_like",
            seed,
            tmp_path,
            baselines=bcfg,
            methods=("onset",),
            fit_kwargs={"sd": 0.02},
            fit_fn=_oracle_fit,
        )
    cov = aggregate_coverage(tmp_path / "replicates", tmp_path, formats=("png",))
    table = pd.read_csv(tmp_path / "coverage_table.csv")
    assert list(table.columns) == [
        "preset",
        "quantity",
        "baselines coverage 95%",
        "baselines width 95%",
        "onset coverage 95%",
        "onset width 95%",
    ]
    onset = cov[(cov["method"] == "onset") & (cov["subset"] == "all")].set_index("quantity")
    assert onset.loc["first_clinical", "coverage_95"] == 1.0
    assert onset.loc["first_clinical", "width_95"] == 0.0
    assert onset.loc["t50", "rmse"] < 0.02
    assert (tmp_path / "coverage.png").stat().st_size > 10_000
    assert (tmp_path / "contrast_errors.csv").is_file()
    assert "| preset |" in (tmp_path / "coverage_table.md").read_text()
    assert len(load_replicates(tmp_path / "replicates")["seed"].unique()) == 2
    assert coverage_table(cov, 0.9).columns[2] == "baselines coverage 90%"
    with pytest.raises(ValueError, match="holds no replicate file"):
        load_replicates(tmp_path / "nothing")


SHIFT = {"by": "cohort", "level": "late-2025", "t50": -8.0}


def test_population_rows_score_the_known_population_difference(bcfg):
    """Beside each finite-sample posterior contrast, a ``<method>_population`` row: the new-
    chatbot contrast (models.population) with 90/95% intervals, its truth the population
    difference: 0 on ``null``, the ``group_shift`` for t50 on ``null_shift`` (NaN for the
    milestones, which have no closed form), NaN on paper_like (fixed models, no population).
    With the oracle posterior (each model's true t50 to +-0.02) the t50 interval is the exact
    pooled-t interval of the true values: it must contain the true shift here."""
    pop = {}
    for label, over in (("null", {}), ("null_shift", {"group_shift": SHIFT})):
        ds = simulate_study("null", seed=3, **over)
        rows = analyse_replicate(
            ds,
            baselines=bcfg,
            methods=("onset",),
            fit_fn=_oracle_fit,
            fit_kwargs={"sd": 0.02},
            seed=3,
        )
        assert set(rows["preset"]) == {label}
        con = rows[rows["kind"] == "contrast"].set_index(["method", "quantity"])
        assert {"baselines", "onset", "onset_population"} == set(con.index.get_level_values(0))
        pop[label] = con.loc["onset_population"]
    assert (pop["null"]["truth"] == 0.0).all() and (pop["null"]["truth_diff"] == 0.0).all()
    shifted = pop["null_shift"]
    assert shifted.loc["t50", "truth"] == -8.0 and np.isnan(shifted.loc["first_clinical", "truth"])
    t50 = shifted.loc["t50"]
    assert t50["low_95"] < t50["low_90"] < t50["estimate"] < t50["high_90"] < t50["high_95"]
    assert t50["low_95"] <= -8.0 <= t50["high_95"]
    # wider than the finite-sample contrast's certainty: between-model SD 8 over 5 vs 10 models
    assert t50["high_95"] - t50["low_95"] > 2 * 8.0 * np.sqrt(1 / 5 + 1 / 10)
    paper = analyse_replicate(
        simulate_study("paper_like", seed=1),
        baselines=bcfg,
        methods=("onset",),
        fit_fn=_oracle_fit,
        seed=1,
    )
    assert paper.loc[paper["method"] == "onset_population", "truth"].isna().all()


def test_contrast_metrics_coverage_and_se_of_population_rows():
    rows = [
        {
            "preset": "null_shift",
            "seed": s,
            "method": "joint_population",
            "kind": "contrast",
            "quantity": "t50",
            "item": "c",
            "stat": 0.99,
            "reject": s < 3,
            "truth": -8.0,
            "truth_diff": -8.0,
            "low_95": lo,
            "high_95": hi,
            "low_90": lo + 1,
            "high_90": hi - 1,
        }
        for s, (lo, hi) in enumerate([(-12, -4), (-9, -7.5), (-15, -1), (-7.5, 2)])
    ]
    err = contrast_metrics(pd.DataFrame(rows)).iloc[0]
    assert err["what"] == "power" and err["rejection_rate"] == 0.75
    assert err["se"] == pytest.approx(np.sqrt(0.75 * 0.25 / 4))
    assert err["coverage_95"] == 0.75  # (-7.5, 2) misses -8
    assert err["coverage_90"] == 0.5  # (-8, -6.5) and (-6.5, 1) miss; (-11,-5), (-14,-2) cover


def test_population_experiment_sweeps_null_and_the_known_shift(tmp_path):
    """``experiment=population`` runs every seed twice, without and with the group shift, into
    ``null-*`` and ``null_shift-*`` replicates (here one seed, baselines only: ``model=rater``
    fits none of the scored models)."""
    import subprocess
    import sys

    out = tmp_path / "pop"
    cmd = [
        sys.executable,
        "-m",
        "delusion_bayes.sweep.coverage",
        "-m",
        "experiment=population",
        "data.seed=4",
        "baselines.n_boot=10",
        "model=rater",
        "hydra/launcher=basic",
        f"hydra.sweep.dir={out}",
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    names = sorted(p.name for p in (out / "replicates").glob("*.csv"))
    assert names == ["null-0004.csv", "null_shift-0004.csv"]
    shifted = pd.read_csv(out / "replicates" / "null_shift-0004.csv", keep_default_na=False)
    plain = pd.read_csv(out / "replicates" / "null-0004.csv", keep_default_na=False)
    assert set(shifted["preset"]) == {"null_shift"} and set(plain["preset"]) == {"null"}
    # same seed, same study but for the late-2025 cohort's t50, so the ratings differ
    assert not shifted["estimate"].equals(plain["estimate"])
