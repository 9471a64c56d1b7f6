"""The behaviour model of replicated studies (``models/behaviour.py``, issue 54 item 2): its spec
on the Spiral-Bench files, the ordinal likelihood and the new-conversation integral against
direct computation, and a small fit through the replicated stage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit

from delusion_bayes.models.behaviour import behaviour_spec
from delusion_bayes.models.behaviour_posterior import item_mean_draws, loglik_draws

from .conftest import needs_spiral


@needs_spiral
def test_spec_of_the_spiral_bench_files_caps_at_the_rule(spiral):
    """v2_cap5: levels 0..5 on every behaviour; every finite judgement is one row (2 chatbots x
    30 conversations x 19 turns x 9 behaviours, minus the 3 + 6 failed turns' 9 each)."""
    spec = behaviour_spec(spiral)
    assert spec.rule == "v2_cap5"
    assert spec.y.size == (2 * 30 * 19 - 9) * 9
    assert spec.y.max() == 5 and spec.y.min() == 0
    assert list(spec.n_levels) == [6] * 9
    assert np.isclose(spec.x.min(), -0.5) and np.isclose(spec.x.max(), 0.5)
    assert len(spec.coords["unit"]) == 60
    with pytest.raises(ValueError, match="length-normalised"):
        behaviour_spec(spiral, rule="v1_len_norm_cap8")


def _fake_posterior(spec, n_draws=3, sigma=0.0, seed=0):
    rng = np.random.default_rng(seed)
    n_i, n_m = len(spec.coords["item"]), len(spec.coords["model"])
    n_cut = len(spec.coords["cut"])
    cuts = np.sort(rng.normal(0, 1.5, size=(1, n_draws, n_i, n_cut)), axis=-1)
    post = {
        "alpha": rng.normal(0, 1, (1, n_draws, n_i, n_m)),
        "beta": rng.normal(0, 1, (1, n_draws, n_i, n_m)),
        "sigma_conversation": np.full((1, n_draws, n_i), sigma),
        "z_effect": rng.normal(0, 1, (1, n_draws, len(spec.coords["unit"]), n_i)),
        "cutpoints": cuts,
    }
    return xr.Dataset({k: (("chain", "draw") + tuple(f"d{k}{j}" for j in range(v.ndim - 2)), v)
                       for k, v in post.items()})  # fmt: skip


@needs_spiral
def test_the_graphs_blocked_likelihood_equals_the_per_rating_sum(spiral):
    """The spec orders ratings bottom / middle / top level and the graph sums each block with
    only its terms (``ordinal_loglik``); shuffled ratings take the plain per-rating formula.
    Both graphs give the same log density and gradient at a random point, and the blocks are
    what the shares say (about 2/3 of Spiral-Bench's judged turns show none of a behaviour)."""
    import dataclasses

    import pytensor

    from delusion_bayes.models.behaviour import build_behaviour, level_block

    spec = behaviour_spec(spiral.isel(conversation=slice(0, 4)))
    block = level_block(spec.y, spec.n_levels[spec.idx["item"]])
    assert np.all(np.diff(block) >= 0) and 0.5 < np.mean(block == 0) < 0.95
    perm = np.random.default_rng(0).permutation(spec.y.size)
    shuffled = dataclasses.replace(
        spec, y=spec.y[perm], x=spec.x[perm], idx={k: v[perm] for k, v in spec.idx.items()}
    )
    outs = []
    for sp in (spec, shuffled):
        m = build_behaviour(sp)
        lp = m.logp()
        f = pytensor.function(m.value_vars, [lp, *pytensor.grad(lp, m.value_vars)])
        rng = np.random.default_rng(1)
        point = [m.initial_point()[v.name] for v in m.value_vars]
        outs.append(f(*[v + 0.3 * rng.normal(size=np.shape(v)) for v in point]))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@needs_spiral
def test_ordinal_loglik_is_a_distribution_and_the_mean_matches_it(spiral):
    """Over the six levels the ratings' probabilities sum to 1; with no conversation spread the
    new-conversation mean is the mean over turns of sum_k k P(y = k) from those probabilities."""
    spec = behaviour_spec(spiral.isel(conversation=slice(0, 2)))
    post = _fake_posterior(spec)
    total = 0.0
    for level in range(6):
        spec.y = np.full_like(spec.y, level)
        total = total + np.exp(loglik_draws(post, spec))
    np.testing.assert_allclose(total, 1.0, atol=1e-9)
    # E[y] by the integral (sigma 0) vs the probabilities on a turn grid, item 0, model 0
    mean = item_mean_draws(post, spec)  # (draw, item, model)
    a, b = post["alpha"].values[0, :, 0, 0], post["beta"].values[0, :, 0, 0]
    cuts = post["cutpoints"].values[0, :, 0]
    eta = a[:, None] + b[:, None] * spec.x_turns[None, :]
    cdf = expit(cuts[:, None, :] - eta[..., None])  # P(y <= k)
    p = np.diff(np.concatenate([np.zeros(eta.shape + (1,)), cdf, np.ones(eta.shape + (1,))], -1))
    direct = (p * np.arange(6)).sum(-1).mean(-1)
    np.testing.assert_allclose(mean[:, 0, 0], direct, rtol=1e-10)


@pytest.mark.slow
def test_the_stage_fits_the_behaviour_model_and_gates_it(tmp_path):
    """A small simulated study (2 chatbots x 8 conversations x 10 turns, one count behaviour)
    through the replicated stage: the Bayes files are written, the gate passes, and each
    chatbot's new-conversation interval covers its truth and sits near the bootstrap."""
    from delusion_bayes.data import simulate_replicated
    from delusion_bayes.stages import replicated as stage

    ds = simulate_replicated("spiral_like", seed=3, n_models=2, n_conversations=8, n_turns=10,
                             n_truth=400, items=("delusion_reinforcement",),
                             missing_share=0.0)  # fmt: skip
    cfg = {
        "replicated": {"n_boot": 300, "n_mc": 2000, "bayes": True},
        "sampler": {"draws": 400, "tune": 400, "chains": 2, "seed": 1},
    }
    head = stage.run(ds, cfg, tmp_path)
    out = tmp_path / "replicated"
    means = pd.read_csv(out / "bayes_item_means.csv")
    gate = pd.read_json(out / "gate.json", typ="series")
    assert head["bayes_passed"] and bool(gate["passed"]) and int(gate["divergences"]) == 0
    truth = ds["true_item_mean"].to_series().rename("truth").reset_index()
    both = means.merge(truth, on=["model", "item"])
    assert ((both["ci_low"] <= both["truth"]) & (both["truth"] <= both["ci_high"])).all()
    assert (both["median"] - both["boot_mean"]).abs().max() < 0.35
    contrasts = pd.read_csv(out / "bayes_contrasts.csv")
    assert len(contrasts) == 1 and 0.0 <= contrasts["p_a_worse"].iloc[0] <= 1.0


def test_unused_cutpoints_are_proper_and_leave_the_used_ones_prior_alone():
    """Recognition (levels 1-4, 3 cutpoints) beside a count (0-5, 5 cutpoints) leaves two entries
    of recognition's cutpoint row unused. Flat, they were an improper direction (~600 divergences
    and R-hat 1.55 on the simulated replicated preset). In the sampler's coordinate ``x`` of an
    unused entry (the ordered transform's log gap) the log density must be ``x - exp(x)``
    (Exponential(1) on the gap with its Jacobian: integrates to 1) up to a constant that does not
    depend on the used cutpoints; the old model gave ``x`` (unbounded)."""
    from delusion_bayes.data.replicated_simulate import simulate_replicated

    ds = simulate_replicated(
        "replicated",
        seed=0,
        n_models=2,
        n_conversations=3,
        n_turns=4,
        items=("recognition", "pushback"),
        n_truth=10,
    )
    spec = behaviour_spec(ds)
    assert list(spec.n_levels) == [4, 6]
    model = spec.build()
    logp = model.compile_logp()
    point = model.initial_point()
    name = next(k for k in point if k.startswith("cutpoints_shifted"))
    rec = list(spec.coords["item"]).index("recognition")

    def at(used_shift: float, x: float) -> float:
        p = {k: v.copy() for k, v in point.items()}
        p[name][rec, 0] += used_shift  # a used cutpoint moves
        p[name][rec, 3] = x  # log gap of the first unused entry
        return float(logp(p))

    xs = np.linspace(-4.0, 3.0, 15)
    for shift in (0.0, 1.3):
        curve = np.array([at(shift, x) for x in xs]) - at(shift, 0.0)
        np.testing.assert_allclose(curve, xs - np.exp(xs) + 1.0, atol=1e-8)


def test_posterior_rankings_rank_the_highest_new_conversation_mean_first():
    """``bayes_rankings`` reads ``item_mean`` draws in the bootstrap rankings' direction (rank 1 =
    most): three chatbots 1 apart with draw SD 0.1 rank in order with P(best) ~ 1; two that
    overlap fully share a rank interval; fewer than 3 chatbots give None."""
    from delusion_bayes.models.behaviour_posterior import bayes_rankings

    rng = np.random.default_rng(0)
    centre = np.array([[0.0, 1.0], [2.0, 1.0], [1.0, 5.0]])  # (model, item)
    noise = rng.normal(0, 0.1, (1, 2000, 3, 2))
    da = xr.DataArray(
        centre[None, None] + noise,
        dims=("chain", "draw", "model", "item"),
        coords={"model": ["a", "b", "c"], "item": ["x", "y"]},
    )
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"item_mean": da})})
    ranks = bayes_rankings(tree, 0.95).set_index(["quantity", "model"])
    assert ranks.loc[("x", "b"), "rank_median"] == 1 and ranks.loc[("x", "a"), "rank_median"] == 3
    assert ranks.loc[("x", "b"), "p_best"] > 0.999
    assert ranks.loc[("y", "c"), "rank_median"] == 1
    assert (ranks.loc[("y", "a"), "rank_lower"], ranks.loc[("y", "a"), "rank_upper"]) == (2, 3)
    two = xr.DataTree.from_dict({"posterior": xr.Dataset({"item_mean": da.isel(model=[0, 1])})})
    assert bayes_rankings(two) is None
