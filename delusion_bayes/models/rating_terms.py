"""The ordinal rating terms of the integrated-out likelihood as one fused PyTensor Op.

:func:`delusion_bayes.models.blocks.marginal_ratings` needs, for every rated model-day ``u``,
rater ``r`` and quadrature node ``q``,

.. math::

    \\ell_{urq} = -\\operatorname{softplus}(-a_{urq}) - \\operatorname{softplus}(b_{urq}),
    \\quad a = d_r (s_{uq} + \\delta_r - c^{lo}_{ur}),
    \\quad b = d_r (s_{uq} + \\delta_r - c^{hi}_{ur})

summed over raters (the ``s``-dependent part of ``log(sigmoid(a) - sigmoid(b))``), the only
``U x R x Q`` part of the model. Why by hand: as a PyTensor graph each term costs four
transcendental functions forward and as many in the gradient; this Op computes the value and
every partial derivative in one call, and its pullback contracts the stored partials with the
upstream gradient in a second numba loop, so a log-density with its gradient runs each once.

The kernel works in three passes over the *finite* category bounds only (a rating at an end of
the scale has one; an unrated cell none): (1) the argument ``y = +a`` (lower bound) or ``-b``
(upper bound) of every bound and node into one flat buffer; (2) ``-softplus(-y)`` and
``sigmoid(-y)`` of the buffer, branch-free, which LLVM vectorises (AVX-512 here, AVX2 or SSE
elsewhere); (3) the sums over raters and the partials. Why its own ``exp``/``log1p``: numba
has no vectorised transcendental functions without Intel's SVML (not on PyPI's llvmlite), and
a scalar libm call per term was the whole cost of the old one-pass kernel
(``experiments/bench/bench_rating_terms.py`` times both). Both are polynomials fitted by
Chebyshev interpolation (50-digit mpmath; the coefficients below), accurate to 5e-16 relative.

:class:`RatingTerms` (``s`` ``(U, Q)``, ``severity``, ``disc`` ``(R,)``, ``lo``, ``hi`` ``(U, R)``)
returns ``ll``, ``dll_ds`` ``(U, Q)``, ``j_sev``, ``j_disc`` ``(U, R, Q)``; only ``ll`` is for use.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .modelspec import OPEN

#: bump when a numba kernel changes (part of PyTensor's numba cache key)
_KERNEL_VERSION = 4
#: a category bound beyond this is an open end: :data:`~delusion_bayes.models.spec.OPEN`
#: stands in for +-inf, the finite bounds are stage cutpoints, so any threshold far between works
OPEN_AT: float = OPEN / 10.0
#: ``exp(-40) = 4.2e-18``: below it a term's log1p and sigmoid are 0 to double precision of
#: the sums they enter, and the exact power of two below stays in an int64 shift
EXP_FLOOR = -40.0
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody & Waite): n ln2 exact to n < 2^20
_LN2_LO = 1.90821492927058770002e-10
# exp(r), |r| <= ln2 / 2: degree 10, max relative error 4.5e-16
_E = (1.0, 1.0000000000000067, 0.5000000000000006, 0.16666666666554406, 0.04166666666657314,
      0.008333333385667782, 0.0013888888932488599, 0.00019841170270440067,
      2.4801504346997686e-05, 2.764018079620985e-06, 2.7626357241447223e-07)  # fmt: skip
# atanh(sqrt(v)) / sqrt(v), 0 <= v <= 1/9: degree 9, max relative error 2.2e-16
_L = (1.0, 0.33333333333341286, 0.199999999976438, 0.1428571455582858, 0.11111095430673142,
      0.09091429900236955, 0.07681838124445817, 0.06795652742789947, 0.04940394524382393,
      0.08890381913056651)  # fmt: skip
NJIT_OPTIONS = {"error_model": "numpy"}  # no zero-division branch: it would stop the vectoriser


@numba.njit(inline="always", **NJIT_OPTIONS)
def exp_nonpositive(x):
    """``exp(x)`` for ``EXP_FLOOR <= x <= 0``: ``2^n exp(r)``, ``2^-n`` exact from a shift."""
    n = math.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = _E[10]
    for c in (_E[9], _E[8], _E[7], _E[6], _E[5], _E[4], _E[3], _E[2], _E[1], _E[0]):
        p = c + r * p
    return p / np.float64(np.int64(1) << np.int64(-n))


@numba.njit(inline="always", **NJIT_OPTIONS)
def _atanh_series(v):
    """``2 atanh(v)`` for ``0 <= v <= 1/3`` (the polynomial :data:`_L` in ``v^2``)."""
    v2 = v * v
    p = _L[9]
    for c in (_L[8], _L[7], _L[6], _L[5], _L[4], _L[3], _L[2], _L[1], _L[0]):
        p = c + v2 * p
    return 2.0 * v * p


@numba.njit(inline="always", **NJIT_OPTIONS)
def log1p_unit(e):
    """``log1p(e)`` for ``0 <= e <= 1``: ``2 atanh(e / (2 + e))``."""
    return _atanh_series(e / (2.0 + e))


@numba.njit(inline="always", **NJIT_OPTIONS)
def log_sigmoid_parts(x, e):
    """``(log sigmoid(x), sigmoid(x), sigmoid(-x))`` from ``e = exp(-|x|)``, ``0 <= e <= 1``:
    ``log sigmoid(x) = min(x, 0) - log1p(e)``, ``log1p(e) = 2 atanh(v)``, ``v = e / (2 + e)
    <= 1/3``; one division gives ``1 / (1 + e)`` and ``v``. The caller chooses the ``exp``:
    :func:`softplus_pass` the vectorisable one above floored at ``EXP_FLOOR``,
    :func:`log_sigmoid_pass` the same with 0 below the floor, the latent pass's Newton steps
    (:mod:`delusion_bayes.models.marginal`) libm's."""
    one, two = 1.0 + e, 2.0 + e
    inv = 1.0 / (one * two)
    big = two * inv  # sigmoid(|x|)
    small = e * big  # sigmoid(-|x|)
    t = min(x, 0.0) - _atanh_series(e * one * inv)
    if x > 0.0:
        return t, big, small
    return t, small, big


