"""The experiment overlays compose, and every script in ``experiments/bench/`` runs at tiny size.

The scripts are benchmarks and studies whose numbers the README and docs quote; these smoke tests
only check that each still runs end to end against the package (arguments shrink every loop).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "experiments" / "bench"

#: script -> arguments that make it a smoke test (seconds, not minutes)
SMOKE_ARGS: dict[str, list[str]] = {
    "multiplicity_calibration.py": ["--quick"],
    "replicated_design.py": [
        "--sims",
        "3",
        "--conversations",
        "3",
        "5",
        "--turns",
        "8",
        "--shifts",
        "0",
        "1.4",
        "--n-boot",
        "20",
    ],
    "bench_adaptation.py": [
        "--preset",
        "small",
        "--model",
        "onset",
        "--draws",
        "50",
        "--tune",
        "50",
        "--chains",
        "1",
    ],
    "bench_baselines.py": ["--n-boot", "20", "--n-loop", "2", "--repeat", "1"],
    "bench_behaviour.py": [
        "--models",
        "2",
        "--conversations",
        "2",
        "3",
        "--turns",
        "4",
        "--draws",
        "30",
        "--tune",
        "30",
        "--chains",
        "1",
        "--cores",
        "1",
    ],
    "behaviour_coverage.py": [
        "--studies",
        "1",
        "--draws",
        "30",
        "--tune",
        "30",
        "--chains",
        "2",
        "--no-refits",
    ],
    "bench_compile.py": ["--model", "onset", "--seeds", "0,1", "--draws", "50", "--tune", "50"],
    # one cold main job, prefetch on, the onset model only at tiny size (a fresh cache: ~40 s)
    "bench_main_job.py": [
        "--prefetch",
        "on",
        "--states",
        "cold",
        "--args",
        "data=small",
        "stages=[baselines,models]",
        "model=onset",
        "model.also_fit=[]",
        "inference.compare=false",
        "sampler.draws=50",
        "sampler.tune=50",
        "sampler.chains=1",
        "inference.refit_draws_factor=null",
        "inference.refit_target_accept=null",
    ],
    "bench_models.py": [
        "--preset",
        "small",
        "--model",
        "onset",
        "--draws",
        "100",
        "--tune",
        "100",
        "--chains",
        "1",
        "--samplers",
        "nutpie",
        "--brms",
        "recorded",  # never R in tests, even where it is installed
    ],
    "bench_level_terms.py": ["--preset", "small", "--reps", "3"],
    "bench_latent_pass.py": ["--draws", "20", "--groups", "30", "--terms", "5", "--reps", "1"],
    "bench_loo.py": ["--obs", "40", "--draws", "100", "--reps", "1"],
    "bench_rating_terms.py": ["--preset", "small", "--model", "rater", "--reps", "3"],
    # writes the study's table for brms without R (tests and CI do not need R)
    "brms_same_data.py": ["--preset", "small", "--model", "onset", "--write-only"],
    "bench_replay.py": ["--n-boot", "50", "--naive-resamples", "2"],
    "bench_replay_bayes.py": ["--scale", "small", "--draws", "100", "--tune", "100"],
    "bench_sweep.py": ["--jobs", "1"],
    "bench_text.py": ["--preset", "small"],
    "coverage_replay_bayes.py": [
        "--sims",
        "1",
        "--draws",
        "100",
        "--tune",
        "100",
        "--n-boot",
        "50",
    ],
    "conversation_coverage.py": [
        "--studies",
        "1",
        "--null",
        "--shared-prompts",
        "--out",
        "conv.csv",
        "sampler.draws=50",
        "sampler.tune=50",
        "sampler.chains=1",
    ],
    "coverage_replay_support.py": ["--reps", "2", "--n-boot", "50", "--truth-participants", "100"],
    "scale_prior_check.py": [
        *("--studies", "20", "--priors", "flat", "ratio:0.5", "lognormal:6:1+package"),
    ],
    "gate_grid_replicated.py": [
        "--designs",
        "m2_c1_t8_r1_judge",
        "--out",
        "grid.csv",
        "sampler.draws=30",
        "sampler.tune=30",
        "sampler.chains=1",
    ],
    "gate_grid.py": [
        "--designs",
        "minimal",
        "--models",
        "rater",
        "--out",
        "grid.csv",
        "sampler.draws=50",
        "sampler.tune=50",
        "sampler.chains=1",
    ],
    "loo_units.py": [
        "--preset",
        "small",
        "--seeds",
        "0",
        "--draws",
        "100",
        "--chains",
        "1",
        "--variants",
        "linear",
    ],
    # the same-prior control refit of a tiny run's joint fit (made first: RUN_FIRST)
    "population_calibration.py": [
        "--studies",
        "1",
        "--scenarios",
        "exchangeable",
        "--draws",
        "30",
        "--tune",
        "30",
        "--no-two-stage",
        "--markdown",
    ],
    "refit_priors.py": ["--run", "run", "--control"],
    "rhat_floor.py": ["--reps", "3", "--draws", "50"],
    "sbc.py": ["--sims", "2", "--draws", "50", "--tune", "50"],
    "sbc_reference.py": ["--sims", "2", "--draws", "50", "--tune", "50", "--refits"],
    "sbc_behaviour.py": ["--sims", "1", "--draws", "50", "--tune", "50", "--conversations", "3"],
    "sbc_conversations.py": [
        *("--sims", "1", "--draws", "50", "--tune", "50", "--turns", "8", "--shared-prompts"),
    ],
}


def test_every_script_has_a_smoke_test():
    assert sorted(p.name for p in BENCH.glob("*.py")) == sorted(SMOKE_ARGS)
    assert not list((ROOT / "experiments").glob("*.py")), "scripts belong in experiments/bench/"


def test_every_overlay_composes_and_ships_in_the_wheel():
    import tomllib

    from delusion_bayes.config import compose

    overlays = sorted(p.name for p in (ROOT / "experiments").glob("*.yaml"))
    for name in overlays:
        compose([f"experiment={name.removesuffix('.yaml')}"])
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    shipped = wheel["targets"]["wheel"]["force-include"]
    assert sorted(k for k in shipped if k.startswith("experiments/")) == [
        f"experiments/{n}" for n in overlays
    ]
    assert all(shipped[f"experiments/{n}"].endswith(f"_conf/experiment/{n}") for n in overlays)
    groups = [p for p in (ROOT / "conf").iterdir() if p.is_dir() and not p.is_symlink()]
    assert all(f"conf/{p.name}" in shipped for p in groups)


#: scripts that read a finished run: the models stage of the smoke study at tiny size, into ./run
RUN_FIRST = {
    "refit_priors.py": [
        "experiment=smoke",
        "stages=[models]",
        "sampler.draws=60",
        "sampler.tune=60",
        "sampler.chains=1",
        "hydra.run.dir=run",
    ]
}


#: what a script's tiny run must print (beyond exiting 0): the lines its docstring promises
PRINTS = {
    "scale_prior_check.py": [
        *("flat | equal 8 / 8 | ", "ratio:0.5 | 10 / 3 | ", "lognormal:6:1+package | never | "),
    ],
    "population_calibration.py": [
        "| exchangeable | t50 | 1 / - | ",
        "| exchangeable | first_clinical | 1 / - |",
        "pooled coverage, t50, group, 1 intervals from 1 seeds: 90%: ",
    ],
    "gate_grid_replicated.py": [
        "default fits gate-clean: ",
        "| m2_c1_t8_r1_judge | 2 x 1 x 8 x 1 judge |",
    ],
    "bench_main_job.py": ["after sampling: onset", "gates: onset "],  # 1 chain: R-hat NaN
    "bench_latent_pass.py": ["latent pass (", "rating pass (", "predictive draws that differ 0"],
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE_ARGS))
def test_script_runs_at_tiny_size(script, tmp_path):
    args = list(SMOKE_ARGS[script])
    if script in ("coverage_replay_bayes.py", "sbc.py"):
        args += ["--out", str(tmp_path / "out")]
    # the scripts import this checkout's package (also from console scripts they start)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    if script in RUN_FIRST:
        run = subprocess.run(
            [sys.executable, "-m", "delusion_bayes", *RUN_FIRST[script]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
    proc = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for line in PRINTS.get(script, ()):
        assert line in proc.stdout, (line, proc.stdout[-3000:])
