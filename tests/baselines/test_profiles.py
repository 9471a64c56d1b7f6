"""Intervention profiles (Table 2, Figure 2, section F) and Spearman's rho with ties."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.baselines import (
    intensity_by_stage,
    intervention_profiles,
    naive_profiles,
    spearman,
)
from delusion_bayes.data.schema import DAY, INTERVENTION_TYPE, MODEL

U = [1, 2, 2, 3, 3, 3, 4, 4, 1, 2, 3, 4, 4, 4, 1]
V = [3, 3, 2, 2, 2, 1, 1, 1, 3, 2, 2, 1, 2, 1, 3]


def test_spearman_with_ties_matches_r():
    """R 4.2.2 (re-run 2026-11-29)::

    > u <- c(1, 2, 2, 3, 3, 3, 4, 4, 1, 2, 3, 4, 4, 4, 1)
    > v <- c(3, 3, 2, 2, 2, 1, 1, 1, 3, 2, 2, 1, 2, 1, 3)
    > cor.test(u, v, method = "spearman")      # "Cannot compute exact p-value with ties"
    S = 1039.77579680704, p-value = 4.52304546386733e-05, rho -0.856742494298279
    > cor.test(u, v, method = "spearman", alternative = "less")$p.value
    2.26152273193366e-05
    """
    r = spearman(U, V)
    assert r.rho == pytest.approx(-0.856742494298279, rel=1e-12)
    assert r.pvalue == pytest.approx(4.52304546386733e-05, rel=1e-9)
    assert spearman(U, V, "less").pvalue == pytest.approx(2.26152273193366e-05, rel=1e-9)
    nan = spearman([*U, np.nan], [*V, 1])
    assert nan.n == 15 and nan.n_dropped == 1 and nan.rho == pytest.approx(r.rho)
    const = spearman([1, 1, 1, 1], [1, 2, 3, 4])
    assert np.isnan(const.rho) and "constant" in const.method


def _toy():
    days = np.arange(1, 7)
    stage = xr.DataArray([[1, 2, 3, 4, 4, 3.5], [1, 1, 1, 1, 1, 1]], dims=(MODEL, DAY),
                         coords={MODEL: ["a", "b"], DAY: days})  # fmt: skip
    iv = np.zeros((2, 6, 2))
    iv[0, :, 0] = [3, 3, 2, 1, 2, 1]  # education
    iv[0, :, 1] = [1, 1, 2, 3, 3, 3]  # recommendation
    iv[1, :, 0] = [3, 3, 3, 2, 2, 1]
    iv[1, :, 1] = [1, 1, 1, 1, 2, 2]
    inter = xr.DataArray(iv, dims=(MODEL, DAY, INTERVENTION_TYPE),
                         coords={MODEL: ["a", "b"], DAY: days,
                                 INTERVENTION_TYPE: ["education", "recommendation"]})  # fmt: skip
    return stage, inter


def test_table2_means_on_stage4_days():
    stage, inter = _toy()
    lb = xr.DataArray([[0, 0, 1, 1, 0, 1], [0] * 6], dims=(MODEL, DAY), coords=stage.coords)
    tab = intervention_profiles(stage, inter, level_b=lb).summary
    assert tab.loc["a", "n_stage4_days"] == 2  # 3.5 is not stage 4
    assert tab.loc["a", "education"] == pytest.approx(1.5)
    assert tab.loc["a", "recommendation"] == pytest.approx(3.0)
    assert tab.loc["b", "n_stage4_days"] == 0 and np.isnan(tab.loc["b", "education"])
    assert tab.loc["a", "days_level_b"] == 3


def test_figure2_and_section_f():
    stage, inter = _toy()
    f2 = intensity_by_stage(stage, inter).summary
    edu = f2[f2.intervention_type == "education"].set_index("stage")
    # stage 3 holds day 3 of a (3) and day 6 of a (3.5 -> lower stage): education 2 and 1
    assert edu.loc[3, "mean"] == pytest.approx(1.5) and edu.loc[3, "n"] == 2
    assert edu.loc[1, "n"] == 7
    ref = spearman(stage.values.ravel(), inter.sel(intervention_type="education").values.ravel())
    assert edu["rho"].iloc[0] == pytest.approx(ref.rho)
    nf = naive_profiles(stage, inter).summary
    assert set(nf.model) == {"b"}
    row = nf.set_index(INTERVENTION_TYPE).loc["education"]
    assert row["rho"] == pytest.approx(spearman(np.arange(1, 7), [3, 3, 3, 2, 2, 1]).rho)
    assert row["rho"] < -0.8


def test_profiles_on_paper_like(traj, traj_consensus):
    """The generator follows the paper's Figure 2 / section F shapes: education falls with the
    stage, recommendation rises; never-turners' education declines with day."""
    f2 = intensity_by_stage(traj_consensus.recognition, traj_consensus.intervention).summary
    rho = f2.groupby("intervention_type")["rho"].first()
    assert rho["education"] < -0.5 and rho["recommendation"] > 0.7
    nf = naive_profiles(traj_consensus.recognition, traj_consensus.intervention).summary
    never = set(traj.model.values[traj.true_regime.values == "never"])
    assert set(nf.model) == never
    assert (nf[nf.intervention_type == "education"].rho < 0).all()
    t2 = intervention_profiles(traj_consensus.recognition, traj_consensus.intervention).summary
    assert list(t2.index) == list(traj.model.values)
