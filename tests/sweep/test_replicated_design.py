"""The replicated-study design experiment (``sweep/replicated_design.py``, issue 54 item 6) on
SIMULATED studies: the planted difference is what the simulator's truth says, the permutation
test holds its level under no difference, power grows with conversations, and the headline
names the smallest design that reaches the target."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.sweep.replicated_design import (
    CELL,
    design_row,
    design_table,
    grid,
    headline,
    run_design,
    simulate_design_study,
)


def _cell(**kw):
    base = {"n_conversations": 10, "n_turns": 12, "n_raters": 1, "rater_kind": "judge", "shift": 0}
    return {**base, **kw}


def test_the_planted_shift_is_the_only_difference():
    """Shift 0: both chatbots share one population, so their true means agree within the truth's
    Monte Carlo error (400 conversations each); shift 1.4 raises the first chatbot's mean by
    0.4-0.7 per turn (0-5 scale) and leaves the second's where it was."""
    null = simulate_design_study(_cell(), seed=3)
    shifted = simulate_design_study(_cell(shift=1.4), seed=3)
    t0 = null["true_item_mean"].values[:, 0]
    t1 = shifted["true_item_mean"].values[:, 0]
    se = float(null["true_item_mean_se"].values.max())
    assert abs(t0[0] - t0[1]) < 4 * np.sqrt(2) * se
    assert 0.4 < t1[0] - t1[1] < 0.7
    assert abs(t1[1] - t0[1]) < 4 * np.sqrt(2) * se
    assert null.sizes["model"] == 2 and null.sizes["conversation"] == 10


@pytest.mark.calibration
def test_type_one_error_and_power_grow_with_conversations():
    """120 null studies of 10 prompts: the exact sign-flip test rejects at most at 0.05 + 2 SE
    (its level); with shift 1.4 power rises from 3 conversations (0: the smallest exact p of 3
    pairs is 0.25) to 15."""
    cells = [_cell(), _cell(n_conversations=3, shift=1.4), _cell(n_conversations=15, shift=1.4)]
    table = design_table(run_design(cells, 120, seed=100, n_boot=50)).set_index(
        ["n_conversations", "shift"]
    )
    level = table.loc[(10, 0.0)]
    assert level["power"] <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 120)
    assert abs(level["true_diff"]) < 0.03
    assert table.loc[(3, 1.4), "power"] == 0.0
    assert table.loc[(15, 1.4), "power"] > 0.8
    assert table.loc[(15, 1.4), "width95"] < table.loc[(3, 1.4), "width95"]


def test_a_row_and_the_grid_carry_the_cell():
    row = design_row(_cell(n_conversations=4), seed=1, n_boot=20)
    assert {k: row[k] for k in CELL} == _cell(n_conversations=4)
    assert 0 < row["pvalue"] <= 1 and row["width95"] > 0
    cells = grid((5, 10), (8,), ((1, "judge"),), (0.0, 1.4))
    assert len(cells) == 4 and cells[-1] == {**_cell(n_conversations=10, n_turns=8, shift=1.4)}


def test_headline_names_the_smallest_design_reaching_the_target():
    table = pd.DataFrame(
        {
            "n_conversations": [5, 10, 20, 5, 10, 20],
            "n_turns": [19] * 3 + [8] * 3,
            "n_raters": 1,
            "rater_kind": "judge",
            "shift": 1.4,
            "S": 200,
            "true_diff": 0.5,
            "power": [0.1, 0.85, 0.99, 0.0, 0.3, 0.7],
        }
    )
    lines = headline(table)
    assert lines[0].startswith("SIMULATED: to tell two chatbots apart by 0.50 on delusion")
    assert (
        "19-turn conversations rated by one LLM judge need 10 conversations per chatbot"
        in (lines[0])
    )
    assert "power 0.85" in lines[0]
    assert "8-turn conversations" in lines[1] and "more than 20 conversations" in lines[1]


@pytest.mark.slow
def test_design_replicated_command_pair(tmp_path):
    """``delusion-bayes -m experiment=design_replicated`` over two cells (one judge, three human
    raters; 6 conversations of 8 turns, shift 1.4), 3 studies each, the first also fitted with
    the behaviour model (2 x 200 draws), then ``delusion-bayes-summarize``: one table row per
    cell with the permutation test's and the model's columns, the plot and the headline."""
    import subprocess
    import sys

    sweep = tmp_path / "dr"
    args = [
        "experiment=design_replicated",
        "hydra/launcher=basic",
        "design.n_sims=3",
        "design.n_sims_bayes=1",
        "design.n_boot=20",
        "design.n_conversations=6",
        "design.n_turns=8",
        "design.n_raters=1,3",
        "sampler.draws=200",
        "sampler.tune=200",
        f"cache_dir={tmp_path / 'cache'}",
        f"hydra.sweep.dir={sweep}",
    ]
    for cmd in (["-m", "delusion_bayes", "-m", *args], ["-m", "delusion_bayes.sweep", str(sweep)]):
        proc = subprocess.run(
            [sys.executable, *cmd], cwd=tmp_path, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SIMULATED: to tell two chatbots apart by" in proc.stdout
    table = pd.read_csv(sweep / "replicated_design_table.csv")
    assert table[["n_conversations", "n_raters", "rater_kind"]].values.tolist() == [
        [6, 1, "judge"],
        [6, 3, "human"],
    ]
    assert (table["S"] == 3).all() and (table["S_bayes"] == 1).all()
    assert table["bayes_width95"].between(0.05, 3.0).all()
    assert (table["true_diff"] > 0.3).all()  # shift 1.4: ~0.5 per turn (the simulator's truth)
    for name in ("replicated_design_table.md", "replicated_power.png", "replicated_power.pdf"):
        assert (sweep / name).is_file(), name
    assert (sweep / "c6-t8-r3-s1.4" / "design" / "replicated_rows.csv").is_file()
