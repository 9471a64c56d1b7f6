"""The replicated stage's trajectory model with a conversation level
(``stages/replicated_trajectory.py``, issue 54.1): written, gated, summarised in the supplement,
and skipped with its reason where the study has no recognition item."""

from __future__ import annotations

import json

import numpy as np
import pytest

from delusion_bayes.baselines.replicated_files import read_table
from delusion_bayes.data import simulate_replicated
from delusion_bayes.stages import replicated as stage


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """2 chatbots x 5 conversations x 10 turns x 2 human raters, recognition only (SIMULATED),
    through the stage with both models at the default draws (4 x 1,000: the trajectory fit
    ~30 s on one core; at 2 x 300 its 2-chain R-hat missed the gate)."""
    ds = simulate_replicated(
        "replicated",
        seed=2,
        n_models=2,
        n_conversations=5,
        n_turns=10,
        items=("recognition",),
        n_truth=100,
    )
    out = tmp_path_factory.mktemp("traj")
    cfg = {
        "replicated": {"n_boot": 200, "n_mc": 2000, "bayes": True},
        "sampler": {"seed": 1, "progressbar": False},
    }
    head = stage.run(ds, cfg, out)
    return ds, out, head


@pytest.mark.slow
def test_stage_writes_the_chatbots_for_a_new_conversation(run_dir):
    """Every chatbot x quantity row, from a gate-clean fit with a conversation level; each
    chatbot's t50 interval covers the simulator's centre (``true_t50``; the simulator is not the
    fitted graph) and its first clinical framing sits within 3 turns of the bootstrap median
    over the observed conversations (``milestones.csv``: a different question, the same data)."""
    ds, out, head = run_dir
    tab = read_table(out, "bayes_trajectories.csv")
    gate = json.loads((out / "replicated" / "trajectory_gate.json").read_text())
    assert head["trajectory_passed"] and gate["passed"] and gate["conversation_level"]
    assert len(tab) == 2 * 5 and tab["conversation_level"].all()
    # both chatbots ran the same 5 prompts, but their t50 shifts are learnt only on request
    # (replicated.trajectory_shared_prompts), and the column says which were
    assert tab["shared_effects"].isna().all()
    t50 = tab[tab["quantity"] == "t50"].set_index("model")
    truth = ds["true_t50"].to_series()
    assert ((t50["ci_low"] < truth) & (truth < t50["ci_high"])).all(), (t50, truth)
    boot = read_table(out, "milestones.csv")
    boot = boot[boot["milestone"] == "first_clinical"].set_index("model")["median_first_turn"]
    first = tab[tab["quantity"] == "first_clinical"].set_index("model")["median"]
    assert (first - boot).abs().max() < 3.0, (first, boot)
    diag = read_table(out, "trajectory_diagnostics.csv")
    assert {"mu_t50", "sigma_t50"} <= {p.split("[")[0] for p in diag["parameter"]}


@pytest.mark.slow
def test_no_quantity_carries_a_caveat_now(run_dir):
    """Simulation covers every quantity the stage reports (docs/dev/models.md, "Conversation
    level": first stable 0.960 at 95% under the plateau rule, 0.79 before it): the ``note``
    columns are empty and the stage's notes say nothing of coverage; the supplement shows
    first stable in both tables."""
    from delusion_bayes.report.replicated import trajectories_table, trajectory_contrasts_table

    _, out, _ = run_dir
    for name in ("bayes_trajectories.csv", "bayes_trajectory_contrasts.csv"):
        assert (read_table(out, name)["note"].fillna("") == "").all()
    notes = json.loads((out / "replicated" / "index.json").read_text())["notes"]
    assert not any("under-covered" in n for n in notes)
    shown = trajectories_table(None, read_table(out, "bayes_trajectories.csv")).display
    assert "First stable framing, turn [95% CrI]" in shown.columns
    con = read_table(out, "bayes_trajectory_contrasts.csv")
    shown = trajectory_contrasts_table(None, con).display
    assert "First stable framing" in shown["Quantity"].values


