"""The diagnostics gate on synthetic draws (no sampling): well-mixed chains pass, stuck chains,
divergences and low E-BFMI fail with named reasons, thresholds come from the config."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.inference import InferenceConfig, SamplerConfig
from delusion_bayes.inference.diagnostics import BadFitError, diagnose, gate, loo_table


def _tree(offset: float = 0.0, diverging: int = 0, energy=None, seed: int = 0) -> xr.DataTree:
    rng = np.random.default_rng(seed)
    c, n = 4, 500
    x = rng.normal(0, 1, (c, n, 3))
    x[1] += offset  # chain 1 stuck elsewhere
    post = xr.Dataset(
        {
            "t50": (("chain", "draw", "model"), x),
            "mu": (("chain", "draw"), rng.normal(0, 1, (c, n))),
            "k": (("chain", "draw", "model"), np.full((c, n, 3), 10.0)),  # step: constant
        },
        coords={"model": ["A", "B", "C"], "vendor": ("model", ["x", "x", "y"])},
    )
    div = np.zeros((c, n), bool)
    div.flat[:diverging] = True
    if energy is None:
        energy = rng.normal(0, 1, (c, n))
    ss = xr.Dataset({"diverging": (("chain", "draw"), div), "energy": (("chain", "draw"), energy)})
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": ss})


def test_well_mixed_chains_pass():
    table = diagnose(_tree())
    assert table.loc["t50[A]", "variable"] == "t50"
    assert table.loc["t50[A]", "r_hat"] < 1.01
    assert table.loc["t50[A]", "ess_bulk"] > 1000
    assert table.loc["k[B]", "constant"] and table.loc["k[B]", "pass"]
    assert table["pass"].all()
    g = gate(_tree(), table)
    assert g["passed"] and g["reasons"] == [] and g["divergences"] == 0
    assert g["thresholds"]["ess_min"] == 400  # 100 per chain x 4 chains
    # iid normal energy: E-BFMI = E[(dE)^2] / Var(E) ~ 2
    assert 1.5 < g["ebfmi_min"] < 2.5


def test_stuck_chain_fails_with_reason(caplog):
    g = gate(_tree(offset=3.0))
    assert not g["passed"]
    assert g["max_rhat"] > 1.1
    assert any(r.startswith("R-hat > 1.01 for 3 parameters") for r in g["reasons"])
    assert "DIAGNOSTICS GATE FAILED" in caplog.text


def test_divergences_and_ebfmi_fail():
    g = gate(_tree(diverging=2))
    assert not g["passed"] and g["divergences"] == 2
    assert g["reasons"] == ["2 divergent transitions (allowed 0)"]
    assert gate(_tree(diverging=2), cfg=InferenceConfig(max_divergences=5))["passed"]
    # a random walk in energy: tiny E-BFMI
    walk = np.cumsum(np.random.default_rng(1).normal(0, 1, (4, 500)), axis=1)
    g = gate(_tree(energy=walk))
    assert g["ebfmi_min"] < 0.3 and any("E-BFMI" in r for r in g["reasons"])


def test_fail_on_bad_fit_raises():
    with pytest.raises(BadFitError, match="R-hat"):
        gate(_tree(offset=3.0), cfg=InferenceConfig(fail_on_bad_fit=True))


def test_thresholds_from_a_mapping_and_bad_variable():
    table = diagnose(_tree(), {"rhat_max": 1.5, "ess_min_per_chain": 10, "ci_probs": [0.9]})
    assert table.attrs["ess_min"] == 40 and table.attrs["ci_prob"] == 0.9
    with pytest.raises(ValueError, match=r"\['nope'\] are not in the posterior"):
        diagnose(_tree(), var_names=["nope"])


def test_interval_columns_are_explicit():
    table = diagnose(_tree(), InferenceConfig(ci_probs=[0.5], ci_kind="eti"))
    draws = _tree()["posterior"]["mu"].values.ravel()
    lo, hi = np.quantile(draws, [0.25, 0.75])
    assert table.loc["mu", "ci_low"] == pytest.approx(lo)
    assert table.loc["mu", "ci_high"] == pytest.approx(hi)


def test_loo_table_counts_pareto_k():
    class Fake:
        pareto_k = np.array([0.1, 0.5, 0.69, 0.8, 1.2])
        good_k = 0.7
        elpd, se, p, n_data_points = -10.0, 2.0, 3.0, 5

    row = loo_table(Fake(), "joint").iloc[0]
    assert (row["n_k_good"], row["n_k_bad"], row["n_k_very_bad"]) == (3, 1, 1)
    assert row["max_k"] == 1.2


def test_sampler_names_are_checked():
    from delusion_bayes.inference.sampling import resolve_sampler

    assert resolve_sampler("pymc") == "pymc"
    with pytest.raises(ValueError, match="sampler 'stan' is unknown"):
        resolve_sampler("stan")
    assert SamplerConfig().name == "nutpie"


def test_summary_from_the_diagnose_table_is_az_summary():
    """summary.csv reuses the gate's R-hat and ESS: same frame as az.summary's (the R-hat, ESS
    and MCSE, computed for all parameters at once, to 1e-12: test_rank_diagnostics.py; every
    other column to the bit), with a 2-d variable (labels "v[a, b]" there, "v[a,b]" in the diagnose
    table) and a NaN variable (dropped by both)."""
    from delusion_bayes.inference.diagnostics import summary_table

    dt = _tree(offset=0.3)
    post = dt["posterior"].to_dataset()
    rng = np.random.default_rng(5)
    post["traj"] = (("chain", "draw", "model", "day"), rng.normal(0, 1, (4, 500, 3, 2)))
    post["stage"] = post["traj"].where(post["day"] == 0)
    dt["posterior"] = xr.DataTree(post.assign_coords(day=[1, 2]))
    full = summary_table(dt)
    fast = summary_table(dt, table=diagnose(dt))
    assert "traj[A, 2]" in full.index and not full.index.str.startswith("stage").any()
    assert fast.index.equals(full.index) and fast.columns.equals(full.columns)
    rank_cols = ["ess_bulk", "ess_tail", "r_hat", "mcse_mean", "mcse_sd"]
    np.testing.assert_allclose(fast[rank_cols], full[rank_cols], rtol=1e-12, atol=0)
    others = [c for c in full.columns if c not in rank_cols]
    np.testing.assert_array_equal(fast[others].to_numpy(), full[others].to_numpy())
    with pytest.raises(ValueError, match="diagnose table has"):
        summary_table(dt, table=diagnose(_tree()))


def test_summary_rows_take_the_diagnostics_of_their_own_parameter():
    """Issue 32: the diagnose table's R-hat and ESS were matched to ``az.summary``'s rows by
    position, so a table listing the variables in another order (``diagnose(var_names=...)``)
    gave each row another parameter's numbers."""
    from delusion_bayes.inference.diagnostics import summary_table

    dt = _tree(offset=0.3)
    full = summary_table(dt)
    table = diagnose(dt, var_names=["mu", "k", "t50"])  # the posterior's order: t50, mu, k
    assert list(table["variable"].unique()) == ["mu", "k", "t50"]
    fast = summary_table(dt, table=table)
    assert fast.index.equals(full.index)
    for col in ("r_hat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_sd"):
        # to 1e-12, as ArviZ's own (test_rank_diagnostics.py); another row's number is far off
        a, b = fast[col].to_numpy(), full[col].to_numpy()
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=col)


def test_the_config_group_is_read_by_group_config():
    """Issue 32: one reader of a config group; an unknown key is an error, not ignored."""
    from delusion_bayes.errors import ConfigError

    with pytest.raises(ConfigError, match="rhat_maxx"):
        diagnose(_tree(), {"rhat_maxx": 1.5})
