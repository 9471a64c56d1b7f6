"""Issue 49, "one model, one unit": a model is its module's ``DEFINITION`` and one registry line.

A toy model (a normal model of the consensus, defined in this test module) is added through the
registry's public hook and one ``conf/model/toy.yaml`` written to a config directory that Hydra
searches, and fitted through the command line; no package file names it. The onset model's
derived milestones follow the fit's own trajectory variant.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from delusion_bayes.data.schema import MODEL
from delusion_bayes.models.definition import ModelDef
from delusion_bayes.models.registry import MODELS, model_def, register, unregister


def build_toy(spec):
    """``y_{m,t} ~ N(mu_m, sigma)`` on the consensus per rated model-day."""
    import pymc as pm

    from delusion_bayes.models.blocks import spec_data
    from delusion_bayes.models.modelspec import OBS
    from delusion_bayes.models.priors import make_rv

    with pm.Model(coords=spec.coords) as model:
        mu = make_rv("mu", spec.priors["mu"], dims=MODEL)
        sigma = make_rv("sigma", spec.priors["sigma"])
        y = spec_data(spec, "y")
        pm.Normal("y", mu[spec_data(spec, "model_idx")], sigma, observed=y, dims=OBS)
    return model


TOY = ModelDef(
    name="toy",
    build=build_toy,
    priors={
        "mu": {"dist": "Normal", "mu": 2.5, "sigma": 1.0},
        "sigma": {"dist": "HalfNormal", "sigma": 1.0},
    },
    math=build_toy.__doc__,
    marginal=False,
    inputs=frozenset({"consensus"}),
)


def test_the_registry_lists_the_models_and_their_definitions_drive_the_specs():
    from delusion_bayes.data import simulate_study
    from delusion_bayes.models import MODEL_NAMES, build_spec, default_priors

    assert list(MODEL_NAMES) == ["joint", "onset", "rater", "disengagement"]
    ds = simulate_study("small", seed=0)
    for name, defn in MODELS.items():
        spec = build_spec(ds, name)
        assert spec.definition is defn and spec.integrates_stage == defn.marginal
        assert spec.priors == default_priors(name) == {k: dict(v) for k, v in defn.priors.items()}
    with pytest.raises(ValueError, match="registered already"):
        register(ModelDef(name="joint", build=build_toy, priors={}))
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        model_def("nope")


@pytest.mark.slow
def test_a_toy_model_added_through_the_registry_fits_through_the_command_line(tmp_path):
    """One module (this one), one ``register`` line, one YAML: ``model=toy`` then runs the models
    stage through ``delusion_bayes.cli.main`` and writes its posterior and gate."""
    from delusion_bayes import cli

    conf = tmp_path / "conf"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "toy.yaml").write_text("name: toy\nalso_fit: []\n")
    run = tmp_path / "run"
    register(TOY)
    try:
        status = cli.main(
            [
                "model=toy",
                "data=small",
                "stages=[baselines,models]",
                "sampler.draws=60",
                "sampler.tune=60",
                "sampler.chains=1",
                "sampler.prefetch=false",  # the compile child is another process: no toy there
                "inference.compare=false",
                "inference.ppc=false",
                "inference.refit_target_accept=null",
                "inference.refit_draws_factor=null",
                "baselines.n_boot=20",
                f"hydra.searchpath=[file://{conf}]",
                f"hydra.run.dir={run}",
            ]
        )
    finally:
        unregister("toy")
    info = json.loads((run / "run.json").read_text())
    assert info["stages"]["models"]["status"] == "ok", info["stages"]["models"]
    assert status in (0, None, 1)  # 1: the gate of 60 draws may fail, loudly; the fit ran
    import xarray as xr

    dt = xr.open_datatree(run / "models" / "toy" / "posterior.nc")
    assert dt.attrs["model"] == "toy" and set(dt["posterior"].data_vars) >= {"mu", "sigma"}
    assert float(dt["posterior"].attrs["target_accept"]) == TOY.target_accept  # its default
    assert (run / "models" / "toy" / "gate.json").is_file()
    assert "toy" not in MODELS


@pytest.mark.slow
@pytest.mark.parametrize("trajectory", ["linear", "logistic"])
def test_onset_milestones_follow_the_fits_trajectory_variant(trajectory):
    """``derived.trajectory_stage`` (the onset model's stage, read by its milestones) is the
    graph's own ``trajectory`` variable, also for ``model.trajectory=linear`` (it used the
    logistic formula whatever the fit's variant)."""
    from delusion_bayes.data import simulate_study
    from delusion_bayes.models import fit
    from delusion_bayes.models.derived import posterior_milestones, trajectory_stage

    ds = simulate_study("small", seed=0)
    dt = fit(ds, "onset", trajectory=trajectory, draws=30, tune=30, chains=1, seed=1)
    assert dt.attrs["trajectory"] == trajectory
    graph = dt["posterior"]["trajectory"].transpose("chain", "draw", "model", "day")
    derived = trajectory_stage(dt).transpose("chain", "draw", "model", "day")
    np.testing.assert_allclose(derived.values, graph.values, rtol=1e-9, atol=1e-9)
    ms = posterior_milestones(dt)
    assert set(ms.data_vars) >= {"first_clinical", "first_stable"}
