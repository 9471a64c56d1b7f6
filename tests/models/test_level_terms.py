"""The disengagement model's level-terms Op against the PyTensor graph it replaced, against
finite differences and by hand.

The reference is the graph ``blocks._level_terms`` built before the Op:
``-softplus(c_lo - eta) - softplus(eta - c_hi)`` with PyTensor's ``softplus``, evaluated and
differentiated by PyTensor. The Op must agree to rounding error in value and in every gradient,
for each adjudicated level (none / Level A only / Level B / not adjudicated) and at linear
predictors far outside the level's category.
"""

from __future__ import annotations

import numpy as np
import pytest

pytensor = pytest.importorskip("pytensor")
import pytensor.tensor as pt  # noqa: E402

from delusion_bayes.models.level_terms import level_terms, level_terms_kernel  # noqa: E402
from delusion_bayes.models.spec import OPEN  # noqa: E402

MID = 2.5  # STAGE_MIDPOINT


def _inputs(seed=0, n_u=41, n_q=12, n_m=5):
    rng = np.random.default_rng(seed)
    s = rng.normal(2.5, 2.0, (n_u, n_q))  # |eta - c| up to ~25
    beta = float(np.exp(rng.normal(0.8, 0.3)))
    u = rng.normal(0.0, 1.0, n_m)
    c1 = float(rng.normal(0.5, 1.0))
    c2 = c1 + float(np.exp(rng.normal(0.0, 0.5)))
    md_model = rng.integers(0, n_m, n_u)
    level = rng.integers(-1, 3, n_u)  # -1: not adjudicated (both bounds open)
    return s, beta, u, c1, c2, md_model, level


def _reference_graph(s, beta, u, c1, c2, md_model, level):
    """The graph ``blocks._level_terms`` built before the Op (PyTensor's ``softplus``)."""
    eta = beta * (s - MID) + u[md_model][:, None]
    big = pt.fill(level, OPEN).astype("float64")
    c_lo = pt.switch(pt.eq(level, 0) | pt.lt(level, 0), -big, pt.switch(pt.eq(level, 1), c1, c2))
    c_hi = pt.switch(pt.eq(level, 2) | pt.lt(level, 0), big, pt.switch(pt.eq(level, 0), c1, c2))
    return -pt.softplus(-(eta - c_lo[:, None])) - pt.softplus(eta - c_hi[:, None])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["FAST_COMPILE", "NUMBA"])
def test_value_and_gradients_match_the_pytensor_graph(seed, mode):
    s0, beta0, u0, c10, c20, md_model, level = _inputs(seed)
    s, u = pt.dmatrix("s"), pt.dvector("u")
    beta, c1, c2 = pt.dscalar("beta"), pt.dscalar("c1"), pt.dscalar("c2")
    w = np.random.default_rng(seed + 10).normal(size=s0.shape)  # a random upstream gradient
    outs = []
    for fn in (level_terms, _reference_graph):
        ll = fn(s, beta, u, c1, c2, pt.constant(md_model), pt.constant(level))
        grads = pytensor.grad((ll * w).sum(), [s, beta, u, c1, c2])
        f = pytensor.function([s, beta, u, c1, c2], [ll, *grads], mode=mode)
        outs.append(f(s0, beta0, u0, c10, c20))
    names = ["ll", "d/ds", "d/dbeta", "d/du", "d/dc1", "d/dc2"]
    for got, want, name in zip(*outs, names, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-11, err_msg=name)


def test_gradient_against_finite_differences():
    s0, beta0, u0, c10, c20, md_model, level = _inputs(3, n_u=10, n_q=3, n_m=3)

    def f(s, beta, u, c1, c2):
        return level_terms(s, beta, u, c1, c2, pt.constant(md_model), pt.constant(level))

    pytensor.gradient.verify_grad(
        f,
        [s0 / 2, np.array(beta0), u0, np.array(c10), np.array(c20)],
        rng=np.random.default_rng(0),
        abs_tol=1e-6,
        rel_tol=1e-6,
    )


def test_kernel_by_hand():
    """Level A only (category (c1, c2) = (-1, 1)) at eta = beta (s - 2.5) + u = 0.5:
    ``log sigmoid(1.5) + log(1 - sigmoid(-0.5))``, ``d ll / d eta = sigmoid(-1.5) -
    sigmoid(-0.5)``; a day with no adjudication contributes exactly 0."""
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    ll, d_eta, w = level_terms_kernel(
        np.array([[3.0], [3.0]]),  # beta 1, u 0: eta = 0.5
        1.0,
        np.array([0.0]),
        -1.0,
        1.0,
        np.array([0, 0]),
        np.array([1, -1]),
    )
    assert ll[0, 0] == pytest.approx(np.log(sig(1.5)) + np.log(1.0 - sig(-0.5)), abs=1e-15)
    assert d_eta[0, 0] == pytest.approx(sig(-1.5) - sig(-0.5), abs=1e-15)
    np.testing.assert_allclose(w, [sig(-1.5), sig(-0.5)], atol=1e-15)  # the two finite bounds
    assert ll[1, 0] == 0.0 and d_eta[1, 0] == 0.0


def test_second_derivative_raises_instead_of_returning_zero():
    s0, beta0, u0, c10, c20, md_model, level = _inputs(5, n_u=4, n_q=2)
    c1 = pt.dscalar("c1")
    ll = level_terms(
        pt.constant(s0), beta0, pt.constant(u0), c1, c20, pt.constant(md_model), pt.constant(level)
    )
    g = pytensor.grad(ll.sum(), c1)
    with pytest.raises(NotImplementedError, match="no second derivatives"):
        pytensor.grad(g, c1)
