"""The adjudicated-level terms of the disengagement model's integrand as one PyTensor Op.

For model-day ``u`` at quadrature node ``q`` with linear predictor
``eta[u, q] = beta (s[u, q] - STAGE_MIDPOINT) + u_m[model of u]`` and the bounds
``c_lo < c_hi`` of its adjudicated level's category (none: ``(-inf, c1)``, Level A only:
``(c1, c2)``, Level B: ``(c2, inf)``; both open where the day has no adjudication), the
``eta``-dependent part of ``log(sigmoid(eta - c_lo) - sigmoid(eta - c_hi))`` is

.. math::

    \\ell_{uq} = -\\operatorname{softplus}(c^{lo}_u - \\eta_{uq})
        - \\operatorname{softplus}(\\eta_{uq} - c^{hi}_u)

(the rest, ``log(1 - exp(c_lo - c_hi))``, is a constant per level that
:func:`delusion_bayes.models.blocks.marginal_ratings` adds once). Why by hand: as PyTensor's
elementwise ``softplus`` each term is a scalar libm ``exp`` and ``log1p`` forward and another
``exp`` in the gradient, for every bound including the open ones, and the linear predictor
and its gradient are a gather and a scatter over models; the disengagement model's
log-density and gradient spent most of its extra time over the joint model's there
(``experiments/bench/bench_level_terms.py``). This Op computes the finite bounds only, with the
rating kernel's vectorised ``softplus_pass`` (:mod:`delusion_bayes.models.rating_terms`), and
its pullback (a second Op) sums the gradients of ``s``, ``beta``, ``u``, ``c1`` and ``c2`` in
one loop over the stored sigmoids.
"""

from __future__ import annotations

import functools

import numba
import numpy as np

from ..data.schema import STAGE_MIDPOINT
from .rating_terms import NJIT_OPTIONS, first_cotangent, softplus_pass

#: bump when a kernel changes (part of PyTensor's numba cache key)
_KERNEL_VERSION = 2


@numba.njit(cache=True, **NJIT_OPTIONS)
def _bounds(level):
    """The finite bounds of the adjudicated levels: row, cutpoint (0: c1, 1: c2) and sign
    (+1: the category's lower bound, -1: its upper bound), in row order."""
    n_u = level.shape[0]
    n = 0
    for u in range(n_u):
        n += 2 if level[u] == 1 else (1 if level[u] in (0, 2) else 0)
    rows, cut, sign = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    j = 0
    for u in range(n_u):
        lv = level[u]
        if lv == 1 or lv == 2:  # lower bound: c1 for Level A only, c2 for Level B
            rows[j], cut[j], sign[j] = u, lv - 1, 1.0
            j += 1
        if lv == 0 or lv == 1:  # upper bound: c1 for none, c2 for Level A only
            rows[j], cut[j], sign[j] = u, lv, -1.0
            j += 1
    return rows, cut, sign


@numba.njit(cache=True, **NJIT_OPTIONS)
def level_terms_kernel(s, beta, u_m, c1, c2, md_model, level):
    """``ll`` ``(U, Q)``, ``d ll / d eta`` ``(U, Q)`` and the sigmoid of every finite bound and
    node (flat, bound-major) at ``eta = beta (s - STAGE_MIDPOINT) + u_m[md_model]``."""
    n_u, n_q = s.shape
    rows, cut, sign = _bounds(level)
    n_b = rows.shape[0]
    y = np.empty(n_b * n_q)
    for j in range(n_b):  # y = eta - c_lo (lower bound) or c_hi - eta (upper bound)
        r = rows[j]
        off = u_m[md_model[r]] - beta * STAGE_MIDPOINT - (c1 if cut[j] == 0 else c2)
        for q in range(n_q):
            y[j * n_q + q] = sign[j] * (beta * s[r, q] + off)
    t, w = np.empty_like(y), np.empty_like(y)
    softplus_pass(y, t, w)  # t = -softplus(-y), w = sigmoid(-y) = d t / d y
    ll, d_eta = np.zeros((n_u, n_q)), np.zeros((n_u, n_q))
    for j in range(n_b):
        r = rows[j]
        for q in range(n_q):
            ll[r, q] += t[j * n_q + q]
            d_eta[r, q] += sign[j] * w[j * n_q + q]
    return ll, d_eta, w


@numba.njit(cache=True, **NJIT_OPTIONS)
def level_terms_pullback(g, s, beta, n_models, d_eta, w, md_model, level):
    """The vector-Jacobian product of ``ll`` with ``g``: gradients in ``s``, ``beta``, ``u``
    (``(n_models,)``), ``c1`` and ``c2``."""
    n_u, n_q = s.shape
    g_s = np.empty((n_u, n_q))
    g_u = np.zeros(n_models)
    g_beta = 0.0
    for r in range(n_u):
        row = 0.0
        for q in range(n_q):
            ge = g[r, q] * d_eta[r, q]
            g_s[r, q] = beta * ge
            g_beta += ge * (s[r, q] - STAGE_MIDPOINT)
            row += ge
        g_u[md_model[r]] += row
    rows, cut, sign = _bounds(level)
    g_c = np.zeros(2)
    for j in range(rows.shape[0]):  # d t / d c = -sign w
        r = rows[j]
        acc = 0.0
        for q in range(n_q):
            acc += g[r, q] * w[j * n_q + q]
        g_c[cut[j]] -= sign[j] * acc
    return g_s, g_beta, g_u, g_c[0], g_c[1]


