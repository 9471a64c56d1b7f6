"""The compile prefetch (``delusion_bayes/stages/prefetch.py``): it plans the models stage's own
fits, skips what is compiled already, its child compiles everything the stage's fit then finds
in the cache, and the pipeline closes it when the stage ends (a failing ``prepare`` costs
nothing). That it changes no draw is measured on the whole main job by
``experiments/bench/bench_main_job.py`` (its "draws equal" column)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from delusion_bayes.config import compose
from delusion_bayes.pipeline import sub_config
from delusion_bayes.stages import fit_plan, prefetch
from delusion_bayes.stages import models as stage


def _cfg(*overrides: str):
    return sub_config(compose(list(overrides)), stage.NEEDS)


@pytest.mark.parametrize(
    ("overrides", "calls"),
    [
        (["model.also_fit=[onset,rater]", "inference.compare=false"],
         [("joint", True, {}), ("rater", False, {}), ("onset", False, {})]),
        (["model=onset", "model.also_fit=[onset,rater,disengagement]",
          "inference.compare=false"],
         [("onset", True, {}), ("disengagement", False, {}), ("rater", False, {})]),
        (["model=onset", "model.also_fit=[joint]", "inference.compare=true",
          "model.variants=[linear,shared_cutpoints]"],
         [("onset", True, {}), ("joint", False, {}), ("onset", True, {"trajectory": "linear"})]),
    ],
    ids=["also_fit", "also_fit_longest_first", "variants"],
)  # fmt: skip
def test_planned_fits_are_the_fits_the_stage_makes(small_study, tmp_path, monkeypatch, overrides,
                                                   calls):  # fmt: skip
    """The plan is the stage's own sequence of ``fit_one`` calls (fits stubbed, so only the
    calls count): the primary, ``also_fit`` with the longest fits first (``ModelDef.fit_rank``),
    then the variants that apply (shared cut-points do not apply to the onset model). The
    results are listed in the configured order, whatever the order of fitting."""
    import xarray as xr

    seen = []

    def fake_fit(ds, name, cfg, *, primary, overrides=None):
        seen.append((name, primary, dict(overrides or {})))
        tree = xr.DataTree(name="fit")
        tree.attrs["variant"] = f"{name}{len(seen)}"
        return tree

    written = {"headline": {}, "files": {}, "notes": [], "elpd": None, "loo_unit": "model_day"}
    monkeypatch.setattr(stage, "fit_one", fake_fit)
    monkeypatch.setattr(stage, "_write_model", lambda *a, **k: written)
    monkeypatch.setattr(stage, "loo_units", lambda dt, inf: {})
    cfg = _cfg(*overrides)
    headline = stage.run(small_study, cfg, tmp_path)
    assert seen == calls
    assert fit_plan.planned_fits(small_study, cfg) == calls
    configured = fit_plan.fit_names(small_study, stage.group_config(stage.ModelConfig, cfg.model))
    models = [k for k in headline if k in {n for n, _, _ in calls} and "_" not in k]
    assert models == configured[0]


@pytest.mark.parametrize(
    ("overrides", "tasks"),
    [(["model=onset", "model.also_fit=[]"], []),
     (["model=onset", "model.also_fit=[rater]"], ["compile_kernels"])],
    ids=["onset_only", "with_a_marginal_model"],
)  # fmt: skip
def test_the_stage_compiles_the_latent_kernel_while_it_waits(small_study, tmp_path, monkeypatch,
                                                             overrides, tasks):  # fmt: skip
    """While its fits run, the stage leaves the latent pass's kernel as its task for a wait on
    another process's compile (``sampling.while_waiting``), if a fit needs the kernel; the task
    is gone when the stage ends."""
    import xarray as xr

    from delusion_bayes.inference import sampling

    seen = []

    def fake_fit(ds, name, cfg, *, primary, overrides=None):
        seen.append([getattr(t, "__name__", t) for t in sampling._IDLE_TASKS])
        return xr.DataTree(name="fit")

    written = {"headline": {}, "files": {}, "notes": [], "elpd": None, "loo_unit": "model_day"}
    monkeypatch.setattr(stage, "fit_one", fake_fit)
    monkeypatch.setattr(stage, "_write_model", lambda *a, **k: written)
    monkeypatch.setattr(stage, "loo_units", lambda dt, inf: {})
    stage.run(small_study, _cfg(*overrides, "inference.compare=false"), tmp_path)
    assert seen and all(s == tasks for s in seen)
    assert sampling._IDLE_TASKS == []


#: priors no other test uses, so that these tests' onset graphs have their own compile markers
UNIQUE_PRIOR = "+model.priors.mu_t50={{dist:Normal,mu:0.6,sigma:{}}}"


def test_start_does_nothing_when_off_on_one_core_or_for_another_sampler(small_study, tmp_path,
                                                                       monkeypatch):  # fmt: skip
    """No child (None) with ``sampler.prefetch=false``, on a one-core machine, for PyMC's
    sampler, and with ``skip_first`` for a one-fit plan; the same pending fit otherwise starts
    one (closed at once)."""
    base = ["model=onset", "model.also_fit=[]", "inference.compare=false",
            UNIQUE_PRIOR.format(0.4139)]  # fmt: skip
    assert [p for *_, p in prefetch.pending_fits(small_study, _cfg(*base))] == [True]
    assert prefetch.start(small_study, _cfg(*base, "sampler.prefetch=false"), tmp_path,
                          skip_first=False) is None  # fmt: skip
    assert prefetch.start(small_study, _cfg(*base, "sampler=pymc"), tmp_path,
                          skip_first=False) is None  # fmt: skip
    assert prefetch.start(small_study, _cfg(*base), tmp_path, skip_first=True) is None
    with monkeypatch.context() as m:
        m.setattr(prefetch.os, "cpu_count", lambda: 1)
        assert prefetch.start(small_study, _cfg(*base), tmp_path, skip_first=False) is None
    assert not (tmp_path / prefetch.LOG_NAME).exists()
    handle = prefetch.start(small_study, _cfg(*base), tmp_path, skip_first=False)
    assert handle is not None and handle.fits == ["onset"]
    handle.close()


def _run_folder(ds, cfg_full, tmp_path):
    from delusion_bayes.data import save_study

    save_study(ds, tmp_path / "study.nc")
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(cfg_full, resolve=True))


#: in a fresh process on the child's compile folder: load the graph the child compiled, print
#: how many kernels that wrote into the cache (0: the child compiled exactly this graph)
LOAD_AGAIN = """
import sys
from omegaconf import OmegaConf
from delusion_bayes.data import load_study
from delusion_bayes.inference.cache import compiled_kernels, kernels_written
from delusion_bayes.inference.sampling import compile_dir, compile_nutpie
from delusion_bayes.models.build import model_for
from delusion_bayes.models.fit import fit_spec
from delusion_bayes.pipeline import sub_config
from delusion_bayes.stages import fit_plan, prefetch
from delusion_bayes.stages import models as stage

