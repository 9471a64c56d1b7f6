"""The fused rating-terms Op against the PyTensor graph it replaced, and against finite
differences.

The reference is the model's own definition written with PyTensor's ``softplus`` (the graph
``blocks.marginal_ratings`` used before the Op), evaluated and differentiated by PyTensor; the
Op must agree to rounding error in value and in every gradient, at open and interior categories
and at latent values far outside the rating's category (|a| up to ~60).
"""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402

from delusion_bayes.models.rating_terms import rating_terms, rating_terms_kernel  # noqa: E402
from delusion_bayes.models.spec import OPEN  # noqa: E402


def _inputs(seed=0, n_u=37, n_r=4, n_q=9):
    rng = np.random.default_rng(seed)
    s = rng.normal(2.5, 2.0, (n_u, n_q))  # includes latents far from every category
    sev = rng.normal(0.0, 0.4, n_r)
    disc = np.exp(rng.normal(1.2, 0.5, n_r))
    y = rng.integers(0, 5, (n_u, n_r))  # 0: not rated (both ends open)
    cuts = np.array([-OPEN, 1.5, 2.5, 3.5, OPEN])
    lo = np.where(y > 0, cuts[np.clip(y - 1, 0, 4)], -OPEN)
    hi = np.where(y > 0, cuts[np.clip(y, 0, 4)], OPEN)
    return s, sev, disc, lo, hi


