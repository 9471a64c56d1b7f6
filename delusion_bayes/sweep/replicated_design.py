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

With ``bayes`` (the fit's sampler arguments) the first ``n_bayes`` studies of a cell are also
fitted with the behaviour model (:func:`~delusion_bayes.models.behaviour.fit_behaviour`, the
replicated stage's model, with the gate's refits): **bayes power**, the share whose 95% interval
of the chatbot contrast for a new conversation excludes 0; **bayes width**, the first chatbot's
95% interval of its new-conversation mean; and **gate**, the share of fits that passed.

    .venv/bin/python experiments/bench/replicated_design.py            # the default grid
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
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


def design_row(
    cell: Mapping[str, Any],
    seed: int,
    *,
    n_boot: int = 500,
    bayes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One study of ``cell`` analysed: the permutation p, the bootstrap width, the truth; with
    ``bayes`` (``fit_behaviour``'s sampler arguments) also the behaviour model's columns."""
    from ..baselines.replicated import item_means
    from ..baselines.replicated_compare import chatbot_contrasts

    t0 = time.perf_counter()
    ds = simulate_design_study(cell, seed)
    truth = ds["true_item_mean"].sel(item=ITEM).values
    contrast = chatbot_contrasts(ds, n_mc=20_000, seed=seed).iloc[0]
    means = item_means(ds, n_boot=n_boot, seed=seed).set_index("model")
    first = means.loc[str(ds["model"].values[0])]
    row = {
        **{k: cell[k] for k in CELL},
        "seed": int(seed),
        "true_diff": float(truth[0] - truth[1]),
        "diff": float(contrast["diff"]),
        "pvalue": float(contrast["pvalue"]),
        "width95": float(first["ci_high"] - first["ci_low"]),
        "seconds": time.perf_counter() - t0,
    }
    if bayes is not None:
        row.update(bayes_columns(ds, {"seed": int(seed), **bayes}))
    return row


def bayes_columns(ds, fit_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The behaviour model's answer on one design study: whether the 95% interval of the chatbot
    contrast (first minus second, a new conversation each) excludes 0, the first chatbot's
    interval width, its coverage of the truth, the gate verdict after the refits and the time."""
    from ..inference.diagnostics import diagnose, gate
    from ..inference.refits import fit_with_refits
    from ..models.behaviour import fit_behaviour
    from ..models.behaviour_posterior import bayes_contrasts, bayes_item_means, reported_vars

    t0 = time.perf_counter()

    def make(**more):
        kw = {"log_prior": False, "posterior_predictive": False, "log_likelihood": False}
        return fit_behaviour(ds, **{**kw, **fit_kwargs, **more})

    tree = fit_with_refits(make, None)
    verdict = gate(tree, diagnose(tree, None, var_names=reported_vars(tree)))
    c = bayes_contrasts(tree).iloc[0]
    first = bayes_item_means(tree).iloc[0]
    truth = float(ds["true_item_mean"].sel(item=ITEM).values[0])
    return {
        "bayes_reject": bool(c["ci_low"] > 0 or c["ci_high"] < 0),
        "bayes_diff": float(c["diff"]),
        "bayes_width95": float(first["ci_high"] - first["ci_low"]),
        "bayes_cover95": bool(first["ci_low"] <= truth <= first["ci_high"]),
        "bayes_gate": bool(verdict["passed"]),
        "bayes_seconds": time.perf_counter() - t0,
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
    n_bayes: int = 0,
    bayes: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Every cell's ``n_sims`` studies (seeds ``seed .. seed + n_sims - 1``), one row each; the
    first ``n_bayes`` of a cell also fitted with the behaviour model (``bayes``: its sampler
    arguments, default the package's sampler defaults)."""
    rows = []
    for i, cell in enumerate(cells):
        for j in range(n_sims):
            kw = (bayes or {}) if j < n_bayes else None
            rows.append(design_row(cell, seed + j, n_boot=n_boot, bayes=kw))
        if progress is not None:
            progress(i + 1, len(cells))
    return pd.DataFrame(rows)


def design_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per cell: S, the mean true difference, power (p < 0.05) with its binomial SE, the mean
    bootstrap width, seconds per study; with behaviour-model rows also ``S_bayes``, its power
    (95% interval excludes 0) with SE, width, 95% coverage of the first chatbot's truth, the
    gate-clean share and seconds per fit."""
    g = rows.groupby(list(CELL), sort=False)
    out = g.agg(
        S=("seed", "size"),
        true_diff=("true_diff", "mean"),
        power=("pvalue", lambda p: float((p < 0.05).mean())),
        width95=("width95", "mean"),
        seconds=("seconds", "mean"),
    ).reset_index()
    out.insert(out.columns.get_loc("power") + 1, "power_se", _binomial_se(out["power"], out["S"]))
    if "bayes_reject" not in rows:
        return out
    flags = {"bayes_reject": float, "bayes_cover95": float, "bayes_gate": float}
    fitted = rows.dropna(subset=["bayes_reject"]).astype(flags)
    b = fitted.groupby(list(CELL), sort=False).agg(
        S_bayes=("seed", "size"),
        bayes_power=("bayes_reject", "mean"),
        bayes_width95=("bayes_width95", "mean"),
        bayes_cover95=("bayes_cover95", "mean"),
        gate_clean=("bayes_gate", "mean"),
        bayes_seconds=("bayes_seconds", "mean"),
    )
    b.insert(2, "bayes_power_se", _binomial_se(b["bayes_power"], b["S_bayes"]))
    return out.merge(b.reset_index(), on=list(CELL), how="left")


def _binomial_se(p: pd.Series, n: pd.Series) -> pd.Series:
    return np.sqrt(p * (1 - p) / n)


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


def cell_of(design: Any) -> dict[str, Any]:
    """The replicated cell of a ``design`` node (:class:`~.config.DesignConfig`)."""
    from ..config import group_config
    from .config import DesignConfig

    d = group_config(DesignConfig, design)
    kind = d.rater_kind
    if kind == "auto":
        kind = "judge" if int(d.n_raters) == 1 else "human"
    if kind not in ("judge", "human"):
        raise ValueError(f"design.rater_kind = {kind!r}; expected 'auto', 'judge' or 'human'")
    types = {"n_conversations": int, "n_turns": int, "n_raters": int}
    return {k: kind if k == "rater_kind" else types.get(k, float)(getattr(d, k)) for k in CELL}


def has_design(sweep_dir: str | Path) -> bool:
    """True when a multirun directory holds replicated design jobs."""
    return any(Path(sweep_dir).glob(f"**/design/{ROWS}"))


def summarize_design(
    sweep_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    plot: bool = True,
    formats: Sequence[str] = ("png", "pdf"),
) -> pd.DataFrame:
    """Gather every replicated design job's rows (through the results contract) into
    ``replicated_design_rows.csv``, ``replicated_design_table.csv``/``.md`` and
    ``replicated_power.png``/``.pdf``; print the headline (SIMULATED, said in each)."""
    from .. import results
    from ..plotting import save_figure
    from .coverage_metrics import markdown_table
    from .jobs import find_job_dirs

    sweep_dir = Path(sweep_dir)
    out = Path(out_dir) if out_dir is not None else sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    frames = [results.read(job, f"design/{ROWS}") for job in find_job_dirs(sweep_dir)]
    frames = [df for df in frames if df is not None and not df.empty]
    if not frames:
        raise ValueError(f"{sweep_dir} holds no design/{ROWS} (run experiment=design_replicated)")
    order = ["shift", "n_turns", "n_raters", "rater_kind", "n_conversations", "seed"]
    rows = pd.concat(frames, ignore_index=True).sort_values(order, ignore_index=True)
    rows.to_csv(out / "replicated_design_rows.csv", index=False)
    table = design_table(rows)
    table.to_csv(out / "replicated_design_table.csv", index=False)
    lines = headline(table[table["shift"] == table["shift"].max()])
    for line in lines:
        print(line)
    (out / "replicated_design_table.md").write_text(
        "# Replicated study design (SIMULATED studies)\n\n"
        + "\n".join(f"- {line}" for line in lines)
        + "\n\n"
        + markdown_table(table.round(3))
        + "\n"
    )
    if plot:
        save_figure(plot_power(table), out / "replicated_power", formats)
    return table


def plot_power(table: pd.DataFrame):
    """Power against conversations per chatbot, one panel per planted shift, one line per turns
    x raters (the permutation test solid, the behaviour model dashed where fitted), binomial SE
    bars, the 80% line; titled SIMULATED."""
    import matplotlib.pyplot as plt

    shifts = sorted(table["shift"].unique())
    fig, axes = plt.subplots(1, len(shifts), figsize=(4.2 * len(shifts), 3.6), squeeze=False)
    for ax, shift in zip(axes[0], shifts, strict=True):
        sub = table[table["shift"] == shift]
        for (turns, n_r, kind), g in sub.groupby(["n_turns", "n_raters", "rater_kind"]):
            g = g.sort_values("n_conversations")
            label = f"{turns} turns, {'1 judge' if kind == 'judge' else f'{n_r} {kind}'}"
            line = ax.errorbar(
                g["n_conversations"],
                g["power"],
                g["power_se"],
                label=label,
                marker="o",
                ms=3,
                capsize=2,
            )
            if "bayes_power" in g and g["bayes_power"].notna().any():
                ax.errorbar(
                    g["n_conversations"],
                    g["bayes_power"],
                    g["bayes_power_se"],
                    ls="--",
                    marker="s",
                    ms=3,
                    capsize=2,
                    color=line[0].get_color(),
                    label=f"{label} (model)",
                )
        ax.axhline(0.8 if shift else 0.05, color="grey", lw=0.8, ls=":")
        ax.set(
            xlabel="conversations per chatbot",
            ylim=(-0.02, 1.02),
            title=f"shift {shift:g}" + (" (null: type-I)" if shift == 0 else ""),
        )
    axes[0][0].set_ylabel("P(reject at 0.05)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"SIMULATED replicated studies: telling two chatbots apart on {ITEM}", fontsize=10)
    fig.tight_layout()
    return fig


#: the rows file a replicated design job writes (``design/``), one row per simulated study
ROWS = "replicated_rows.csv"


__all__ = [
    "CELL",
    "ITEM",
    "ROWS",
    "bayes_columns",
    "cell_of",
    "design_row",
    "design_table",
    "grid",
    "has_design",
    "headline",
    "plot_power",
    "run_design",
    "simulate_design_study",
    "summarize_design",
]
