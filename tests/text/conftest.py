"""Shared fixtures of the text tests: tiny fake embedders, one spaCy pipeline per session."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest


class DictEmbedder:
    """Fake embedder: a fixed vector per text (hand-computable cosines); counts its calls."""

    def __init__(self, table: dict[str, list[float]], name: str = "fake-dict"):
        self.table = {k: np.asarray(v, dtype=float) for k, v in table.items()}
        self.name = name
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.stack([self.table[t] for t in texts])


class BagOfWordsEmbedder:
    """Fake embedder: hashed bag of words (deterministic across processes), 256 dims."""

    name = "fake-bag-of-words"

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.n_encoded = 0

    def encode(self, texts):
        out = np.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9']+", t.lower()):
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0
            out[i, -1] += 1e-3  # never a zero vector
        self.n_encoded += len(texts)
        return out


@pytest.fixture
def dict_embedder():
    return DictEmbedder


@pytest.fixture
def bow_embedder():
    return BagOfWordsEmbedder()


@pytest.fixture(scope="session")
def nlp():
    """The offline en_core_web_md pipeline, loaded once per session."""
    pytest.importorskip("spacy")
    from delusion_bayes.text.modality import load_spacy

    return load_spacy()


@pytest.fixture(scope="session")
def bow_class():
    """The bag-of-words embedder class, for fixtures of wider scope."""
    return BagOfWordsEmbedder
