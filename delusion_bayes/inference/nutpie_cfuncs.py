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
"""

from __future__ import annotations

import inspect
import logging

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

    return expand_numba, c_sig
