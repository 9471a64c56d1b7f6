"""Hierarchical Bayesian prevalence (models/replay.py): cell aggregation and recovery.

The fit is tiny (2 models x 6 codes, 10 participants, 2 chains x 300 draws) and shared by the
tests through a session fixture.
"""

from __future__ import annotations

import numpy as np
import pytest

from delusion_bayes.baselines.replay import replay_prevalence, true_category_prevalence
from delusion_bayes.models.replay import replay_model_spec

CODES = (
    "misrepresents-sentience",
    "metaphysical-themes",
    "positive-affirmation",
    "grand-significance",
    "platonic-affinity",
    "romantic-interest",
)


def test_cells_hold_the_hand_counts(hand):
    spec = replay_model_spec(hand, level="category", depth_bins=2, prior_bins=2)
    c = spec.cells
    models, effects = spec.coords["model"], spec.coords["effect"]
    assert effects == ["delusional", "uncategorised"]
    tot = c.groupby(["model", "effect"])[["y", "n"]].sum()
    m1, orig = models.index("m1"), models.index("original")
    d = effects.index("delusional")
    assert tuple(tot.loc[(m1, d)]) == (4, 10)
    assert tuple(tot.loc[(orig, d)]) == (9, 12)
    # every cell lies in one conversation of one participant
    assert spec.coords["participant"] == ["p1", "p2"]
    assert set(
        c.loc[c["conversation"] == spec.coords["conversation"].index("c3"), "participant"]
    ) == {1}
    code_spec = replay_model_spec(hand, level="code")
    assert int(code_spec.cells["n"].sum()) == int(np.isfinite(hand["hit"].values).sum())


def test_original_counted_once_per_user_turn():
    from delusion_bayes.data import simulate_replay

    ds = simulate_replay(
        seed=3, models=["original", "gpt-4o"], codes=CODES[:2], truth_participants=0
    )
    spec = replay_model_spec(ds, level="code")
    orig = spec.cells[spec.cells["model"] == 0]
    key = ds["conversation"].to_series() + "#" + ds["index"].to_series().astype(str)
    scored = ds["hit"].sel(model="original", code=CODES[0]).notnull().to_series()
    assert int(orig[orig["effect"] == 0]["n"].sum()) == key[scored.values].nunique()


def test_bad_level():
    from delusion_bayes.data import simulate_replay

    ds = simulate_replay(
        seed=3, models=["original", "gpt-4o"], codes=CODES[:2], truth_participants=0
    )
    with pytest.raises(ValueError, match="level must be 'code' or 'category'"):
        replay_model_spec(ds, level="model")


@pytest.mark.slow
def test_sampling_coordinates_are_an_exact_change_of_variables():
    """The sampled graph (centred theta, conversation totals, exponential-family likelihood) has
    the same log density as the docstring's parameterisation (theta, zero-sum u and v,
    pm.Binomial) at a random point: the change of variables is linear with unit Jacobian."""
    pytest.importorskip("pymc")
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ZeroSumTransform

    from delusion_bayes.data import simulate_replay
    from delusion_bayes.models.replay import (
        build_reference_model,
        build_replay_model,
        to_sampling_coordinates,
    )

    ds = simulate_replay(seed=2, models=["original", "gpt-4o"], codes=CODES, truth_participants=0)
    spec = replay_model_spec(ds, level="code")
    rng = np.random.default_rng(0)
    n_m, n_e, n_g = (len(spec.coords[k]) for k in ("model", "effect", "group"))
    n_p, n_c = len(spec.coords["participant"]), len(spec.coords["conversation"])
    theta = rng.normal(-2, 1, (n_m, n_e))
    beta, gamma = rng.normal(0, 0.3, (n_m, n_g)), rng.normal(0, 0.5, (n_m, n_g))
    up, v = rng.normal(0, 0.7, n_p), rng.normal(0, 0.3, n_c)
    up, v = up - up.mean(), v - v.mean()

    def zs(x):
        return ZeroSumTransform([-1]).forward(pt.as_tensor(x)).eval()

    common = {
        "beta_depth": beta,
        "gamma_prior": gamma,
        "sigma_participant_log__": np.log(0.7),
        "sigma_conversation_log__": np.log(0.3),
        "u_participant_zerosum__": zs(up),
    }
    ref = build_reference_model(spec).compile_logp()(
        {**common, "theta": theta, "u_conversation_zerosum__": zs(v)}
    )
    to = to_sampling_coordinates(spec, theta, beta, gamma, up, v)
    assert abs(to["conversation_total"].sum()) < 1e-9
    model = build_replay_model(spec)
    point = {
        **common,
        "theta_centred": to["theta_centred"],
        "conversation_total_zerosum": zs(to["conversation_total"]),
    }
    new = model.compile_logp()(point)
    np.testing.assert_allclose(new, ref, rtol=0, atol=1e-8)
    # the deterministics give back the docstring's parameters
    outs = model.replace_rvs_by_values([model["theta"], model["u_conversation"]])
    back = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")(point)
    np.testing.assert_allclose(back[0], theta, atol=1e-10)
    np.testing.assert_allclose(back[1], v, atol=1e-10)


