"""Entrainment: how close each answer stays to its own day's prompt, against the other days
(the trajectory paper's "Recognition Stage (Entrainment)")."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL
from .embed import Embedder, make_embedder
from .texts import model_coords, split_sentences, study_texts

#: the three configurations of the per-day similarity (paper, Entrainment)
CONFIGS = {
    1: "mean over all prompt-sentence x answer-sentence cosine similarities",
    2: "mean of the top-k prompt-sentence x answer-sentence cosine similarities",
    3: "cosine similarity of the whole prompt with the whole answer (canonical)",
}


def entrainment_scores(sim: np.ndarray) -> np.ndarray:
    """Per-day entrainment ``score[d] = sim[d, d] - mean_{d' != d} sim[d', d]`` (paper: minus "the
    average similarity score between the same answer and the user prompts from all other days").

    ``sim (..., n_days, n_days)``: prompt ``i`` x answer ``j``, NaN for missing texts (NaN prompts
    are left out of the mean; a missing answer or day's prompt gives NaN)."""
    sim = np.asarray(sim, dtype=float)
    if sim.ndim < 2 or sim.shape[-1] != sim.shape[-2]:
        raise ValueError(
            "sim must be square in its last two dims (prompt day x answer day), got shape "
            f"{sim.shape}"
        )
    n = sim.shape[-1]
    if n < 2:
        raise ValueError(f"entrainment needs at least 2 days for a baseline, got {n}")
    diag = np.diagonal(sim, axis1=-2, axis2=-1).copy()
    off = sim.copy()
    idx = np.arange(n)
    off[..., idx, idx] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)  # all-NaN column = missing answer
        baseline = np.nanmean(off, axis=-2)
    return diag - baseline


def _normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norm == 0):
        raise ValueError("an embedding has zero norm: cosine similarity is undefined")
    return x / norm


def similarity_matrices(
    prompts: Sequence[str],
    answers: np.ndarray,
    embedder: Embedder,
    *,
    config: int = 3,
    top_k: int = 3,
    progress: bool = False,
) -> np.ndarray:
    """``out[m, i, j]``: cosine similarity of prompt ``i`` with model ``m``'s answer ``j`` (NaN for
    a ``''`` text). ``config`` (:data:`CONFIGS`): 1 all sentence pairs (for unit vectors
    mean_{a,b} u_a . v_b = (mean_a u_a) . (mean_b v_b), no pair matrix), 2 the ``top_k`` best
    pairs (all if fewer), 3 whole texts."""
    if config not in CONFIGS:
        raise ValueError(f"config must be one of {sorted(CONFIGS)} ({CONFIGS}), got {config!r}")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    answers = np.asarray(answers, dtype=object)
    if answers.ndim != 2 or answers.shape[1] != len(prompts):
        raise ValueError(
            f"answers must have shape (n_models, n_days={len(prompts)}), got {answers.shape}"
        )
    n_models, n_days = answers.shape
    p_ok = np.array([bool(str(p).strip()) for p in prompts])
    a_ok = np.array([bool(str(a).strip()) for a in answers.ravel()], dtype=bool)
    out = np.full((n_models, n_days, n_days), np.nan)
    if config == 3:  # whole prompt vs whole answer
        texts = [p for p, ok in zip(prompts, p_ok, strict=True) if ok]
        texts += [a for a, ok in zip(answers.ravel(), a_ok, strict=True) if ok]
        emb = _normalise(embedder.encode(texts))
        dim = emb.shape[1]
        P = np.full((n_days, dim), np.nan)
        P[p_ok] = emb[: p_ok.sum()]
        A = np.full((n_models * n_days, dim), np.nan)
        A[a_ok] = emb[p_ok.sum() :]
        return np.einsum("id,mjd->mij", P, A.reshape(n_models, n_days, dim))

    p_sents = split_sentences([p if ok else "" for p, ok in zip(prompts, p_ok, strict=True)])
    a_flat = [a if ok else "" for a, ok in zip(answers.ravel(), a_ok, strict=True)]
    a_sents = split_sentences(a_flat)
    vocab = list(dict.fromkeys(s for group in (*p_sents, *a_sents) for s in group))
    if not vocab:
        return out
    index = {s: i for i, s in enumerate(vocab)}
    V = _normalise(embedder.encode(vocab))
    p_rows = [np.array([index[s] for s in ss], dtype=int) for ss in p_sents]
    a_rows = [np.array([index[s] for s in ss], dtype=int) for ss in a_sents]

    if config == 1:
        Am = _mean_vectors(V, a_rows).reshape(n_models, n_days, V.shape[1])
        return np.einsum("id,mjd->mij", _mean_vectors(V, p_rows), Am)
    return _top_k_similarities(V, p_rows, a_rows, out, top_k, progress)


