"""Simulation-based calibration of the onset model (``delusion_bayes.models.sbc``, simuk).

CI runs a few simulations at small size (slow-marked) to show the loops run and rank every
parameter; those few simulations cannot test calibration (4 or 3 simulations have no power
against a wrong posterior), so they assert no calibration claim. The calibration tests with
power against named wrong implementations are ``tests/models/test_calibration.py`` (onset
model, 15 simulations, through ``models.fit``) and ``tests/models/test_sbc_joint.py`` (joint
model, 30 simulations); the full study with its rank plot is
``experiments/bench/sbc.py``. The uniformity statistic is checked on hand-made ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.models.sbc import plot_sbc, sbc_uniformity


def _tree(ds: xr.Dataset, n_draws: int) -> xr.DataTree:
    dt = xr.DataTree.from_dict({"prior_sbc": ds})
    dt.attrs["n_draws"] = n_draws
    return dt


def test_uniform_ranks_pass_and_piled_ranks_fail():
    """Chi-square against equal bin counts: 200 simulations x 3 elements, 400 draws each.
    Uniform ranks give p > 0.01; ranks piled at both ends (an over-confident posterior: the
    drawn value outside the posterior bulk) give p < 1e-6, per element and pooled."""
    rng = np.random.default_rng(3)
    uniform = rng.integers(0, 401, size=(200, 3))
    table = sbc_uniformity(
        _tree(xr.Dataset({"t50": (("chain", "draw", "model"), uniform[None])}), 400)
    )
    assert set(table["index"]) == {"0", "1", "2", "all"}
    assert (table["p_value"] > 0.01).all(), table
    assert table.loc[table["index"] == "all", "n"].item() == 600
    np.testing.assert_allclose(table["mean_rank"], 200, atol=25)
    piled = np.where(
        rng.random((200, 3)) < 0.5, rng.integers(0, 20, (200, 3)), rng.integers(380, 401, (200, 3))
    )
    bad = sbc_uniformity(_tree(xr.Dataset({"t50": (("chain", "draw", "model"), piled[None])}), 400))
    assert (bad["p_value"] < 1e-6).all(), bad


@pytest.mark.slow
def test_sbc_of_the_onset_model_runs_every_simulation_and_ranks_are_not_degenerate(tmp_path):
    """4 simulations x 2 chains x 100 draws on the small design (5 models x 12 days): every
    simulation runs, ranks of L, k, t50 (5 models each) and the hyper-parameters lie in
    0..200, the uniformity table has a pooled row per onset parameter and the rank plot draws
    7 panels. A smoke test of the simuk loop, not of calibration: 20 pooled ranks in 2 bins
    fail only when 19 of 20 fall in one half (prior draws, a sampler ignoring the data, give
    uniform ranks and pass), so no p-value is asserted here; see test_calibration.py.
    Measured ~80 s on 2 shared cores."""
    from delusion_bayes.models.sbc import run_sbc

    dt = run_sbc(num_simulations=4, draws=100, tune=100, chains=2, seed=0, progressbar=False)
    ranks = dt["prior_sbc"]
    assert dt.attrs["n_draws"] == 200 and dt.attrs["num_simulations"] == 4
    for v in ("L", "k", "t50"):
        assert ranks[v].shape == (1, 4, 5)
    for v in ("mu_log_k", "mu_t50", "sigma_t50", "sigma_y"):
        assert ranks[v].shape == (1, 4)
    for v in ranks.data_vars:
        x = ranks[v].values
        assert x.min() >= 0 and x.max() <= 200, (v, x)
    table = sbc_uniformity(dt, n_bins=2)
    pooled = table[table["index"] == "all"]
    assert set(pooled["variable"]) == {"L", "k", "t50"}
    assert (pooled["n"] == 20).all() and pooled["p_value"].between(0, 1).all(), pooled
    fig = plot_sbc(dt, tmp_path / "sbc.png")
    assert (tmp_path / "sbc.png").stat().st_size > 10_000
    assert len([a for a in fig.axes if a.get_visible()]) == 7


@pytest.mark.slow
def test_sbc_of_the_joint_model_ranks_every_parameter_of_the_issue():
    """The joint model's SBC loop (its likelihood integrates the stage out, so simuk cannot
    simulate through it): 3 simulations x 2 chains x 100 draws (thinned to every second) on
    the small design; ranks of L, k, t50, the day-noise scale per model (5 each), rater
    severity and discrimination (3 each) and the hyper-parameters in 0..100, and the
    simulated ratings follow the study's missingness. A smoke test of the loop and of its
    simulator (checked against near-deterministic raters below), not of calibration: 3
    simulations have no power; the joint model's calibration test is
    ``tests/models/test_sbc_joint.py``, the full study ``experiments/bench/sbc.py``."""
    from delusion_bayes.data import simulate_study
    from delusion_bayes.models.sbc import MARGINAL_VARS, run_sbc, simulate_ratings

    dt = run_sbc(
        model="joint", num_simulations=3, draws=100, tune=100, chains=2, seed=0, progressbar=False
    )
    ranks = dt["prior_sbc"]
    assert dt.attrs["n_draws"] == 100 and set(ranks.data_vars) == set(MARGINAL_VARS)
    for v, n in (
        ("L", 5),
        ("k", 5),
        ("t50", 5),
        ("sigma_eps", 5),
        ("severity", 3),
        ("discrimination", 3),
    ):
        assert ranks[v].shape == (1, 3, n), v
    for v in ranks.data_vars:
        x = ranks[v].values
        assert x.min() >= 0 and x.max() <= 100, (v, x)
    # the simulator keeps missing ratings missing and draws on the 1-4 scale
    ds = simulate_study(preset="small", seed=0, missing_rate=0.1)
    import xarray as xr

    prior = xr.Dataset(
        {
            "L": (("draw", "model"), np.full((1, 5), 4.0)),
            "k": (("draw", "model"), np.full((1, 5), 1.0)),
            "t50": (("draw", "model"), np.full((1, 5), 6.0)),
            "sigma_eps": (("draw", "model"), np.full((1, 5), 0.1)),
            "severity": (("draw", "rater"), np.zeros((1, 3))),
            "discrimination": (("draw", "rater"), np.full((1, 3), 50.0)),
        }
    )
    sim = simulate_ratings(ds, prior, 0, np.random.default_rng(0))
    order = ("rater", "model", "day")
    miss = np.isnan(ds["recognition"].transpose(*order).values)
    got = sim["recognition"].transpose(*order).values
    assert miss.any() and np.array_equal(np.isnan(got), miss)
    vals = got[~miss]
    assert set(np.unique(vals)) <= {1.0, 2.0, 3.0, 4.0}
    # near-deterministic raters: day 1 (stage ~1.0) is rated 1, day 12 (stage ~4.0) 4
    assert np.nanmax(got[:, :, 0]) == 1.0 and np.nanmin(got[:, :, -1]) == 4.0


def test_unknown_variable_is_named():
    from delusion_bayes.models.sbc import run_sbc

    with pytest.raises(ValueError, match="nope"):
        run_sbc(num_simulations=1, var_names=("L", "nope"))
