"""Replicated studies: the turn of first occurrence per conversation, and chatbot contrasts on
conversation-level means (issue 50).

References
----------
1. Davison, A. C. & Hinkley, D. V. (1997). *Bootstrap Methods and their Application*, sec. 3.8
   (two-stage resampling of clustered data).
2. Good, P. (2005). *Permutation, Parametric, and Bootstrap Tests of Hypotheses*, 3rd ed.,
   sec. 3.6.2 (one-sample / paired permutation test: flip the signs of the differences).
3. The trajectory paper (``papers/escalating-delusions-trajectories.txt``), Table 1: a
   milestone never reached is censored at the last day + 1 (``data.schema.censor_day``).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replicated import CONVERSATION, ITEM, MODEL, TURN, validate_replicated
from ..intervals import eti
from .permutation import rank_sum_test
from .replay_bootstrap import bootstrap_weights
from .replicated import conversation_means, rule_of, turn_scores, turn_slots


def first_occurrence(ds: xr.Dataset, threshold: float | None = None) -> pd.DataFrame:
    """Per conversation and item: the first turn whose score is above ``threshold`` (None: the
    item's ``item_min``), among the turns that have a score; never: censored at the
    conversation's last scored turn + 1 (reference 3). A turn without a score (a failed judge
    reply) is not a turn without the behaviour: it is skipped, and a first occurrence after it
    may be later than the true one.

    Returns
    -------
    pandas.DataFrame
        ``model, conversation, [category], item, first_turn, observed, censor_turn,
        n_turns_scored`` (``first_turn`` = ``censor_turn`` when not ``observed``; NaN when the
        conversation has no scored turn for the item).
    """
    ds = validate_replicated(ds)
    s = turn_scores(ds)  # (model, conversation, turn, item)
    s = np.where(turn_slots(ds)[..., None], s, np.nan)
    turns = ds[TURN].values.astype(float)
    cut = ds["item_min"].values.astype(float) if threshold is None else float(threshold)
    scored = np.isfinite(s)
    hit = scored & (np.nan_to_num(s, nan=-np.inf) > cut)
    t = turns[None, None, :, None]
    first = np.where(hit, t, np.inf).min(axis=2)
    last = np.where(scored, t, -np.inf).max(axis=2)
    censor = np.where(np.isfinite(last), last + 1, np.nan)
    observed = np.isfinite(first)
    present = ds["has_conversation"].transpose(MODEL, CONVERSATION).values
    rows = []
    for mi, ci in zip(*np.nonzero(present), strict=True):
        cat = {"category": str(ds["category"].values[mi, ci])} if "category" in ds.coords else {}
        for ii, item in enumerate(ds[ITEM].values):
            n = int(scored[mi, ci, :, ii].sum())
            rows.append(
                {
                    "model": str(ds[MODEL].values[mi]),
                    "conversation": str(ds[CONVERSATION].values[ci]),
                    **cat,
                    "item": str(item),
                    "first_turn": first[mi, ci, ii] if observed[mi, ci, ii] else censor[mi, ci, ii],
                    "observed": bool(observed[mi, ci, ii]),
                    "censor_turn": censor[mi, ci, ii],
                    "n_turns_scored": n,
                }
            )
    return pd.DataFrame(rows)


def weighted_medians(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The median of each resample: ``values (n,)`` drawn ``weights (B, n)`` times (integers),
    as :func:`numpy.median` of the repeated values (the mean of the two middle ones when the
    total is even). Written here because the replay machinery resamples ratios of sums, and a
    median is not one."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[:, order]
    cum = np.cumsum(w, axis=1)
    total = cum[:, -1]
    lo_pos, hi_pos = np.floor((total + 1) / 2), np.ceil((total + 1) / 2)  # 1-based ranks
    lo = v[(cum < lo_pos[:, None]).sum(axis=1).clip(max=v.size - 1)]
    hi = v[(cum < hi_pos[:, None]).sum(axis=1).clip(max=v.size - 1)]
    return np.where(total > 0, (lo + hi) / 2, np.nan)


def first_occurrence_summary(
    table: pd.DataFrame, n_boot: int = 2000, seed: int = 42, ci_prob: float = 0.95
) -> pd.DataFrame:
    """Per chatbot x item, from :func:`first_occurrence`: the share of conversations where the
    behaviour occurs and the median first turn (censored conversations at their censoring
    turn), with percentile intervals over ``n_boot`` cluster resamples (categories then
    conversations where ``category`` names two or more, else conversations; reference 1).

    Returns
    -------
    pandas.DataFrame
        ``model, item, n_conversations, n_observed, share_occurring, share_ci_low,
        share_ci_high, median_first_turn, median_ci_low, median_ci_high, median_censored,
        cluster, n_boot, ci_prob`` (``median_censored``: half or more of the conversations are
        censored, so the median is a censoring turn, not an observed one).
    """
    rows = []
    for (model, item), g in table.dropna(subset=["first_turn"]).groupby(
        ["model", "item"], sort=False
    ):
        cats = g["category"].astype(str).to_numpy() if "category" in g else None
        scheme = "two-stage" if cats is not None and len(set(cats) - {""}) >= 2 else "conversation"
        part = pd.factorize(cats)[0] if scheme == "two-stage" else np.zeros(len(g), dtype=int)
        rng = np.random.default_rng(seed)
        w = np.concatenate(list(bootstrap_weights(part, scheme, n_boot, rng)), axis=0)
        obs = g["observed"].to_numpy(dtype=float)
        first = g["first_turn"].to_numpy(dtype=float)
        share_b = (w @ obs) / w.sum(axis=1)
        s_lo, s_hi = eti(share_b, ci_prob)
        m_lo, m_hi = eti(weighted_medians(first, w), ci_prob)
        share = obs.mean()
        rows.append(
            {
                "model": model,
                "item": item,
                "n_conversations": len(g),
                "n_observed": int(obs.sum()),
                "share_occurring": share,
                "share_ci_low": float(s_lo),
                "share_ci_high": float(s_hi),
                "median_first_turn": float(np.median(first)),
                "median_ci_low": float(m_lo),
                "median_ci_high": float(m_hi),
                "median_censored": bool(share <= 0.5),
                "cluster": scheme,
                "n_boot": int(n_boot),
                "ci_prob": float(ci_prob),
            }
        )
    return pd.DataFrame(rows)


def sign_flip_test(
    d: np.ndarray, max_exact: int = 16, n_mc: int = 100_000, seed: int = 42
) -> tuple[float, bool, float]:
    """Two-sided paired permutation test of mean(d) = 0 by flipping the signs of the differences
    (reference 2): exact over all ``2**n`` sign vectors when ``n <= max_exact``, else Monte Carlo
    ``(1 + #{as extreme}) / (1 + n_mc)``. Returns ``(pvalue, exact, n_permutations)``."""
    d = np.asarray(d, dtype=float)
    n = d.size
    if n == 0:
        return np.nan, False, 0.0
    obs = abs(d.sum())
    tol = 1e-9 * max(1.0, np.abs(d).sum())
    if n <= max_exact:
        signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2.0 - 1.0
        return float(np.mean(np.abs(signs @ d) >= obs - tol)), True, float(2**n)
    rng = np.random.default_rng(seed)
    count, done = 0, 0
    while done < n_mc:
        b = min(20_000, n_mc - done)
        signs = rng.integers(0, 2, size=(b, n)) * 2.0 - 1.0
        count += int((np.abs(signs @ d) >= obs - tol).sum())
        done += b
    return (1 + count) / (1 + n_mc), False, float(n_mc)


def _same_prompts(ds: xr.Dataset) -> bool:
    """Every chatbot ran the same set of prompts, each once (contrasts are then paired)."""
    if "prompt" not in ds.coords:
        return False
    present = ds["has_conversation"].transpose(MODEL, CONVERSATION).values
    prompts = ds["prompt"].transpose(MODEL, CONVERSATION).values
    sets = []
    for mi in range(present.shape[0]):
        p = [str(x) for x in prompts[mi][present[mi]]]
        if len(set(p)) != len(p) or "" in p:
            return False
        sets.append(set(p))
    return all(s == sets[0] for s in sets)


def chatbot_contrasts(
    ds: xr.Dataset,
    rule: str = "auto",
    max_exact: int = 16,
    n_mc: int = 100_000,
    seed: int = 42,
) -> pd.DataFrame:
    """Every pair of chatbots, per item, on conversation-level means (turns under one ``rule``,
    unscored turns left out).

    Paired by prompt when every chatbot ran the same prompts: a sign-flip permutation test of
    the mean difference (reference 2; exact up to ``max_exact`` pairs, else ``n_mc`` seeded
    Monte Carlo sign vectors). Otherwise the exact rank-sum test of the package
    (:func:`~delusion_bayes.baselines.permutation.rank_sum_test`) on the two sets of
    conversation means.

    Returns
    -------
    pandas.DataFrame
        ``item, a, b, paired, n_a, n_b, mean_a, mean_b, diff, pvalue, exact, n_permutations,
        method, rule`` (``diff`` = ``mean_a - mean_b``; paired: over the prompts both have).
    """
    ds = validate_replicated(ds)
    r = rule_of(ds, rule)
    mean = conversation_means(ds, r.name)["mean"]  # (model, conversation, item)
    present = ds["has_conversation"].transpose(MODEL, CONVERSATION).values
    paired = _same_prompts(ds)
    models = [str(m) for m in ds[MODEL].values]
    rows = []
    for ii, item in enumerate(ds[ITEM].values):
        series = {}
        for mi, m in enumerate(models):
            keys = ds["prompt"].values[mi] if paired else ds[CONVERSATION].values
            s = pd.Series(mean[mi, :, ii], index=[str(k) for k in keys])[present[mi]]
            series[m] = s.dropna()
        for a, b in combinations(models, 2):
            rows.append(_contrast(series[a], series[b], paired, max_exact, n_mc, seed))
            rows[-1].update(item=str(item), a=a, b=b, rule=r.name)
    cols = "item a b paired n_a n_b mean_a mean_b diff pvalue exact n_permutations method rule"
    return pd.DataFrame(rows)[cols.split()]


def _contrast(x: pd.Series, y: pd.Series, paired: bool, max_exact, n_mc, seed) -> dict:
    if paired:
        common = x.index.intersection(y.index)
        x, y = x[common], y[common]
        p, exact, n_perm = sign_flip_test((x - y).to_numpy(), max_exact, n_mc, seed)
        how = "exact" if exact else f"Monte Carlo ({n_mc} sign vectors, seed {seed})"
        method = f"sign-flip permutation test on paired differences by prompt, {how}"
    elif len(x) and len(y):
        res = rank_sum_test(x.to_numpy(), y.to_numpy(), seed=seed)
        p, exact, n_perm = res.pvalue, res.exact, res.n_arrangements
        method = f"rank-sum permutation test ({res.method})"
    else:
        p, exact, n_perm, method = np.nan, False, 0.0, "no conversations to compare"
    return {
        "paired": paired,
        "n_a": len(x),
        "n_b": len(y),
        "mean_a": x.mean() if len(x) else np.nan,
        "mean_b": y.mean() if len(y) else np.nan,
        "diff": (x.mean() - y.mean()) if len(x) and len(y) else np.nan,
        "pvalue": float(p),
        "exact": bool(exact),
        "n_permutations": float(n_perm),
        "method": method,
    }


__all__ = [
    "chatbot_contrasts",
    "first_occurrence",
    "first_occurrence_summary",
    "sign_flip_test",
    "weighted_medians",
]
