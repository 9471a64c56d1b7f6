"""Prior refits of the replay stage's Bayesian prevalence model (issue 28, item 4b):
``models/refit.py`` on the replay prior table and ``experiments/bench/refit_priors.py --fit
replay`` on a tiny simulated replay study (SIMULATED data; the real DelusionEval numbers are in
docs/dev/models.md, "Refits")."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from delusion_bayes.models import refit as rf
from delusion_bayes.models.replay import REPLAY_PRIORS, replay_model_spec

ROOT = Path(__file__).resolve().parents[2]
CODES = ("misrepresents-sentience", "metaphysical-themes", "positive-affirmation")


@pytest.fixture(scope="module")
def tiny():
    """4 participants, the original + 1 model, 3 codes (simulated)."""
    from delusion_bayes.data import simulate_replay

    return simulate_replay(seed=4, n_participants=4, models=["original", "gpt-4o"],
                           codes=list(CODES), truth_participants=0)  # fmt: skip


def test_a_flagged_prevalence_names_theta_and_the_cluster_scales():
    sens = pd.DataFrame(
        {
            "parameter": ["prevalence[gpt-4o,x]", "beta_depth[gpt-4o,g]", "sigma_conversation"],
            "variable": ["prevalence", "beta_depth", "sigma_conversation"],
            "verdict": ["prior-data conflict", "-", "-"],
        }
    )
    both = ["theta", "sigma_conversation", "sigma_participant"]
    assert rf.flagged_priors(sens, REPLAY_PRIORS) == both
    # the one-level graph (clusters = windows, as on DelusionEval) has no participant scale
    used = ["theta", "beta_depth", "gamma_prior", "sigma_conversation", "prevalence"]
    assert rf.flagged_priors(sens, REPLAY_PRIORS, used=used) == both[:2]
    sens.loc[1, "verdict"] = "weak likelihood"
    assert rf.flagged_priors(sens, REPLAY_PRIORS, used=used) == [*both[:2], "beta_depth"]


@pytest.mark.parametrize("single_level", [False, True])
@pytest.mark.parametrize("factor", [2.0, 0.5])
def test_a_scaled_prior_is_the_built_graphs_prior(tiny, factor, single_level):
    """The refit's priors reach the PyMC graph: theta's prior Potential is Normal(-2, 2 x
    factor) of theta and sigma_conversation's density HalfNormal(factor); beta_depth keeps its
    Normal(0, 0.5)."""
    pytest.importorskip("pymc")
    ds = tiny.assign_coords(participant=tiny["conversation"]) if single_level else tiny
    over = rf.scaled_priors(REPLAY_PRIORS, ["theta", "sigma_conversation"], factor)
    assert over == {
        "theta": {"dist": "Normal", "mu": -2.0, "sigma": 2.0 * factor},
        "sigma_conversation": {"dist": "HalfNormal", "sigma": factor},
    }
    spec = replay_model_spec(ds, "code", depth_bins=2, prior_bins=2, priors=over)
    assert spec.single_level is single_level
    assert spec.priors["beta_depth"] == REPLAY_PRIORS["beta_depth"]
    model = spec.build()
    point = model.initial_point()
    point = {k: v + 0.3 for k, v in point.items()}  # off the origin: theta away from its mean
    outs = model.replace_rvs_by_values([model["theta"], model["theta_prior"]])
    theta, lp_theta = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")(
        point
    )
    assert np.ptp(theta) > 0
    assert float(lp_theta) == pytest.approx(
        stats.norm(-2.0, 2.0 * factor).logpdf(theta).sum(), rel=1e-6
    )
    sc = model["sigma_conversation"]
    lp = model.compile_logp(vars=[sc], jacobian=False)
    value = point[model.rvs_to_values[sc].name]  # the log-transformed value
    assert float(lp(point)) == pytest.approx(
        stats.halfnorm(scale=factor).logpdf(np.exp(value)), rel=1e-6
    )
    beta = model["beta_depth"]
    lp_beta = model.compile_logp(vars=[beta], jacobian=False)(point)
    assert float(lp_beta) == pytest.approx(
        stats.norm(0.0, 0.5).logpdf(point["beta_depth"]).sum(), rel=1e-6
    )


def _script():
    spec = importlib.util.spec_from_file_location(
        "refit_priors", ROOT / "experiments" / "bench" / "refit_priors.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_replay_refits_of_a_tiny_run(tmp_path, capsys):
    """The replay stage on a tiny simulated study, then ``refit_priors.py --fit replay``: the
    base refit reproduces the stage's fit (same seed: the same category prevalences), and
    ``refit_priors.csv`` has one row per reported number (prevalence per model x category,
    delta of gpt-4o from the original per category) and per parameter of sensitivity.csv."""
    pytest.importorskip("pymc")
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    args = [
        "experiment=replay",
        "stages=[replay]",
        "data.overrides.n_participants=4",
        "+data.overrides.models=[original,gpt-4o]",
        f"+data.overrides.codes=[{','.join(CODES)}]",
        "replay.n_boot=50",
        "sampler.draws=150",
        "sampler.tune=150",
        f"hydra.run.dir={run}",
    ]
    proc = subprocess.run([sys.executable, "-m", "delusion_bayes", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = run / "replay"
    sens = pd.read_csv(folder / "sensitivity.csv")
    before = pd.read_csv(folder / "sensitivity_reported.csv")
    assert before["refit_shift_sd"].isna().all()

    script = _script()
    assert script.main(["--run", str(run), "--fit", "replay"]) == 0
    out = capsys.readouterr().out
    gap = float(out.split("bayes_prevalence.csv: max |diff| ")[1].split()[0])
    assert gap < 1e-6  # bayes_prevalence.csv rounds nothing: the same draws

    shifts = pd.read_csv(folder / "refit_priors.csv")
    rep = shifts[shifts["kind"] != "parameter"]
    cats = sorted(set(before["item"].str.split(", ").str[-1]))
    assert len(cats) >= 1
    expected = {("prevalence", f"{m}, {c}") for m in ("original", "gpt-4o") for c in cats} | {
        ("delta", f"gpt-4o - original, {c}") for c in cats
    }
    assert set(zip(rep["quantity"], rep["item"], strict=True)) == expected
    assert set(shifts.loc[shifts["kind"] == "parameter", "quantity"]) == set(sens["parameter"])
    assert list(shifts.columns) == [
        "quantity", "kind", "item", "shift_x2", "shift_x0.5", "refit_shift_sd"
    ]  # fmt: skip
    assert np.isfinite(rep["refit_shift_sd"]).all()
    after = pd.read_csv(folder / "sensitivity_reported.csv")
    assert list(after.columns) == list(before.columns) and len(after) == len(before)
    assert after["refit_shift_sd"].notna().all()
    summary = json.loads((folder / "refit_priors.json").read_text())
    flagged = sens["verdict"] != "-"
    assert summary["parameters"]["flagged"] == int(flagged.sum())
    assert summary["reported"]["n"] == len(expected)
    priors = {"theta", "beta_depth", "gamma_prior", "sigma_conversation", "sigma_participant"}
    assert set(summary["flagged_priors"]) <= priors
    assert summary["pareto_k_max"]["prior"] == pytest.approx(before["pareto_k_prior"].max())