@pytest.mark.slow
def test_supplement_shows_one_row_per_chatbot(run_dir):
    from delusion_bayes.report.replicated import trajectories_table

    _, out, _ = run_dir
    df = read_table(out, "bayes_trajectories.csv")
    table = trajectories_table(None, df)
    assert table.display["Chatbot"].tolist() == ["chatbot-1", "chatbot-2"]
    row = df[(df["model"] == "chatbot-1") & (df["quantity"] == "t50")].iloc[0]
    assert table.display.iloc[0, 1].startswith(f"{row['median']:.2f}")
    assert "drawn around its chatbot's" in table.notes[1]
    assert "shared" not in table.notes[1]
    prompts = trajectories_table(None, df.assign(shared_effects="prompt"))
    assert "each shared prompt's shift of t50 for every chatbot" in prompts.notes[1]


@pytest.mark.slow
def test_chatbot_contrasts_are_the_differences_of_the_chatbots_draws(run_dir):
    """One pair (chatbot-1 - chatbot-2) per quantity; the t50 difference's median lies between
    the two chatbots' interval ends' differences, its interval contains the difference of the
    simulator's centres, P(A lower) + P(A higher) = 1 for a continuous quantity, and the
    supplement's table shows the pair."""
    from delusion_bayes.report.replicated import trajectory_contrasts_table

    ds, out, _ = run_dir
    con = read_table(out, "bayes_trajectory_contrasts.csv").set_index("quantity")
    assert sorted(con.index) == ["first_clinical", "first_stable", "p_never", "t50"]
    t50 = con.loc["t50"]
    assert (t50["a"], t50["b"]) == ("chatbot-1", "chatbot-2")
    truth = ds["true_t50"].to_series()
    assert t50["ci_low"] < truth["chatbot-1"] - truth["chatbot-2"] < t50["ci_high"]
    assert t50["p_a_lower"] + t50["p_a_higher"] == pytest.approx(1.0)
    tab = read_table(out, "bayes_trajectories.csv")
    med = tab[tab["quantity"] == "t50"].set_index("model")["median"]
    assert abs(t50["diff"] - (med["chatbot-1"] - med["chatbot-2"])) < 1.0
    shown = trajectory_contrasts_table(None, con.reset_index()).display
    assert shown["Quantity"].tolist() == [
        "t50",
        "First clinical framing",
        "First stable framing",
        "P(never clinical)",
    ]


def test_chatbot_contrasts_by_hand():
    """Three chatbots with known normal draws: the pair rows, medians and probabilities."""
    import xarray as xr

    from delusion_bayes.models.conversations import chatbot_contrasts

    rng = np.random.default_rng(0)
    x = rng.normal([10.0, 12.0, 10.0], 1.0, (40_000, 3))
    draws = xr.Dataset({"t50": (("sample", "chatbot"), x)}, coords={"chatbot": ["a", "b", "c"]})
    con = chatbot_contrasts(draws, 0.95).set_index(["a", "b"])
    assert list(con.index) == [("a", "b"), ("a", "c"), ("b", "c")]
    # a - b ~ N(-2, sqrt 2): P(< 0) = Phi(2 / sqrt 2) = 0.9214, interval -2 -+ 1.96 sqrt 2
    assert con.loc[("a", "b"), "p_a_lower"] == pytest.approx(0.9214, abs=0.005)
    assert con.loc[("a", "b"), "ci_low"] == pytest.approx(-2 - 1.96 * np.sqrt(2), abs=0.05)
    assert con.loc[("a", "c"), "diff"] == pytest.approx(0.0, abs=0.03)


def test_a_study_without_recognition_skips_it_with_the_reason(tmp_path):
    ds = simulate_replicated(
        "spiral_like", seed=0, n_models=2, n_conversations=3, n_turns=4, n_truth=10
    )
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.stages.replicated_trajectory import FILES, trajectory_outputs

    res: dict = {"skipped": []}
    assert trajectory_outputs(ds, {}, ReplicatedConfig(), res, None, []) == {}
    (entry,) = res["skipped"]
    assert entry["analysis"] == "bayes_trajectories" and entry["files"] == list(FILES)
    assert "recognition" in entry["reason"]
    off = ReplicatedConfig(trajectory_model=None)
    res = {"skipped": []}
    rec = simulate_replicated(
        "replicated", seed=0, n_models=2, n_conversations=2, n_turns=4, n_truth=10
    )
    assert trajectory_outputs(rec, {}, off, res, None, []) == {}
    assert res["skipped"][0]["reason"] == "replicated.trajectory_model is null"


