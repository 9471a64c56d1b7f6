"""Simulated replicated studies (``data.replicated_simulate``, issue 50 item 5): shapes and
scales, reproducibility from the seed, the truth's internal consistency, and recovery of
``true_item_mean`` by the conversation-clustered bootstrap of ``item_means``.

Coverage reference: a percentile cluster bootstrap of a mean over i.i.d. clusters has close to
nominal coverage once there are a few dozen clusters (Davison & Hinkley 1997, sec. 3.8 and
5.3); measured here (2026-12, seeds 0-9, 6 chatbots x 3 items = 180 cells each): 91.1% with
12 conversations per chatbot, 95.6% with 30.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import delusion_bayes as db
from delusion_bayes.baselines.replicated import item_means
from delusion_bayes.config import compose
from delusion_bayes.data.replicated import validate_replicated
from delusion_bayes.data.replicated_simulate import design_of, simulate_replicated
from delusion_bayes.errors import ConfigError
from delusion_bayes.pipeline import run


def test_shapes_scales_and_truth_variables():
    ds = simulate_replicated(seed=0, n_models=3, n_conversations=5, n_turns=7, n_raters=3)
    assert dict(ds["score"].sizes) == {
        "rater": 3, "model": 3, "conversation": 5, "turn": 7, "item": 3
    }  # fmt: skip
    validate_replicated(ds)
    assert ds.attrs["kind"] == "replicated" and "SIMULATED" in ds.attrs["title"]
    assert list(ds["item_scale"].values) == ["ordinal", "count", "count"]
    rec = ds["score"].sel(item="recognition").values
    assert set(np.unique(rec)) <= {1.0, 2.0, 3.0, 4.0}
    counts = ds["score"].sel(item="pushback").values
    assert (counts == 0).mean() > 0.2  # Spiral-Bench-like: many turns without the behaviour
    for name, dims in (
        ("true_t50", ("model",)),
        ("true_t50_conv", ("model", "conversation")),
        ("true_stage", ("model", "conversation", "turn")),
        ("true_item_mean", ("model", "item")),
        ("true_share_with", ("model", "item")),
        ("true_severity", ("rater",)),
        ("true_sd_conv_t50", ()),
    ):
        assert ds[name].dims == dims, name
    # every chatbot ran the same prompts: the shared prompt effect is one per conversation
    assert (ds["prompt"].values == ds["prompt"].values[0]).all()


def test_same_seed_same_study_other_seed_differs():
    a = simulate_replicated(seed=7, n_models=2, n_truth=200)
    b = simulate_replicated(seed=7, n_models=2, n_truth=200)
    xr.testing.assert_identical(a, b)
    c = simulate_replicated(seed=8, n_models=2, n_truth=200)
    assert not np.array_equal(a["score"].values, c["score"].values, equal_nan=True)


def test_conversation_effects_scatter_around_the_chatbot():
    """``true_t50_conv - true_t50 - true_shared_t50`` is the conversation effect: its SD over
    many conversations is ``true_sd_conv_t50`` (2.0 here) within sampling error."""
    ds = simulate_replicated(seed=1, n_models=5, n_conversations=200, n_turns=4, n_truth=100,
                             sd_conv_t50=2.0)  # fmt: skip
    effect = ds["true_t50_conv"] - ds["true_t50"] - ds["true_shared_t50"]
    sd = float(effect.std(ddof=1))
    assert float(ds["true_sd_conv_t50"]) == 2.0
    assert sd == pytest.approx(2.0, abs=0.15)  # SE of an SD over 1000 draws ~ 0.045


def test_judges_fail_turns_and_the_study_counts_them():
    ds = simulate_replicated("spiral_like", seed=2, missing_share=0.05, n_truth=200)
    assert list(ds["rater_kind"].values) == ["judge"]
    failed = ds["judge_failed"].values
    assert failed.mean() == pytest.approx(0.05, abs=0.02)
    assert np.isnan(ds["score"].values[0][failed]).all()
    assert (ds["n_judge_failed"].values == failed.sum(axis=(1, 2))).all()


def test_simulate_study_dispatches_and_checks_overrides():
    ds = db.data.simulate_study(preset="replicated", seed=0, n_models=2, n_truth=100)
    assert ds.attrs["kind"] == "replicated"
    with pytest.raises(ValueError, match="unknown simulate_replicated override"):
        simulate_replicated(n_days=3)
    with pytest.raises(ValueError, match="items"):
        design_of(items=["nonsense"])


def test_item_means_intervals_cover_the_true_item_mean():
    """Recovery: over 5 seeds x 6 chatbots x 3 items (90 cells) at 30 conversations per
    chatbot, the 95% cluster-bootstrap intervals of ``item_means`` cover ``true_item_mean``
    (the new-conversation estimand, Monte Carlo SE < 0.02) in 87-99.9% of cells (measured
    94.4%); the estimates are unbiased (mean standardised error within +-0.35; measured -0.13)."""
    hits, z = [], []
    for seed in range(5):
        ds = simulate_replicated(seed=seed, n_models=6, n_conversations=30, n_truth=1000)
        assert float(ds["true_item_mean_se"].max()) < 0.02
        im = item_means(ds, n_boot=400, seed=seed)
        truth = ds["true_item_mean"].to_series().rename("truth").reset_index()
        m = im.merge(truth, on=["model", "item"])
        hits += list((m["ci_low"] <= m["truth"]) & (m["truth"] <= m["ci_high"]))
        z += list((m["mean"] - m["truth"]) / ((m["ci_high"] - m["ci_low"]) / 3.92))
    coverage = float(np.mean(hits))
    assert len(hits) == 90
    assert 0.87 <= coverage < 0.999, coverage
    assert abs(float(np.mean(z))) < 0.35


def test_the_pipeline_simulates_only_a_replicated_preset(tmp_path):
    """``data.kind=replicated`` with the trajectory default preset is a clear config error (no
    silent simulation of another design); ``data=replicated`` is the one to use."""
    with pytest.raises(ConfigError, match="not a replicated preset.*data=replicated"):
        run(compose(["experiment=replicated"]), tmp_path / "run")


def _deterministic(**kw):
    """A study whose new conversations all follow their chatbot's curve (no spreads, no noise,
    no rater severity) unless ``kw`` sets one."""
    still = dict.fromkeys(
        ("sd_conv_t50", "sd_prompt_t50", "sd_category_t50", "sd_conv_log_k", "sd_conv_L_logit"),
        0.0,
    )
    base = {**still, "turn_noise": 0.0, "sd_severity": 0.0, "items": ("recognition",)}
    return simulate_replicated(seed=3, n_models=4, n_turns=12, n_truth=10, **(base | kw))


def test_new_conversation_truth_is_the_chatbots_own_curve_without_spread():
    """With no spread and no noise every new conversation is the chatbot's curve
    ``1 + (L - 1) expit(k (t - t50))``: its first clinical turn (rating >= 3, stage > 2.5) is
    the first integer turn past ``t* = t50 + log(1.5 / (L - 2.5)) / k`` (never if L <= 2.5),
    computed here by hand from ``true_*``; first stable (three turns at 4, stage > 3.5) alike."""
    from delusion_bayes.sweep.truth import new_conversation_truth

    ds = _deterministic()
    tr = new_conversation_truth(ds, n=50)
    T = ds.sizes["turn"]
    for m in ds["model"].values:
        t50, k, L = (float(ds[f"true_{v}"].sel(model=m)) for v in ("t50", "k", "L"))
        first = {}
        for name, level in (("first_clinical", 2.5), ("first_stable", 3.5)):
            star = t50 + np.log((level - 1.0) / (L - level)) / k if L > level else np.inf
            first[name] = min(int(np.floor(star)) + 1, T + 1) if star >= 0 else 1
        assert float(tr["first_clinical"].sel(model=m)) == first["first_clinical"]
        # a run of three stage-4 turns must fit before the end (T - 2 is the last start)
        stable = first["first_stable"] if first["first_stable"] <= T - 2 else T + 1
        assert float(tr["first_stable"].sel(model=m)) == stable
        assert float(tr["p_never"].sel(model=m)) == float(first["first_clinical"] == T + 1)


def test_new_conversation_p_never_matches_its_closed_form():
    """Only the conversations' t50 spread (SD s): a new conversation never reaches clinical
    framing iff its curve at the last turn T is <= 2.5, i.e. t50_c >= T - log(1.5 / (L - 2.5))
    / k, so P(never) = 1 - Phi((T - log(1.5 / (L - 2.5)) / k - t50) / s); the Monte Carlo
    estimate (n = 20,000) within 4 of its SEs."""
    from scipy.stats import norm

    from delusion_bayes.sweep.truth import new_conversation_truth

    ds = _deterministic(sd_conv_t50=4.0, mu_t50=9.0, sd_t50=2.0, mu_L_logit=3.0)
    tr = new_conversation_truth(ds, n=20000, seed=1)
    T = ds.sizes["turn"]
    for m in ds["model"].values:
        t50, k, L = (float(ds[f"true_{v}"].sel(model=m)) for v in ("t50", "k", "L"))
        exact = 1 - norm.cdf((T - np.log(1.5 / (L - 2.5)) / k - t50) / 4.0)
        got, se = float(tr["p_never"].sel(model=m)), float(tr["p_never_se"].sel(model=m))
        assert abs(got - exact) <= 4 * max(se, 1e-3), (m, got, exact, se)
    assert float(tr["p_never"].max()) > 0.05  # the check is not of zeros only
