"""``inference.nutpie_cfuncs``: nutpie's two C callbacks with the result copied in a loop. They
must be nutpie's callbacks in all but the copy: the same draws from the same seed, and the same
error codes for a wrong length."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

nutpie = pytest.importorskip("nutpie")

from delusion_bayes.inference import nutpie_cfuncs  # noqa: E402


def _model():
    import pymc as pm

    rng = np.random.default_rng(3)
    y = rng.normal(1.0, 2.0, size=40)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 3)
        z = pm.Normal("z", 0, 1, shape=3)
        pm.Deterministic("shifted", mu + z)
        pm.Normal("y", mu + z.sum() * 0.1, sigma, observed=y)
    return m


def test_install_replaces_the_factories_and_the_draws_are_nutpies(monkeypatch):
    import nutpie.compile_pymc as cp

    assert nutpie_cfuncs.install() is True
    assert cp._make_c_logp_func is nutpie_cfuncs.make_c_logp_func
    assert cp._make_c_expand_func is nutpie_cfuncs.make_c_expand_func
    model = _model()
    kw = dict(draws=150, tune=150, chains=2, cores=1, seed=11, progress_bar=False)
    ours = nutpie.sample(nutpie.compile_pymc_model(model, freeze_model=True), **kw)
    with monkeypatch.context() as m:
        m.setattr(cp, "_make_c_logp_func", nutpie_cfuncs.ORIGINALS["logp"])
        m.setattr(cp, "_make_c_expand_func", nutpie_cfuncs.ORIGINALS["expand"])
        theirs = nutpie.sample(nutpie.compile_pymc_model(model, freeze_model=True), **kw)
    for var in ("mu", "sigma", "z", "shifted"):  # the expansion's output too
        a, b = ours.posterior[var].values, theirs.posterior[var].values
        assert a.shape == b.shape and np.array_equal(a, b), var
    assert np.array_equal(
        ours.sample_stats["diverging"].values, theirs.sample_stats["diverging"].values
    )


@pytest.mark.parametrize("factory", ["logp", "expand"])
def test_a_wrong_length_returns_nutpies_error_code(monkeypatch, factory):
    """A function that returns one value too many: nutpie's ``out[...] = grad`` raised and its
    ``except`` returned 1 (log-density) or -2 (expansion); the copies return the same without
    writing, and a wrong dimension returns -1 as nutpie's."""
    import numba
    import nutpie.compile_pymc as cp

    n = 3

    @numba.njit
    def too_long(x, user_data):
        return (x.sum(), np.ones(n + 1)) if factory == "logp" else (np.ones(n + 1),)

    @numba.njit
    def right(x, user_data):
        return (x.sum(), 2.0 * x) if factory == "logp" else (2.0 * x,)

    x = np.arange(1.0, n + 1)
    for fn, code in ((too_long, 1 if factory == "logp" else -2), (right, 0)):
        monkeypatch.setattr(cp, "make_extraction_fn", lambda *a, fn=fn: fn)
        out, logp = np.zeros(n), np.zeros(())
        ptr = ctypes.POINTER(ctypes.c_double)
        args = (x.ctypes.data_as(ptr), out.ctypes.data_as(ptr))
        if factory == "logp":
            raw, sig = nutpie_cfuncs.make_c_logp_func(n, None, np.zeros(1), [], {})
            c = numba.cfunc(sig)(raw)
            assert c.ctypes(n, *args, logp.ctypes.data_as(ptr), None) == code
            assert c.ctypes(n + 1, *args, logp.ctypes.data_as(ptr), None) == -1
        else:
            raw, sig = nutpie_cfuncs.make_c_expand_func(n, n, None, np.zeros(1), [], {})
            c = numba.cfunc(sig)(raw)
            assert c.ctypes(n, n, *args, None) == code
            assert c.ctypes(n, n + 1, *args, None) == -1
        expected = 2.0 * x if code == 0 else np.zeros(n)
        np.testing.assert_array_equal(out, expected)
        if factory == "logp" and code == 0:
            assert logp[()] == x.sum()