run = sys.argv[1]
cfg = sub_config(OmegaConf.load(run + "/config.yaml"), stage.NEEDS)
ds = load_study(run + "/study.nc")
kw = fit_plan.fit_arguments("onset", cfg, primary=True)
spec = fit_spec(ds, "onset", **kw)
before = compiled_kernels(compile_dir())
compile_nutpie(model_for(spec)[0], share_graph=False, graph=spec.hash())
after = compiled_kernels(compile_dir())
print("kernels", len(before), "written", kernels_written(before, after), spec.hash())
"""


@pytest.mark.slow
def test_the_child_compiles_the_log_density_the_stage_fit_loads(small_study, tmp_path,
                                                                monkeypatch):  # fmt: skip
    """Real child process on the small study's onset model, in a compile folder of its own
    (nothing else writes there): it exits 0 and logs the compile; loading the same graph in a
    fresh process on that folder then writes **no** kernel (the child compiled exactly this
    graph), and the stage's own fit is of the same spec (its ``spec_hash``)."""
    import subprocess
    import sys

    from delusion_bayes.inference.cache import configure_pytensor_cache

    configure_pytensor_cache(None)
    import pytensor  # noqa: F401 - this process's compile folder is fixed before the env changes

    own = tmp_path / "pytensor"
    monkeypatch.setenv("PYTENSOR_FLAGS", f"base_compiledir={own},numba__fastmath=False")
    full = compose(["model=onset", "model.also_fit=[]", "inference.compare=false",
                    "sampler.draws=100", "sampler.tune=100", "sampler.chains=2",
                    "inference.refit_draws_factor=null",
                    "inference.refit_target_accept=null"])  # fmt: skip
    cfg = sub_config(full, stage.NEEDS)
    run = tmp_path / "run"
    run.mkdir()
    _run_folder(small_study, full, run)
    plan = '[["onset", true, {}]]'
    child = subprocess.run([sys.executable, "-m", "delusion_bayes.stages.prefetch", str(run), plan],
                           capture_output=True, text=True, timeout=900)  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    assert "compiled the log-density of onset" in child.stderr
    again = subprocess.run([sys.executable, "-c", LOAD_AGAIN, str(run)], capture_output=True,
                           text=True, timeout=900)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    _, found, _, written, spec_hash = again.stdout.split()[-5:]
    assert int(found) > 0 and int(written) == 0, again.stdout
    dt = stage.fit_one(small_study, "onset", cfg, primary=True)
    assert dt.attrs["spec_hash"] == spec_hash
    # the fit, at its end, marks the whole fit compiled: the next run starts no child for it
    assert prefetch.start(small_study, cfg, tmp_path, skip_first=False) is None


