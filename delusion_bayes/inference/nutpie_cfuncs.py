"""nutpie's two C callbacks (log-density with gradient; the expansion to the traced variables)
without the ``out[...] = values`` copy, which cost every process ~2.5 s on its first compile.

nutpie 0.16 wraps a model's compiled PyTensor functions in two ``numba.cfunc`` callbacks that
copy the result into nuts-rs' buffer with ``out[...] = grad``. numba lowers that assignment with
its broadcasting ``setitem``, whose shape-mismatch error builds its message from strings at run
time: the first such compile in a process types and lowers numba's unicode and ``str``/``repr``
machinery, ~2.5 s (numba's compile events on the joint model's warm compile: ~3 of 9 s; a
cfunc alone: 2.0-2.5 s with the assignment, 0.2-0.3 s with a loop). Being C callbacks of
generated code, they are never in numba's disk cache: every process paid it, the main job's
stage and its compile prefetch each, every coverage, SBC or design worker.

:func:`install` replaces nutpie's two factories (``nutpie.compile_pymc._make_c_logp_func`` and
``_make_c_expand_func``, module globals it looks up at each compile) with copies that check the
length and copy in a loop. Behaviour is nutpie's: a wrong length returns the error code its
``except`` clause returns (1, -2), and everything else is line for line. A new nutpie whose
factories have other parameters is left alone (logged): its own code then runs, only slower to
compile. Hand-written because nutpie has no option for it (checked in 0.16.11, the newest on the
registry); ``tests/inference/test_nutpie_cfuncs.py`` checks the draws are nutpie's own.

The callbacks are also **kept in the compile cache** (:func:`cached_callbacks`). Compiling a
callback links the model's whole compiled log-density into it and has LLVM optimise the result
again: 1.5-3.4 s per fit on a warm cache, more than half of a warm compile (joint 3.4 of 6.1 s,
rater 2.5 of 3.2 s, onset 1.6 of 3.8 s), paid by every process. numba can cache a ``cfunc``, but
its cache key hashes the callback's closure, whose numba dispatcher pickles with a fresh uuid in
each process, so it would never hit. ``_CallbackCache`` (made by :func:`_callback_cache_class`)
keys a callback by what it is compiled from instead: PyTensor's own cache key of the function it
calls (the graph's structure and its constants; PyTensor keys its kernel cache with it), the
callback's sizes, and :func:`~.cache.code_fingerprint` (this package's model and inference code
and the sampling libraries' versions). A callback that reads shared data (a graph compiled for
reuse with ``pm.Data``) is not kept: it holds the arrays' addresses, which numba refuses to
cache. The files go to PyTensor's numba cache folder, so emptying the compile cache empties
them too.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import logging
import threading
import weakref

import numpy as np

log = logging.getLogger(__name__)

#: the parameters of nutpie's factories these copies replace (nutpie 0.16)
_LOGP_PARAMS = ("n_dim", "logp_fn", "user_data", "shared_keys", "shared_data")
_EXPAND_PARAMS = ("n_dim", "n_expanded", "expand_fn", "user_data", "shared_var_keys", "shared_data")

_installed: list[bool] = []
#: nutpie's own factories, kept when :func:`install` replaced them (the tests compare with them)
ORIGINALS: dict[str, object] = {}


def install() -> bool:
    """Use the loop-copy callbacks in ``nutpie.compile_pymc`` (once per process); returns whether
    they are in use."""
    if _installed:
        return _installed[0]
    import nutpie.compile_pymc as cp

    ok = (
        tuple(inspect.signature(cp._make_c_logp_func).parameters) == _LOGP_PARAMS
        and tuple(inspect.signature(cp._make_c_expand_func).parameters) == _EXPAND_PARAMS
        and hasattr(cp, "make_extraction_fn")
    )
    if ok:
        ORIGINALS.update(logp=cp._make_c_logp_func, expand=cp._make_c_expand_func)
        cp._make_c_logp_func = make_c_logp_func
        cp._make_c_expand_func = make_c_expand_func
    else:
        log.info("nutpie's callback factories changed: its own (slower to compile) are used")
    _installed.append(ok)
    return ok


def make_c_logp_func(n_dim, logp_fn, user_data, shared_keys, shared_data):
    """nutpie's ``_make_c_logp_func`` with the gradient copied in a loop."""
    import numba
    from nutpie.compile_pymc import make_extraction_fn

    extract = make_extraction_fn(logp_fn, shared_data, shared_keys, user_data.dtype)

    c_sig = numba.types.int64(
        numba.types.uint64,
        numba.types.CPointer(numba.types.double),
        numba.types.CPointer(numba.types.double),
        numba.types.CPointer(numba.types.double),
        numba.types.voidptr,
    )

    def logp_numba(dim, x_, out_, logp_, user_data_):
        if dim != n_dim:
            return -1

        try:
            x = numba.carray(x_, (n_dim,))
            out = numba.carray(out_, (n_dim,))
            logp = numba.carray(logp_, ())

            logp_val, grad = extract(x, user_data_)
            logp[()] = logp_val
            if grad.shape[0] != n_dim:  # nutpie's ``out[...] = grad`` raised: code 1
                return 1
            for i in range(n_dim):
                out[i] = grad[i]

            if not np.all(np.isfinite(out)):
                return 3
            if not np.isfinite(logp_val):
                return 4
        except Exception:  # noqa: BLE001
            return 1
        return 0

    if not shared_keys:
        _remember_key(logp_numba, "logp", logp_fn, n_dim)
    return logp_numba, c_sig


