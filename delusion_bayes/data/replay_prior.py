"""Accumulated prior assistant content of a replay sample (a NumPy kernel): the covariate of
DelusionEval's "Context length effects" (does deeper context raise prevalence beyond the behaviour
already in the earlier assistant turns the model sees?)."""

from __future__ import annotations

import numpy as np


def prior_content_array(
    hits: np.ndarray, conversation: np.ndarray, index: np.ndarray, context_depth: np.ndarray
) -> np.ndarray:
    """Mean baseline hit over the earlier user turns inside each sample's prompt.

    ``hits`` are the ``(sample, code)`` baseline hits (1/0, NaN missing) on each sample's user
    turn; ``conversation``, ``index`` and ``context_depth`` locate each sample. Returns ``(sample,
    code)``: for sample ``s`` the mean over the conversation's user turns ``u`` with
    ``index[s] - context_depth[s] <= u < index[s]`` of the (window-averaged) hit on ``u``; 0 when
    there is none. Cumulative sums per conversation, no loop over samples.
    """
    hits = np.asarray(hits, dtype=float)
    conversation = np.asarray(conversation)
    index = np.asarray(index, dtype=np.int64)
    depth = np.asarray(context_depth, dtype=np.int64)
    out = np.zeros(hits.shape)
    k = hits.shape[1]
    codes, inverse = np.unique(conversation, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(codes) + 1))
    for c in range(len(codes)):
        rows = order[bounds[c] : bounds[c + 1]]
        lo = int((index[rows] - depth[rows]).min())
        n_idx = int(index[rows].max()) + 1 - lo
        total = np.zeros((n_idx, k))
        count = np.zeros((n_idx, k))
        h = hits[rows]
        valid = np.isfinite(h)
        np.add.at(total, index[rows] - lo, np.where(valid, h, 0.0))
        np.add.at(count, index[rows] - lo, valid.astype(float))
        # a user turn scored in several windows: average its baseline hits
        mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
        has = (count > 0).astype(float)
        cs_h = np.vstack([np.zeros((1, k)), np.cumsum(mean, axis=0)])
        cs_n = np.vstack([np.zeros((1, k)), np.cumsum(has, axis=0)])
        a = index[rows] - depth[rows] - lo
        b = index[rows] - lo
        num = cs_h[b] - cs_h[a]
        den = cs_n[b] - cs_n[a]
        out[rows] = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out
