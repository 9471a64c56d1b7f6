"""Reference-prior SBC of the joint model (truths from its documented priors in NumPy, the
simulator's ratings, the geometry real runs use), optionally through the fit-with-refits
procedure users get (issue 55).

    .venv/bin/python experiments/bench/sbc_reference.py [--preset small|paper_like] [--sims 40]
        [--draws 100] [--tune 200] [--seed 7] [--refits] [--plugin NAME] [--out FILE.nc]

``--refits``: each study is fitted by ``inference.refits.fit_with_refits`` under the default
gate (``InferenceConfig()``) and the attempts are summarised (refitted studies, the largest
move of a headline mean between attempts in MCSE units). ``--plugin``: load a planted bug of
``tests/wrong_impl`` first (its ``pytest_configure``), as ``pytest -p`` does. Prints the
per-parameter rank checks (``models.sbc_reference.rank_checks``). Measured:
docs/dev/development.md ("Planted bugs").
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small", choices=["small", "paper_like"])
    ap.add_argument("--sims", type=int, default=40)
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--tune", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--refits", action="store_true")
    ap.add_argument("--plugin", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.plugin:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        importlib.import_module(f"tests.wrong_impl.{args.plugin}").pytest_configure(None)

    import pandas as pd

    from delusion_bayes.data import simulate_study
    from delusion_bayes.inference import InferenceConfig
    from delusion_bayes.models.sbc_reference import rank_checks, run_reference_sbc

    ds = simulate_study(preset=args.preset, seed=0, texts=False)
    t0 = time.perf_counter()
    ranks = run_reference_sbc(
        ds, num_simulations=args.sims, draws=args.draws, tune=args.tune, seed=args.seed,
        refits=InferenceConfig() if args.refits else None,
    )  # fmt: skip
    sampled = int(ranks["t50_scale_sampled"].sum())
    print(f"{args.sims} studies in {time.perf_counter() - t0:.0f} s; {sampled} sampled sigma_t50")
    with pd.option_context("display.width", 200):
        print(rank_checks(ranks).to_string(index=False))
    if args.refits:
        attempts = json.loads(ranks.attrs["attempts"])
        moved = [a["moved_mcse"] for study in attempts for a in study[:-1]]
        print(
            f"refitted: {sum(len(s) > 1 for s in attempts)} of {len(attempts)} studies; "
            f"largest move of a headline mean between attempts: {max(moved, default=0):.2f} MCSE"
        )
    if args.out:
        ranks.to_netcdf(args.out)


if __name__ == "__main__":
    main()