def test_a_model_without_a_conversation_level_is_named_before_any_fit():
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.stages.replicated_trajectory import trajectory_outputs

    rec = simulate_replicated(
        "replicated", seed=0, n_models=2, n_conversations=2, n_turns=4, n_truth=10
    )
    with pytest.raises(ValueError, match=r"replicated.trajectory_model.*'rater'.*joint"):
        trajectory_outputs(rec, {}, ReplicatedConfig(trajectory_model="rater"), {}, None, [])


def test_joint_on_one_rating_per_turn_is_fitted_as_onset():
    """One judge (or one human) rates each turn: the joint model's day noise is not identified
    apart from the rater's, so the stage fits ``onset`` and says why; two raters keep ``joint``;
    ``onset`` asked is ``onset`` fitted. No sampling: the rule alone."""
    from delusion_bayes.stages.replicated_trajectory import trajectory_model_for

    one = simulate_replicated(
        "replicated", seed=0, n_models=2, n_conversations=2, n_turns=6, n_raters=1,
        rater_kind="judge", items=("recognition",), n_truth=10,
    )  # fmt: skip
    model, why = trajectory_model_for(one, "joint")
    assert model == "onset" and "one rating per turn" in why
    assert trajectory_model_for(one, "onset") == ("onset", "")
    two = simulate_replicated(
        "replicated", seed=0, n_models=2, n_conversations=2, n_turns=6, n_raters=2,
        items=("recognition",), n_truth=10,
    )  # fmt: skip
    assert trajectory_model_for(two, "joint") == ("joint", "")
    # two raters who never rate the same turn: still one rating per turn
    split = two.copy(deep=True)
    split["score"][{"rater": 0, "turn": slice(0, 3)}] = np.nan
    split["score"][{"rater": 1, "turn": slice(3, None)}] = np.nan
    assert trajectory_model_for(split, "joint")[0] == "onset"


def test_model_priors_reach_the_trajectory_fit(monkeypatch):
    """``model.priors`` (``delusion-bayes model.priors.mu_t50.sigma=0.1``) is applied to the
    replicated stage's trajectory fit, with or without a conversation level; an unknown name
    is an error, not dropped (it used to be dropped silently). No sampling: the spec and the
    stage's call."""
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.models import conversations
    from delusion_bayes.models.conversations import conversation_spec
    from delusion_bayes.stages.replicated_trajectory import fit_trajectory

    override = {"mu_t50": {"sigma": 0.1}}
    for n_conv in (1, 3):
        rep = simulate_replicated(
            "replicated", seed=0, n_models=2, n_conversations=n_conv, n_turns=6,
            items=("recognition",), n_truth=10,
        )  # fmt: skip
        _, spec = conversation_spec(rep, "joint", priors=override)
        assert spec.priors["mu_t50"]["sigma"] == 0.1
        _, default = conversation_spec(rep, "joint")
        assert default.priors["mu_t50"]["sigma"] != 0.1
    with pytest.raises(ValueError, match="not a parameter of model 'joint'"):
        conversation_spec(rep, "joint", priors={"no_such": {"sigma": 1.0}})

    seen = {}

    class Stop(Exception):
        pass

    def fake(ds, model, **kw):
        seen.update(kw, model=model)
        raise Stop

    monkeypatch.setattr(conversations, "fit_conversations", fake)
    cfg = {"model": {"priors": override}, "sampler": {"progressbar": False}}
    with pytest.raises(Stop):
        fit_trajectory(rep, cfg, ReplicatedConfig())
    assert seen["model"] == "joint" and seen["priors"] == override
