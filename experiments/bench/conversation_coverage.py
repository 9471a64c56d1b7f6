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
  (``sweep.truth.new_conversation_truth``; its SE in ``truth_se``, < 0.02 turns).

    .venv/bin/python experiments/bench/conversation_coverage.py --studies 20 --out conv.csv
    .venv/bin/python experiments/bench/conversation_coverage.py --summary conv.csv

One CSV row per study x chatbot x quantity, appended as it goes (a rerun skips done seeds).
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


def analyse(seed: int, overrides: list[str], design: dict) -> list[dict]:
    """Rows of one study: per chatbot and quantity, the interval, the truth, the gate."""
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.config import compose
    from delusion_bayes.data import simulate_replicated
    from delusion_bayes.models.conversations import chatbot_draws, chatbot_trajectories
    from delusion_bayes.stages.replicated_trajectory import fit_trajectory
    from delusion_bayes.sweep.truth import new_conversation_truth

    ds = simulate_replicated("replicated", seed=seed, n_truth=10, **design)
    cfg = compose(overrides)
    t0 = time.perf_counter()
    tree = fit_trajectory(ds, cfg, ReplicatedConfig())
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
    return rows


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
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. sampler.draws=300")
    a = ap.parse_args(argv)
    if a.summary:
        print(summarise(pd.read_csv(a.summary)).to_string(index=False))
        return 0
    out = Path(a.out)
    done = set(pd.read_csv(out)["seed"]) if out.exists() else set()
    for s in range(a.first, a.first + a.studies):
        if s in done:
            continue
        rows = analyse(s, ["sampler.progressbar=false", *a.overrides], DESIGN)
        pd.DataFrame(rows).to_csv(out, mode="a", header=not out.exists(), index=False)
    print(summarise(pd.read_csv(out)).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