def make_c_expand_func(n_dim, n_expanded, expand_fn, user_data, shared_var_keys, shared_data):
    """nutpie's ``_make_c_expand_func`` with the values copied in a loop."""
    import numba
    from nutpie.compile_pymc import make_extraction_fn

    extract = make_extraction_fn(expand_fn, shared_data, shared_var_keys, user_data.dtype)

    c_sig = numba.types.int64(
        numba.types.uint64,
        numba.types.uint64,
        numba.types.CPointer(numba.types.double),
        numba.types.CPointer(numba.types.double),
        numba.types.voidptr,
    )

    def expand_numba(dim, expanded, x_, out_, user_data_):
        if dim != n_dim:
            return -1
        if expanded != n_expanded:
            return -1

        try:
            x = numba.carray(x_, (n_dim,))
            out = numba.carray(out_, (n_expanded,))

            (values,) = extract(x, user_data_)
            if values.shape[0] != n_expanded:  # nutpie's ``out[...] = values`` raised: -2
                return -2
            for i in range(n_expanded):
                out[i] = values[i]

        except Exception:  # noqa: BLE001
            return -2
        return 0

    if not shared_var_keys:
        _remember_key(expand_numba, "expand", expand_fn, n_dim, n_expanded)
    return expand_numba, c_sig


# --- the callbacks in the compile cache -------------------------------------------------------

#: the callbacks made by the factories above that :func:`cached_callbacks` may keep, with their
#: key and the code fingerprint in it
_CACHE_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PATCH_LOCK = threading.Lock()
#: while a :func:`cached_callbacks` block is open: numba's own ``cfunc``, how many blocks are
#: open, and the code fingerprint they were given
_PATCH: list = []


def _remember_key(callback, kind: str, fn, *sizes: int) -> None:
    """Key ``callback`` (which calls the compiled PyTensor function ``fn``) for the compile
    cache, when PyTensor caches ``fn`` itself (its key then names the graph and its constants)."""
    from pytensor.configdefaults import config

    if not config.numba__cache:
        return
    from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS

    py_func = getattr(fn, "py_func", None)
    graph = None if py_func is None else CACHED_SRC_FUNCTIONS.get(py_func)
    if graph is None:  # a function PyTensor does not cache (or a test's stand-in)
        return
    with _PATCH_LOCK:
        fingerprint = _PATCH[2] if _PATCH else None
    if fingerprint is None:  # compiled outside cached_callbacks(): numba.cfunc is numba's own
        return
    sizes_ = [int(n) for n in sizes]
    blob = json.dumps([kind, graph, sizes_, bool(config.numba__fastmath), fingerprint])
    _CACHE_KEYS[callback] = (hashlib.sha256(blob.encode()).hexdigest()[:32], fingerprint)