@numba.njit(inline="always", **NJIT_OPTIONS)
def exp_nonpositive_or_zero(x):
    """``exp(x)`` for ``x <= 0``, 0 below ``EXP_FLOOR``: ``exp(-40) = 4.2e-18`` is below half the
    last bit of any sum it joins whose terms are of order 1e-1 or more, so such a sum has the
    same bits as with the exact ``exp`` (branch-free: vectorised)."""
    e = exp_nonpositive(max(x, EXP_FLOOR))
    return e if x >= EXP_FLOOR else 0.0


@numba.njit(**NJIT_OPTIONS)
def log_sigmoid_pass(y, t, n):
    """``t[:n] = log sigmoid(y[:n])`` (:func:`log_sigmoid_parts`; ``exp(-|y|)`` taken as 0
    below ``EXP_FLOOR``: for ``|y| > 40`` that is ``min(y, 0)``, within 4.2e-18 of the exact
    value, below half the last bit of ``y`` when ``y < -40``)."""
    for i in range(n):
        x = y[i]
        t[i] = log_sigmoid_parts(x, exp_nonpositive_or_zero(-abs(x)))[0]


@numba.njit(**NJIT_OPTIONS)
def softplus_pass(y, t, w):
    """``t = -softplus(-y) = log sigmoid(y)`` and ``w = sigmoid(-y)`` elementwise over flat
    arrays (:func:`log_sigmoid_parts` with ``e = exp(-|y|)`` floored at ``EXP_FLOOR``)."""
    for i in range(y.shape[0]):
        x = y[i]
        t[i], _, w[i] = log_sigmoid_parts(x, exp_nonpositive(max(-abs(x), EXP_FLOOR)))


@numba.njit(**NJIT_OPTIONS)
def finite_bounds(lo, hi):
    """The finite category bounds: rating cell ``(u, r)``, value and sign (+1 lower, -1 upper)."""
    n_u, n_r = lo.shape
    n = 0
    for u in range(n_u):
        for r in range(n_r):
            n += (lo[u, r] >= -OPEN_AT) + (hi[u, r] <= OPEN_AT)
    bu, br = np.empty(n, np.int64), np.empty(n, np.int64)
    bc, bs = np.empty(n), np.empty(n)
    j = 0
    for u in range(n_u):
        for r in range(n_r):
            for c, sign in ((lo[u, r], 1.0), (hi[u, r], -1.0)):
                if -OPEN_AT <= c <= OPEN_AT:
                    bu[j], br[j], bc[j], bs[j] = u, r, c, sign
                    j += 1
    return bu, br, bc, bs


@numba.njit(cache=True, **NJIT_OPTIONS)
def rating_terms_kernel(s, sev, disc, lo, hi):
    """Values and partials of the rating terms (module docstring); plain arrays in and out."""
    n_u, n_q = s.shape
    n_r = sev.shape[0]
    bu, br, bc, bs = finite_bounds(lo, hi)
    n_b = bu.shape[0]
    y = np.empty(n_b * n_q)
    for j in range(n_b):  # pass 1: y = +a (lower bound) or -b (upper bound)
        u, r = bu[j], br[j]
        f, off = bs[j] * disc[r], sev[r] - bc[j]
        for q in range(n_q):
            y[j * n_q + q] = f * (s[u, q] + off)
    t, w = np.empty_like(y), np.empty_like(y)
    softplus_pass(y, t, w)  # pass 2
    ll, dll_ds = np.zeros((n_u, n_q)), np.zeros((n_u, n_q))
    j_sev, j_disc = np.zeros((n_u, n_r, n_q)), np.zeros((n_u, n_r, n_q))
    for j in range(n_b):  # pass 3: d term / d a = sigmoid(-a), d term / d b = -sigmoid(b)
        u, r = bu[j], br[j]
        d, off = disc[r], sev[r] - bc[j]
        for q in range(n_q):
            sw = bs[j] * w[j * n_q + q]
            ll[u, q] += t[j * n_q + q]
            dll_ds[u, q] += d * sw
            j_sev[u, r, q] += d * sw
            j_disc[u, r, q] += (s[u, q] + off) * sw
    return ll, dll_ds, j_sev, j_disc