@pytest.fixture(scope="session")
def bayes_fit():
    pytest.importorskip("pymc")
    from delusion_bayes.data import simulate_replay
    from delusion_bayes.models.replay import fit_replay_model

    ds = simulate_replay(
        seed=5,
        n_participants=10,
        models=["original", "gpt-4o"],
        codes=CODES,
        truth_participants=400,
    )
    tree = fit_replay_model(ds, level="category", draws=300, tune=300, chains=2, seed=11)
    return ds, tree


@pytest.mark.slow
@pytest.mark.calibration
def test_bayes_recovers_simulated_prevalence(bayes_fit):
    """6 cells (2 models x 3 categories) of one simulated study: >= 5 covered by the 95%
    intervals (binomial, cells treated as independent: false alarm P(X <= 4 | 6, .95) = 0.033;
    halved intervals, ~68% coverage, caught with P(X <= 4 | 6, .68) = 0.62); posterior means
    within 0.03 of the bootstrap's pooled ratio (a +0.7-SD shift moves them by 0.7 posterior
    SDs, ~0.02-0.04 here: not sized, the onset SBC of test_calibration.py is the shift's
    test)."""
    from delusion_bayes.models.replay import replay_posterior_contrasts

    ds, tree = bayes_fit
    assert tree.attrs["max_rhat"] < 1.05
    assert tree.attrs["divergences"] <= 3
    assert tree.attrs["min_ess_bulk"] > 50
    post = replay_posterior_contrasts(tree)
    prev = post[(post["quantity"] == "prevalence") & (post["level"] == "category")]
    merged = prev.merge(
        true_category_prevalence(ds), left_on=["model", "label"], right_on=["model", "category"]
    )
    assert len(merged) == 2 * 3
    covered = (merged["ci_low"] <= merged["truth"]) & (merged["truth"] <= merged["ci_high"])
    assert covered.mean() >= 5 / 6, merged
    # the posterior prevalence sits on the bootstrap's pooled ratio
    boot = replay_prevalence(ds, n_boot=200, levels=("category",))
    both = merged.merge(boot, on=["model", "category"], suffixes=("", "_boot"))
    np.testing.assert_allclose(both["mean"], both["estimate"], atol=0.03)
    # contrasts: gpt-4o below the original on every category (simulated shift -3.0..-1.0)
    delta = post[(post["quantity"] == "delta") & (post["level"] == "category")]
    assert (delta["prob_below_zero"] > 0.9).all(), delta
    assert (tree["posterior"]["sigma_participant"].mean() > 0.1).item()


