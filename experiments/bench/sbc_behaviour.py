"""Reference-prior SBC of the behaviour model (issue 54, item 4): truths from its documented
priors in NumPy, ordinal ratings drawn by inverting the cumulative logit in NumPy, each study
fitted as the replicated stage fits it (:mod:`delusion_bayes.models.sbc_behaviour`). SIMULATED.

    .venv/bin/python experiments/bench/sbc_behaviour.py [--sims 100] [--chatbots 3]
        [--conversations 6] [--turns 8] [--items 2] [--raters 1] [--levels 4]
        [--draws 200] [--tune 300] [--seed 0] [--out FILE.nc]

Prints the per-variable rank checks (``models.sbc_reference.rank_checks``: the per-study mean
rank against 1/2 and mean |u - 1/2| against 1/4, t-tests over studies) and the divergences.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=100)
    ap.add_argument("--chatbots", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=6)
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--items", type=int, default=2)
    ap.add_argument("--raters", type=int, default=1)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import logging

    import pandas as pd

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from delusion_bayes.data.replicated_simulate import SPIRAL_ITEMS, simulate_replicated
    from delusion_bayes.models.sbc_behaviour import run_behaviour_sbc
    from delusion_bayes.models.sbc_reference import rank_checks

    template = simulate_replicated(
        "spiral_like",
        seed=0,
        n_models=a.chatbots,
        n_conversations=a.conversations,
        n_turns=a.turns,
        n_raters=a.raters,
        rater_kind="judge" if a.raters == 1 else "human",
        items=SPIRAL_ITEMS[: a.items],
        n_truth=5,
        missing_share=0.0,
    )
    t0 = time.perf_counter()
    ranks = run_behaviour_sbc(
        template, n_levels=a.levels, num_simulations=a.sims, draws=a.draws, tune=a.tune, seed=a.seed
    )
    div = ranks["divergences"].values
    print(
        f"SIMULATED: {a.sims} studies of {a.chatbots} chatbots x {a.conversations} "
        f"conversations x {a.turns} turns x {a.items} items x {a.raters} rater(s), "
        f"{a.levels} levels; {time.perf_counter() - t0:.0f} s; studies with divergences: "
        f"{int((div > 0).sum())}"
    )
    with pd.option_context("display.width", 200):
        print(rank_checks(ranks).round(3).to_string(index=False))
    if a.out:
        ranks.to_netcdf(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
