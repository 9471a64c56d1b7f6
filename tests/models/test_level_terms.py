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


def _inputs(seed=0, n_u=41, n_q=12):
    rng = np.random.default_rng(seed)
    eta = rng.normal(0.0, 6.0, (n_u, n_q))  # |eta - c| up to ~25
    level = rng.integers(-1, 3, n_u)  # -1: not adjudicated (both bounds open)
    c1, c2 = rng.normal(0.5, 1.0), None
    c2 = c1 + np.exp(rng.normal(0.0, 0.5))
    c_lo = np.select([level == 1, level == 2], [c1, c2], -OPEN)
    c_hi = np.select([level == 0, level == 1], [c1, c2], OPEN)
    return eta, c_lo, c_hi


def _reference_graph(eta, c_lo, c_hi):
    return -pt.softplus(c_lo[:, None] - eta) - pt.softplus(eta - c_hi[:, None])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["FAST_COMPILE", "NUMBA"])
def test_value_and_gradients_match_the_pytensor_graph(seed, mode):
    eta0, lo0, hi0 = _inputs(seed)
    eta, c_lo, c_hi = pt.dmatrix("eta"), pt.dvector("c_lo"), pt.dvector("c_hi")
    w = np.random.default_rng(seed + 10).normal(size=eta0.shape)  # a random upstream gradient
    outs = []
    for fn in (level_terms, _reference_graph):
        ll = fn(eta, c_lo, c_hi)
        obj = (ll * w).sum()
        grads = pytensor.grad(obj, [eta, c_lo, c_hi])
        f = pytensor.function([eta, c_lo, c_hi], [ll, *grads], mode=mode)
        outs.append(f(eta0, lo0, hi0))
    for got, want, name in zip(*outs, ["ll", "d/deta", "d/dc_lo", "d/dc_hi"], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_gradient_against_finite_differences():
    eta0, lo0, hi0 = _inputs(3, n_u=8, n_q=3)
    # finite differences need finite bounds to move: every row Level A only (both finite)
    lo0, hi0 = np.full(8, -0.4), np.full(8, 1.1)
    pytensor.gradient.verify_grad(
        level_terms, [eta0 / 4, lo0, hi0], rng=np.random.default_rng(0), abs_tol=1e-6, rel_tol=1e-6
    )


def test_kernel_by_hand():
    """Level A only (category (c1, c2) = (-1, 1)) at eta = 0.5:
    ``log sigmoid(1.5) + log(1 - sigmoid(-0.5))``, ``w_lo = sigmoid(-1.5)``,
    ``w_hi = sigmoid(-0.5)``; a day with no adjudication contributes exactly 0."""
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    ll, w_lo, w_hi = level_terms_kernel(
        np.array([[0.5], [0.5]]), np.array([-1.0, -OPEN]), np.array([1.0, OPEN])
    )
    assert ll[0, 0] == pytest.approx(np.log(sig(1.5)) + np.log(1.0 - sig(-0.5)), abs=1e-15)
    assert w_lo[0, 0] == pytest.approx(sig(-1.5), abs=1e-15)
    assert w_hi[0, 0] == pytest.approx(sig(-0.5), abs=1e-15)
    assert ll[1, 0] == 0.0 and w_lo[1, 0] == 0.0 and w_hi[1, 0] == 0.0


def test_second_derivative_raises_instead_of_returning_zero():
    eta0, lo0, hi0 = _inputs(5, n_u=4, n_q=2)
    c_lo = pt.dvector("c_lo")
    ll = level_terms(pt.constant(eta0), c_lo, pt.constant(hi0))
    g = pytensor.grad(ll.sum(), c_lo)
    with pytest.raises(NotImplementedError, match="only its first output"):
        pytensor.grad(g.sum(), c_lo)
