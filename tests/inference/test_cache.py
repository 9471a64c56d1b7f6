"""The compile cache: where PyTensor compiles to, and that a cached kernel gives the same numbers
as a freshly compiled one (so a seed reproduces a fit whether or not the cache was warm)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

_FLAGS = """
import sys
from delusion_bayes.inference.cache import configure_pytensor_cache
configure_pytensor_cache(sys.argv[1])
import pytensor
print(pytensor.config.base_compiledir)
print(pytensor.config.numba__fastmath)
"""

# PyTensor imported first (a script that imports PyMC before fitting)
_LATE = """
import sys
import pytensor
from delusion_bayes.inference.cache import configure_pytensor_cache
configure_pytensor_cache(sys.argv[1])
print(pytensor.config.numba__fastmath)
"""

# logp and gradient of the small onset model through nutpie's compiled numba kernels
_LOGP = """
import sys
import numpy as np
from delusion_bayes.inference.cache import configure_pytensor_cache
configure_pytensor_cache(sys.argv[1])
import nutpie
import delusion_bayes as db
from delusion_bayes.models.build import build_model
from delusion_bayes.models.spec import build_spec
model = build_model(build_spec(db.data.simulate_study(preset="small", seed=0), "onset"))
compiled = nutpie.compile_pymc_model(model)
x = 0.3 * np.random.default_rng(5).normal(size=compiled.n_dim)
logp, grad = compiled.logp_func(x)[:2]
np.save(sys.argv[2], np.concatenate([[logp], grad]))
"""

# the same through nutpie's C callback of the frozen graph, as the main job compiles it
_CALLBACK = """
import ctypes, sys
import numpy as np
from delusion_bayes.inference.cache import configure_pytensor_cache
configure_pytensor_cache(sys.argv[1])
import delusion_bayes as db
from delusion_bayes.inference.cache import compiled_nutpie
from delusion_bayes.models.build import build_model
from delusion_bayes.models.spec import build_spec
model = build_model(build_spec(db.data.simulate_study(preset="small", seed=0), "onset"))
compiled = compiled_nutpie(model, freeze=True)
x = 0.3 * np.random.default_rng(5).normal(size=compiled.n_dim)
ptr = ctypes.POINTER(ctypes.c_double)
grad, logp = np.zeros_like(x), np.zeros(())
cb = compiled.compiled_logp_func
assert cb.ctypes(x.size, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr),
                 logp.ctypes.data_as(ptr), None) == 0
np.save(sys.argv[2], np.concatenate([[logp], grad]))
print(cb.cache_hits, compiled.compiled_expand_func.cache_hits)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    env.update(extra)
    return env


