"""Benchmark: the main job (``make run``'s command) from cold and warm, with the compile
prefetch (``sampler.prefetch``) off and on.

    .venv/bin/python experiments/bench/bench_main_job.py                 # paper_like, all stages
    .venv/bin/python experiments/bench/bench_main_job.py --args data=small "stages=[models]"
    .venv/bin/python experiments/bench/bench_main_job.py --prefetch on --states cold   # one run

For each setting of ``sampler.prefetch`` (off first, then on; ``--prefetch`` picks one), two
whole ``delusion-bayes`` processes one after another (``--states cold``: the first only):

- **cold**: every cache empty, as on a fresh machine after ``make install``: a new
  ``cache_dir`` (PyTensor's compile cache, the embeddings) and a new ``NUMBA_CACHE_DIR`` (the
  package's own numba kernels, which otherwise live in its ``__pycache__``);
- **warm**: the same two folders again, as the user's second run.

Prints the wall time of each process, the models stage's compile seconds per fit and its seconds
after sampling per fit (latent pass, log-likelihood, PPC, log prior, gate, tables, LOO, figures,
sensitivity, ``posterior.nc``; both from its log), and the ratio prefetch off / on for cold and
warm. The gate verdicts of each run are printed too: the prefetch changes when compiling
happens, never a draw (the runs' ``posterior.nc`` files are compared; they must be equal).
Extra arguments after ``--args`` go to every run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMPILED = re.compile(r"compiled (\w+)\[.*?\] in ([\d.]+) s")
AFTER = re.compile(r"(\w+) after sampling: ([\d.]+) s")
WAITED = re.compile(r"waited (\d+) s for another process")


def run_job(root: Path, tag: str, args: list[str], env: dict) -> dict:
    """One ``delusion-bayes`` process into ``root/<tag>``; its wall time, compile times and
    gates."""
    run_dir = root / tag
    cmd = [
        str(Path(sys.executable).with_name("delusion-bayes")),
        f"hydra.run.dir={run_dir}",
        f"cache_dir={root / 'cache'}",
        "sampler.progressbar=false",
        *args,
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    text = proc.stdout + proc.stderr
    if proc.returncode:
        sys.stderr.write(text[-4000:])
        raise SystemExit(f"{tag}: delusion-bayes exited {proc.returncode}")
    compiles = {m.group(1): float(m.group(2)) for m in COMPILED.finditer(text)}
    after = {m.group(1): float(m.group(2)) for m in AFTER.finditer(text)}
    waited = sum(float(m.group(1)) for m in WAITED.finditer(text))
    gates = {}
    for gate in sorted(run_dir.glob("models/*/gate.json")):
        g = json.loads(gate.read_text())
        gates[gate.parent.name] = (bool(g["passed"]), g.get("max_rhat"))
    return {
        "wall": wall,
        "compiles": compiles,
        "after": after,
        "waited": waited,
        "gates": gates,
        "dir": run_dir,
    }


def same_draws(a: Path, b: Path) -> bool:
    """Whether the two runs' fits have equal posterior draws."""
    import numpy as np
    import xarray as xr

    fits = sorted(p.relative_to(a) for p in a.glob("models/*/posterior.nc"))
    for rel in fits:
        with xr.open_datatree(a / rel) as x, xr.open_datatree(b / rel) as y:
            px, py = x["posterior"].to_dataset(), y["posterior"].to_dataset()
            for v in px.data_vars:
                if not np.array_equal(px[v].values, py[v].values, equal_nan=True):
                    return False
    return bool(fits)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--args", nargs=argparse.REMAINDER, default=[], help="for every run")
    ap.add_argument("--keep", action="store_true", help="keep the run folders and caches")
    ap.add_argument("--prefetch", choices=("both", "off", "on"), default="both")
    ap.add_argument("--states", choices=("both", "cold"), default="both", help="cold: no warm run")
    a = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_main_job_") as tmp:
        settings = {"both": ("false", "true"), "off": ("false",), "on": ("true",)}[a.prefetch]
        for prefetch in settings:
            root = Path(tmp) / f"prefetch_{prefetch}"
            root.mkdir()
            env = dict(os.environ, NUMBA_CACHE_DIR=str(root / "numba"))
            for state in ("cold", "warm") if a.states == "both" else ("cold",):
                tag = f"{state}"
                r = run_job(root, tag, [f"sampler.prefetch={prefetch}", *a.args], env)
                results[(prefetch, state)] = r
                comp = ", ".join(f"{k} {v:.1f}" for k, v in r["compiles"].items())
                gates = ", ".join(
                    f"{k} {'pass' if ok else 'FAIL'} {rh}" for k, (ok, rh) in r["gates"].items()
                )
                after = ", ".join(f"{k} {v:.1f}" for k, v in r["after"].items())
                print(
                    f"prefetch {prefetch:5s} {state}: {r['wall']:6.1f} s  "
                    f"(compiles: {comp}; waited for the prefetch {r['waited']:.0f} s; after "
                    f"sampling: {after}, total {sum(r['after'].values()):.1f})  gates: {gates}",
                    flush=True,
                )
        for state in ("cold", "warm") if a.prefetch == "both" and a.states == "both" else ():
            off, on = results[("false", state)], results[("true", state)]
            equal = same_draws(off["dir"], on["dir"])
            print(
                f"main job {state}: prefetch off {off['wall']:.1f} s, on {on['wall']:.1f} s, "
                f"ratio {off['wall'] / on['wall']:.2f}x, draws equal: {equal}"
            )
        if a.keep:
            kept = Path(tempfile.mkdtemp(prefix="bench_main_job_kept_"))
            os.rename(tmp, kept / "runs")
            os.makedirs(tmp)  # for TemporaryDirectory's cleanup
            print(f"kept in {kept / 'runs'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
