"""Judge scores -> replay Dataset, loading/saving, prior content, and the simulator's design."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.data import load_replay
from delusion_bayes.data.replay import (
    ReplayValidationError,
    build_samples,
    load_judge_scores,
    prior_content,
    replay_dataset,
    save_replay,
    validate_replay,
)
from delusion_bayes.data.replay_prior import prior_content_array

from .conftest import HAND_HITS, A, B, V, hand_scores, hand_transcripts


def test_hand_dataset_layout(hand):
    assert dict(hand.sizes) == {"sample": 6, "model": 2, "code": 3}
    assert hand["model"].values.tolist() == ["original", "m1"]  # original first
    assert hand["code"].values.tolist() == [B, A, V]  # the release's code order
    assert hand["category"].values.tolist() == ["delusional", "delusional", ""]
    assert hand["family"].values.tolist() == ["original", "fam"]
    assert hand["participant"].values.tolist() == ["p1", "p1", "p1", "p2", "p2", "p2"]
    assert hand["context_depth"].values.tolist() == [0, 2, 0, 0, 2, 4]
    np.testing.assert_array_equal(hand["cutoff"].values, [7.0, 7.0, 9.0])  # release cutoffs
    for (model, code), hits in HAND_HITS.items():
        np.testing.assert_array_equal(hand["hit"].sel(model=model, code=code).values, hits)
    assert hand.attrs["kind"] == "replay"


def test_per_code_cutoffs_and_binary_scores():
    samples = build_samples(hand_transcripts())
    scores = hand_scores(samples)
    # hits are 10, misses 2: a cutoff of 10.5 makes every A a miss, B keeps the codebook's 7
    ds = replay_dataset(samples, scores, cutoffs={A: 10.5})
    assert float(ds["hit"].sel(model="m1", code=A).sum()) == 0  # 10 < 10.5
    assert float(ds["hit"].sel(model="m1", code=B).sum()) == 1
    # codes not listed get the release's codebook cutoffs (A, B: 7; V: 9)
    np.testing.assert_array_equal(
        replay_dataset(samples, scores)["cutoff"].sel(code=[A, B, V]).values, [7.0, 7.0, 9.0]
    )
    binary = scores.assign(score=(scores["score"] >= 7).astype(float))
    ds01 = replay_dataset(samples, binary)
    np.testing.assert_array_equal(ds01["cutoff"].values, [1.0, 1.0, 1.0])
    xr.testing.assert_equal(ds01["hit"], replay_dataset(samples, scores)["hit"])


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda s: s.assign(score=s["score"].astype(object).where(s.index != 3, "high")),
            r"non-numeric score 'high'.*model 'm1'",
        ),  # fmt: skip
        (
            lambda s: s.assign(score=s["score"].where(s.index != 0, 11.0)),
            r"score 11.0.*outside 0-10",
        ),
        (lambda s: pd.concat([s, s.iloc[[0]]]), r"more than one score.*p1/c1/w0/m0"),
        (lambda s: s.drop(columns="code"), r"missing column.*code"),
        (
            lambda s: s.assign(sample_id=s["sample_id"].where(s.index != 0, "zz")),
            r"sample_id 'zz' is not among the 6 samples",
        ),  # fmt: skip
        (
            lambda s: s.assign(code=s["code"].where(s.index != 0, "made-up")),
            r"'made-up'.*no category",
        ),
    ],
)
def test_bad_judge_scores(change, match):
    samples = build_samples(hand_transcripts())
    with pytest.raises(ReplayValidationError, match=match):
        replay_dataset(samples, change(hand_scores(samples)))


def test_validate_replay_rejects_inconsistent_hits(hand):
    bad = hand.copy(deep=True)
    bad["hit"][0, 0, 0] = 0.0
    with pytest.raises(ReplayValidationError, match="disagrees with score >= cutoff in 1 cells"):
        validate_replay(bad)
    with pytest.raises(ReplayValidationError, match="lacks sample coord"):
        validate_replay(hand.drop_vars("conversation"))


def test_directory_and_netcdf_round_trip(tmp_path, hand):
    d = tmp_path / "study"
    d.mkdir()
    hand_transcripts().to_csv(d / "transcripts.csv", index=False)
    samples = build_samples(hand_transcripts())
    hand_scores(samples).to_csv(d / "judge_scores.csv", index=False)
    pd.DataFrame({"model": ["original", "m1"], "family": ["original", "fam"]}).to_csv(
        d / "models.csv", index=False
    )
    from_dir = load_replay(d)
    xr.testing.assert_equal(from_dir["hit"], hand["hit"])
    path = save_replay(hand, tmp_path / "study.nc")
    back = load_replay(path)
    xr.testing.assert_equal(back["hit"], hand["hit"])
    assert back["category"].values.tolist() == ["delusional", "delusional", ""]
    assert load_judge_scores(d / "judge_scores.csv").shape == (len(hand_scores(samples)), 4)


def test_prior_content_hand(hand):
    pc = prior_content(hand)
    # c1 m2 sees the original reply to m0 (A 1, B 1); c3 m2 sees m0 (A 0, B 1); c3 m4 sees m0 and
    # m2: A (0 + 1) / 2, B (1 + 0) / 2; first turns see nothing -> 0
    np.testing.assert_allclose(pc.sel(code=A).values, [0, 1, 0, 0, 0, 0.5])
    np.testing.assert_allclose(pc.sel(code=B).values, [0, 1, 0, 0, 1, 0.5])


def test_prior_content_averages_a_turn_scored_in_two_windows():
    # one conversation, user turns at 0, 2, 4; turn 2 scored twice (windows w0 and w2) with
    # different verdicts (a judge re-scoring the same reply): its mean 0.5 enters the prior
    conv = np.array(["c", "c", "c", "c"])
    index = np.array([0, 2, 2, 4])
    depth = np.array([0, 2, 0, 4])
    hits = np.array([[1.0], [1.0], [0.0], [np.nan]])
    out = prior_content_array(hits, conv, index, depth)
    np.testing.assert_allclose(out[:, 0], [0.0, 1.0, 0.0, (1.0 + 0.5) / 2])


def test_simulate_replay_small_and_seeded(small_replay):
    from delusion_bayes.data import simulate_replay

    ds = small_replay
    assert ds["model"].values.tolist() == ["original", "gpt-4o", "claude-sonnet-4.5"]
    assert ds.sizes["code"] == 18  # the release's codebook
    assert ds["participant"].to_series().nunique() == 6
    validate_replay(ds)
    again = simulate_replay(seed=0)
    xr.testing.assert_identical(ds, again)
    other = simulate_replay(seed=1, params_seed=0, truth_participants=0)
    np.testing.assert_array_equal(other["true_logit"].values, ds["true_logit"].values)
    assert not other["hit"].equals(ds["hit"])
    # the original's verdict belongs to the transcript message: equal across windows
    orig = ds["hit"].sel(model="original").to_pandas()
    key = ds["conversation"].to_series() + "#" + ds["index"].to_series().astype(str)
    per_turn = orig.groupby(key.values).nunique(dropna=True)
    assert (per_turn <= 1).all().all()
    # evaluated models below the original on delusional codes (the paper's main result)
    tl = ds["true_logit"]
    deluded = ds["category"] == "delusional"
    assert bool((tl.sel(model="gpt-4o") < tl.sel(model="original")).where(deluded, True).all())


def test_simulate_replay_delusioneval_scale(de_replay):
    ds = de_replay
    assert ds["participant"].to_series().nunique() == 18
    assert ds.sizes["code"] == 18 and ds.sizes["model"] == 6
    per_model = int(ds["hit"].sel(model="gpt-4o").notnull().any("code").sum())
    assert 5_000 <= per_model <= 9_000  # DelusionEval: ~6,800 samples per model
    n_windows = ds["window"].to_series().nunique()
    assert 400 <= n_windows <= 900  # DelusionEval: 589 conversation histories
    tp = ds["true_prevalence"].sel(model="original").to_series()
    assert tp.between(0.005, 0.995).all()  # the real original-transcript rates reach 0.99
    with pytest.raises(ValueError, match="unknown replay scale"):
        from delusion_bayes.data import simulate_replay

        simulate_replay(scale="huge")


def test_public_names_of_the_replay_api():
    """``db.data.replay_dataset`` and ``db.data.load_delusioneval`` (issue 16: the first raised
    AttributeError), ``db.baselines.replay_prevalence`` (DESIGN.md's public API)."""
    import delusion_bayes as db
    from delusion_bayes.data.delusioneval import load_delusioneval
    from delusion_bayes.data.replay import replay_dataset as rd

    assert db.data.replay_dataset is rd
    assert db.data.load_delusioneval is load_delusioneval
    assert db.baselines.replay_prevalence.__name__ == "replay_prevalence"