def _reference_graph(s, sev, disc, lo, hi):
    z = s[:, None, :] + sev[None, :, None]
    dd = disc[None, :, None]
    a = dd * (z - lo[:, :, None])
    b = dd * (z - hi[:, :, None])
    return (-pt.softplus(-a) - pt.softplus(b)).sum(axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_value_and_gradients_match_the_pytensor_graph(seed):
    s0, sev0, disc0, lo, hi = _inputs(seed)
    s, sev, disc = pt.dmatrix("s"), pt.dvector("sev"), pt.dvector("disc")
    w = np.random.default_rng(seed + 10).normal(size=s0.shape)  # a random upstream gradient
    outs = []
    for fn in (rating_terms, _reference_graph):
        ll = fn(s, sev, disc, pt.constant(lo), pt.constant(hi))
        obj = (ll * w).sum()
        f = pytensor.function([s, sev, disc], [ll, *pytensor.grad(obj, [s, sev, disc])])
        outs.append(f(s0, sev0, disc0))
    for got, want, name in zip(*outs, ["ll", "d/ds", "d/dseverity", "d/ddisc"], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=name)


def test_gradient_against_finite_differences():
    s0, sev0, disc0, lo, hi = _inputs(3, n_u=6, n_r=3, n_q=4)

    def f(s, sev, disc):
        return rating_terms(s, sev, disc, pt.constant(lo), pt.constant(hi))

    pytensor.gradient.verify_grad(
        f, [s0, sev0, disc0], rng=np.random.default_rng(0), abs_tol=1e-6, rel_tol=1e-6
    )


def test_kernel_values_by_hand():
    """One rating of 2 (category (1.5, 2.5)) at s = 2, severity 0, discrimination 1:
    ``log(sigmoid(0.5) - sigmoid(-0.5)) - log(1 - e^{-1})`` = log(0.2449187) - log(0.6321206)."""
    s = np.array([[2.0]])
    ll, dll, js, jd = rating_terms_kernel(
        s, np.array([0.0]), np.array([1.0]), np.array([[1.5]]), np.array([[2.5]])
    )
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    want = np.log(sig(0.5) - sig(-0.5)) - np.log1p(-np.exp(-1.0))
    assert ll[0, 0] == pytest.approx(want, abs=1e-14)
    # symmetric category around s: the derivative in s is 0
    assert dll[0, 0] == pytest.approx(0.0, abs=1e-15)
    assert js[0, 0, 0] == pytest.approx(0.0, abs=1e-15)
    # d/dd at d = 1: 0.5 sigmoid(-0.5) + 0.5 sigmoid(-0.5)
    assert jd[0, 0, 0] == pytest.approx(sig(-0.5), abs=1e-14)


def test_numba_backend_compiles_the_op_natively():
    """The Op runs inside a NUMBA-mode function (the sampler's backend), not through
    object mode, and gives the same numbers as the Python ``perform``."""
    s0, sev0, disc0, lo, hi = _inputs(4)
    s, sev, disc = pt.dmatrix("s"), pt.dvector("sev"), pt.dvector("disc")
    ll = rating_terms(s, sev, disc, pt.constant(lo), pt.constant(hi))
    g = pytensor.grad(ll.sum(), disc)
    f_numba = pytensor.function([s, sev, disc], [ll, g], mode="NUMBA")
    f_py = pytensor.function([s, sev, disc], [ll, g], mode="FAST_COMPILE")
    for a, b in zip(f_numba(s0, sev0, disc0), f_py(s0, sev0, disc0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_second_derivative_raises_instead_of_returning_zero():
    s0, sev0, disc0, lo, hi = _inputs(5, n_u=3, n_r=2, n_q=3)
    disc = pt.dvector("disc")
    ll = rating_terms(pt.constant(s0), pt.constant(sev0), disc, pt.constant(lo), pt.constant(hi))
    g = pytensor.grad(ll.sum(), disc)
    with pytest.raises(NotImplementedError, match="only its first output"):
        pytensor.grad(g.sum(), disc)


def test_vectorised_softplus_and_sigmoid_match_numpy_to_rounding():
    """The kernel's own polynomial ``exp``/``log1p`` (pass 2) against numpy's ``logaddexp`` and
    scipy's ``expit`` over the whole line, past the ``exp(-40)`` floor and at +-0: within 4e-16
    of each value's size (the polynomials' error is 2-5e-16 relative, their coefficients'
    fit is in the module docstring); beyond |y| = 40 the floor's exp(-40) = 4.2e-18 stands in
    for a smaller number, an absolute error below 4.3e-18."""
    from scipy.special import expit

    from delusion_bayes.models.rating_terms import softplus_pass

    rng = np.random.default_rng(0)
    y = np.concatenate(
        [
            np.linspace(-60, 60, 20001),
            rng.normal(0, 8, 20000),
            [
                0.0,
                -0.0,
                1e-300,
                -1e-300,
                1e-8,
                -39.99,
                -40.0,
                -40.01,
                40.0,
                -700.0,
                700.0,
                -1e4,
                1e4,
            ],
        ]
    )
    t, w = np.empty_like(y), np.empty_like(y)
    softplus_pass(y, t, w)
    want_t, want_w = -np.logaddexp(0.0, -y), expit(-y)
    assert np.abs(t - want_t).max() <= 4e-16 * np.maximum(1.0, np.abs(want_t)).max()
    assert np.all(np.abs(t - want_t) <= 4e-16 * np.maximum(1.0, np.abs(want_t)))
    assert np.all(np.abs(w - want_w) <= 4e-16)
    assert abs(t[y == 1e4][0]) < 4.3e-18 and w[y == -1e4][0] == 1.0


def test_contraction_matches_einsum_and_threads_agree():
    """The pullback's sums equal ``einsum('uq,urq->r')``; the kernel is pure numba (no
    shared state), so two threads at once (nutpie's chains) give the serial numbers bit for
    bit."""
    from concurrent.futures import ThreadPoolExecutor

    from delusion_bayes.models.rating_terms import contract_partials

    s, sev, disc, lo, hi = _inputs(6, n_u=200, n_r=4, n_q=16)
    g = np.random.default_rng(7).random(s.shape)
    _, _, j_sev, j_disc = rating_terms_kernel(s, sev, disc, lo, hi)
    got = contract_partials(g, j_sev, j_disc)
    for a, b in zip(
        got, (np.einsum("uq,urq->r", g, j_sev), np.einsum("uq,urq->r", g, j_disc)), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    serial = [rating_terms_kernel(s + k, sev, disc, lo, hi) for k in range(8)]
    with ThreadPoolExecutor(2) as pool:
        par = list(pool.map(lambda k: rating_terms_kernel(s + k, sev, disc, lo, hi), range(8)))
    for a, b in zip(serial, par, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