def _tensors(*xs, dtype="float64"):
    """``xs`` as PyTensor variables of ``dtype`` (an Op's inputs)."""
    import pytensor.tensor as pt

    return [pt.as_tensor_variable(x).astype(dtype) for x in xs]


@functools.cache
def _grad_op():
    """The ``LevelTermsGrad`` Op (``LevelTerms``' pullback, :func:`level_terms_pullback`), its
    numba implementation registered, once."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    class LevelTermsGrad(Op):
        """The pullback of ``LevelTerms`` (:func:`level_terms_pullback`); not differentiable."""

        __props__ = ()

        def make_node(self, g, s, beta, u, d_eta, w, md_model, level):
            inputs = [*_tensors(g, s, beta, u, d_eta, w), *_tensors(md_model, level, dtype="int64")]
            outs = [pt.matrix(dtype="float64"), pt.scalar(dtype="float64")]
            outs += [pt.vector(dtype="float64"), pt.scalar(dtype="float64")]
            outs += [pt.scalar(dtype="float64")]
            return Apply(self, inputs, outs)

        def perform(self, node, inputs, output_storage):
            g, s, beta, u, d_eta, w, md_model, level = inputs
            res = level_terms_pullback(g, s, float(beta), u.shape[0], d_eta, w, md_model, level)
            for store, value in zip(output_storage, res, strict=True):
                store[0] = np.asarray(value, dtype="float64")

        def infer_shape(self, node, shapes):
            return [shapes[1], (), shapes[3], (), ()]

        def pullback(self, inputs, outputs, cotangents):
            raise NotImplementedError(
                "LevelTerms: no second derivatives (only its first output is differentiable, once)"
            )

    @register_funcify_default_op_cache_key(LevelTermsGrad)
    def _funcify_grad(op, node=None, **kwargs):
        kernel = level_terms_pullback

        @numba.njit
        def level_terms_grad(g, s, beta, u, d_eta, w, md_model, level):
            g_s, g_beta, g_u, g_c1, g_c2 = kernel(
                g, s, beta.item(), u.shape[0], d_eta, w, md_model, level
            )
            return g_s, np.asarray(g_beta), g_u, np.asarray(g_c1), np.asarray(g_c2)

        return level_terms_grad, _KERNEL_VERSION

    return LevelTermsGrad()


@functools.cache
def _make_op():
    """Build the ``LevelTerms`` Op, register its numba implementation, once; returns the
    instance."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    grad_op = _grad_op()

    class LevelTerms(Op):
        """The level terms with what their pullback needs (module docstring)."""

        __props__ = ()

        def make_node(self, s, beta, u, c1, c2, md_model, level):
            s, beta, u, c1, c2 = _tensors(s, beta, u, c1, c2)
            md_model, level = _tensors(md_model, level, dtype="int64")
            dims = (s.ndim, beta.ndim, u.ndim, c1.ndim, c2.ndim, md_model.ndim, level.ndim)
            if dims != (2, 0, 1, 0, 0, 1, 1):
                raise TypeError(
                    "LevelTerms expects s (U, Q), beta, u (M,), c1, c2 scalars, md_model and "
                    f"level (U,); got ndims {dims}"
                )
            outs = [pt.matrix(dtype="float64"), pt.matrix(dtype="float64")]
            outs.append(pt.vector(dtype="float64"))
            return Apply(self, [s, beta, u, c1, c2, md_model, level], outs)

        def perform(self, node, inputs, output_storage):
            s, beta, u, c1, c2, md_model, level = inputs
            res = level_terms_kernel(s, float(beta), u, float(c1), float(c2), md_model, level)
            for store, value in zip(output_storage, res, strict=True):
                store[0] = value

        def infer_shape(self, node, shapes):
            # the flat sigmoids have one row per finite bound: known only from the data
            return [shapes[0], shapes[0], None]

        def pullback(self, inputs, outputs, cotangents):
            from pytensor.gradient import DisconnectedType

            s, beta, u, _, _, md_model, level = inputs
            _, d_eta, w = outputs
            g = first_cotangent(cotangents, d_eta, "LevelTerms")
            g_s, g_beta, g_u, g_c1, g_c2 = grad_op(g, s, beta, u, d_eta, w, md_model, level)
            return [g_s, g_beta, g_u, g_c1, g_c2, DisconnectedType()(), DisconnectedType()()]

        def connection_pattern(self, node):
            return [[True] * 3] * 5 + [[False] * 3] * 2

    @register_funcify_default_op_cache_key(LevelTerms)
    def _funcify(op, node=None, **kwargs):
        kernel = level_terms_kernel

        @numba.njit
        def level_terms(s, beta, u, c1, c2, md_model, level):
            return kernel(s, beta.item(), u, c1.item(), c2.item(), md_model, level)

        return level_terms, _KERNEL_VERSION

    return LevelTerms()


def level_terms(s, beta, u, c1, c2, md_model, level):
    """``ll[u, q]`` (module docstring) as a differentiable PyTensor expression: ``s`` the
    nodes ``(U, Q)``, ``beta``, ``u`` ``(M,)``, ``c1``, ``c2`` the parameters, ``md_model``
    each row's model and ``level`` its adjudicated level (0 none, 1 Level A only, 2 Level B,
    -1 not adjudicated)."""
    return _make_op()(s, beta, u, c1, c2, md_model, level)[0]


__all__ = ["level_terms", "level_terms_kernel", "level_terms_pullback"]
