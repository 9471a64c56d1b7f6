"""Entrainment: hand-computed scores for each configuration with tiny fake embedders."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from delusion_bayes.text import (
    CachedEmbedder,
    entrainment,
    entrainment_scores,
    similarity_matrices,
)


def test_entrainment_scores_hand_computed_with_missing_answer():
    """score[d] = sim[d, d] - mean_{d' != d} sim[d', d] (paper, Entrainment); NaN answer column.

    Hand computation: day 1: 0.9 - (0.1 + 0.3) / 2 = 0.7; day 2: 0.8 - (0.2 + 0.4) / 2 = 0.5;
    day 3: answer missing -> NaN.
    """
    sim = np.array([[0.9, 0.2, np.nan], [0.1, 0.8, np.nan], [0.3, 0.4, np.nan]])
    np.testing.assert_allclose(entrainment_scores(sim), [0.7, 0.5, np.nan], atol=1e-12)


def test_entrainment_scores_missing_prompt_left_out_of_baseline():
    """A missing prompt (NaN row) is left out of the other days' baselines.

    day 1: 0.9 - 0.3 (row 2 is NaN) = 0.6; day 2: NaN (its prompt is missing);
    day 3: 0.7 - 0.5 = 0.2.
    """
    sim = np.array([[0.9, 0.2, 0.5], [np.nan, np.nan, np.nan], [0.3, 0.4, 0.7]])
    np.testing.assert_allclose(entrainment_scores(sim), [0.6, np.nan, 0.2], atol=1e-12)


def test_entrainment_scores_batched_over_models():
    sim = np.stack([np.eye(3), 0.5 * np.ones((3, 3))])
    np.testing.assert_allclose(entrainment_scores(sim), [[1, 1, 1], [0, 0, 0]], atol=1e-12)


@pytest.mark.parametrize("bad", [np.zeros((2, 3)), np.zeros(3), np.zeros((1, 1))])
def test_entrainment_scores_rejects_bad_shapes(bad):
    with pytest.raises(ValueError, match="square|at least 2"):
        entrainment_scores(bad)


def test_config3_whole_texts(dict_embedder):
    """Config 3: cosine of whole texts. Vectors chosen so the cosines are exact by hand.

    p1 = (1, 0), p2 = (0, 1); a1 = (3, 4) -> cos(p1, a1) = .6, cos(p2, a1) = .8;
    a2 = (1, 0) -> cos = 1, 0. Scores: a1: .6 - .8 = -.2;
    a2: cos(p2, a2) - cos(p1, a2) = 0 - 1 = -1.
    """
    emb = dict_embedder({"P1.": [1, 0], "P2.": [0, 1], "A1.": [3, 4], "A2.": [1, 0]})
    sim = similarity_matrices(
        ["P1.", "P2."], np.array([["A1.", "A2."]], dtype=object), emb, config=3
    )
    np.testing.assert_allclose(sim[0], [[0.6, 1.0], [0.8, 0.0]], atol=1e-12)
    np.testing.assert_allclose(entrainment_scores(sim)[0], [-0.2, -1.0], atol=1e-12)


def _sentence_embedder(dict_embedder):
    # prompt 1 = "Red sky. Blue sea.", prompt 2 = "Green hill.";
    # answer 1 = "Red car. Red sea.", answer 2 = "Green tree."
    return dict_embedder(
        {
            "Red sky.": [1, 0, 0],
            "Blue sea.": [0, 1, 0],
            "Green hill.": [0, 0, 1],
            "Red car.": [1, 0, 0],
            "Red sea.": [1, 1, 0],
            "Green tree.": [0, 0, 1],
        }
    )


def test_config1_mean_over_sentence_pairs(dict_embedder):
    """Config 1: mean over all prompt-sentence x answer-sentence cosines, by hand.

    sim(P1, A1): pairs (Pa,Aa)=1, (Pa,Ab)=1/sqrt2, (Pb,Aa)=0, (Pb,Ab)=1/sqrt2 -> (1 + sqrt2) / 4.
    sim(P2, A1) = 0 (orthogonal); sim(P1, A2) = 0; sim(P2, A2) = 1.
    """
    emb = _sentence_embedder(dict_embedder)
    answers = np.array([["Red car. Red sea.", "Green tree."]], dtype=object)
    sim = similarity_matrices(["Red sky. Blue sea.", "Green hill."], answers, emb, config=1)
    expected = np.array([[(1 + np.sqrt(2)) / 4, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(sim[0], expected, atol=1e-12)
    np.testing.assert_allclose(entrainment_scores(sim)[0], [(1 + np.sqrt(2)) / 4, 1.0], atol=1e-12)


def test_config2_top_k_pairs(dict_embedder):
    """Config 2: mean of the top-k pair cosines; k larger than the pairs -> all pairs.

    sim(P1, A1) pair cosines {1, .7071, .7071, 0}: top-3 mean = (1 + 2 / sqrt2) / 3; top-1 = 1.
    sim(P2, A2) has a single pair (1.0), so any k gives 1.
    """
    emb = _sentence_embedder(dict_embedder)
    answers = np.array([["Red car. Red sea.", "Green tree."]], dtype=object)
    sim3 = similarity_matrices(
        ["Red sky. Blue sea.", "Green hill."], answers, emb, config=2, top_k=3
    )
    sim1 = similarity_matrices(
        ["Red sky. Blue sea.", "Green hill."], answers, emb, config=2, top_k=1
    )
    np.testing.assert_allclose(sim3[0, 0, 0], (1 + np.sqrt(2)) / 3, atol=1e-12)
    np.testing.assert_allclose(sim1[0, 0, 0], 1.0, atol=1e-12)
    assert sim3[0, 1, 1] == pytest.approx(1.0)


def test_bad_config_and_top_k(dict_embedder):
    emb = dict_embedder({})
    with pytest.raises(ValueError, match="config must be one of"):
        similarity_matrices(["a"], np.array([["b"]], dtype=object), emb, config=4)
    with pytest.raises(ValueError, match="top_k"):
        similarity_matrices(["a"], np.array([["b"]], dtype=object), emb, config=2, top_k=0)


def _study(prompts, answers, models=("m1", "m2")):
    return xr.Dataset(
        {
            "prompt": ("day", np.array(prompts, dtype=object)),
            "answer": (("model", "day"), np.array(answers, dtype=object)),
        },
        coords={
            "model": list(models),
            "day": np.arange(1, len(prompts) + 1),
            "vendor": ("model", ["v1", "v2"]),
        },
    )


def test_entrainment_on_study_with_missing_answer(dict_embedder):
    """DataArray (model, day), NaN for the missing answer, model mean over the available days.

    m1 answers (3,4) and (1,0) to prompts (1,0), (0,1), (1,1)/sqrt2-ish; hand: see config-3 test.
    """
    emb = dict_embedder({"P1": [1, 0], "P2": [0, 1], "P3": [1, 1], "A": [1, 0], "B": [0, 1]})
    ds = _study(["P1", "P2", "P3"], [["A", "B", ""], ["B", "A", "A"]])
    da = entrainment(ds, config=3, embedder=emb, progress=False)
    assert da.dims == ("model", "day") and da.name == "entrainment"
    assert list(da["vendor"].values) == ["v1", "v2"]
    r = 1 / np.sqrt(2)
    # m1 day1: cos(P1,A)=1 - mean(cos(P2,A)=0, cos(P3,A)=r) ; day2: cos(P2,B)=1 - mean(0, r)
    np.testing.assert_allclose(da.sel(model="m1").values, [1 - r / 2, 1 - r / 2, np.nan])
    # m2 day1: cos(P1,B)=0 - mean(1, r); day2: cos(P2,A)=0 - mean(1, r); day3: r - mean(1, 0)
    np.testing.assert_allclose(da.sel(model="m2").values, [-(1 + r) / 2, -(1 + r) / 2, r - 0.5])
    assert int(da.sel(model="m1").notnull().sum()) == 2  # mean over the 2 available days
    assert da.attrs["config"] == 3 and da.attrs["embedding_model"] == "fake-dict"


def test_entrainment_needs_texts():
    ds = xr.Dataset(coords={"model": ["a"], "day": [1, 2]})
    with pytest.raises(ValueError, match="no 'prompt' variable"):
        entrainment(ds, embedder=object())


def test_disk_cache_hits_and_keys(tmp_path, dict_embedder):
    """Second call is served from <cache_dir>/embeddings/ without encoding; a different model
    name is a different key; results are identical (determinism)."""
    table = {"x": [1.0, 2.0], "y": [3.0, 4.0]}
    e1 = dict_embedder(table, name="model-A")
    c1 = CachedEmbedder(e1, tmp_path)
    first = c1.encode(["x", "y", "x"])
    assert e1.calls == [["x", "y"]]  # de-duplicated, one batch
    c2 = CachedEmbedder(dict_embedder(table, name="model-A"), tmp_path)
    again = c2.encode(["y", "x"])
    assert c2.embedder.calls == [] and c2.hits == 2
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert (tmp_path / "embeddings").is_dir()
    other = CachedEmbedder(dict_embedder(table, name="model-B"), tmp_path)
    other.encode(["x"])
    assert other.embedder.calls == [["x"]]


def test_entrainment_deterministic(bow_embedder):
    ds = _study(
        ["the hum at night", "numbers everywhere", "router lights"],
        [
            ["a hum at night here", "numbers again", "see a doctor"],
            ["see a doctor", "see a doctor today", "router lights blink"],
        ],
    )
    a = entrainment(ds, config=1, embedder=bow_embedder, progress=False)
    b = entrainment(ds, config=1, embedder=bow_embedder, progress=False)
    xr.testing.assert_identical(a, b)


def _brute_force(prompts, answers, table, config, top_k):
    """Reference: loop over every prompt-sentence x answer-sentence pair (no vectorisation)."""
    from delusion_bayes.text import split_sentences

    def unit(s):
        v = np.asarray(table[s], dtype=float)
        return v / np.linalg.norm(v)

    ps = split_sentences(prompts)
    out = np.full((answers.shape[0], len(prompts), answers.shape[1]), np.nan)
    for m in range(answers.shape[0]):
        for j, a in enumerate(answers[m]):
            asents = split_sentences([a])[0]
            for i in range(len(prompts)):
                pairs = [unit(x) @ unit(y) for x in ps[i] for y in asents]
                if not pairs:
                    continue
                if config == 1:
                    out[m, i, j] = np.mean(pairs)
                else:
                    out[m, i, j] = np.mean(sorted(pairs, reverse=True)[:top_k])
    return out


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_days=st.integers(2, 4),
    n_models=st.integers(1, 2),
    top_k=st.integers(1, 5),
    config=st.sampled_from([1, 2]),
)
def test_sentence_configs_match_brute_force(seed, n_days, n_models, top_k, config):
    """Configurations 1 and 2 equal the pair-by-pair definition on random texts and vectors
    (1-3 sentences per text, some answers missing)."""
    rng = np.random.default_rng(seed)
    vocab = [f"S{i}." for i in range(8)]
    table = {s: rng.normal(size=5) for s in vocab}

    def text():
        return " ".join(rng.choice(vocab, size=rng.integers(1, 4)))

    prompts = [text() for _ in range(n_days)]
    answers = np.array(
        [[text() if rng.random() > 0.2 else "" for _ in range(n_days)] for _ in range(n_models)],
        dtype=object,
    )

    class Emb:
        name = "random"

        def encode(self, texts):
            return np.stack([table[t] for t in texts])

    got = similarity_matrices(prompts, answers, Emb(), config=config, top_k=top_k)
    ref = _brute_force(prompts, answers, table, config, top_k)
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_truncated_cache_file_is_recomputed(tmp_path, dict_embedder):
    emb = dict_embedder({"x": [1.0, 2.0, 3.0]}, name="m")
    c = CachedEmbedder(emb, tmp_path)
    c.encode(["x"])
    (f,) = (tmp_path / "embeddings").rglob("*.f32")
    assert np.frombuffer(f.read_bytes(), dtype="<f4").tolist() == [1.0, 2.0, 3.0]
    f.write_bytes(f.read_bytes()[:5])  # killed mid-write
    again = CachedEmbedder(dict_embedder({"x": [1.0, 2.0, 3.0]}, name="m"), tmp_path)
    np.testing.assert_array_equal(again.encode(["x"]), [[1.0, 2.0, 3.0]])
    assert again.misses == 1