def _run(code: str, *args: str, env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_pytensor_compiles_into_the_cache_without_fastmath(tmp_path):
    """``configure_pytensor_cache`` points PyTensor at ``<cache>/pytensor`` and turns numba's
    fastmath off (PyTensor's default is on); flags the user set win."""
    lines = _run(_FLAGS, str(tmp_path), env=_env()).split()
    assert Path(lines[0]) == tmp_path / "pytensor"
    assert lines[1] == "False"
    lines = _run(_FLAGS, str(tmp_path), env=_env(PYTENSOR_FLAGS="numba__fastmath=True")).split()
    assert Path(lines[0]) == tmp_path / "pytensor"
    assert lines[1] == "True"


def test_fastmath_is_turned_off_when_pytensor_was_imported_first(tmp_path):
    """A script importing PyMC before its first fit: fastmath is still turned off (before the
    fix the same seed gave 0 divergences there and 1 in a script that did not import PyMC
    first: onset, paper_like, 2 x 500, seed 1), unless the user's flags name it."""
    assert _run(_LATE, str(tmp_path), env=_env()).split() == ["False"]
    env = _env(PYTENSOR_FLAGS="numba__fastmath=True")
    assert _run(_LATE, str(tmp_path), env=env).split() == ["True"]


@pytest.mark.slow
def test_cached_kernels_give_bit_identical_gradients(tmp_path):
    """Two processes on one empty cache: the first compiles the kernels, the second loads them.
    Logp and gradient at the same point must be bit-identical. With numba fastmath on (PyTensor's
    default) they were not: 2.8e-14 apart on this model, 1.4e-14 on the paper_like joint
    model, where the same seed then gave 1 divergence cold and 0 warm (2 x 500 draws)."""
    env = _env()
    cold, warm = tmp_path / "cold.npy", tmp_path / "warm.npy"
    _run(_LOGP, str(tmp_path / "cache"), str(cold), env=env)
    _run(_LOGP, str(tmp_path / "cache"), str(warm), env=env)
    a, b = np.load(cold), np.load(warm)
    assert np.isfinite(a).all() and a.size > 10
    np.testing.assert_array_equal(a, b)


def test_fit_key_changes_with_every_setting_and_the_spec():
    from delusion_bayes.inference.cache import code_fingerprint, fit_key

    base = {"sampler": "nutpie", "draws": 500, "tune": 500, "chains": 2, "seed": 1}
    k0 = fit_key("spec-a", base)
    assert fit_key("spec-a", dict(base)) == k0
    assert fit_key("spec-b", base) != k0
    for name, value in [("sampler", "pymc"), ("draws", 501), ("seed", 2), ("chains", 4)]:
        assert fit_key("spec-a", {**base, name: value}) != k0, name
    assert len(code_fingerprint()) == 16


def test_reused_fit_is_the_stored_fit_and_other_settings_refit(small_study, tmp_path):
    """``fit(..., reuse=True)``: the second identical call reads ``<cache>/fits/<key>.nc``
    (``fit_reused`` 1) and returns the same draws; another seed or consensus rule refits."""
    import xarray as xr

    from delusion_bayes.models import fit

    kw = dict(
        model="onset",
        draws=60,
        tune=60,
        chains=1,
        cores=1,
        seed=3,
        cache_dir=tmp_path,
        log_likelihood=False,
        posterior_predictive=False,
        reuse=True,
    )
    first = fit(small_study, **kw)
    assert first.attrs["fit_reused"] == 0
    files = list((tmp_path / "fits").glob("*.nc"))
    assert len(files) == 1
    again = fit(small_study, **kw)
    assert again.attrs["fit_reused"] == 1
    xr.testing.assert_identical(first["posterior"].to_dataset(), again["posterior"].to_dataset())
    assert int(again["sample_stats"]["diverging"].sum()) == int(
        first["sample_stats"]["diverging"].sum()
    )
    other = fit(small_study, **{**kw, "seed": 4})
    assert other.attrs["fit_reused"] == 0
    mean_rule = fit(small_study, **{**kw, "consensus": "mean"})
    assert mean_rule.attrs["fit_reused"] == 0
    # the shared graph evaluates the density in another order: other draws, another key
    shared = fit(small_study, **{**kw, "share_graph": True})
    assert shared.attrs["fit_reused"] == 0
    assert len(list((tmp_path / "fits").glob("*.nc"))) == 4
    assert not np.array_equal(
        first["observed_data"]["y"].values, mean_rule["observed_data"]["y"].values
    )


# --- the fit cache verifies what it returns (issue 18, item 4) ---------------------------------


def _tiny_fit(seed: int = 0, chains: int = 2, draws: int = 5):
    import xarray as xr

    rng = np.random.default_rng(seed)
    post = xr.Dataset(
        {"t50": (("chain", "draw", "model"), rng.normal(size=(chains, draws, 3)))},
        coords={"chain": np.arange(chains), "draw": np.arange(draws), "model": ["a", "b", "c"]},
    )
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((chains, draws), bool))})
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})


SETTINGS = {"sampler": "nutpie", "draws": 5, "tune": 5, "chains": 2, "seed": 1}


