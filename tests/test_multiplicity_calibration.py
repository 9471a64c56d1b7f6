"""``experiments/bench/multiplicity_calibration.py --quick`` runs and prints the lines its
docstring promises (the full run's table is in docs/benchmarks.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "bench" / "multiplicity_calibration.py"


@pytest.mark.slow
def test_quick_run_prints_the_error_rate_and_rank_coverage_tables():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert "multiplicity calibration: S = 20 families per scenario" in text
    assert "| scenario | truth | rule | FWER ± SE | FDR ± SE | power |" in text
    for scenario in ("(a) 12 rank-sum contrasts", "(b) 324 replay deltas", "(c) 9 behaviours"):
        for truth in ("null", "mix"):
            for rule in ("raw", "Holm", "BH", "Bayes"):
                assert f"{truth} | {rule} |" in text.split(scenario, 1)[1], (scenario, rule)
    assert "| (b) 324 replay deltas | null | max-T |" in text
    # 26 rows x (FWER, FDR) + 4 rank-coverage rows, every rate in [0, 1]
    rates = re.findall(r"(\d\.\d{3}) ± (\d\.\d{3})", text)
    assert len(rates) == 2 * 26 + 4 and all(0 <= float(r) <= 1 for pair in rates for r in pair)
    assert "rank coverage of the true rank by the 95% rank interval" in text
    cover = re.findall(r"\| (pooled|unpooled) \| (\d\.\d{3}) ± ", text)
    assert len(cover) == 4
    # raw tests on 324 true nulls reject somewhere in every family; Holm almost never
    raw = re.search(r"\(b\) 324 replay deltas \| null \| raw \| (\d\.\d{3})", text)
    holm = re.search(r"\(b\) 324 replay deltas \| null \| Holm \| (\d\.\d{3})", text)
    assert float(raw.group(1)) == 1.0 and float(holm.group(1)) <= 0.25
