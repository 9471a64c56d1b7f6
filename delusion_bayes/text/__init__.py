"""Text metrics of trajectory studies (the paper's cross-checks): entrainment, modality and their
analyses against the ratings. torch and spaCy load only when a metric runs."""

from __future__ import annotations

from ..data.corpus import SYNTHETIC_NOTE, demo_prompts, synthesize_answers
from .analyses import (
    first_clinical_day,
    level_b_correlation,
    level_b_table,
    mean_by_stage,
    model_level_correlation,
    model_means,
    plot_level_b,
    plot_turn_contrast,
    spearman,
    turn_contrast,
    within_model,
)
from .config import TextConfig
from .embed import (
    BACKENDS,
    CachedEmbedder,
    Embedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    default_cache_dir,
    make_embedder,
    onnx_available,
)
from .entrainment import CONFIGS, entrainment, entrainment_scores, similarity_matrices
from .modality import (
    Lexicon,
    ModalityCounts,
    count_markers,
    load_lexicon,
    load_spacy,
    modality,
    modality_counts,
    modality_score,
)
from .texts import has_texts, split_sentences, study_texts

__all__ = [
    "BACKENDS",
    "CONFIGS",
    "SYNTHETIC_NOTE",
    "CachedEmbedder",
    "Embedder",
    "Lexicon",
    "ModalityCounts",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "TextConfig",
    "count_markers",
    "default_cache_dir",
    "demo_prompts",
    "entrainment",
    "entrainment_scores",
    "first_clinical_day",
    "has_texts",
    "level_b_correlation",
    "level_b_table",
    "load_lexicon",
    "load_spacy",
    "make_embedder",
    "mean_by_stage",
    "modality",
    "modality_counts",
    "modality_score",
    "model_level_correlation",
    "model_means",
    "onnx_available",
    "plot_level_b",
    "plot_turn_contrast",
    "similarity_matrices",
    "spearman",
    "split_sentences",
    "study_texts",
    "synthesize_answers",
    "turn_contrast",
    "within_model",
]
