"""Rank distributions, rank intervals, P(best)/P(worst) and groups on cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.baselines import plot_ranks, rank_distribution, rank_draws, rankings


def test_well_separated_items_have_degenerate_intervals():
    """Means 0, 10, 20, 30 with sd 1: every draw ranks them the same way."""
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2000, 4)) + np.array([0, 10, 20, 30])
    df = rankings(draws, ["a", "b", "c", "d"])
    assert df["item"].tolist() == ["d", "c", "b", "a"]
    assert df["rank_lower"].tolist() == df["rank_upper"].tolist() == [1, 2, 3, 4]
    assert df["p_best"].tolist() == [1, 0, 0, 0]
    assert df["p_worst"].tolist() == [0, 0, 0, 1]
    assert df["group"].tolist() == [1, 2, 3, 4]
    worse = rankings(draws, ["a", "b", "c", "d"], higher_is="worse")
    assert worse["item"].tolist() == ["a", "b", "c", "d"]


def test_exchangeable_items_have_p_best_one_over_n():
    """8 iid items, 20,000 draws: P(best) = P(worst) = 1/8 within 4 MC SEs
    (sqrt(1/8 * 7/8 / 20000) = 0.0023); the rank interval is [1, 8]; one group."""
    rng = np.random.default_rng(1)
    df = rankings(rng.normal(size=(20_000, 8)))
    se = np.sqrt(1 / 8 * 7 / 8 / 20_000)
    assert np.abs(df["p_best"] - 1 / 8).max() < 4 * se
    assert np.abs(df["p_worst"] - 1 / 8).max() < 4 * se
    assert (df["rank_lower"] == 1).all() and (df["rank_upper"] == 8).all()
    assert (df["group"] == 1).all() and df["tied_with_best"].all()
    assert df["rank_mean"].mean() == pytest.approx(4.5)


def test_ties_get_average_rank_and_split_p_best():
    draws = np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 0.0]])
    np.testing.assert_array_equal(rank_draws(draws), [[1.5, 1.5, 3], [1, 2, 3]])
    df = rankings(draws, ["x", "y", "z"]).set_index("item")
    assert df.loc["x", "p_best"] == 0.75 and df.loc["y", "p_best"] == 0.25
    assert df["p_best"].sum() == 1
    dist = rank_distribution(draws, ["x", "y", "z"])
    assert dist.query("item == 'x'")["rank"].tolist() == [1.0, 1.5]


def test_groups_by_overlap_with_the_leader():
    """a and b swap ranks 1-2, c and d ranks 3-4: two groups, c leads the second."""
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(4000, 4)) * 0.6 + np.array([10, 9.6, 6, 5.8])
    df = rankings(draws, list("abcd")).set_index("item")
    assert df.loc[["a", "b"], "group"].tolist() == [1, 1]
    assert df.loc[["c", "d"], "group"].tolist() == [2, 2]
    assert df.loc[["a", "c"], "rank_upper"].tolist() == [2, 4]


def test_xarray_posterior_and_bootstrap_inputs_and_plot():
    rng = np.random.default_rng(3)
    post = xr.DataArray(
        rng.normal(size=(2, 500, 3)) + [0, 1, 5],
        dims=("chain", "draw", "model"),
        coords={"model": ["m1", "m2", "m3"]},
    )
    df = rankings(post)
    assert df["item"].iloc[0] == "m3" and df.attrs["n_draws"] == 1000
    boot = xr.DataArray(rng.normal(size=(300, 3)), dims=("resample", "model"))
    boot[0, 1] = np.nan  # a failed replicate is dropped
    assert rankings(boot).attrs["n_draws"] == 299
    fig = plot_ranks(df, title="t50")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["m3", "m2", "m1"]
    with pytest.raises(ValueError, match="one item dim"):
        rankings(post.expand_dims(extra=2))
    with pytest.raises(ValueError, match="higher_is='up' is not valid"):
        rankings(np.zeros((3, 2)), higher_is="up")