def _mean_vectors(V: np.ndarray, rows_of_text: list[np.ndarray]) -> np.ndarray:
    """Mean sentence vector of each text (rows of ``V``), NaN for a text without sentences."""
    out = np.full((len(rows_of_text), V.shape[1]), np.nan)
    for i, rows in enumerate(rows_of_text):
        if rows.size:
            out[i] = V[rows].mean(axis=0)
    return out


def _top_k_similarities(V, p_rows, a_rows, out, top_k, progress) -> np.ndarray:
    """Configuration 2 into ``out`` (model, prompt day, answer day), vectorised per answer over
    all prompts (padded to the longest, padding pairs -inf)."""
    from tqdm.auto import tqdm

    n_models, n_days = out.shape[:2]
    max_p = max((r.size for r in p_rows), default=0)
    if max_p == 0:
        return out
    P = np.zeros((n_days, max_p, V.shape[1]))
    p_valid = np.zeros((n_days, max_p), dtype=bool)
    for i, rows in enumerate(p_rows):
        P[i, : rows.size] = V[rows]
        p_valid[i, : rows.size] = True
    n_p = p_valid.sum(axis=1)
    for m in tqdm(range(n_models), desc="entrainment top-k", disable=not progress, leave=False):
        for j in range(n_days):
            arows = a_rows[m * n_days + j]
            if not arows.size:
                continue
            block = np.einsum("ipd,ad->ipa", P, V[arows])  # (prompt, prompt sent, answer sent)
            block[~p_valid] = -np.inf
            block = block.reshape(n_days, -1)
            k = min(top_k, block.shape[1])
            top = -np.partition(-block, k - 1, axis=1)[:, :k]  # the k largest, any order
            k_eff = np.minimum(top_k, n_p * arows.size)  # fewer pairs than k: all pairs
            top[~np.isfinite(top)] = 0.0
            with np.errstate(invalid="ignore", divide="ignore"):
                out[m, :, j] = np.where(k_eff > 0, top.sum(axis=1) / k_eff, np.nan)
    return out


def entrainment(
    ds: xr.Dataset,
    config: int = 3,
    model_name: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    *,
    embedder: Embedder | None = None,
    top_k: int = 3,
    batch_size: int = 32,
    device: str = "cpu",
    allow_hub: bool = False,
    backend: str = "torch",
    progress: bool = True,
) -> xr.DataArray:
    """Per model-day entrainment ``(model, day)`` of a study with texts (NaN = missing answer).

    The model options are :func:`~.embed.make_embedder`'s (the paper used
    ``Qwen/Qwen3-Embedding-4B``); a given ``embedder`` replaces them (cached only if wrapped in a
    ``CachedEmbedder``)."""
    prompts, answers = study_texts(ds)
    if embedder is None:
        embedder = make_embedder(
            model_name,
            cache_dir=cache_dir,
            device=device,
            batch_size=batch_size,
            allow_hub=allow_hub,
            progress=progress,
            backend=backend,
        )
    sim = similarity_matrices(
        prompts, answers, embedder, config=config, top_k=top_k, progress=progress
    )
    da = xr.DataArray(
        entrainment_scores(sim),
        dims=(MODEL, DAY),
        coords={MODEL: ds[MODEL].values, DAY: ds[DAY].values},
        name="entrainment",
        attrs={
            "long_name": "entrainment",
            "description": (
                "similarity(prompt_d, answer_d) - mean_{d' != d} similarity(prompt_d', answer_d)"
            ),
            "config": int(config),
            "config_description": CONFIGS[config],
            "top_k": int(top_k),
            "embedding_model": embedder.name,
            "reference": "escalating-delusions-trajectories, Recognition Stage (Entrainment)",
        },
    )
    return da.assign_coords(model_coords(ds))
