"""The conversation level of the trajectory models (``models/conversations.py``, issue 54.1)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.data.replicated_simulate import simulate_replicated
from delusion_bayes.errors import UserError
from delusion_bayes.models.conversations import (
    chatbot_draws,
    chatbot_trajectories,
    conversation_spec,
    conversation_units,
    fit_conversations,
)


@pytest.fixture(scope="module")
def rep():
    """3 chatbots x 6 conversations x 12 turns x 2 human raters (simulated, known truth)."""
    return simulate_replicated("replicated", seed=1, n_models=3, n_conversations=6)


def test_units_are_the_conversations_each_chatbot_ran(rep):
    ran = rep["has_conversation"].copy()
    ran[0, -2:] = False  # chatbot-1 ran 4 of the 6 prompts
    units = conversation_units(rep.assign(has_conversation=ran))
    assert units.sizes == {"rater": 2, "model": 16, "day": 12}
    assert units.attrs["chatbot"] == ["chatbot-1"] * 4 + ["chatbot-2"] * 6 + ["chatbot-3"] * 6
    name = f"chatbot-2/{rep['conversation'].values[3]}"
    hand = rep["score"].sel(item="recognition").isel(model=1, conversation=3)
    np.testing.assert_array_equal(units["recognition"].sel(model=name).values, hand.values)
    np.testing.assert_array_equal(units["day"].values, rep["turn"].values)


def test_units_name_the_item_and_its_levels(rep):
    with pytest.raises(UserError, match=r"no item 'stage' among \['recognition'"):
        conversation_units(rep, "stage")
    with pytest.raises(UserError, match="pushback' has levels 0-20; .* levels 1-4"):
        conversation_units(rep, "pushback")


def test_one_conversation_per_chatbot_is_todays_model(rep):
    """No conversation level to learn: the spec is today's spec of the chatbots' own study (the
    same compiled graph: structure key and data), built here by hand from the scores."""
    from delusion_bayes.models.spec import build_spec

    one = rep.isel(conversation=[0])
    units, spec = conversation_spec(one, "joint")
    rec = one["score"].sel(item="recognition").isel(conversation=0, drop=True)
    hand = xr.Dataset({"recognition": rec.rename(turn="day").transpose("rater", "model", "day")})
    hand = hand.drop_vars([c for c in hand.coords if c not in ("rater", "model", "day")])
    today = build_spec(hand, "joint")
    assert not spec.population and spec.data.pop_group is None
    assert spec.structure_key() == today.structure_key() and spec.hash() == today.hash()
    assert units["model"].values.tolist() == ["chatbot-1", "chatbot-2", "chatbot-3"]


def test_many_conversations_group_the_hyper_means_by_chatbot(rep):
    _, spec = conversation_spec(rep, "onset", scale="group")
    assert spec.population == "group"
    assert spec.coords["population_group"] == ["chatbot-1", "chatbot-2", "chatbot-3"]
    np.testing.assert_array_equal(spec.data.pop_group, np.repeat([0, 1, 2], 6))
    with pytest.raises(ValueError, match="scale='x'"):
        conversation_spec(rep, "joint", scale="x")


def test_the_conversations_t50_spread_keeps_its_own_prior(rep):
    """With a conversation level ``sigma_t50`` is the spread of one chatbot's conversations
    (``CONVERSATION_T50_SCALE_PRIOR``, HalfNormal(0.5)); the chatbots' own study (one
    conversation each) has the chatbots' zero-avoiding Gamma(3, 6); a user's prior wins."""
    _, many = conversation_spec(rep, "joint")
    assert many.priors["sigma_t50"] == {"dist": "HalfNormal", "sigma": 0.5}
    _, one = conversation_spec(rep.isel(conversation=[0]), "joint")
    assert one.priors["sigma_t50"] == {"dist": "Gamma", "alpha": 3.0, "beta": 6.0}
    mine = {"dist": "HalfNormal", "sigma": 0.3}
    _, user = conversation_spec(rep, "onset", priors={"sigma_t50": mine})
    assert user.priors["sigma_t50"] == mine


def test_a_chatbot_owns_a_plateau_mean_where_half_its_conversations_show_the_plateau(rep):
    """``plateau_shown``: a conversation shows its plateau when its median rating reaches the
    stage midpoint (2.5) on 2 consecutive turns (``geometry.onset_geometry``) with 3 rated turns
    after them. Chatbot 1 rated 4 from turn 2 in all 6 conversations owns its mean; chatbot 2 at
    1 throughout does not; chatbot 3 with 3 of 6 conversations at 4 from turn 8 of 12 (turns
    8-9, then 10-12) owns it (half), and from turn 9 (2 turns after the run) does not."""
    from delusion_bayes.models.conversations import plateau_shown

    rec = rep["score"].sel(item="recognition").copy()
    rec[:] = 1.0
    rec[:, 0, :, 1:] = 4.0
    rec[:, 2, :3, 7:] = 4.0
    study = rep.copy(deep=True)
    study["score"].loc[dict(item="recognition")] = rec
    units, spec = conversation_spec(study, "joint")
    group = np.asarray(spec.data.pop_group)
    np.testing.assert_array_equal(spec.data.plateau_own, [True, False, True])
    np.testing.assert_array_equal(plateau_shown(units, group, 3), [True, False, True])
    rec[:, 2, :3, 7] = 1.0
    study["score"].loc[dict(item="recognition")] = rec
    np.testing.assert_array_equal(conversation_spec(study, "joint")[1].data.plateau_own,
                                  [True, False, False])  # fmt: skip


@pytest.mark.slow
def test_chatbot_level_recovers_the_simulated_chatbots(rep):
    """A new conversation's expected t50 per chatbot (truth: the chatbot's centre, prompts'
    effects average out; simulator ``replicated_simulate``, not the fitted graph) lies in its
    95% interval and within 2 turns of the median; the between-conversation SD of t50 covers the
    simulator's, sqrt(1.5^2 + 0.7^2) = 1.66 (conversation and prompt effects); P(never) is a
    share; the chatbots' order by t50 is the truth's. 2 x 300 draws (seeded)."""
    kw = dict(sampler="nutpie", draws=300, tune=300, chains=2, cores=1, seed=3)
    dt = fit_conversations(
        rep,
        "joint",
        progressbar=False,
        posterior_predictive=False,
        log_likelihood=False,
        log_prior=False,
        target_accept=0.95,
        **kw,
    )
    assert dt.attrs["conversation_level"] and dt.attrs["population"] == "conversation"
    tab = chatbot_trajectories(chatbot_draws(dt)).set_index(["quantity", "chatbot"])
    truth = rep["true_t50"].values
    t50 = tab.loc["t50"]
    assert ((t50["ci_low"] < truth) & (truth < t50["ci_high"])).all(), (t50, truth)
    assert np.all(np.abs(t50["median"].values - truth) < 2.0)
    assert np.argsort(t50["median"].values).tolist() == np.argsort(truth).tolist()
    sd = tab.loc["sd_conv_t50"].iloc[0]
    assert sd["ci_low"] < np.hypot(1.5, 0.7) < sd["ci_high"]
    p = tab.loc["p_never"]
    assert ((p["ci_low"] >= 0) & (p["ci_high"] <= 1)).all()
    assert set(tab.index.get_level_values(0)) == {
        "t50",
        "first_clinical",
        "first_stable",
        "p_never",
        "sd_conv_t50",
    }


def test_the_sbc_prior_draws_have_the_conversation_levels_laws():
    """``models/sbc_conversations.draw_truth`` over 4,000 draws of 3 chatbots x 5 units on 12
    turns: a conversation's t50 scatters around 12 x its chatbot's mu_t50 with mean square
    12^2 E[sigma_t50^2] = 144 x 0.25 (HalfNormal(0.5)); log(L - 1) around its chatbot's plateau
    mean with mean square E[sigma_log_L1^2] = 0.04 (HalfNormal(0.2)) and the chatbots' means
    around mu_log_L1 with the fixed SD 0.2; mu_log_L1 has mean 1.1; each chatbot has its own
    hyper-means."""
    from delusion_bayes.models.sbc_conversations import draw_truth

    rng = np.random.default_rng(4)
    chatbot = np.repeat(np.arange(3), 5)
    draws = [draw_truth(chatbot, 2, 12, rng) for _ in range(4000)]
    dev = np.stack([d["t50"].values[0] - 12 * d["mu_t50"].values[0][chatbot] for d in draws])
    assert np.mean(dev**2) == pytest.approx(144 * 0.25, rel=0.08)
    bot = np.stack([d["mu_log_L1_chatbot"].values[0] for d in draws])
    conv = np.stack([np.log(d["L"].values[0] - 1) for d in draws]) - bot[:, chatbot]
    assert np.mean(conv**2) == pytest.approx(0.04, rel=0.06)
    centre = np.array([d["mu_log_L1"].values[0] for d in draws])
    assert (bot - centre[:, None]).std() == pytest.approx(0.2, rel=0.03)
    assert centre.mean() == pytest.approx(1.1, abs=0.01)
    assert draws[0]["mu_t50"].shape == (1, 3) and draws[0]["k"].shape == (1, 15)


def test_the_sbc_prior_draws_shared_prompts_as_variance_shares():
    """With 5 prompts every chatbot ran, ``draw_truth`` splits the total scale (HalfNormal(0.5))
    by Dirichlet(1, 1) shares, as ``blocks._t50_variance_shares``: sigma_t50^2 + sd_t50_prompt^2
    = sd_t50_total^2 in each draw; a conversation's t50 still scatters with mean square 144 x
    0.25, and two chatbots' runs of one prompt covary by 144 E[total^2] E[w] = 144 x 0.25 / 2
    = 18 (4,000 draws)."""
    from delusion_bayes.models.sbc_conversations import draw_truth

    rng = np.random.default_rng(5)
    chatbot, prompt = np.repeat(np.arange(3), 5), np.tile(np.arange(5), 3)
    draws = [draw_truth(chatbot, 2, 12, rng, {"prompt": prompt}) for _ in range(4000)]
    d = draws[0]
    total = d["sd_t50_total"].item()
    assert np.hypot(d["sigma_t50"].item(), d["sd_t50_prompt"].item()) == pytest.approx(total)
    dev = np.stack([d["t50"].values[0] - 12 * d["mu_t50"].values[0][chatbot] for d in draws])
    assert np.mean(dev**2) == pytest.approx(36.0, rel=0.08)
    assert np.mean(dev[:, :5] * dev[:, 5:10]) == pytest.approx(18.0, rel=0.15)


def test_rank_checks_skip_what_a_study_does_not_rank():
    """The SBC follows the plateau rule with NaN ranks (``sbc_conversations``): a study's mean
    rank is over its ranked elements, and a study with none is not counted. Study means 0.2
    and (0.6 + 0.8) / 2 = 0.7: mean_u 0.45, mean |u - 1/2| (0.3 + 0.2) / 2 = 0.25, n 2."""
    from delusion_bayes.models.sbc_reference import rank_checks, rank_dataset

    rows = {"mu_log_L1_chatbot": [np.array([0.2, np.nan]), np.array([0.6, 0.8]),
                                  np.array([np.nan, np.nan])]}  # fmt: skip
    ranks = rank_dataset(rows, [True, True, True], [0, 0, 0])
    row = rank_checks(ranks).iloc[0]
    assert row["n"] == 2
    assert row["mean_u"] == pytest.approx(0.45) and row["mean_abs"] == pytest.approx(0.25)


def test_a_chatbot_without_its_plateau_follows_the_plateau_population():
    """The ``replicated`` preset, seed 0: chatbot-4 (t50 9.0 of 12 turns) shows its plateau in
    fewer than half its conversations, so its plateau mean is ``mu_log_L1`` at any point of the
    graph; the others' are their own free, centred entries, and every conversation's
    ``log(L - 1)`` is its chatbot's mean + ``sigma_log_L1 * z``."""
    from delusion_bayes.models.build import build_model

    _, spec = conversation_spec(simulate_replicated("replicated", seed=0), "joint")
    np.testing.assert_array_equal(spec.data.plateau_own, [True, True, True, False])
    model = build_model(spec)
    point = model.initial_point()
    point["mu_log_L1"] = np.array(0.7)
    point["mu_log_L1_chatbot_centred"] = np.array([1.0, 1.2, 1.4, 9.0])
    point["z_log_L1"] = np.linspace(-1, 1, point["z_log_L1"].size)
    names = ("mu_log_L1_chatbot", "log_L1", "sigma_log_L1")
    outs = model.replace_rvs_by_values([model[n] for n in names])
    out = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")(point)
    np.testing.assert_allclose(out[0], [1.0, 1.2, 1.4, 0.7])
    group = np.asarray(spec.data.pop_group)
    np.testing.assert_allclose(out[1], out[0][group] + out[2] * point["z_log_L1"], rtol=1e-6)


