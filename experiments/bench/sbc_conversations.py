"""Reference-prior SBC of the trajectory model with a conversation level (issue 54, item 4):
truths from the documented priors in NumPy, ratings from the trajectory simulator, each study
fitted as the replicated stage fits it (:mod:`delusion_bayes.models.sbc_conversations`).
SIMULATED.

    .venv/bin/python experiments/bench/sbc_conversations.py [--sims 100] [--chatbots 3]
        [--conversations 5] [--turns 12] [--raters 2] [--model joint|onset]
        [--draws 200] [--tune 300] [--seed 0] [--out FILE.nc] [--shared-prompts]

Prints the per-variable rank checks (``models.sbc_reference.rank_checks``) over the studies
whose fit sampled ``sigma_t50``, how many did, and the studies with divergences.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=100)
    ap.add_argument("--chatbots", type=int, default=3)
    ap.add_argument("--conversations", type=int, default=5)
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--raters", type=int, default=2)
    ap.add_argument("--model", default="joint", choices=("joint", "onset"))
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--shared-prompts", action="store_true", help="with the shared prompts' t50 shifts"
    )
    a = ap.parse_args(argv)
    import logging

    import pandas as pd

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from delusion_bayes.data import simulate_replicated
    from delusion_bayes.models.conversations import conversation_units
    from delusion_bayes.models.sbc_conversations import run_conversation_sbc
    from delusion_bayes.models.sbc_reference import rank_checks

    rep = simulate_replicated(
        "replicated",
        seed=0,
        n_models=a.chatbots,
        n_conversations=a.conversations,
        n_turns=a.turns,
        n_raters=a.raters,
        items=("recognition",),
        n_truth=5,
    )
    t0 = time.perf_counter()
    ranks = run_conversation_sbc(
        conversation_units(rep),
        model=a.model,
        num_simulations=a.sims,
        draws=a.draws,
        tune=a.tune,
        seed=a.seed,
        shared=a.shared_prompts,
    )
    div = ranks["divergences"].values
    print(
        f"SIMULATED: {a.sims} studies of {a.chatbots} chatbots x {a.conversations} "
        f"conversations x {a.turns} turns x {a.raters} raters ({a.model}); "
        f"{time.perf_counter() - t0:.0f} s; sigma_t50 sampled in "
        f"{int(ranks['t50_scale_sampled'].sum())}; studies with divergences: "
        f"{int((div > 0).sum())}"
    )
    with pd.option_context("display.width", 200):
        print(rank_checks(ranks).round(3).to_string(index=False))
    if a.out:
        ranks.to_netcdf(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