@contextlib.contextmanager
def cached_callbacks(fingerprint: str):
    """Within: nutpie's callbacks that :func:`make_c_logp_func` and :func:`make_c_expand_func`
    keyed are loaded from the compile cache, or compiled and saved there. ``fingerprint`` names
    the code they are compiled with and is part of their key (the caller's
    :func:`~.cache.code_fingerprint`: that module imports this one, not the reverse). nutpie
    compiles the callbacks with ``numba.cfunc`` (imported inside its function, so nothing
    narrower can be replaced); the decorator is replaced while any such block is open, and
    passes every other function, or any call with options, to numba's own."""
    import numba

    with _PATCH_LOCK:
        if not _PATCH:
            _PATCH[:] = [numba.cfunc, 0, fingerprint]
            numba.cfunc = _cfunc
        _PATCH[1] += 1
    try:
        yield
    finally:
        with _PATCH_LOCK:
            _PATCH[1] -= 1
            if _PATCH[1] == 0:
                numba.cfunc = _PATCH[0]
                _PATCH.clear()


def _cfunc(sig, *args, **kwargs):
    """``numba.cfunc`` while :func:`cached_callbacks` is open (see there)."""
    decorate = _PATCH[0](sig, *args, **kwargs)

    def wrapper(func):
        keyed = _CACHE_KEYS.get(func)
        if keyed is None or args or kwargs:
            return decorate(func)
        key = keyed[0]
        try:
            return _cached_cfunc(func, sig, key)
        except Exception as err:  # noqa: BLE001 - the cache is an optimisation: compile as numba
            log.info("nutpie's callback not kept in the compile cache (%s): compiled", err)
            return decorate(func)

    return wrapper


def _cached_cfunc(func, sig, key: str):
    """``numba.cfunc(sig)(func)`` with :class:`_CallbackCache` under ``key``."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    cf = CFunc(func, sigutils.normalize_signature(sig), locals={}, options={})
    # numba's ``enable_caching`` makes a FunctionCache keyed by the closure (see the module's
    # docstring); this is the one attribute it sets
    cf._cache = _callback_cache_class()(func, key)
    cf.compile()
    log.debug("nutpie callback %s %s", key, "from the cache" if cf.cache_hits else "compiled")
    return cf


@functools.cache
def _callback_cache_class():
    """:class:`_CallbackCache`, made on first use so that importing this module needs no numba."""
    from numba.core.caching import CompileResultCacheImpl, FunctionCache, _CacheLocator

    class _CallbackLocator(_CacheLocator):
        """Where a keyed callback is cached: PyTensor's numba cache folder, the key as the
        file's disambiguator, the code fingerprint as the source stamp."""

        def __init__(self, key: str, fingerprint: str):
            self._key, self._fingerprint = key, fingerprint

        def get_cache_path(self):
            from pytensor.link.numba.cache import NUMBA_CACHE_PATH

            return str(NUMBA_CACHE_PATH)

        def get_source_stamp(self):
            return self._fingerprint

        def get_disambiguator(self):
            return self._key

        @classmethod
        def from_function(cls, py_func, py_file):
            keyed = _CACHE_KEYS.get(py_func)
            return None if keyed is None else cls(*keyed)

    class _CallbackCacheImpl(CompileResultCacheImpl):
        _locator_classes = [_CallbackLocator]

    class _CallbackCache(FunctionCache):
        """numba's function cache with the index keyed by our key instead of the closure."""

        _impl_class = _CallbackCacheImpl

        def __init__(self, py_func, key: str):
            self._key = key
            super().__init__(py_func)

        def _index_key(self, sig, codegen):
            return (sig, codegen.magic_tuple(), self._key)

    return _CallbackCache
