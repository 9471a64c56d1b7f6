"""Replicated studies: agreement between raters per item, and the trajectory paper's milestones
per conversation where the study has the paper's recognition item (issue 50, item 3).

Reliability: Krippendorff's alpha per item over units = judged turns ``(model, conversation,
turn)``, at the level the item's declared scale calls for (:data:`ALPHA_LEVEL`), with the
package's unit bootstrap (:func:`~delusion_bayes.baselines.alpha.alpha_bootstrap`). Milestones:
the raters' consensus (median, :func:`~delusion_bayes.baselines.consensus.consensus_np`) of
``recognition`` per turn, then :func:`~delusion_bayes.baselines.milestones.milestones` per
conversation, each censored at its own last rated turn + 1, summarised per chatbot with the
conversation-clustered bootstrap of
:func:`~delusion_bayes.baselines.replicated_compare.first_occurrence_summary`.

References
----------
1. Krippendorff, K. (2011). *Computing Krippendorff's alpha-reliability*, sections C-E.
2. The trajectory paper (``papers/escalating-delusions-trajectories.txt``), Table 1: first
   clinical framing (consensus >= 3), first stable clinical framing (first run of >= 3
   consecutive days at 4), censored at the last day + 1.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replicated import CONVERSATION, ITEM, MODEL, RATER, TURN, validate_replicated
from ..data.schema import DAY
from .alpha import alpha_bootstrap
from .consensus import consensus_np
from .milestones import milestones
from .replicated import turn_slots
from .replicated_compare import first_occurrence_summary

#: Krippendorff's alpha level of each declared item scale
ALPHA_LEVEL: dict[str, str] = {"ordinal": "ordinal", "binary": "nominal", "count": "interval"}
#: the item whose consensus the milestones read, and the scale it must declare (the paper's)
MILESTONE_ITEM = "recognition"
MILESTONE_SCALE = ("ordinal", 1.0, 4.0)
#: the milestones computed per conversation (the paper's names, Table 1)
MILESTONE_NAMES: tuple[str, ...] = ("first_clinical", "first_stable")


def _item_domain(ds: xr.Dataset, i: int) -> tuple[float, ...] | None:
    """The legal values of an ordinal/binary item (None for a count: the observed ones)."""
    scale = str(ds["item_scale"].values[i])
    if scale == "count":
        return None
    lo, hi = float(ds["item_min"].values[i]), float(ds["item_max"].values[i])
    return tuple(np.arange(lo, hi + 1.0))


def reliability(
    ds: xr.Dataset, n_boot: int = 1000, seed: int = 42, ci_prob: float = 0.95
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Krippendorff's alpha per item with two or more raters (reference 1).

    Units are the judged turns ``(model, conversation, turn)``; a rater who never scored the
    item does not count. The level follows the item's scale (:data:`ALPHA_LEVEL`: ordinal ->
    ordinal over the declared levels, binary -> nominal, count -> interval over the observed
    values). The interval is the percentile bootstrap over pairable units (turns i.i.d.; turns
    of one conversation are not independent, so it is on the narrow side).

    Returns
    -------
    (pandas.DataFrame, list of dict)
        ``item, n_raters, n_units, alpha, ci_low, ci_high, level, rater_kinds, n_boot`` (one row
        per item with >= 2 raters) and the skip records ``{analysis, reason, files}`` of the
        others (one rater: Spiral-Bench's single judge).
    """
    ds = validate_replicated(ds)
    score = ds["score"].transpose(RATER, MODEL, CONVERSATION, TURN, ITEM).values
    kinds = np.asarray(ds["rater_kind"].values).astype(str)
    rows, skipped = [], {}
    for i, item in enumerate(ds[ITEM].values):
        data = score[..., i].reshape(score.shape[0], -1)
        raters = np.isfinite(data).any(axis=1)
        data = data[raters][:, np.isfinite(data[raters]).sum(axis=0) >= 1]
        level = ALPHA_LEVEL[str(ds["item_scale"].values[i])]
        if raters.sum() < 2:
            skipped.setdefault(f"{int(raters.sum())} rater(s)", []).append(str(item))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no variation: alpha NaN, said
            try:
                res = alpha_bootstrap(
                    data, level, _item_domain(ds, i), n_boot=n_boot, ci=ci_prob, seed=seed
                )
            except ValueError as err:  # no unit rated twice
                skipped.setdefault(str(err), []).append(str(item))
                continue
        rows.append(
            {
                "item": str(item),
                "n_raters": int(raters.sum()),
                "n_units": int(res["n_units"]),
                "alpha": float(res["alpha"]),
                "ci_low": float(res["ci_low"]),
                "ci_high": float(res["ci_high"]),
                "level": level,
                "rater_kinds": "+".join(sorted(set(kinds[raters]))),
                "n_boot": int(n_boot),
            }
        )
    return pd.DataFrame(rows, columns=RELIABILITY_COLUMNS), [
        _skip(items, why) for why, items in skipped.items()
    ]


RELIABILITY_COLUMNS = [
    "item", "n_raters", "n_units", "alpha", "ci_low", "ci_high", "level", "rater_kinds", "n_boot"
]  # fmt: skip


