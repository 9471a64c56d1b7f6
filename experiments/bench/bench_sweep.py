"""Benchmark: a sweep through the joblib launcher (2 workers) vs Hydra's basic launcher (one
process, jobs in sequence), and the summarizer's time on the result.

    .venv/bin/python experiments/bench/bench_sweep.py [--jobs 4] [--stages baselines]

Both sweeps run the same ``experiment=smoke`` jobs (``baselines.stable_run`` and
``baselines.consensus`` varied) into temporary directories; the script prints wall times and
the ratio basic / joblib (> 1: joblib is faster). On a machine shared with other work the ratio
understates what two free cores give; say so when quoting it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def sweep(launcher: list[str], out: Path, stages: str, n_jobs: int) -> float:
    values = ["median", "mean", "mode"]
    runs = [2, 3, 4]
    cons = ",".join(values[: max(1, min(3, (n_jobs + 2) // 3))])
    sr = ",".join(str(r) for r in runs[: max(1, n_jobs // len(cons.split(",")))])
    cmd = [str(BIN / "delusion-bayes"), "-m", "experiment=smoke", f"stages=[{stages}]",
           "baselines.n_boot=100", "baselines.alpha_boot=0", f"baselines.consensus={cons}",
           f"baselines.stable_run={sr}", f"hydra.sweep.dir={out}", *launcher]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"sweep failed ({' '.join(cmd)}):\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--stages", default="baselines")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t_basic = sweep(["hydra/launcher=basic"], tmp / "basic", args.stages, args.jobs)
        t_joblib = sweep(["hydra/launcher=local"], tmp / "joblib", args.stages, args.jobs)
        n = len(list((tmp / "joblib").glob("*/run.json")))
        t0 = time.perf_counter()
        subprocess.run([str(BIN / "delusion-bayes-summarize"), str(tmp / "joblib")],
                       capture_output=True, check=True)  # fmt: skip
        t_sum = time.perf_counter() - t0
    print(f"{n} jobs, stages [{args.stages}]")
    print(f"basic launcher (sequential): {t_basic:7.1f} s")
    print(f"joblib launcher (2 workers):  {t_joblib:7.1f} s")
    print(f"ratio basic / joblib:         {t_basic / t_joblib:7.2f}")
    print(f"delusion-bayes-summarize:     {t_sum:7.1f} s")


if __name__ == "__main__":
    main()
