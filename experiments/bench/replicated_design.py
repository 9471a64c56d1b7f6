"""The study-design experiment for replicated studies (issue 54, item 6): how many conversations
per chatbot, turns per conversation and raters a study needs to tell two chatbots apart, on
SIMULATED studies (:mod:`delusion_bayes.sweep.replicated_design`: two chatbots from one
population, the first's behaviours shifted on the hurdle logit; the stage's permutation test and
conversation bootstrap on delusion_reinforcement).

    .venv/bin/python experiments/bench/replicated_design.py [--sims 200] [--out design.csv]

Default grid: 3-30 conversations per chatbot x 8 or 19 turns x (one LLM judge | 3 human raters)
x shifts 0 (the null: power is the test's type-I error), 0.7 and 1.4 (mean differences of about
0.25 and 0.5 per turn on the 0-5 scale). Prints the table (power with its binomial SE, the mean
true difference, the bootstrap interval's width) and the headline per turns x raters.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    from delusion_bayes.sweep.replicated_design import design_table, grid, headline, run_design

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=200, help="studies per cell")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--conversations", type=int, nargs="+", default=[3, 5, 8, 10, 15, 20, 30])
    ap.add_argument("--turns", type=int, nargs="+", default=[8, 19])
    ap.add_argument("--shifts", type=float, nargs="+", default=[0.0, 0.7, 1.4])
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--out", help="also write the per-study rows to this CSV")
    a = ap.parse_args(argv)
    cells = grid(a.conversations, a.turns, shifts=a.shifts)

    def progress(i: int, n: int) -> None:
        print(f"cell {i}/{n} done", file=sys.stderr, flush=True)

    rows = run_design(cells, a.sims, seed=a.seed, n_boot=a.n_boot, progress=progress)
    if a.out:
        rows.to_csv(Path(a.out), index=False)
    table = design_table(rows)
    with pd.option_context("display.width", 200):
        print("SIMULATED studies (delusion_bayes.sweep.replicated_design)")
        print(table.round(3).to_string(index=False))
    print()
    for line in headline(table[table["shift"] == max(a.shifts)]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
