"""The behaviour model's reference SBC (``models/sbc_behaviour.py``, issue 54 item 4): its
NumPy prior is the model's documented one, its ratings follow the cumulative logit, and its
Monte Carlo truth of a new conversation's mean agrees with the fit's Gauss-Hermite integral
(two independent computations of one number). The SBC itself runs in
``experiments/bench/sbc_behaviour.py`` (docs/dev/models.md, "Judged behaviours")."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from delusion_bayes.data.replicated_simulate import SPIRAL_ITEMS, simulate_replicated
from delusion_bayes.models.behaviour import BEHAVIOUR_PRIORS
from delusion_bayes.models.sbc_behaviour import (
    BEHAVIOUR_REFERENCE_PRIORS,
    draw_truth,
    simulate,
    true_item_mean,
)


@pytest.fixture(scope="module")
def template():
    ds = simulate_replicated(
        "spiral_like",
        seed=0,
        n_models=3,
        n_conversations=4,
        n_turns=6,
        n_raters=2,
        rater_kind="human",
        items=SPIRAL_ITEMS[:2],
        n_truth=5,
        missing_share=0.0,
    )
    return ds.assign(item_min=("item", np.zeros(2)), item_max=("item", np.full(2, 3.0)))


def test_the_reference_priors_are_the_models_documented_ones():
    """Frozen copies: a change to BEHAVIOUR_PRIORS must be made here too, on purpose."""
    scales = {k: v["sigma"] for k, v in BEHAVIOUR_PRIORS.items() if k != "sigma_conversation"}
    assert BEHAVIOUR_REFERENCE_PRIORS == {**scales, "sigma_conversation": 2.0}
    assert BEHAVIOUR_PRIORS["sigma_conversation"] == {"dist": "Gamma", "alpha": 2.0, "beta": 2.0}
    assert BEHAVIOUR_PRIORS["beta"]["mu"] == 0.0 and BEHAVIOUR_PRIORS["cutpoints"]["mu"] == 0.0


def test_draws_have_the_priors_laws(template):
    """Over 4,000 draws: alpha sums to zero over chatbots with per-entry SD 2 sqrt(2/3) (the
    zero-sum normal's marginal), sigma_conversation has the Gamma(2, 2) mean 1 and SD
    1/sqrt(2), the cutpoints are ordered with the expected order statistics of N(0, 3) (+-2.54
    for the outer pair of three: 3 x 0.8463)."""
    rng = np.random.default_rng(1)
    draws = [draw_truth(template, 4, rng) for _ in range(4000)]
    alpha = np.stack([d["alpha"] for d in draws])
    np.testing.assert_allclose(alpha.sum(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(alpha.std(0), 2.0 * np.sqrt(2 / 3), rtol=0.05)
    sig = np.stack([d["sigma_conversation"] for d in draws])
    np.testing.assert_allclose(sig.mean(0), 1.0, rtol=0.05)
    np.testing.assert_allclose(sig.std(0), np.sqrt(0.5), rtol=0.06)
    cuts = np.stack([d["cutpoints"] for d in draws])
    assert np.all(np.diff(cuts, axis=-1) > 0)
    np.testing.assert_allclose(cuts.mean(0)[:, [0, 2]], [[-2.54, 2.54]] * 2, atol=0.12)


def test_simulated_levels_follow_the_cumulative_logit(template):
    """One truth, the design replicated 400 times: each level's share per item matches the mean
    over cells of P(y = k) computed from the same truth (SE ~0.002)."""
    rng = np.random.default_rng(2)
    truth = draw_truth(template, 4, rng)
    truth["z"][:] = 0.0
    shares = np.mean(
        [
            np.stack(
                [
                    (simulate(template, truth, rng)["score"].sel(item=i).values == k).mean()
                    for k in range(4)
                ]
            )
            for i in template["item"].values
            for _ in range(200)
        ],
        axis=0,
    )
    x = (template["turn"].values - 3.5) / 5.0
    probs = []
    for i in range(2):
        eta = (
            truth["alpha"][i][None, :, None]
            + truth["beta"][i][None, :, None] * x
            + truth["severity"][i][:, None, None]
        )
        cdf = np.concatenate(
            [expit(truth["cutpoints"][i] - eta[..., None]), np.ones(eta.shape + (1,))], -1
        )
        probs.append(np.diff(cdf, prepend=0.0, axis=-1).reshape(-1, 4).mean(0))
    np.testing.assert_allclose(shares, np.mean(probs, axis=0), atol=0.01)


def test_monte_carlo_truth_matches_the_fits_gauss_hermite_mean(template):
    """``true_item_mean`` (Monte Carlo over 200,000 new conversations, NumPy) against
    ``behaviour_posterior.item_mean_draws`` (Gauss-Hermite) on the same parameters."""
    from delusion_bayes.models.behaviour import behaviour_spec
    from delusion_bayes.models.behaviour_posterior import item_mean_draws

    rng = np.random.default_rng(3)
    truth = draw_truth(template, 4, rng)
    sim = simulate(template, truth, rng)
    mc = true_item_mean(sim, truth, rng, n=200_000)
    spec = behaviour_spec(sim, rule="raw")
    n_u = len(spec.coords["unit"])
    one = {
        "alpha": truth["alpha"],
        "beta": truth["beta"],
        "cutpoints": truth["cutpoints"],
        "sigma_conversation": truth["sigma_conversation"],
        "severity": truth["severity"],
        "z_effect": np.zeros((n_u, 2)),
    }
    post = xr.Dataset(
        {
            k: (
                ("chain", "draw") + tuple(f"{k}_{j}" for j in range(np.ndim(v))),
                np.asarray(v)[None, None],
            )
            for k, v in one.items()
        }
    )
    gh = item_mean_draws(post, spec)[0]  # (item, model)
    np.testing.assert_allclose(gh, mc, atol=0.01)