def test_the_child_imports_the_stage_code_from_any_working_folder(tmp_path, monkeypatch):
    """``prefetch.child_command``: started from a folder that holds another ``delusion_bayes``
    (a checkout of another version), the child's interpreter imports this process's package,
    not that one (with plain ``python -m`` it imported the folder's: its graphs' markers then
    never matched the stage's). Checked with the child's flags and environment and a probe in
    place of the module."""
    import subprocess
    from pathlib import Path

    import delusion_bayes

    fake = tmp_path / "delusion_bayes"
    (fake / "stages").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "stages" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    cmd, env = prefetch.child_command("run", "[]")
    assert cmd[-4:] == ["-m", prefetch.__name__, "run", "[]"]
    assert env["NUMBA_NUM_THREADS"] == "1" and env["OMP_NUM_THREADS"] == "1"
    probe = "import delusion_bayes; print(delusion_bayes.__file__)"
    out = subprocess.run([*cmd[:-4], "-c", probe], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).resolve() == Path(delusion_bayes.__file__).resolve()
    # without the child's flags and path, the folder's package wins: the probe can tell
    plain = subprocess.run([cmd[0], "-c", probe], capture_output=True, text=True)
    assert Path(plain.stdout.strip()).resolve() == (fake / "__init__.py").resolve()


def test_close_stops_a_running_child(small_study, tmp_path):
    """A child still running when its stage ends is stopped (SIGTERM: negative exit code)."""
    full = compose(["model=onset", "model.also_fit=[]", "inference.compare=false",
                    UNIQUE_PRIOR.format(0.4138)])  # fmt: skip
    cfg = sub_config(full, stage.NEEDS)
    _run_folder(small_study, full, tmp_path)
    handle = prefetch.start(small_study, cfg, tmp_path, skip_first=False)
    assert handle is not None  # closed at once: the child is still starting up
    assert handle.close() == -15
    assert handle.proc.poll() == -15


class _Handle:
    def __init__(self, calls):
        self.calls = calls

    def close(self):
        self.calls.append("close")


def test_the_pipeline_closes_the_prefetch_when_its_stage_ends(tmp_path, monkeypatch):
    """``prepare`` runs before the first stage (told whether its stage runs first), the handle
    is closed when that stage ends, before the next one; a ``prepare`` that raises is logged and
    the run goes on."""
    from delusion_bayes import pipeline
    from delusion_bayes.stages import baselines

    calls = []

    def prepare(ds, cfg, run_dir, *, first):
        calls.append(("prepare", first))
        return _Handle(calls)

    monkeypatch.setattr(stage, "prepare", prepare)
    monkeypatch.setattr(stage, "run", lambda ds, cfg, run_dir: calls.append("models") or {})
    monkeypatch.setattr(baselines, "run", lambda ds, cfg, run_dir: calls.append("baselines") or {})
    cfg = compose(["data=small", "stages=[models,baselines]"])
    pipeline.run(cfg, tmp_path / "a")
    assert calls == [("prepare", True), "models", "close", "baselines"]

    calls.clear()
    monkeypatch.setattr(stage, "prepare", lambda *a, **k: 1 / 0)
    record = pipeline.run(compose(["data=small", "stages=[baselines,models]"]), tmp_path / "b")
    assert calls == ["baselines", "models"]
    assert record["failed"] == []