def test_cached_fit_round_trips_with_its_key_inputs(tmp_path):
    from delusion_bayes.inference.cache import fit_key, load_fit, save_fit

    key = fit_key("spec-a", SETTINGS)
    dt = _tiny_fit()
    path = save_fit(dt, key, tmp_path)
    back = load_fit(key, tmp_path)
    assert back is not None
    np.testing.assert_array_equal(back["posterior"]["t50"].values, dt["posterior"]["t50"].values)
    import json

    stored = json.loads(back.attrs["cache_inputs"])
    assert stored["spec"] == "spec-a" and stored["seed"] == 1 and stored["chains"] == 2
    assert path.parent == tmp_path / "fits"
    assert (tmp_path / "fits").stat().st_mode & 0o777 == 0o700


def test_substituted_cache_file_is_refused_and_logged(tmp_path, caplog):
    """Another seed's cached fit copied over this key's file: not returned, a warning says so."""
    import shutil

    from delusion_bayes.inference.cache import fit_key, fit_path, load_fit, save_fit

    key1 = fit_key("spec-a", SETTINGS)
    key2 = fit_key("spec-a", {**SETTINGS, "seed": 2})
    save_fit(_tiny_fit(1), key1, tmp_path)
    save_fit(_tiny_fit(2), key2, tmp_path)
    shutil.copyfile(fit_path(key2, tmp_path), fit_path(key1, tmp_path))
    with caplog.at_level("WARNING", logger="delusion_bayes.inference.cache"):
        assert load_fit(key1, tmp_path) is None
    assert f"cached fit of key {key2!r}, not of {key1!r}" in caplog.text
    assert "refitting" in caplog.text


def test_cache_file_with_edited_values_or_inputs_is_refused(tmp_path, caplog):
    import json

    import xarray as xr

    from delusion_bayes.inference.cache import fit_key, fit_path, load_fit, save_fit

    key = fit_key("spec-a", SETTINGS)
    save_fit(_tiny_fit(), key, tmp_path)
    path = fit_path(key, tmp_path)

    def rewrite(edit):
        dt = xr.open_datatree(path).load()
        edit(dt)
        path.unlink()
        dt.to_netcdf(path)

    # values changed, attrs (key, inputs, digest) copied along
    rewrite(lambda dt: dt["posterior"]["t50"].values.__setitem__((0, 0, 0), 99.0))
    with caplog.at_level("WARNING"):
        assert load_fit(key, tmp_path) is None
    assert "content digest" in caplog.text

    # inputs edited to claim another seed (they no longer hash to the key)
    save_fit(_tiny_fit(), key, tmp_path)
    stored = json.loads(xr.open_datatree(path).attrs["cache_inputs"])
    rewrite(lambda dt: dt.attrs.update(cache_inputs=json.dumps({**stored, "seed": 9})))
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert load_fit(key, tmp_path) is None
    assert "do not hash to" in caplog.text

    # a file without the cache attrs (an older version, or written by hand)
    save_fit(_tiny_fit(), key, tmp_path)
    rewrite(lambda dt: [dt.attrs.pop(a) for a in ("cache_key", "cache_inputs")])
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert load_fit(key, tmp_path) is None
    assert "has no ['cache_key', 'cache_inputs']" in caplog.text


def test_cached_fit_of_another_spec_is_refused(tmp_path, caplog):
    """The fit's own spec_hash attr (set by models.fit) must be the spec its key was made of."""
    from delusion_bayes.inference.cache import fit_key, load_fit, save_fit

    key = fit_key("spec-a", SETTINGS)
    dt = _tiny_fit()
    dt.attrs["spec_hash"] = "spec-b"
    save_fit(dt, key, tmp_path)
    with caplog.at_level("WARNING"):
        assert load_fit(key, tmp_path) is None
    assert "fit of spec 'spec-b', its key inputs say 'spec-a'" in caplog.text


