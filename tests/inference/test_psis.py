"""The vectorised Pareto-smoothed importance sampling (``inference.psis``) is ArviZ's, observation
by observation: the reference is ``arviz_stats``' own ``psislw`` and ``az.loo`` (ArviZ 1.x;
Vehtari, Simpson, Gelman, Yao and Gabry 2024, JMLR 25:72), on log-likelihoods chosen to reach
every branch: light and heavy importance-ratio tails (k from below 0 to above 1), a
discrete-valued observation whose tail has ties, one whose first tail quartile is its minimum
(no fit: k is NaN), small draw counts (the 20% tail), and r_eff below and above 1."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from delusion_bayes.inference.diagnostics import compare_fits, loo
from delusion_bayes.inference.psis import psislw, relative_eff, tail_size


def _loglik(n_chain: int, n_draw: int, seed: int = 0) -> np.ndarray:
    """(obs, chain, draw) log-likelihoods; distinct values in every row but the last two."""
    rng = np.random.default_rng(seed)
    n = n_chain * n_draw
    rows = [rng.normal(-1.0, s, n) for s in (0.05, 0.3, 1.0, 2.0)]  # light to heavy tails
    rows += [-np.abs(rng.standard_t(df, n)) for df in (1.0, 2.0, 5.0)]  # k near and above 1
    rows.append(np.log(rng.beta(0.3, 1.0, n)))  # a few very small likelihoods: large k
    rows.append(-rng.gamma(0.5, 4.0, n))
    tied = rng.integers(0, 40, n).astype(float) / 10.0  # ties inside the tail
    rows.append(-tied)
    flat = np.zeros(n)
    flat[: n // 50] = -5.0 - rng.random(n // 50)  # tail quartile at its minimum: no fit
    rows.append(flat)
    return np.stack(rows).reshape(-1, n_chain, n_draw)


def _arviz_psislw(ll: np.ndarray, r_eff: float):
    da = xr.DataArray(ll, dims=("obs", "chain", "draw"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lw, k = da.azstats.psislw(r_eff=r_eff, dim=["chain", "draw"])
    return lw.transpose("obs", "chain", "draw").values.reshape(ll.shape[0], -1), k.values


@pytest.mark.parametrize(
    ("n_chain", "n_draw", "r_eff"), [(4, 1000, 1.0), (4, 1000, 0.63), (2, 250, 1.4), (1, 60, 1.0)]
)
def test_weights_and_k_are_arviz_row_by_row(n_chain, n_draw, r_eff):
    """Smoothed log weights and k equal ArviZ's to 1e-12 (relative for k), NaN where ArviZ's is
    NaN. Rows with tied draws: ArviZ gives tied draws their quantiles in the order of its
    unstable full sort, this module in the order of a partition, so only each row's sorted
    weights must agree there."""
    ll = _loglik(n_chain, n_draw)
    want_lw, want_k = _arviz_psislw(ll, r_eff)
    got_lw, got_k = psislw(-ll.reshape(ll.shape[0], -1), r_eff)
    np.testing.assert_array_equal(np.isnan(got_k), np.isnan(want_k))
    assert np.isnan(got_k[-1])  # the row without a fit
    np.testing.assert_allclose(got_k, want_k, rtol=1e-12, atol=1e-14, equal_nan=True)
    assert np.nanmax(got_k) > 1.0 and np.nanmin(got_k) < 0.3  # the rows reach both ends
    untied = [i for i in range(ll.shape[0]) if np.unique(ll[i]).size == ll[i].size]
    np.testing.assert_allclose(got_lw[untied], want_lw[untied], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        np.sort(got_lw, axis=1), np.sort(want_lw, axis=1), rtol=0, atol=1e-12
    )


def test_tail_size_is_arviz_rule():
    """``min(0.2 S, 3 sqrt(S / r_eff))`` as ArviZ writes it: 3 sqrt(4000) = 189.7 -> 189;
    S r_eff <= 225 -> S / 5."""
    assert tail_size(4000, 1.0) == 189
    assert tail_size(4000, 0.5) == 268
    assert tail_size(200, 1.0) == 40
    with pytest.raises(ValueError, match="at least 5"):
        psislw(np.zeros((1, 20)), 1.0)


def _fit(seed: int, n_chain=4, n_draw=500, with_nan=True) -> xr.DataTree:
    rng = np.random.default_rng(seed)
    ll = _loglik(n_chain, n_draw, seed)[:9].transpose(1, 2, 0)
    post = {"mu": (("chain", "draw"), rng.normal(size=(n_chain, n_draw)))}
    theta = rng.normal(size=(n_chain, n_draw, 3))
    if with_nan:  # a latent that is structurally missing (an unrated model-day's stage)
        theta[..., 2] = np.nan
    post["theta"] = (("chain", "draw", "k"), theta)
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset(post),
            "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), ll)}),
        }
    )


def test_loo_is_az_loo_given_the_same_r_eff():
    """elpd, se, p_loo and every pointwise k and elpd_i equal ``az.loo(reff=...)`` to 1e-10."""
    dt = _fit(1, with_nan=False)
    r_eff = relative_eff(dt["posterior"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = az.loo(dt, var_name="y", reff=r_eff, pointwise=True)
    got = loo(dt, "y")
    for name in ("elpd", "se", "p"):
        assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-10), name
    np.testing.assert_allclose(got.pareto_k.values, want.pareto_k.values, rtol=1e-10)
    np.testing.assert_allclose(got.elpd_i.values, want.elpd_i.values, rtol=1e-10)
    assert got.warning == want.warning and got.good_k == want.good_k


def test_r_eff_ignores_structurally_missing_values():
    """ArviZ's own r_eff is NaN when any posterior scalar has a NaN draw, which silently
    switches PSIS to its 20% tail; ``relative_eff`` averages the defined ESS only, so it is
    ArviZ's value on the posterior without the missing scalar."""
    from arviz_stats.loo.loo_helper import _get_r_eff

    dt = _fit(2, with_nan=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(_get_r_eff(dt, 2000))
        clean = dt["posterior"].to_dataset().isel(k=slice(0, 2))
        want = _get_r_eff(xr.DataTree.from_dict({"posterior": clean}), 2000)
    assert relative_eff(dt["posterior"]) == pytest.approx(want, rel=1e-12)
    assert 0.5 < want < 1.5


def test_compare_fits_ranks_by_our_loo():
    """``compare_fits`` gives ``az.compare`` the ELPD of :func:`loo`: its elpd column is each
    fit's own ``loo(...).elpd``, best first."""
    fits = {"a": _fit(3, with_nan=True), "b": _fit(4, with_nan=True)}
    table = compare_fits(fits, var_name="y")
    for name, dt in fits.items():
        assert table.loc[name, "elpd"] == pytest.approx(loo(dt, "y").elpd, rel=1e-12)
    assert table["elpd"].iloc[0] >= table["elpd"].iloc[1]
