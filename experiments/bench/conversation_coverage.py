"""Coverage of the conversation-level trajectory model's chatbot quantities (issue 54, items 1
and 4): S SIMULATED replicated studies (``simulate_replicated``, recognition only: the
package's own simulator, whose trajectories are logistic on a logit-scaled plateau with prompt
effects, not the fitted graph), each fitted as the replicated stage fits it
(``stages.replicated_trajectory.fit_trajectory``: the sampler group's defaults, the gate's
refits and verdict), scored on

- ``t50``: each chatbot's centre ``true_t50`` (a new conversation's expected t50: the prompt
  and conversation effects have mean 0) in its 90/95% interval;
- ``sd_conv_t50``: the between-conversation SD of t50, truth ``sqrt(sd_conv_t50^2 +
  sd_prompt_t50^2)`` (a prompt's effect is, for one chatbot, a conversation effect);
- ``first_clinical``, ``first_stable``, ``p_never``: a new conversation's expected milestones
  (censored at the last turn + 1) and the chance it never reaches clinical framing, truth by
  Monte Carlo over 20,000 of the simulator's new conversations per chatbot
  (``sweep.truth.new_conversation_truth``; its SE in ``truth_se``, < 0.02 turns);
- every chatbot pair's contrast of t50 and the milestones (``conversations.chatbot_contrasts``,
  the stage's table), truth the difference of the two chatbots' truths: its coverage, and with
  ``--null`` (every chatbot drawn from one trajectory, so every true contrast is 0) how often
  the 95% interval excludes 0, the type-I error of the stage's contrasts.

    .venv/bin/python experiments/bench/conversation_coverage.py --studies 20 --out conv.csv
    .venv/bin/python experiments/bench/conversation_coverage.py --null --studies 20 --out null.csv
    .venv/bin/python experiments/bench/conversation_coverage.py --summary conv.csv

One CSV row per study x chatbot x quantity, appended as it goes (a rerun skips done seeds), and
one per study x pair x quantity in ``<out>_contrasts.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: the design: 3 chatbots x 8 conversations x 12 turns x 2 human raters, recognition only
DESIGN = {"n_models": 3, "n_conversations": 8, "n_turns": 12, "items": ("recognition",)}


def analyse(
    seed: int, overrides: list[str], design: dict, null: bool = False, shared: bool = False
) -> tuple[list[dict], list[dict]]:
    """Rows of one study: per chatbot and quantity, the interval, the truth, the gate; and per
    chatbot pair and contrasted quantity the same (:func:`contrast_rows`; under ``null`` the
    true contrast is 0, not the difference of two Monte Carlo truths). ``shared``: with the
    shared prompts' t50 shifts (``replicated.trajectory_shared_prompts``)."""
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.config import compose
    from delusion_bayes.data import simulate_replicated
    from delusion_bayes.models.conversations import (
        chatbot_contrasts,
        chatbot_draws,
        chatbot_trajectories,
    )
    from delusion_bayes.stages.replicated_trajectory import fit_trajectory
    from delusion_bayes.sweep.truth import new_conversation_truth

    ds = simulate_replicated("replicated", seed=seed, n_truth=10, **design)
    cfg = compose(overrides)
    t0 = time.perf_counter()
    tree = fit_trajectory(ds, cfg, ReplicatedConfig(trajectory_shared_prompts=shared))
    secs = time.perf_counter() - t0
    draws = chatbot_draws(tree, seed=seed)
    tabs = {
        p: chatbot_trajectories(draws, p).set_index(["quantity", "chatbot"]) for p in (0.95, 0.9)
    }
    design_used = json.loads(ds.attrs["design"])
    sd_truth = float(np.hypot(design_used["sd_conv_t50"], design_used["sd_prompt_t50"]))
    truth = {("t50", str(m)): float(t) for m, t in ds["true_t50"].to_series().items()}
    truth |= {("sd_conv_t50", str(m)): sd_truth for m in ds["model"].values}
    mc = new_conversation_truth(ds, seed=seed)
    se = {}
    for q in ("first_clinical", "first_stable", "p_never"):
        for m in ds["model"].values:
            truth[(q, str(m))] = float(mc[q].sel(model=m))
            se[(q, str(m))] = float(mc[f"{q}_se"].sel(model=m))
    rows = []
    for (q, m), t in truth.items():
        a, b = tabs[0.95].loc[(q, m)], tabs[0.9].loc[(q, m)]
        rows.append(
            {
                "seed": seed,
                "chatbot": m,
                "quantity": q,
                "truth": t,
                "truth_se": se.get((q, m), 0.0),
                "median": a["median"],
                "lo95": a["ci_low"],
                "hi95": a["ci_high"],
                "lo90": b["ci_low"],
                "hi90": b["ci_high"],
                "gate_passed": bool(tree.attrs["gate_passed"]),
                "seconds": secs,
            }
        )
    gate = bool(tree.attrs["gate_passed"])
    contrasts = {p: chatbot_contrasts(draws, p) for p in (0.95, 0.9)}
    return rows, contrast_rows(seed, contrasts, truth, gate, null)