@pytest.mark.slow
def test_log_likelihood_is_the_binomial_of_every_cell_at_each_draw(bayes_fit):
    """``log_likelihood.y`` (issue 19: the replay fit's likelihood is a Potential, so PyMC's
    ``compute_log_likelihood`` does not see it) is, at each draw, sum over cells of
    ``scipy.stats.binom.logpmf(y, n, expit(eta))`` with ``eta`` rebuilt from the docstring's
    parameters (theta, the participant and conversation effects, the slopes), and equals the
    sampled graph's own ``y_loglik`` Potential (in the sampling coordinates) at those draws."""
    import xarray as xr
    from scipy.special import expit
    from scipy.stats import binom

    from delusion_bayes.models.replay import reported_replay_vars
    from delusion_bayes.models.sensitivity import log_prior_dataset, sensitivity_table

    ds, tree = bayes_fit
    spec = replay_model_spec(ds, level="category")
    c = spec.cells
    n_e, n_g = len(spec.coords["effect"]), len(spec.coords["group"])
    m, e = c["model"].to_numpy(), c["effect"].to_numpy()
    g = spec.effect_group[e]
    post = tree["posterior"]
    ll = tree["log_likelihood"]["y"]
    assert ll.dims == ("chain", "draw")
    for chain, draw in ((0, 0), (1, 137), (0, 299)):
        p = post.isel(chain=chain, draw=draw)
        eta = (p["theta"].values.reshape(-1)[m * n_e + e]
               + p["u_participant"].values[c["participant"].to_numpy()]
               + p["u_conversation"].values[c["conversation"].to_numpy()]
               + p["beta_depth"].values.reshape(-1)[m * n_g + g] * c["depth"].to_numpy()
               + p["gamma_prior"].values.reshape(-1)[m * n_g + g]
               * (c["prior"].to_numpy() - spec.prior_center))  # fmt: skip
        expected = binom.logpmf(c["y"].to_numpy(), c["n"].to_numpy(), expit(eta)).sum()
        np.testing.assert_allclose(float(ll.isel(chain=chain, draw=draw)), expected, rtol=1e-9)
    # the graph's Potential, evaluated at three draws (sampling coordinates, not rebuilt eta)
    few = xr.DataTree.from_dict(
        {"posterior": post.to_dataset().isel(chain=[0], draw=[0, 137, 299])}
    )
    graph = log_prior_dataset(few, spec.build(), ["y_loglik"])["y_loglik"].values.ravel()
    np.testing.assert_allclose(graph, ll.isel(chain=0, draw=[0, 137, 299]).values, rtol=1e-9)
    # ... and it feeds the power-scaling table of the reported parameters and prevalences
    params, prevalences = reported_replay_vars(tree)
    assert prevalences == ["category_prevalence"]
    df = sensitivity_table(tree, var_names=params + prevalences)
    n_scalar = sum(int(np.prod([post.sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
                   for v in params + prevalences)  # fmt: skip
    assert len(df) == n_scalar and df[["prior", "likelihood"]].notna().all().all()
    assert df.attrs["likelihood"] == "y" and "theta_prior" in df.attrs["prior_terms"]
    # the data pin the category prevalences (hundreds of scored samples each) and theta's
    # Normal(-2, 2) prior is wide: no prevalence is prior-dominated, each moves more with the
    # likelihood's power than with the prior's (measured: prior 0.013-0.024, likelihood
    # 0.034-0.093 at these 2 x 300 draws)
    prev = df[df["variable"] == "category_prevalence"]
    assert (prev["prior"] < 0.05).all() and (prev["verdict"] == "-").all(), prev
    assert (prev["likelihood"] > prev["prior"]).all(), prev


def test_original_verdicts_of_one_user_turn_on_two_codes_are_both_kept():
    """Two windows over the same user turn (conversation c1, message 2), each scored on another
    code (as in the DelusionEval release: one code per window): the original transcript's two
    verdicts are different data and both count once (issue 16, item 4: the de-duplication on
    (conversation, index) without the code dropped one of them)."""
    import pandas as pd

    from delusion_bayes.data.replay import replay_dataset

    a, b = "misrepresents-ability", "romantic-interest"
    samples = pd.DataFrame(
        {
            "sample_id": ["w1.t2", "w2.t2", "w2.t4"],
            "participant": ["p1", "p1", "p1"],
            "conversation": ["c1", "c1", "c1"],
            "window": ["w1", "w2", "w2"],
            "window_start": [0, 2, 2],
            "index": [2, 2, 4],
            "turn": [1, 0, 1],
            "context_depth": [2, 0, 2],
        }
    )
    scores = pd.DataFrame(
        [
            ("w1.t2", "original", a, 10.0),
            ("w2.t2", "original", b, 10.0),
            ("w2.t4", "original", b, 0.0),
            ("w1.t2", "m1", a, 0.0),
            ("w2.t2", "m1", b, 10.0),
            ("w2.t4", "m1", b, 0.0),
        ],
        columns=["sample_id", "model", "code", "score"],
    )
    ds = replay_dataset(samples, scores)
    spec = replay_model_spec(ds, level="code", depth_bins=1, prior_bins=1)
    c = spec.cells
    orig = spec.coords["model"].index("original")
    per_code = c[c["model"] == orig].groupby("effect")[["y", "n"]].sum()
    effects = spec.coords["effect"]
    assert tuple(per_code.loc[effects.index(a)]) == (1, 1)
    assert tuple(per_code.loc[effects.index(b)]) == (1, 2)
    # the same verdict seen by two windows still counts once
    dup = pd.concat([samples, samples.assign(sample_id="w3.t2", window="w3")], ignore_index=True)
    dup_scores = pd.concat(
        [scores, scores[scores["sample_id"] == "w1.t2"].assign(sample_id="w3.t2")],
        ignore_index=True,
    )
    c2 = replay_model_spec(replay_dataset(dup.iloc[[0, 1, 2, 3]], dup_scores), level="code").cells
    assert int(c2.loc[c2["model"] == orig, "n"].sum()) == 3


def test_one_clustering_level_gets_one_variance_component(hand):
    """Participants with one conversation each (the DelusionEval rows: both are the window) are
    one level: the graph has a single cluster intercept and scale, no participant term (two
    variance components for one unit are not identified: R-hat 1.79 on the scales, issue 16)."""
    pytest.importorskip("pymc")
    from delusion_bayes.models.replay import build_replay_model, single_level_groups

    assert not replay_model_spec(hand).single_level  # p1 holds two conversations
    one = hand.assign_coords(participant=hand["conversation"])
    spec = replay_model_spec(one, level="code", depth_bins=1, prior_bins=1)
    assert spec.single_level
    model = build_replay_model(spec)
    names = set(model.named_vars)
    assert "sigma_conversation" in names and "u_conversation" in names
    assert not {"sigma_participant", "u_participant"} & names
    # every conversation of the hand study holds several codes: one group of clusters
    grp_c, grp_e = single_level_groups(spec)
    assert set(grp_c) == {0} and set(grp_e) == {0}
    # one code per cluster (the release's design): the groups are the codes
    keep = one["code"].values[[0, 1]]
    sub = one.sel(code=list(keep))
    sub = sub.assign(hit=sub["hit"].where(
        (sub["conversation"] == "c3") == (sub["code"] == keep[1])
    ))  # fmt: skip
    sub = sub.assign(score=sub["score"].where(sub["hit"].notnull()))
    gspec = replay_model_spec(sub, level="code", depth_bins=1, prior_bins=1)
    grp_c, grp_e = single_level_groups(gspec)
    convs = gspec.coords["conversation"]
    assert grp_c[convs.index("c3")] == gspec.coords["effect"].index(keep[1])
    assert grp_c[convs.index("c1")] == gspec.coords["effect"].index(keep[0])


@pytest.mark.slow
@pytest.mark.calibration
def test_single_level_fit_recovers_the_pooled_prevalence():
    """A simulated study whose participants have one conversation each, fitted with one
    variance component: the posterior population prevalence sits on the pooled ratio (within
    0.04, the bootstrap's half-width is ~0.05 here) and the sampler mixes."""
    pytest.importorskip("pymc")
    from delusion_bayes.data import simulate_replay
    from delusion_bayes.models.replay import fit_replay_model, replay_posterior_contrasts

    ds = simulate_replay(seed=4, n_participants=8, models=["original", "gpt-4o"],
                         codes=CODES[:4], truth_participants=0)  # fmt: skip
    ds = ds.assign_coords(participant=ds["conversation"])
    tree = fit_replay_model(ds, level="category", draws=300, tune=300, chains=2, seed=3)
    assert tree.attrs["clustering_levels"] == "cluster"
    assert "sigma_participant" not in tree["posterior"]
    assert tree.attrs["divergences"] <= 2
    assert tree.attrs["max_rhat_prevalence"] < 1.03
    post = replay_posterior_contrasts(tree)
    prev = post[(post["quantity"] == "prevalence") & (post["level"] == "category")]
    boot = replay_prevalence(ds, n_boot=200, levels=("category",))
    both = prev.merge(boot, left_on=["model", "label"], right_on=["model", "category"])
    assert len(both) == 2 * 2
    np.testing.assert_allclose(both["mean"], both["estimate"], atol=0.04)
