"""The coverage study scores the population contrast (issue 28, deliver 2): its true value on
simulated ``null`` studies, its rows (bounds, rejection) and the rejection/coverage summary, on
a stand-in posterior (no MCMC) over a handful of studies."""

from __future__ import annotations

import numpy as np
import pytest

from delusion_bayes.baselines import BaselinesConfig
from delusion_bayes.data import simulate_study
from delusion_bayes.sweep.coverage import analyse_replicate
from delusion_bayes.sweep.coverage_metrics import contrast_metrics
from delusion_bayes.sweep.truth import population_truth

from .test_coverage import CONTRAST, _oracle_fit

SHIFT = {"by": "cohort", "level": "late-2025", "t50": -12.0}


def test_true_population_difference():
    null = simulate_study("null", seed=0)
    shifted = simulate_study("null", seed=0, group_shift=SHIFT)
    assert population_truth(null, CONTRAST, "t50") == 0.0
    assert population_truth(null, CONTRAST, "first_clinical") == 0.0
    assert population_truth(shifted, CONTRAST, "t50") == -12.0
    swapped = {"by": "cohort", "a": ["earlier"], "b": ["late-2025"]}
    assert population_truth(shifted, swapped, "t50") == 12.0
    assert np.isnan(population_truth(shifted, CONTRAST, "first_clinical"))  # no closed form
    assert np.isnan(population_truth(shifted, {"by": "vendor", "a": ["x"], "b": ["y"]}, "t50"))
    rest = {"by": "cohort", "a": ["late-2025"], "b": None}  # b = every model not in a
    assert population_truth(shifted, rest, "t50") == -12.0
    assert np.isnan(population_truth(simulate_study("paper_like", seed=0), CONTRAST, "t50"))
    # the attribute changes nothing else: the same seed draws the same ratings without a shift
    assert "group_shift" not in null.attrs


@pytest.mark.parametrize("shift", [None, SHIFT])
def test_population_rows_are_scored(shift):
    # S = 4 studies with an oracle posterior (truth +- 0.05): too few to check a 5% rate (the
    # calibration run is docs' job), enough to check that the rows and the summary are right
    bcfg = BaselinesConfig(n_boot=10, alpha_boot=0, contrasts=[CONTRAST])
    over = {} if shift is None else {"group_shift": shift}
    reps = []
    for seed in range(4):
        ds = simulate_study("null", seed=seed, **over)
        rows = analyse_replicate(
            ds, baselines=bcfg, methods=("onset",), fit_fn=_oracle_fit, seed=seed
        )
        reps.append(rows)
    import pandas as pd

    reps = pd.concat(reps, ignore_index=True)
    pop = reps[reps["method"] == "onset_population"]
    assert set(pop["kind"]) == {"contrast"} and set(pop["quantity"]) == {"first_clinical", "t50"}
    assert len(pop) == 4 * 2
    assert (pop["low_95"] <= pop["low_90"]).all() and (pop["high_90"] <= pop["high_95"]).all()
    assert (pop["reject"] == ((pop["low_95"] > 0) | (pop["high_95"] < 0))).all()
    err = contrast_metrics(reps).set_index(["method", "quantity"])
    assert (pop["truth"] == pop["truth_diff"]).all() or pop["truth"].isna().any()
    row = err.loc[("onset_population", "t50")]
    assert row["n"] == 4 and 0 <= row["rejection_rate"] <= 1
    assert row["se"] == pytest.approx(
        np.sqrt(row["rejection_rate"] * (1 - row["rejection_rate"]) / 4)
    )
    if shift is None:
        assert row["what"] == "type-I error" and row["truth_diff"] == 0.0
        # the oracle posterior is the truth +- 0.05, so the population interval of each study is
        # the two-sample t interval of the true t50 values (module population's docstring):
        # half-width t_.975(n-2) s_p sqrt(1/n_a + 1/n_b). Tolerance 10%: the quantiles of
        # >= 4000 Monte Carlo draws, and the 0.05 noise, move it by a few percent
        from scipy import stats

        from delusion_bayes.baselines import contrast_groups

        t50 = pop[pop["quantity"] == "t50"].set_index("seed")
        for seed in range(4):
            ds = simulate_study("null", seed=seed)
            a, b = contrast_groups(ds, CONTRAST)
            v = ds["true_t50"].values
            na, nb = a.sum(), b.sum()
            ss = ((v[a] - v[a].mean()) ** 2).sum() + ((v[b] - v[b].mean()) ** 2).sum()
            sp = np.sqrt(ss / (na + nb - 2))
            half = stats.t.ppf(0.975, na + nb - 2) * sp * np.sqrt(1 / na + 1 / nb)
            got = (t50.loc[seed, "high_95"] - t50.loc[seed, "low_95"]) / 2
            assert got == pytest.approx(half, rel=0.10)
    else:
        assert row["truth_diff"] == -12.0 and 0 <= row["coverage_95"] <= 1
        assert set(reps["preset"]) == {"null_shift"}
        assert row["coverage_95"] >= row["coverage_90"]
        # the finite contrast of these models is scored against these models' difference
        assert np.isfinite(err.loc[("onset", "t50"), "truth_diff"])