def test_cached_fit_with_other_chains_than_its_key_is_refused(tmp_path, caplog):
    from delusion_bayes.inference.cache import fit_key, load_fit, save_fit

    key = fit_key("spec-a", SETTINGS)  # chains 2
    save_fit(_tiny_fit(chains=1), key, tmp_path)
    with caplog.at_level("WARNING"):
        assert load_fit(key, tmp_path) is None
    assert "1 chains, its key says 2" in caplog.text


def test_save_fit_needs_a_key_from_fit_key(tmp_path):
    from delusion_bayes.inference.cache import save_fit

    with pytest.raises(ValueError, match="was not made by fit_key"):
        save_fit(_tiny_fit(), "0123456789abcdefabcd", tmp_path)


@pytest.mark.slow
def test_substituted_fit_is_refitted_by_fit(small_study, tmp_path, caplog):
    """End to end: seed 4's cached fit copied over seed 3's; ``fit(seed=3, reuse=True)``
    refits (``fit_reused`` 0), logs it, returns seed 3's draws and repairs the cache."""
    import shutil

    import xarray as xr

    from delusion_bayes.models import fit

    kw = dict(
        model="onset",
        draws=60,
        tune=60,
        chains=1,
        cores=1,
        seed=3,
        cache_dir=tmp_path,
        log_likelihood=False,
        posterior_predictive=False,
        reuse=True,
    )
    first = fit(small_study, **kw)
    (f3,) = list((tmp_path / "fits").glob("*.nc"))
    fit(small_study, **{**kw, "seed": 4})
    (f4,) = [p for p in (tmp_path / "fits").glob("*.nc") if p != f3]
    shutil.copyfile(f4, f3)
    with caplog.at_level("WARNING", logger="delusion_bayes.inference.cache"):
        again = fit(small_study, **kw)
    assert again.attrs["fit_reused"] == 0
    assert "ignoring the cached fit" in caplog.text
    xr.testing.assert_equal(first["posterior"].to_dataset(), again["posterior"].to_dataset())
    assert fit(small_study, **kw).attrs["fit_reused"] == 1  # the repaired entry is used again


# --- cache folders only their owner can write ---------------------------------------------------


def test_cache_folders_are_created_private(tmp_path):
    from delusion_bayes.inference.cache import private_dir

    d = private_dir(tmp_path / "new" / "cache")
    assert d.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_writable_by_others_cache_folder_is_refused(tmp_path, mode, caplog):
    from delusion_bayes.inference.cache import CacheDirError, fit_key, private_dir, save_fit

    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    with pytest.raises(CacheDirError, match=rf"{d} has mode {oct(mode)}.*chmod go-w"):
        private_dir(d)
    (d / "fits").mkdir(mode=0o700)
    with pytest.raises(CacheDirError):
        save_fit(_tiny_fit(), fit_key("spec-a", SETTINGS), d)


def test_compile_cache_refuses_a_world_writable_folder(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    out = subprocess.run(
        [sys.executable, "-c", _FLAGS, str(d)], env=_env(), capture_output=True, text=True
    )
    assert out.returncode != 0
    assert "CacheDirError" in out.stderr and "others can write to it" in out.stderr


@pytest.mark.slow
def test_cached_callbacks_give_bit_identical_gradients(tmp_path):
    """nutpie's C callbacks of a frozen graph (``inference/nutpie_cfuncs.py``) across processes
    on one empty cache: the first process compiles them, the second loads both from the cache
    (numba's ``cache_hits``), and the log-density and gradient at one point are bit-identical."""
    env = _env()
    cold, warm = tmp_path / "cold.npy", tmp_path / "warm.npy"
    assert _run(_CALLBACK, str(tmp_path / "cache"), str(cold), env=env).split() == ["0", "0"]
    assert _run(_CALLBACK, str(tmp_path / "cache"), str(warm), env=env).split() == ["1", "1"]
    a, b = np.load(cold), np.load(warm)
    assert np.isfinite(a).all() and a.size > 10
    np.testing.assert_array_equal(a, b)