def test_every_conversation_t50_is_non_centred():
    """With a conversation level no conversation's t50 has a centred or wall coordinate
    (``blocks._t50``: under them 7 of 100 coverage studies failed the gate, docs/dev/models.md,
    "Conversation level"): ``t50 = T (mu_t50[chatbot] + sigma_t50 z_t50)`` at any point, for the
    ``replicated`` preset's turned and never-turned conversations alike."""
    from delusion_bayes.models.build import build_model

    rep = simulate_replicated("replicated", seed=0)
    _, spec = conversation_spec(rep, "joint", shared=True)
    assert not spec.data.t50_centred.all()  # never-turners exist: the wall's case is covered
    model = build_model(spec)
    free = {rv.name for rv in model.free_RVs}
    assert "z_t50" in free and not {"t50_centred", "w_t50", "w_t50_early"} & free
    point = model.initial_point()
    point["mu_t50"] = np.array([0.3, 0.5, 0.6, 0.75])
    point["z_t50"] = np.linspace(-2, 2, point["z_t50"].size)
    point["z_t50_prompt"] = np.linspace(1, -1, point["z_t50_prompt"].size)
    outs = model.replace_rvs_by_values([model["t50"], model["sigma_t50"], model["sd_t50_prompt"]])
    fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")
    t50, sigma, sd_prompt = fn(point)
    group = np.asarray(spec.data.pop_group)
    prompt = sd_prompt * point["z_t50_prompt"][spec.data.group_idx["prompt"]]
    expect = spec.n_days * (point["mu_t50"][group] + prompt + sigma * point["z_t50"])
    np.testing.assert_allclose(t50, expect, rtol=1e-6)


