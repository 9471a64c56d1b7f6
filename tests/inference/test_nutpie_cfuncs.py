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


def _at(compiled, x):
    """The compiled log-density callback at ``x``: (log p, gradient)."""
    ptr = ctypes.POINTER(ctypes.c_double)
    grad, logp = np.zeros_like(x), np.zeros(())
    code = compiled.compiled_logp_func.ctypes(
        x.size, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), None
    )
    assert code == 0
    return float(logp), grad


def _data_model(y):
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 3)
        pm.Deterministic("twice", 2 * mu)
        pm.Normal("y", mu, sigma, observed=y)
    return m


def test_callbacks_are_kept_in_the_compile_cache_keyed_by_graph_and_data(monkeypatch):
    """A frozen graph's two callbacks are compiled once and loaded from the compile cache after
    (numba's ``cache_hits``), and the loaded ones compute what a fresh compile does: the same
    log-density and gradient at random points, the same draws and expansion from a seed. Other
    data (the same structure, other constants) is another key for the log-density: compiled
    afresh, not the first data's callback; the expansion, which does not read the data, is
    the cached one."""
    import nutpie.compile_pymc as cp

    from delusion_bayes.inference.cache import compiled_nutpie

    # data no earlier run compiled (the cache folder outlives the test session)
    y = np.random.default_rng(int.from_bytes(__import__("os").urandom(8))).normal(1, 2, 30)
    first = compiled_nutpie(_data_model(y), freeze=True)
    again = compiled_nutpie(_data_model(y), freeze=True)
    other = compiled_nutpie(_data_model(y + 1.0), freeze=True)
    assert first.compiled_logp_func.cache_hits == 0
    assert (again.compiled_logp_func.cache_hits, again.compiled_expand_func.cache_hits) == (1, 1)
    # the log-density depends on the data: compiled; the expansion (mu, sigma -> twice) does not
    assert (other.compiled_logp_func.cache_hits, other.compiled_expand_func.cache_hits) == (0, 1)
    with monkeypatch.context() as m:  # nutpie's own callbacks, compiled, never cached
        m.setattr(cp, "_make_c_logp_func", nutpie_cfuncs.ORIGINALS["logp"])
        m.setattr(cp, "_make_c_expand_func", nutpie_cfuncs.ORIGINALS["expand"])
        fresh = nutpie.compile_pymc_model(_data_model(y), freeze_model=True)
        fresh_other = nutpie.compile_pymc_model(_data_model(y + 1.0), freeze_model=True)
    rng = np.random.default_rng(5)
    for _ in range(5):
        x = rng.normal(size=first.n_dim)
        want, want_other = _at(fresh, x), _at(fresh_other, x)
        for got in (_at(first, x), _at(again, x)):
            assert got[0] == want[0] and np.array_equal(got[1], want[1])
        assert _at(other, x)[0] == want_other[0] != want[0]
    kw = dict(draws=100, tune=100, chains=2, cores=1, seed=3, progress_bar=False)
    a, b = nutpie.sample(again, **kw), nutpie.sample(fresh, **kw)
    for var in ("mu", "sigma", "twice"):
        assert np.array_equal(a.posterior[var].values, b.posterior[var].values), var


def test_callbacks_of_a_graph_with_shared_data_are_not_cached():
    """nutpie's callbacks of a graph with shared data (``pm.Data``, compiled unfrozen for reuse)
    hold the arrays' addresses, which numba will not cache: the log-density's has no key and is
    compiled as before."""
    import pymc as pm

    from delusion_bayes.inference.cache import compiled_nutpie

    with pm.Model() as m:
        y = pm.Data("y_obs", np.linspace(-1.0, 1.0, 20))
        mu = pm.Normal("mu", 0, 5)
        pm.Normal("y", mu, 1.0, observed=y)
    compiled = compiled_nutpie(m, freeze=False)
    assert compiled.shared_var_keys  # the data are shared
    cb = compiled.compiled_logp_func
    assert cb.cache_hits == 0 and cb.__wrapped__ not in nutpie_cfuncs._CACHE_KEYS
    # the expansion reads no data: kept like a frozen graph's
    assert compiled.compiled_expand_func.__wrapped__ in nutpie_cfuncs._CACHE_KEYS