def _skip(items: list[str], why: str) -> dict[str, Any]:
    """One skip record for the items skipped for the same reason."""
    return {
        "analysis": "reliability",
        "reason": f"{', '.join(items)}: {why} (alpha needs two or more raters of an item)",
        "files": ["reliability.csv"],
    }


def milestone_item(ds: xr.Dataset) -> tuple[int | None, str]:
    """The index of the paper's ``recognition`` item on 1-4, or None and why not."""
    items = [str(i) for i in ds[ITEM].values]
    if MILESTONE_ITEM not in items:
        return None, f"no {MILESTONE_ITEM!r} item (the paper's milestones read recognition 1-4)"
    i = items.index(MILESTONE_ITEM)
    got = (
        str(ds["item_scale"].values[i]),
        float(ds["item_min"].values[i]),
        float(ds["item_max"].values[i]),
    )
    if got != MILESTONE_SCALE:
        return None, f"item {MILESTONE_ITEM!r} is {got[0]} {got[1]:g}..{got[2]:g}, not ordinal 1..4"
    return i, ""


def conversation_milestones(
    ds: xr.Dataset,
    *,
    clinical_at: float = 3,
    stable_at: float = 4,
    stable_run: int = 3,
    rule: str = "median",
    half_rule: str = "keep",
    missing: str = "skip",
) -> pd.DataFrame | None:
    """The paper's milestones per conversation (reference 2) from the raters' consensus of
    ``recognition``: ``first_clinical`` (first turn at ``>= clinical_at``) and ``first_stable``
    (first turn of a run of ``stable_run`` turns at ``>= stable_at``; ``missing`` as in
    :func:`~delusion_bayes.baselines.milestones.milestones`). A milestone never reached is
    censored at the conversation's last rated turn + 1. None when the study has no
    ``recognition`` item on 1-4 (:func:`milestone_item`).

    Returns
    -------
    pandas.DataFrame or None
        ``model, conversation, [category], milestone, first_turn, observed, censor_turn,
        n_turns_scored`` (``first_turn`` = ``censor_turn`` when not ``observed``).
    """
    ds = validate_replicated(ds)
    i, _ = milestone_item(ds)
    if i is None:
        return None
    score = ds["score"].transpose(RATER, MODEL, CONVERSATION, TURN, ITEM).values[..., i]
    cons = consensus_np(score, axis=0, rule=rule, half_rule=half_rule)  # (M, C, T)
    cons = np.where(turn_slots(ds), cons, np.nan)
    turns = ds[TURN].values.astype(float)
    study_censor = int(turns.max()) + 1
    # the milestones' time axis is the trajectory paper's day: a turn here
    stage = xr.DataArray(cons, dims=(MODEL, CONVERSATION, DAY), coords={DAY: turns.astype(int)})
    ms = milestones(
        stage,
        stable_run=stable_run,
        censor_day=study_censor,
        clinical_at=clinical_at,
        stable_at=stable_at,
        missing=missing,
    )
    scored = np.isfinite(cons)
    last = np.where(scored, turns, -np.inf).max(axis=-1)
    censor = np.where(np.isfinite(last), last + 1.0, np.nan)
    return _milestone_rows(ds, ms, censor, scored.sum(axis=-1), study_censor)


def _milestone_rows(ds, ms, censor, n_scored, study_censor) -> pd.DataFrame:
    present = ds["has_conversation"].transpose(MODEL, CONVERSATION).values
    rows = []
    for mi, ci in zip(*np.nonzero(present), strict=True):
        cat = {"category": str(ds["category"].values[mi, ci])} if "category" in ds.coords else {}
        for name in MILESTONE_NAMES:
            value = float(ms[name].values[mi, ci])
            observed = value < study_censor
            n = int(n_scored[mi, ci])
            rows.append(
                {
                    "model": str(ds[MODEL].values[mi]),
                    "conversation": str(ds[CONVERSATION].values[ci]),
                    **cat,
                    "milestone": name,
                    "first_turn": value if observed else (censor[mi, ci] if n else np.nan),
                    "observed": bool(observed),
                    "censor_turn": censor[mi, ci],
                    "n_turns_scored": n,
                }
            )
    return pd.DataFrame(rows)


def milestone_summary(
    table: pd.DataFrame, n_boot: int = 2000, seed: int = 42, ci_prob: float = 0.95
) -> pd.DataFrame:
    """Per chatbot x milestone from :func:`conversation_milestones`: the share of conversations
    reaching it and the median turn (censored conversations at their censoring turn), with the
    conversation-clustered (categories -> conversations) percentile intervals of
    :func:`~delusion_bayes.baselines.replicated_compare.first_occurrence_summary`.

    Returns
    -------
    pandas.DataFrame
        ``model, milestone, n_conversations, n_observed, share_occurring, share_ci_low,
        share_ci_high, median_first_turn, median_ci_low, median_ci_high, median_censored,
        cluster, n_boot, ci_prob``.
    """
    out = first_occurrence_summary(
        table.rename(columns={"milestone": "item"}), n_boot, seed, ci_prob
    )
    return out.rename(columns={"item": "milestone"})


__all__ = [
    "ALPHA_LEVEL",
    "MILESTONE_ITEM",
    "MILESTONE_NAMES",
    "RELIABILITY_COLUMNS",
    "conversation_milestones",
    "milestone_item",
    "milestone_summary",
    "reliability",
]
