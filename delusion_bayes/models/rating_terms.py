"""The ordinal rating terms of the integrated-out likelihood as one fused PyTensor Op.

:func:`delusion_bayes.models.blocks.marginal_ratings` needs, for every rated model-day ``u``,
rater ``r`` and quadrature node ``q``,

.. math::

    \\ell_{urq} = -\\operatorname{softplus}(-a_{urq}) - \\operatorname{softplus}(b_{urq}),
    \\quad a = d_r (s_{uq} + \\delta_r - c^{lo}_{ur}),\\quad b = d_r (s_{uq} + \\delta_r - c^{hi}_{ur})

summed over raters (the ``s``-dependent part of ``log(sigmoid(a) - sigmoid(b))``), the only
``U x R x Q`` part of the model. Why by hand: as a PyTensor graph each term costs four
transcendental functions forward and as many in the gradient; one numba loop computes the value
and every partial derivative in one pass, and the pullback contracts the stored partials with
the upstream gradient, so a log-density with its gradient runs the kernel once.

:class:`RatingTerms` (``s`` ``(U, Q)``, ``severity``, ``disc`` ``(R,)``, ``lo``, ``hi`` ``(U, R)``)
returns ``ll``, ``dll_ds`` ``(U, Q)``, ``j_sev``, ``j_disc`` ``(U, R, Q)``; only ``ll`` is for use.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

#: bump when the numba kernel changes (part of PyTensor's numba cache key)
_KERNEL_VERSION = 2
#: a category bound beyond this is an open end (``spec.OPEN`` = 1e4 stands in for +-inf)
_OPEN_AT = 1.0e3


@numba.njit(cache=True)
def rating_terms_kernel(s, sev, disc, lo, hi):
    """Values and partials of the rating terms (module docstring); plain arrays in and out."""
    n_u, n_q = s.shape
    n_r = sev.shape[0]
    ll = np.zeros((n_u, n_q))
    dll_ds = np.zeros((n_u, n_q))
    j_sev = np.empty((n_u, n_r, n_q))
    j_disc = np.empty((n_u, n_r, n_q))
    for u in range(n_u):
        for r in range(n_r):
            d = disc[r]
            lo_ur = lo[u, r]
            hi_ur = hi[u, r]
            # a rating at an end of the scale (1 or 4) has one finite bound: its other softplus
            # is exactly 0 and is skipped (about half the ratings; exp(-1e4) is also slow)
            lo_open = lo_ur < -_OPEN_AT
            hi_open = hi_ur > _OPEN_AT
            for q in range(n_q):
                z = s[u, q] + sev[r]
                val = 0.0
                sig_na = 0.0  # sigmoid(-a)
                sig_b = 0.0  # sigmoid(b)
                gd = 0.0
                if not lo_open:
                    za = z - lo_ur
                    a = d * za
                    # -softplus(-a) = -log1p(exp(-a)) for a > 0, a - log1p(exp(a)) otherwise
                    if a > 0.0:
                        e = math.exp(-a)
                        val -= math.log1p(e)
                        sig_na = e / (1.0 + e)
                    else:
                        e = math.exp(a)
                        val += a - math.log1p(e)
                        sig_na = 1.0 / (1.0 + e)
                    gd += za * sig_na
                if not hi_open:
                    zb = z - hi_ur
                    b = d * zb
                    # -softplus(b)
                    if b > 0.0:
                        e = math.exp(-b)
                        val -= b + math.log1p(e)
                        sig_b = 1.0 / (1.0 + e)
                    else:
                        e = math.exp(b)
                        val -= math.log1p(e)
                        sig_b = e / (1.0 + e)
                    gd -= zb * sig_b
                # d l / d z = d (sigmoid(-a) - sigmoid(b)); d l / d d = za sigmoid(-a) - zb sigmoid(b)
                gz = d * (sig_na - sig_b)
                ll[u, q] += val
                dll_ds[u, q] += gz
                j_sev[u, r, q] = gz
                j_disc[u, r, q] = gd
    return ll, dll_ds, j_sev, j_disc


@functools.cache
def _make_op():
    """Build the Op class and register its numba implementation, once (PyTensor is imported
    only here)."""
    import pytensor.tensor as pt
    from pytensor.gradient import DisconnectedType
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    class RatingTerms(Op):
        """Fused rating terms with their partial derivatives (module docstring)."""

        __props__ = ()

        def make_node(self, s, sev, disc, lo, hi):
            s, sev, disc, lo, hi = (
                pt.as_tensor_variable(x).astype("float64") for x in (s, sev, disc, lo, hi)
            )
            if s.ndim != 2 or sev.ndim != 1 or disc.ndim != 1 or lo.ndim != 2 or hi.ndim != 2:
                raise TypeError(
                    "RatingTerms expects s (U, Q), severity (R,), disc (R,), lo and hi (U, R); "
                    f"got ndims {s.ndim}, {sev.ndim}, {disc.ndim}, {lo.ndim}, {hi.ndim}"
                )
            outs = [pt.matrix(dtype="float64"), pt.matrix(dtype="float64"),
                    pt.tensor3(dtype="float64"), pt.tensor3(dtype="float64")]  # fmt: skip
            return Apply(self, [s, sev, disc, lo, hi], outs)

        def perform(self, node, inputs, output_storage):
            for store, value in zip(output_storage, rating_terms_kernel(*inputs), strict=True):
                store[0] = value

        def infer_shape(self, node, shapes):
            (n_u, n_q), (n_r,) = shapes[0], shapes[1]
            return [(n_u, n_q), (n_u, n_q), (n_u, n_r, n_q), (n_u, n_r, n_q)]

        def pullback(self, inputs, outputs, cotangents):
            # the partials are this node's own outputs: no second pass over the terms
            _, dll_ds, j_sev, j_disc = outputs
            g = cotangents[0]
            for extra in cotangents[1:]:
                if not isinstance(extra.type, DisconnectedType):
                    raise NotImplementedError(
                        "RatingTerms: only its first output is differentiable"
                    )
            if isinstance(g.type, DisconnectedType):
                g = pt.zeros_like(dll_ds)
            gq = g[:, None, :]
            return [
                g * dll_ds,
                (gq * j_sev).sum(axis=(0, 2)),
                (gq * j_disc).sum(axis=(0, 2)),
                DisconnectedType()(),  # the category bounds are data
                DisconnectedType()(),
            ]

        def connection_pattern(self, node):
            # every output depends on s, severity and disc (so a second derivative reaches the
            # pullback and raises instead of silently being 0); the bounds are data
            return [[True] * 4] * 3 + [[False] * 4] * 2

    @register_funcify_default_op_cache_key(RatingTerms)
    def _funcify(op, node=None, **kwargs):
        kernel = rating_terms_kernel

        @numba.njit
        def rating_terms(s, sev, disc, lo, hi):
            return kernel(s, sev, disc, lo, hi)

        return rating_terms, _KERNEL_VERSION

    return RatingTerms


def rating_terms_op():
    """The :class:`RatingTerms` Op instance."""
    return _make_op()()


def rating_terms(s, severity, disc, lo, hi):
    """``ll[u, q] = sum_r l[u, r, q]`` as a differentiable PyTensor expression."""
    return rating_terms_op()(s, severity, disc, lo, hi)[0]


__all__ = ["rating_terms", "rating_terms_kernel", "rating_terms_op"]