@numba.njit(cache=True, **NJIT_OPTIONS)
def contract_partials(g, j_sev, j_disc):
    """The pullback's sums ``sum_{u,q} g[u,q] j[u,r,q]`` for severity and discrimination (per
    node first, so the inner loop has no floating-point reduction and vectorises)."""
    n_u, n_r, n_q = j_sev.shape
    acc_sev, acc_disc = np.zeros((n_r, n_q)), np.zeros((n_r, n_q))
    for u in range(n_u):
        for r in range(n_r):
            for q in range(n_q):
                acc_sev[r, q] += g[u, q] * j_sev[u, r, q]
                acc_disc[r, q] += g[u, q] * j_disc[u, r, q]
    return acc_sev.sum(axis=1), acc_disc.sum(axis=1)


@functools.cache
def _make_op():
    """Build the :class:`RatingTerms` Op class and register its numba implementation, once
    (PyTensor is imported only here and in :func:`_contract_partials_op`)."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    contract_op = _contract_partials_op()

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
            outs = [pt.matrix(dtype="float64"), pt.matrix(dtype="float64")]
            outs += [pt.tensor3(dtype="float64"), pt.tensor3(dtype="float64")]
            return Apply(self, [s, sev, disc, lo, hi], outs)

        def perform(self, node, inputs, output_storage):
            for store, value in zip(output_storage, rating_terms_kernel(*inputs), strict=True):
                store[0] = value

        def infer_shape(self, node, shapes):
            (n_u, n_q), (n_r,) = shapes[0], shapes[1]
            return [(n_u, n_q), (n_u, n_q), (n_u, n_r, n_q), (n_u, n_r, n_q)]

        def pullback(self, inputs, outputs, cotangents):
            return _pullback(outputs, cotangents, contract_op)

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


def _pullback(outputs, cotangents, contract_op):
    """The pullback of ``RatingTerms``: its partials are the node's own outputs (no second pass
    over the terms); only its first output is differentiable; the category bounds are data."""
    from pytensor.gradient import DisconnectedType

    _, dll_ds, j_sev, j_disc = outputs
    g = first_cotangent(cotangents, dll_ds, "RatingTerms")
    g_sev, g_disc = contract_op(g, j_sev, j_disc)
    return [g * dll_ds, g_sev, g_disc, DisconnectedType()(), DisconnectedType()()]


def first_cotangent(cotangents, like, op_name: str):
    """The upstream gradient of a fused Op's first output (zeros shaped as ``like`` when it is
    disconnected); ``NotImplementedError`` if any other output has one: the Ops' extra outputs
    are their partials, for their own pullback, and are not differentiable."""
    import pytensor.tensor as pt
    from pytensor.gradient import DisconnectedType

    for extra in cotangents[1:]:
        if not isinstance(extra.type, DisconnectedType):
            raise NotImplementedError(f"{op_name}: only its first output is differentiable")
    g = cotangents[0]
    return pt.zeros_like(like) if isinstance(g.type, DisconnectedType) else g


@functools.cache
def _contract_partials_op():
    """The ``ContractPartials`` Op (the pullback's sums over model-days and nodes,
    :func:`contract_partials`), its numba implementation registered, once."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key

    class ContractPartials(Op):
        """The pullback's sums over model-days and nodes (:func:`contract_partials`); the
        pullback of a pullback is not needed (no second derivatives)."""

        __props__ = ()

        def make_node(self, g, j_sev, j_disc):
            g, j_sev, j_disc = (
                pt.as_tensor_variable(x).astype("float64") for x in (g, j_sev, j_disc)
            )
            outs = [pt.vector(dtype="float64"), pt.vector(dtype="float64")]
            return Apply(self, [g, j_sev, j_disc], outs)

        def perform(self, node, inputs, output_storage):
            for store, value in zip(output_storage, contract_partials(*inputs), strict=True):
                store[0] = value

        def infer_shape(self, node, shapes):
            return [(shapes[1][1],), (shapes[1][1],)]

        def pullback(self, inputs, outputs, cotangents):
            raise NotImplementedError(
                "RatingTerms: no second derivatives (only its first output is differentiable, once)"
            )

    @register_funcify_default_op_cache_key(ContractPartials)
    def _funcify_contract(op, node=None, **kwargs):
        kernel = contract_partials

        @numba.njit
        def contract(g, j_sev, j_disc):
            return kernel(g, j_sev, j_disc)

        return contract, _KERNEL_VERSION

    return ContractPartials()


def rating_terms_op():
    """The :class:`RatingTerms` Op instance."""
    return _make_op()()


def rating_terms(s, severity, disc, lo, hi):
    """``ll[u, q] = sum_r l[u, r, q]`` as a differentiable PyTensor expression."""
    return rating_terms_op()(s, severity, disc, lo, hi)[0]


__all__ = [
    "contract_partials",
    "first_cotangent",
    "rating_terms",
    "rating_terms_kernel",
    "rating_terms_op",
]