def contrast_rows(seed: int, contrasts: dict, truth: dict, gate: bool, null: bool) -> list[dict]:
    """Per chatbot pair (A, B) and quantity: the posterior difference A - B with its 95/90%
    intervals and the true difference (``truth``: per (quantity, chatbot))."""
    a95, a90 = (contrasts[p].set_index(["quantity", "a", "b"]) for p in (0.95, 0.9))
    rows = []
    for (q, a, b), r in a95.iterrows():
        rows.append(
            {
                "seed": seed,
                "quantity": q,
                "a": a,
                "b": b,
                "truth": 0.0 if null else truth[(q, a)] - truth[(q, b)],
                "diff": r["diff"],
                "lo95": r["ci_low"],
                "hi95": r["ci_high"],
                "lo90": a90.loc[(q, a, b), "ci_low"],
                "hi90": a90.loc[(q, a, b), "ci_high"],
                "gate_passed": gate,
            }
        )
    return rows


def summarise_contrasts(df: pd.DataFrame) -> pd.DataFrame:
    """Per quantity: the contrasts' 95/90% coverage of the true difference and how often the 95%
    interval excludes 0 (under ``--null`` the type-I error), binomial SEs clustered by study."""
    df = df.assign(
        c95=(df["lo95"] <= df["truth"]) & (df["truth"] <= df["hi95"]),
        c90=(df["lo90"] <= df["truth"]) & (df["truth"] <= df["hi90"]),
        reject95=(df["lo95"] > 0) | (df["hi95"] < 0),
    )
    out = []
    for q, g in df.groupby("quantity", sort=False):
        per_study = g.groupby("seed")[["c95", "reject95"]].mean()
        n = len(per_study)
        se = per_study.std(ddof=1) / np.sqrt(n)
        out.append(
            {
                "quantity": q,
                "studies": n,
                "pairs": len(g),
                "cover95": g["c95"].mean(),
                "se95": se["c95"],
                "cover90": g["c90"].mean(),
                "reject95": g["reject95"].mean(),
                "se_reject95": se["reject95"],
            }
        )
    return pd.DataFrame(out).round(3)


def contrasts_path(out: Path) -> Path:
    """Where the contrast rows of ``out`` go: ``<stem>_contrasts.csv`` beside it."""
    return out.with_name(f"{out.stem}_contrasts.csv")


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per quantity: S, 90/95% coverage with binomial SEs (studies as clusters), width, gate."""
    df = df.assign(
        c95=(df["lo95"] <= df["truth"]) & (df["truth"] <= df["hi95"]),
        c90=(df["lo90"] <= df["truth"]) & (df["truth"] <= df["hi90"]),
        width95=df["hi95"] - df["lo95"],
    )
    out = []
    for q, g in df.groupby("quantity", sort=False):
        per_study = g.groupby("seed")[["c95", "c90"]].mean()
        n = len(per_study)
        out.append(
            {
                "quantity": q,
                "studies": n,
                "intervals": len(g),
                "cover95": g["c95"].mean(),
                "se95": per_study["c95"].std(ddof=1) / np.sqrt(n),
                "cover90": g["c90"].mean(),
                "width95": g["width95"].mean(),
                "gate_clean": g.groupby("seed")["gate_passed"].first().mean(),
            }
        )
    return pd.DataFrame(out).round(3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=20)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--out", default="conversation_coverage.csv")
    ap.add_argument("--summary", help="print the table of this CSV and stop")
    ap.add_argument("--null", action="store_true", help="chatbots from one trajectory (type-I)")
    ap.add_argument(
        "--shared-prompts", action="store_true", help="learn the shared prompts' t50 shifts"
    )
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. sampler.draws=300")
    a = ap.parse_args(argv)
    if a.summary:
        report(Path(a.summary))
        return 0
    out = Path(a.out)
    done = set(pd.read_csv(out)["seed"]) if out.exists() else set()
    from delusion_bayes.data.replicated_simulate import NULL_CHATBOTS

    design = {**DESIGN, **(NULL_CHATBOTS if a.null else {})}
    for s in range(a.first, a.first + a.studies):
        if s in done:
            continue
        over = ["sampler.progressbar=false", *a.overrides]
        rows, pairs = analyse(s, over, design, a.null, a.shared_prompts)
        for path, part in ((contrasts_path(out), pairs), (out, rows)):
            pd.DataFrame(part).to_csv(path, mode="a", header=not path.exists(), index=False)
    report(out)
    return 0


def report(out: Path) -> None:
    """Print the coverage table of ``out`` and, where its contrast rows exist, theirs."""
    print(summarise(pd.read_csv(out)).to_string(index=False))
    if contrasts_path(out).exists():
        print(summarise_contrasts(pd.read_csv(contrasts_path(out))).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
