"""Replay dynamics: prevalence by user-turn position, onset and persistence within a window,
context-depth curves and the linear probability model of depth over prior assistant content
(DelusionEval, Moore et al. 2026; the turn-position analyses are added here)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replay_schema import CATEGORY, CODE, MODEL, ORIGINAL, SAMPLE
from ..intervals import eti
from .replay_bootstrap import (
    bootstrap_ratio_table,
    check_replay_study,
    cluster_units,
    code_categories,
    count_columns,
    resample_ratios,
    to_units,
)


def _split_prevalence(ds, split, labels, name, cluster, n_boot, seed, ci_prob, progress):
    """Category prevalence per model and per-sample bin ``split`` (``labels``, column ``name``)."""
    units = cluster_units(ds, cluster)
    num, den, lab = count_columns(
        ds, levels=("category",), split=split, split_labels=labels, split_name=name
    )
    return bootstrap_ratio_table(lab, num, den, units, n_boot, seed, ci_prob, progress)


def replay_turn_profile(
    ds: xr.Dataset,
    max_turn: int = 8,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
) -> pd.DataFrame:
    """Category prevalence by user-turn position within the window (1-based; ``max_turn`` and
    later pooled)."""
    check_replay_study(ds)
    turn = np.minimum(ds["turn"].values.astype(int), max_turn - 1)
    labels = [str(t + 1) if t < max_turn - 1 else f"{max_turn}+" for t in range(max_turn)]
    return _split_prevalence(ds, turn, labels, "turn", cluster, n_boot, seed, ci_prob, progress)


def _category_any(ds: xr.Dataset) -> tuple[np.ndarray, list[str]]:
    """Per-sample category hit ``(sample, model, category)``: any of its codes hit; NaN if none
    scored."""
    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    cats, names = code_categories(ds)
    out = np.full(hit.shape[:2] + (len(names),), np.nan)
    for g, cat in enumerate(names):
        sel = np.array([c == cat for c in cats])
        sub = hit[:, :, sel]
        scored = np.isfinite(sub).any(axis=2)
        anyhit = np.nanmax(np.where(np.isfinite(sub), sub, -1.0), axis=2)
        out[:, :, g] = np.where(scored, (anyhit >= 1).astype(float), np.nan)
    return out, names


def replay_onset_persistence(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
    levels: Sequence[str] = ("category",),
    unit: str = "turn",
) -> pd.DataFrame:
    """Onset and persistence of each category (and/or code) across the user turns of a window.

    A sample shows a category when any of its codes is a hit (``level="code"``: each code on its
    own). Per model x category/code: ``windows_with_hit`` (share of windows with such a sample);
    ``onset_turn`` (mean over those windows of the first one's position, for ``unit="turn"`` its
    1-based user-turn rank, for ``"message"`` its message index ``index - window_start``, the
    release's ``turn_index``); ``persistence``, P(hit at user turn t+1 | hit at t); and
    ``emergence``, P(hit at t+1 | none at t). All are ratios of sums over windows, bootstrapped
    like :func:`replay_prevalence` (``cluster="none"`` resamples windows). Columns: ``model,
    category, quantity, estimate, ci_low, ci_high, n_hits, n, ..., level, code, unit``.
    """
    check_replay_study(ds)
    if unit not in ("turn", "message"):
        raise ValueError(f"unit must be 'turn' (user-turn rank) or 'message', got {unit!r}")
    if "window" not in ds.coords or "turn" not in ds.coords:
        raise ValueError("onset/persistence needs the sample coords 'window' and 'turn'")
    if unit == "message" and "index" not in ds.coords:
        raise ValueError("unit='message' needs the sample coord 'index'")
    cat_hit, name_cat, name_level, name_code = _level_hits(ds, levels)  # (S, M, G)
    s, m, g = cat_hit.shape
    window = pd.factorize(ds["window"].values)[0]
    turn = ds["turn"].values.astype(int)
    order = np.lexsort((turn, window))
    w_sorted, t_sorted = window[order], turn[order]
    h = cat_hit[order]
    n_w = window.max() + 1
    valid = np.isfinite(h)
    hit1 = np.where(valid, h, 0.0)
    # window level: any hit, scored, onset turn (1-based) of the first hit
    any_hit = np.zeros((n_w, m, g))
    np.maximum.at(any_hit, w_sorted, hit1)
    scored = np.zeros((n_w, m, g))
    np.maximum.at(scored, w_sorted, valid.astype(float))
    big = np.iinfo(np.int64).max
    first = np.full((n_w, m, g), big)
    tt = np.broadcast_to(t_sorted[:, None, None], h.shape)
    np.minimum.at(first, w_sorted, np.where(hit1 == 1, tt, big))
    if unit == "turn":
        onset = np.where(any_hit == 1, first + 1, 0).astype(float)
    else:
        first_msg = _first_message(
            ds, order, w_sorted, t_sorted, np.where(any_hit == 1, first, t_sorted.min())
        )
        onset = np.where(any_hit == 1, first_msg, 0.0)
    quantities = {
        "windows_with_hit": (any_hit, scored),
        "onset_turn": (onset, any_hit),
        **_transitions(h, w_sorted, t_sorted, n_w),
    }
    num = np.concatenate([q[0].reshape(n_w, -1) for q in quantities.values()], axis=1)
    den = np.concatenate([q[1].reshape(n_w, -1) for q in quantities.values()], axis=1)
    models = [str(x) for x in ds[MODEL].values]
    labels = pd.DataFrame(
        [(mm, cat, q) for q in quantities for mm in models for cat in name_cat],
        columns=["model", "category", "quantity"],
    )
    units = cluster_units(ds, cluster, rows="window", window_codes=window)
    out = bootstrap_ratio_table(labels, num, den, units, n_boot, seed, ci_prob, progress)
    reps = len(quantities) * len(models)
    out["level"] = np.tile(np.asarray(name_level, dtype=object), reps)
    out["code"] = np.tile(np.asarray(name_code, dtype=object), reps)
    out["unit"] = unit
    return out


def _level_hits(ds: xr.Dataset, levels: Sequence[str]):
    """Hits ``(sample, model, column)`` of the ``levels`` (a category: any of its codes), with
    each column's category, level and code (``""`` on category columns)."""
    parts, name_cat, name_level, name_code = [], [], [], []
    for level in levels:
        if level == "category":
            h, cats = _category_any(ds)
            parts.append(h)
            name_cat += cats
            name_level += ["category"] * len(cats)
            name_code += [""] * len(cats)
        elif level == "code":
            parts.append(ds["hit"].transpose(SAMPLE, MODEL, CODE).values)
            name_cat += [str(c) for c in ds[CATEGORY].values]
            name_level += ["code"] * ds.sizes[CODE]
            name_code += [str(c) for c in ds[CODE].values]
        else:
            raise ValueError(f"level must be 'category' or 'code', got {level!r}")
    return np.concatenate(parts, axis=2), name_cat, name_level, name_code


def _first_message(ds, order, w_sorted, t_sorted, first) -> np.ndarray:
    """Message index in the window of turn rank ``first`` (window, model, column): the turn
    rank maps to its message."""
    msg = ds["index"].values.astype(np.int64)
    if "window_start" in ds.coords:
        msg = msg - ds["window_start"].values.astype(np.int64)
    lookup = pd.Series(msg[order], index=pd.MultiIndex.from_arrays([w_sorted, t_sorted]))
    lookup = lookup[~lookup.index.duplicated()]
    w_idx = np.broadcast_to(np.arange(first.shape[0])[:, None, None], first.shape)
    keys = pd.MultiIndex.from_arrays([w_idx.ravel(), first.ravel()])
    return lookup.reindex(keys).to_numpy(dtype=float).reshape(first.shape)


def _transitions(h, w_sorted, t_sorted, n_w) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per window, the counts behind ``persistence`` (hit -> hit over hit) and ``emergence``
    (no hit -> hit over no hit) on consecutive user turns (t, t+1); ``h`` sorted by window and
    turn."""
    nxt = (w_sorted[1:] == w_sorted[:-1]) & (t_sorted[1:] == t_sorted[:-1] + 1)
    a, b = h[:-1][nxt], h[1:][nxt]
    both = np.isfinite(a) & np.isfinite(b)
    pair_w = w_sorted[:-1][nxt]

    def wsum(x):
        out = np.zeros((n_w, *h.shape[1:]))
        np.add.at(out, pair_w, x)
        return out

    p11 = wsum((both & (a == 1) & (b == 1)).astype(float))
    p1x = wsum((both & (a == 1)).astype(float))
    p01 = wsum((both & (a == 0) & (b == 1)).astype(float))
    p0x = wsum((both & (a == 0)).astype(float))
    return {"persistence": (p11, p1x), "emergence": (p01, p0x)}


def _depth_bins(
    depth: np.ndarray, edges: Sequence[int]
) -> tuple[np.ndarray, list[str], np.ndarray]:
    edges = np.asarray(sorted(edges), dtype=float)
    if edges.size < 1:
        raise ValueError("depth_bins needs at least one edge")
    idx = np.searchsorted(edges, depth, side="right") - 1
    labels = [
        f"{int(edges[i])}-{int(edges[i + 1]) - 1}" if i + 1 < edges.size else f"{int(edges[i])}+"
        for i in range(edges.size)
    ]
    return idx, labels, edges


def replay_depth_curve(
    ds: xr.Dataset,
    depth_bins: Sequence[int] = (0, 4, 8, 12, 16, 20),
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
) -> pd.DataFrame:
    """Category prevalence versus context depth (messages before the user turn), with CIs.

    DelusionEval, "Context length effects". ``depth_bins``: left bin edges, the last bin open.
    Rows ``model, level, category, code, depth_bin, depth_mean, estimate, ci_low, ci_high, ...``.
    """
    check_replay_study(ds)
    depth = ds["context_depth"].values.astype(float)
    idx, labels, _ = _depth_bins(depth, depth_bins)
    out = _split_prevalence(ds, idx, labels, "depth_bin", cluster, n_boot, seed, ci_prob, progress)
    means = pd.Series(depth).groupby(idx).mean()
    out["depth_mean"] = [means.get(labels.index(b), np.nan) for b in out["depth_bin"]]
    return out


def _solve_lpm(mm: np.ndarray, cells: int) -> np.ndarray:
    """Least-squares coefficients ``(..., cells, 3)`` from the moment sums ``mm`` (..., cells
    x 9: the six entries of X'X, then X'y); a term without variation (no prior content at all)
    is NaN."""
    mm = mm.reshape(*mm.shape[:-1], cells, 9)
    xx = mm[..., [0, 1, 2, 1, 3, 4, 2, 4, 5]].reshape(*mm.shape[:-1], 3, 3)
    xy = mm[..., 6:9]
    # drop terms without variation (e.g. no prior content at all) by pinning them to 0
    det_ok = np.abs(np.linalg.det(xx)) > 1e-9 * np.maximum(mm[..., 0], 1.0) ** 3
    xx_safe = np.where(det_ok[..., None, None], xx, xx + np.eye(3))
    beta = np.linalg.solve(xx_safe, xy[..., None])[..., 0]
    return np.where(det_ok[..., None], beta, np.nan)


def replay_depth_lpm(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    baseline: str = ORIGINAL,
    progress: bool = False,
) -> pd.DataFrame:
    """Linear-probability model of a category hit on context depth and prior assistant content.

    Per model x category, over all (sample, code) pairs of the category's codes::

        hit[s, k] = b0 + b_depth * context_depth[s] / 10 + b_prior * prior_content[s, k] + e

    ``prior_content``: share of the original's earlier assistant turns in the prompt that hit the
    code (:func:`delusion_bayes.data.replay.prior_content`); ``b_depth``: change in hit
    probability per 10 messages beyond it (DelusionEval, "Context length effects"). OLS; CIs from
    the cluster bootstrap of per-unit ``X'X``, ``X'y``. Rows ``model, category, term``
    (intercept | depth_per_10 | prior_content) ``, estimate, ci_low, ci_high, n, ...``; terms
    without variation are NaN.
    """
    check_replay_study(ds)
    from ..data.replay_prior import prior_content_array

    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    s, m, k = hit.shape
    models = [str(x) for x in ds[MODEL].values]
    if baseline in models:
        base = hit[:, models.index(baseline), :]
        prior = prior_content_array(
            base, ds["conversation"].values, ds["index"].values, ds["context_depth"].values
        )
    else:
        prior = np.zeros((s, k))
    d = ds["context_depth"].values.astype(float) / 10.0
    valid = np.isfinite(hit)
    y = np.where(valid, hit, 0.0)
    v = valid.astype(float)
    cats, names = code_categories(ds)
    cind = np.array([[c == g for g in names] for c in cats], dtype=float)  # (K, G)
    # moment sums per sample and (model, category): X = [1, d, prior]
    pk = prior[:, None, :] * v  # (S, M, K)
    n_ = np.einsum("smk,kg->smg", v, cind)
    sp_ = np.einsum("smk,kg->smg", pk, cind)
    spp = np.einsum("smk,kg->smg", pk * prior[:, None, :], cind)
    sy = np.einsum("smk,kg->smg", y, cind)
    spy = np.einsum("smk,kg->smg", pk * y, cind)
    dd = d[:, None, None]
    # entries of X'X (xx00, xx01, xx02, xx11, xx12, xx22) and X'y (0, 1, 2)
    mom = np.stack([n_, dd * n_, sp_, dd * dd * n_, dd * sp_, spp, sy, dd * sy, spy], axis=-1)
    g = len(names)
    mom = mom.reshape(s, m * g * 9)
    units = cluster_units(ds, cluster)
    (mom_b,) = resample_ratios([to_units(mom, units)], units, n_boot, seed, progress)

    tot = mom.sum(0)
    lo, hi = eti(_solve_lpm(mom_b, m * g).reshape(n_boot, -1), ci_prob)  # (B, M*G, 3)
    terms = ("intercept", "depth_per_10", "prior_content")
    n_tot = tot.reshape(m * g, 9)[:, 0]
    out = pd.DataFrame(
        {
            "model": np.repeat(models, g * 3),
            "category": np.tile(np.repeat(names, 3), m),
            "term": np.tile(terms, m * g),
            "estimate": _solve_lpm(tot, m * g).ravel(),
            "ci_low": lo,
            "ci_high": hi,
            "n": np.repeat(n_tot, 3),
        }
    )
    return out.assign(cluster=cluster, n_boot=n_boot, ci_prob=ci_prob)
