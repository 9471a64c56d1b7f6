"""How many conversations per chatbot does a replicated study need? Power and precision of one
replicated design on SIMULATED studies (issue 54, item 6).

A *cell* is a number of conversations per chatbot, turns per conversation, raters and their kind
(one LLM judge, or human raters), and a planted difference: two chatbots from one population,
the first with its hurdle logit of every behaviour raised by ``shift``
(:func:`~delusion_bayes.data.replicated_simulate.simulate_replicated`'s ``shift_first``), so its
behaviours occur more often at every stage. ``n_sims`` studies per cell (seeds ``seed ..``) are
analysed as the replicated stage analyses them, on one behaviour (``item``):

- **power**: the share of studies whose chatbot contrast rejects at 0.05 (the stage's
  permutation test on conversation means, paired by prompt:
  :func:`~delusion_bayes.baselines.replicated_compare.chatbot_contrasts`), with its binomial SE;
- **width**: the mean width of the first chatbot's 95% conversation-bootstrap interval of its
  mean per turn (:func:`~delusion_bayes.baselines.replicated.item_means`);
- **true difference**: the mean over studies of the simulator's ``true_item_mean`` difference
  (a new conversation's expected mean per turn, chatbot 1 minus chatbot 2).

The baselines only: a behaviour-model fit per study (minutes) would make a grid of hours; the
posterior's power on the same studies is owed (docs/design.md).

    .venv/bin/python experiments/bench/replicated_design.py            # the default grid
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

#: what makes a cell (the grid's factors)
CELL: tuple[str, ...] = ("n_conversations", "n_turns", "n_raters", "rater_kind", "shift")
#: the chatbots of the planted contrast share one trajectory population (no between-chatbot
#: spread): the only difference is the planted shift
SAME_POPULATION = {"sd_t50": 0.0, "sd_log_k": 0.0, "sd_L_logit": 0.0}
#: a design's behaviour and its preset (one judge, Spiral-Bench-like counts capped at 5)
ITEM = "delusion_reinforcement"
PRESET = "spiral_like"


def simulate_design_study(cell: Mapping[str, Any], seed: int, *, n_truth: int = 400):
    """One SIMULATED replicated study of ``cell``: two chatbots from one population, the first
    shifted by ``cell["shift"]`` (module docstring)."""
    from ..data.replicated_simulate import simulate_replicated

    return simulate_replicated(
        PRESET,
        seed=int(seed),
        n_models=2,
        n_conversations=int(cell["n_conversations"]),
        n_turns=int(cell["n_turns"]),
        n_raters=int(cell["n_raters"]),
        rater_kind=str(cell["rater_kind"]),
        shift_first=float(cell["shift"]),
        items=(ITEM,),
        n_truth=n_truth,
        **SAME_POPULATION,
    )


def design_row(cell: Mapping[str, Any], seed: int, *, n_boot: int = 500) -> dict[str, Any]:
    """One study of ``cell`` analysed: the permutation p, the bootstrap width, the truth."""
    from ..baselines.replicated import item_means
    from ..baselines.replicated_compare import chatbot_contrasts

    t0 = time.perf_counter()
    ds = simulate_design_study(cell, seed)
    truth = ds["true_item_mean"].sel(item=ITEM).values
    contrast = chatbot_contrasts(ds, n_mc=20_000, seed=seed).iloc[0]
    means = item_means(ds, n_boot=n_boot, seed=seed).set_index("model")
    first = means.loc[str(ds["model"].values[0])]
    return {
        **{k: cell[k] for k in CELL},
        "seed": int(seed),
        "true_diff": float(truth[0] - truth[1]),
        "diff": float(contrast["diff"]),
        "pvalue": float(contrast["pvalue"]),
        "width95": float(first["ci_high"] - first["ci_low"]),
        "seconds": time.perf_counter() - t0,
    }


def grid(
    n_conversations: Iterable[int] = (3, 5, 8, 10, 15, 20, 30),
    n_turns: Iterable[int] = (8, 19),
    raters: Iterable[tuple[int, str]] = ((1, "judge"), (3, "human")),
    shifts: Iterable[float] = (0.0, 0.7, 1.4),
) -> list[dict[str, Any]]:
    """The cells of a full factorial grid."""
    return [
        dict(zip(CELL, (c, t, r, kind, s), strict=True))
        for c in n_conversations
        for t in n_turns
        for r, kind in raters
        for s in shifts
    ]


def run_design(
    cells: list[dict[str, Any]],
    n_sims: int,
    *,
    seed: int = 0,
    n_boot: int = 500,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Every cell's ``n_sims`` studies (seeds ``seed .. seed + n_sims - 1``), one row each."""
    rows = []
    for i, cell in enumerate(cells):
        rows += [design_row(cell, seed + j, n_boot=n_boot) for j in range(n_sims)]
        if progress is not None:
            progress(i + 1, len(cells))
    return pd.DataFrame(rows)


def design_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell: S, the mean true difference, power (p < 0.05) with its binomial SE, the mean
    bootstrap width, seconds per study."""
    g = rows.groupby(list(CELL), sort=False)
    out = g.agg(
        S=("seed", "size"),
        true_diff=("true_diff", "mean"),
        power=("pvalue", lambda p: float((p < 0.05).mean())),
        width95=("width95", "mean"),
        seconds=("seconds", "mean"),
    ).reset_index()
    out.insert(
        out.columns.get_loc("power") + 1,
        "power_se",
        np.sqrt(out["power"] * (1 - out["power"]) / out["S"]),
    )
    return out


def headline(table: pd.DataFrame, target: float = 0.8) -> list[str]:
    """Per turns x raters: the fewest conversations per chatbot whose power reaches ``target``
    (or that none of the grid's does), as sentences; every one says SIMULATED."""
    lines = []
    for (turns, n_r, kind, _), g in table.groupby(
        ["n_turns", "n_raters", "rater_kind", "shift"], sort=False
    ):
        g = g.sort_values("n_conversations")
        ok = g[g["power"] >= target]
        who = "one LLM judge" if kind == "judge" and n_r == 1 else f"{n_r} {kind} raters"
        diff = f"{g['true_diff'].mean():.2f}"
        if ok.empty:
            need = f"more than {int(g['n_conversations'].max())} conversations per chatbot"
        else:
            n, power = int(ok.iloc[0]["n_conversations"]), float(ok.iloc[0]["power"])
            need = f"{n} conversations per chatbot (power {power:.2f})"
        lines.append(
            f"SIMULATED: to tell two chatbots apart by {diff} on {ITEM.replace('_', ' ')} (mean "
            f"per turn, 0-5) with {target:.0%} power, {turns}-turn conversations rated by {who} "
            f"need {need}."
        )
    return lines


__all__ = [
    "CELL",
    "ITEM",
    "design_row",
    "design_table",
    "grid",
    "headline",
    "run_design",
    "simulate_design_study",
]
