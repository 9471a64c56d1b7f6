"""The adjudicated-level terms of the disengagement model's integrand as one PyTensor Op.

For model-day ``u`` at quadrature node ``q``, with linear predictor ``eta[u, q]`` and the
bounds ``c_lo[u] < c_hi[u]`` of the adjudicated level's category (``-OPEN`` / ``+OPEN`` at an
open end, both open where the day has no adjudication), the ``eta``-dependent part of
``log(sigmoid(eta - c_lo) - sigmoid(eta - c_hi))`` is

.. math::

    \\ell_{uq} = -\\operatorname{softplus}(c^{lo}_u - \\eta_{uq})
        - \\operatorname{softplus}(\\eta_{uq} - c^{hi}_u)

(the rest, ``log(1 - exp(c_lo - c_hi))``, is a constant per level that
:func:`delusion_bayes.models.blocks.marginal_ratings` adds once). Why by hand: as PyTensor's
elementwise ``softplus`` each term is a scalar libm ``exp`` and ``log1p`` forward and another
``exp`` in the gradient, for every bound including the open ones; the disengagement model's
log-density and gradient spent more than half its extra time over the joint model's there
(``experiments/bench/bench_level_terms.py``). This Op computes the finite bounds only, with
the rating kernel's vectorised ``softplus_pass`` (:mod:`delusion_bayes.models.rating_terms`),
and returns the two sigmoids its pullback needs.

:func:`level_terms_op` (``eta`` ``(U, Q)``, ``c_lo``, ``c_hi`` ``(U,)``) returns ``ll``,
``w_lo = sigmoid(c_lo - eta)`` and ``w_hi = sigmoid(eta - c_hi)`` ``(U, Q)`` (0 at an open
bound); only ``ll`` is differentiable: ``d ll / d eta = w_lo - w_hi``,
``d ll / d c_lo = -w_lo``, ``d ll / d c_hi = w_hi``.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from .rating_terms import NJIT_OPTIONS, OPEN_AT, softplus_pass

#: bump when the kernel changes (part of PyTensor's numba cache key)
_KERNEL_VERSION = 1


@numba.njit(cache=True, **NJIT_OPTIONS)
def level_terms_kernel(eta, c_lo, c_hi):
    """Values ``ll`` and the sigmoids ``w_lo``, ``w_hi`` (module docstring); plain arrays."""
    n_u, n_q = eta.shape
    n_b = 0
    for u in range(n_u):
        n_b += (c_lo[u] >= -OPEN_AT) + (c_hi[u] <= OPEN_AT)
    rows, signs = np.empty(n_b, np.int64), np.empty(n_b)
    j = 0
    for u in range(n_u):
        for c, sign in ((c_lo[u], 1.0), (c_hi[u], -1.0)):
            if -OPEN_AT <= c <= OPEN_AT:
                rows[j], signs[j] = u, sign
                j += 1
    y = np.empty(n_b * n_q)
    for j in range(n_b):  # y = eta - c_lo (lower bound) or c_hi - eta (upper bound)
        u, sign = rows[j], signs[j]
        c = c_lo[u] if sign > 0.0 else c_hi[u]
        for q in range(n_q):
            y[j * n_q + q] = sign * (eta[u, q] - c)
    t, w = np.empty_like(y), np.empty_like(y)
    softplus_pass(y, t, w)  # t = -softplus(-y), w = sigmoid(-y)
    ll, w_lo, w_hi = np.zeros((n_u, n_q)), np.zeros((n_u, n_q)), np.zeros((n_u, n_q))
    for j in range(n_b):
        u = rows[j]
        out = w_lo if signs[j] > 0.0 else w_hi
        for q in range(n_q):
            ll[u, q] += t[j * n_q + q]
            out[u, q] = w[j * n_q + q]
    return ll, w_lo, w_hi


@functools.cache
def _make_op():
    """Build the ``LevelTerms`` Op class and register its numba implementation, once."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    class LevelTerms(Op):
        """The level terms with the sigmoids of their gradient (module docstring)."""

        __props__ = ()

        def make_node(self, eta, c_lo, c_hi):
            eta, c_lo, c_hi = (
                pt.as_tensor_variable(x).astype("float64") for x in (eta, c_lo, c_hi)
            )
            if eta.ndim != 2 or c_lo.ndim != 1 or c_hi.ndim != 1:
                raise TypeError(
                    "LevelTerms expects eta (U, Q), c_lo and c_hi (U,); "
                    f"got ndims {eta.ndim}, {c_lo.ndim}, {c_hi.ndim}"
                )
            outs = [pt.matrix(dtype="float64") for _ in range(3)]
            return Apply(self, [eta, c_lo, c_hi], outs)

        def perform(self, node, inputs, output_storage):
            for store, value in zip(output_storage, level_terms_kernel(*inputs), strict=True):
                store[0] = value

        def infer_shape(self, node, shapes):
            return [shapes[0]] * 3

        def pullback(self, inputs, outputs, cotangents):
            from pytensor.gradient import DisconnectedType

            _, w_lo, w_hi = outputs
            g = cotangents[0]
            for extra in cotangents[1:]:
                if not isinstance(extra.type, DisconnectedType):
                    raise NotImplementedError("LevelTerms: only its first output is differentiable")
            if isinstance(g.type, DisconnectedType):
                g = pt.zeros_like(w_lo)
            g_lo, g_hi = g * w_lo, g * w_hi
            return [g_lo - g_hi, -g_lo.sum(axis=1), g_hi.sum(axis=1)]

    @register_funcify_default_op_cache_key(LevelTerms)
    def _funcify(op, node=None, **kwargs):
        kernel = level_terms_kernel

        @numba.njit
        def level_terms(eta, c_lo, c_hi):
            return kernel(eta, c_lo, c_hi)

        return level_terms, _KERNEL_VERSION

    return LevelTerms


def level_terms_op():
    """The ``LevelTerms`` Op instance."""
    return _make_op()()


def level_terms(eta, c_lo, c_hi):
    """``ll[u, q]`` (module docstring) as a differentiable PyTensor expression."""
    return level_terms_op()(eta, c_lo, c_hi)[0]


__all__ = ["level_terms", "level_terms_kernel", "level_terms_op"]
