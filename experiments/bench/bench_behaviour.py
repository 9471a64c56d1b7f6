"""Benchmark: the behaviour model (``models/behaviour.py``) on a SIMULATED Spiral-Bench-sized
study, and how its fit time grows with conversations per chatbot (issue 54, item 7).

    nice -n 10 .venv/bin/python experiments/bench/bench_behaviour.py
        [--models 12] [--conversations 10 30] [--turns 19] [--draws 1000] [--tune 500]
        [--chains 4] [--cores 2]

Study: ``simulate_replicated("spiral_like", n_models=12, n_conversations=C, n_turns=19,
items=SPIRAL_ITEMS)``: 12 chatbots x C conversations x 19 turns x 9 behaviours, one LLM judge,
1% failed judge replies (C = 30: ~61,000 judgements, the size of Spiral-Bench's leaderboard).
Each fit is the replicated stage's first attempt (:func:`delusion_bayes.models.behaviour.
fit_behaviour`, nutpie, the model's target_accept; no refits, so the time is one fit's).

Printed in one run, per C: judgements, wall time of the fit (compile + sampling + the derived
new-conversation means), CPU time, seconds per 1,000 judgements, the gate (divergences, max
R-hat, min bulk ESS over the reported variables); then the ratio of the largest C's wall time to
the smallest's beside the ratio of their judgements (linear growth: the two ratios agree). The
load average is printed: wall time on a shared machine says little.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def one_fit(n_models: int, n_conv: int, n_turns: int, sampler: dict, seed: int) -> dict:
    """Simulate one study and fit it; the row of the table."""
    import numpy as np

    from delusion_bayes.data.replicated_simulate import SPIRAL_ITEMS, simulate_replicated
    from delusion_bayes.inference.diagnostics import diagnose, gate
    from delusion_bayes.models.behaviour import fit_behaviour
    from delusion_bayes.models.behaviour_posterior import reported_vars

    ds = simulate_replicated(
        "spiral_like",
        seed=seed,
        n_models=n_models,
        n_conversations=n_conv,
        n_turns=n_turns,
        items=SPIRAL_ITEMS,
        n_truth=50,
    )
    n_obs = int(np.isfinite(ds["score"].values).sum())
    wall, cpu = time.perf_counter(), time.process_time()
    tree = fit_behaviour(
        ds, **sampler, log_prior=False, posterior_predictive=False, log_likelihood=False
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    diag = diagnose(tree, None, var_names=reported_vars(tree))
    verdict = gate(tree, diag)
    steps = tree["sample_stats"]["n_steps"]
    return {
        "conversations": n_conv,
        "judgements": n_obs,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "s_per_1000": round(1000 * wall / n_obs, 2),
        "divergences": int(verdict["divergences"]),
        "max_rhat": round(float(verdict["max_rhat"]), 4),
        "min_ess": round(float(verdict["min_ess"])),
        "gate": "pass" if verdict["passed"] else "FAIL",
        # where the time goes: leapfrog steps per draw, and the slowest-mixing parameter
        "steps_per_draw": round(float(steps.mean()), 1),
        "min_ess_at": str(diag["ess_bulk"].idxmin()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=12)
    ap.add_argument("--conversations", type=int, nargs="+", default=[10, 30])
    ap.add_argument("--turns", type=int, default=19)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--adaptation", default="diag", choices=("diag", "low_rank"))
    a = ap.parse_args(argv)
    import pandas as pd

    sampler = {
        "sampler": "nutpie",
        "draws": a.draws,
        "tune": a.tune,
        "chains": a.chains,
        "cores": a.cores,
        "progressbar": False,
        "seed": a.seed,
        "adaptation": a.adaptation,
    }
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    print(
        f"SIMULATED studies: {a.models} chatbots x C conversations x {a.turns} turns x 9 "
        f"behaviours, one judge; {a.chains} chains x {a.draws} draws after {a.tune}, "
        f"{a.cores} cores",
        flush=True,
    )
    rows = []
    for c in a.conversations:
        rows.append(one_fit(a.models, c, a.turns, sampler, a.seed))
        print(pd.DataFrame(rows[-1:]).to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    print("\n" + table.to_string(index=False))
    if len(rows) >= 2:
        lo, hi = rows[0], rows[-1]
        print(
            f"\nratio {hi['conversations']} vs {lo['conversations']} conversations: wall time "
            f"{hi['wall_s'] / lo['wall_s']:.2f}x for {hi['judgements'] / lo['judgements']:.2f}x "
            "the judgements"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
