"""The vectorised rank-normalised R-hat, bulk/tail ESS and MCSE (``inference.rank_diagnostics``)
are ArviZ's, parameter by parameter: the reference is ``az.rhat(method="rank")``,
``az.ess(method="bulk" | "tail")`` and ``az.mcse(method="mean" | "sd")`` of ArviZ 1.x itself
(Vehtari et al. 2021, Bayesian Analysis 16:667), on chains chosen to reach every branch of the
computation."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from delusion_bayes.inference.diagnostics import diagnose, mcse_of, rank_diagnostics_of
from delusion_bayes.inference.rank_diagnostics import rank_diagnostics


def _ar1(rng, phi: float, n_chain: int, n_draw: int, shift=0.0) -> np.ndarray:
    x = np.zeros((n_chain, n_draw))
    e = rng.standard_normal((n_chain, n_draw))
    x[:, 0] = e[:, 0]
    for t in range(1, n_draw):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x + np.asarray(shift)[..., None] if np.ndim(shift) else x + shift


def _posterior(n_chain: int, n_draw: int, seed: int = 0) -> xr.Dataset:
    """Every branch: independent to near-random-walk chains (Geyer's scan stops early or runs
    long), chains at other means (R-hat well above 1), a heavy tail, a discrete parameter
    (ties in the ranks and the tail indicators), a constant, a NaN draw and an all-NaN one."""
    rng = np.random.default_rng(seed)
    cols = [_ar1(rng, phi, n_chain, n_draw) for phi in (0.0, -0.3, 0.5, 0.9, 0.99, 0.999)]
    cols.append(_ar1(rng, 0.3, n_chain, n_draw, shift=np.linspace(0, 1.5, n_chain)))
    cols.append(rng.standard_cauchy((n_chain, n_draw)))
    cols.append(rng.integers(0, 4, (n_chain, n_draw)).astype(float))
    cols.append(np.full((n_chain, n_draw), 2.5))
    nan = rng.standard_normal((n_chain, n_draw))
    nan[0, 3] = np.nan
    cols.append(nan)
    cols.append(np.full((n_chain, n_draw), np.nan))
    x = np.stack(cols, axis=-1)
    scalar = _ar1(rng, 0.7, n_chain, n_draw)
    return xr.Dataset(
        {
            "theta": (("chain", "draw", "p"), x),
            "tau": (("chain", "draw"), scalar),
            "m": (("chain", "draw", "a", "b"), rng.standard_normal((n_chain, n_draw, 2, 3))),
        },
        coords={"chain": np.arange(n_chain), "draw": np.arange(n_draw)},
    )


def _arviz(post: xr.Dataset) -> dict[str, xr.Dataset]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "r_hat": az.rhat(post),
            "ess_bulk": az.ess(post, method="bulk"),
            "ess_tail": az.ess(post, method="tail"),
        }


@pytest.mark.parametrize("chunk", [128, 3], ids=["one_chunk", "chunks_of_3_on_threads"])
@pytest.mark.parametrize("n_chain,n_draw", [(4, 1000), (2, 101), (1, 200), (3, 5)])
def test_rank_diagnostics_are_arviz_parameter_by_parameter(n_chain, n_draw, chunk, monkeypatch):
    """Also with the rows in chunks of 3 (``diagnostics.ROW_CHUNK``; the 19 scalars then span
    7 chunks, computed on threads and put back in order)."""
    from delusion_bayes.inference import diagnostics

    monkeypatch.setattr(diagnostics, "ROW_CHUNK", chunk)
    post = _posterior(n_chain, n_draw, seed=n_draw)
    ours, ref = rank_diagnostics_of(post), _arviz(post)
    for key in ("r_hat", "ess_bulk", "ess_tail"):
        for name in post.data_vars:
            a = np.asarray(ours[key][name].values, float)
            b = np.asarray(ref[key][name].transpose(*ours[key][name].dims).values, float)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{key} {name}")
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=f"{key} {name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref_mcse = {f"mcse_{m}": az.mcse(post, method=m) for m in ("mean", "sd")}
    for key, values in mcse_of(post).items():
        for name in post.data_vars:
            a = np.asarray(values[name].values, float)
            b = np.asarray(ref_mcse[key][name].transpose(*values[name].dims).values, float)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{key} {name}")
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=f"{key} {name}")
    theta = ours["r_hat"]["theta"].values
    if n_chain >= 2 and n_draw >= 100:  # the cases are what they claim to be
        assert theta[6] > 1.1 and theta[0] < 1.01 and np.isnan(theta[10:]).all()
    if n_chain == 1:
        assert np.isnan(theta).all() and np.isfinite(ours["ess_bulk"]["theta"].values[:9]).all()


def test_the_tail_quantiles_follow_arviz_rcparams():
    """``ess_tail`` reads the quantiles from ``rcParams["stats.ci_prob"]``, as ArviZ does; an
    explicit ``tail_prob`` of another value gives another ESS (the argument is used)."""
    rng = np.random.default_rng(3)
    x = np.stack([_ar1(rng, 0.8, 4, 400) for _ in range(5)])
    default = rank_diagnostics(x)["ess_tail"]
    same = rank_diagnostics(x, tail_prob=float(az.rcParams["stats.ci_prob"]))["ess_tail"]
    np.testing.assert_array_equal(default, same)
    assert not np.allclose(rank_diagnostics(x, tail_prob=0.99)["ess_tail"], default)
    with pytest.raises(ValueError, match=r"\(n, chain, draw\)"):
        rank_diagnostics(x[0])


def test_diagnose_gates_on_the_same_numbers_as_arviz():
    post = _posterior(4, 300, seed=7).drop_vars("theta")
    table = diagnose(xr.DataTree.from_dict({"posterior": post}))
    ref = _arviz(post)
    assert table.loc["tau", "r_hat"] == pytest.approx(float(ref["r_hat"]["tau"]), rel=1e-12)
    m = ref["ess_tail"]["m"].sel(a=1, b=2)
    assert table.loc["m[1,2]", "ess_tail"] == pytest.approx(float(m), rel=1e-12)