def test_shared_prompts_shift_t50_only_where_learnable():
    """``shared_terms``: a prompt every chatbot ran is learnt once it has MIN_SHARED_LEVELS
    levels; the replicated preset's 3 categories (fewer) are not, Spiral-Bench's 6 grouping 30
    prompts are; prompts each chatbot ran alone are conversation effects. With ``shared`` (off
    by default) the graph shifts t50 alone by them (no ``sd_L_prompt``, ``sd_log_k_prompt``)."""
    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.conversations import MIN_SHARED_LEVELS, shared_terms

    rep = simulate_replicated("replicated", seed=0, items=("recognition",))
    assert shared_terms(conversation_units(rep)) == ["prompt"]
    few = rep.isel(conversation=slice(MIN_SHARED_LEVELS - 1))
    assert shared_terms(conversation_units(few)) == []
    own = rep.assign_coords(prompt=rep["prompt"] + "-" + rep["model"])  # a prompt per chatbot
    assert shared_terms(conversation_units(own)) == []
    spiral = simulate_replicated(
        "spiral_like", seed=0, n_categories=6, items=("recognition",), n_truth=5
    )
    assert shared_terms(conversation_units(spiral)) == ["prompt", "category"]
    assert conversation_spec(rep, "joint")[1].group_terms == []
    _, spec = conversation_spec(rep, "joint", shared=True)
    assert spec.group_terms == ["prompt"]
    model = build_model(spec)
    names = set(model.named_vars)
    assert {"sd_t50_prompt", "z_t50_prompt", "sd_t50_total", "t50_shares"} <= names
    assert not {"sd_L_prompt", "sd_log_k_prompt"} & names
    # the two scales are the total's variance shares: sigma^2 + sd_prompt^2 = total^2
    point = model.initial_point()
    point["sd_t50_total_log__"] = np.log(np.array(0.3))
    point["t50_shares_simplex__"] = np.array([0.7])
    outs = model.replace_rvs_by_values([model["sigma_t50"], model["sd_t50_prompt"]])
    fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")
    np.testing.assert_allclose(np.hypot(*fn(point)), 0.3, rtol=1e-6)
    _, opt_out = conversation_spec(rep, "joint", shared=True, group_terms=[])
    assert opt_out.group_terms == []


def test_a_new_conversation_runs_a_new_prompt():
    """The between-conversation SD a new conversation's t50 has is ``hypot(sigma_t50,
    sd_t50_prompt)``: its prompt is new too; where the graph samples their total, the total."""
    from delusion_bayes.models.population import new_conversation_t50_scale

    post = xr.Dataset(
        {
            "sigma_t50": (("chain", "draw"), [[0.3, 0.4]]),
            "sd_t50_prompt": (("chain", "draw"), [[0.4, 0.3]]),
            "mu_t50": (("chain", "draw", "population_group"), np.zeros((1, 2, 3))),
        }
    )
    np.testing.assert_allclose(new_conversation_t50_scale(post, 3), np.full((2, 3), 0.5))
    total = post.assign(sd_t50_total=(("chain", "draw"), [[0.6, 0.7]]))
    np.testing.assert_allclose(new_conversation_t50_scale(total, 3)[:, 0], [0.6, 0.7])
