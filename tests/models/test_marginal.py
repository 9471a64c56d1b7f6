"""The marginal (latent integrated out) log-likelihood per model-day
(:mod:`delusion_bayes.models.marginal`), without sampling.

References are computed here by independent routes: a 40,001-point trapezoid over +-12 SD of
the latent with the category probabilities written as differences of sigmoids, Monte Carlo over
the latent, and the limit of a vanishing day noise (the marginal becomes the conditional
likelihood at the trajectory).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from delusion_bayes.models.marginal import (
    MARGINAL_VAR,
    MODEL_DAY,
    model_day_loglik,
    ordinal_terms,
)
from delusion_bayes.models.quadrature import marginal_loglik

from ._checks import cat_prob, grid_log_integral, log_cat_prob_sum

CUTS = np.array([1.5, 2.5, 3.5])


def _random_case(rng):
    r = int(rng.integers(1, 6))
    y = rng.integers(0, 4, r)
    d = np.exp(rng.normal(0.8, 0.5, r))
    sev = rng.normal(0.0, 0.4, r)
    mu = rng.uniform(0.0, 5.0)
    sigma = np.exp(rng.uniform(np.log(0.01), np.log(3.0)))
    return y, d, sev, mu, sigma


def _module(y, d, sev, mu, sigma, **kw):
    al, a0, b0 = ordinal_terms(y, d, d * sev, d[:, None] * CUTS)
    return marginal_loglik(al[None], a0[None], b0[None], np.array([mu]), np.array([sigma]), **kw)[0]


def test_matches_a_dense_trapezoid_on_random_model_days():
    """150 random model-days: 1-5 ratings, discriminations ~ logN(0.8, 0.5), latent SD
    0.01-3 (from a near-point mass to wider than the scale), including contradictory ratings
    and one-sided (floor/ceiling) ones. Measured worst error with the default 31 nodes: 9e-6."""
    rng = np.random.default_rng(0)
    errs = []
    for _ in range(150):
        y, d, sev, mu, sigma = _random_case(rng)
        ref = grid_log_integral(
            lambda s, y=y, d=d, sev=sev: log_cat_prob_sum(s, y, d, sev), mu, sigma
        )
        errs.append(abs(_module(y, d, sev, mu, sigma) - ref))
    assert max(errs) < 2e-5, max(errs)
    # and the node count matters: 9 nodes are visibly worse (the test can fail)
    y, d, sev, mu, sigma = np.array([0]), np.array([2.82]), np.array([0.0]), 0.7, 2.5
    ref = grid_log_integral(lambda s: log_cat_prob_sum(s, y, d, sev), mu, sigma)
    assert abs(_module(y, d, sev, mu, sigma, n_nodes=9) - ref) > 1e-4


def test_newton_does_not_cycle_across_a_steep_category_edge():
    """A rater-model draw of the paper_like fit: three raters at stage 4 and a steep one
    (discrimination 7) at stage 3 under a wide prior N(1.97, 1.61). Plain safeguarded Newton
    cycled between e = 0 and e = 7 on either side of the steep rater's edge and stopped at
    e = 0, 17 log units below the mode; the quadrature centred there was off by 0.016.
    rtsafe's step test finds the mode; 31 nodes then agree with a 400,001-point trapezoid
    to 1e-5, 41 (the rater model's default) to 2e-6."""
    y = np.array([3, 3, 2, 3])
    d = np.array([3.2677117406544216, 2.5575641711646613, 6.979317916160126, 2.2757008169873703])
    sev = np.array(
        [0.4819395431897714, -0.4199865070476948, -0.6975197545864626, 0.635566718444386]
    )
    mu, sigma = 1.9748353833300227, 1.613293126909268
    ref = grid_log_integral(lambda s: log_cat_prob_sum(s, y, d, sev), mu, sigma, n=400_001)
    assert abs(_module(y, d, sev, mu, sigma) - ref) < 1e-5
    assert abs(_module(y, d, sev, mu, sigma, n_nodes=41) - ref) < 2e-6


def test_open_bounds_take_the_short_path_with_the_same_bits():
    """A floor or ceiling rating's open bound (``a0 = +OPEN``, ``b0 = -OPEN``) skips its
    sigmoid's transcendentals (their value is exactly 1 or 0 in float64). Written as a finite
    bound just inside ``OPEN_AT`` (``+-0.99 OPEN_AT``: the general branch, whose sigmoid there
    is also exactly 1 or 0), every model-day's integral and stage draw must have the same bits;
    a padding term (both bounds open) must add exactly nothing."""
    from delusion_bayes.models.quadrature import sample_latent
    from delusion_bayes.models.rating_terms import OPEN_AT

    rng = np.random.default_rng(4)
    cases = [_random_case(rng) for _ in range(60)]
    n_terms = 6
    terms = np.zeros((3, len(cases), n_terms))
    terms[1] += 1e4  # padding: a0 = +OPEN
    terms[2] -= 1e4  # padding: b0 = -OPEN
    mu, sigma = np.empty(len(cases)), np.empty(len(cases))
    for j, (y, d, sev, m, sg) in enumerate(cases):
        al, a0, b0 = ordinal_terms(y, d, d * sev, d[:, None] * CUTS)
        terms[:, j, : len(y)] = al, a0, b0
        mu[j], sigma[j] = m, sg
    assert (terms[1] >= OPEN_AT).any() and (terms[2] <= -OPEN_AT).any()
    finite = terms.copy()
    real = np.arange(n_terms)[None, :] < np.array([len(c[0]) for c in cases])[:, None]
    finite[1][(terms[1] >= OPEN_AT) & real] = 0.99 * OPEN_AT
    finite[2][(terms[2] <= -OPEN_AT) & real] = -0.99 * OPEN_AT
    short = marginal_loglik(*terms[:, None], mu[None], sigma[None])
    general = marginal_loglik(*finite[:, None], mu[None], sigma[None])
    np.testing.assert_array_equal(short, general)
    fewer = marginal_loglik(*terms[:, None, :, :4], mu[None], sigma[None])
    np.testing.assert_array_equal(
        short[:, [j for j, c in enumerate(cases) if len(c[0]) <= 4]],
        fewer[:, [j for j, c in enumerate(cases) if len(c[0]) <= 4]],
    )
    draws = [
        sample_latent(*t[:, None], mu[None], sigma[None], np.random.default_rng(1))
        for t in (terms, finite)
    ]
    np.testing.assert_array_equal(*draws)


def test_matches_monte_carlo_over_the_latent():
    """log E_s[prod_r P(y_r | s)], s ~ N(mu, sigma), by 5e5 draws; tolerance 4 MC SEs."""
    rng = np.random.default_rng(1)
    y, d, sev = (
        np.array([2, 3, 2, 1]),
        np.array([2.5, 3.0, 1.8, 2.2]),
        np.array([0.3, -0.4, 0.1, 0.0]),
    )
    mu, sigma = 2.9, 0.6
    s = rng.normal(mu, sigma, 500_000)
    p = cat_prob(s, y, d, sev).prod(1)
    est, se = np.log(p.mean()), p.std() / p.mean() / np.sqrt(p.size)
    assert abs(_module(y, d, sev, mu, sigma) - est) < 4 * se


def test_vanishing_day_noise_gives_the_conditional_likelihood():
    y, d, sev = np.array([0, 1, 3]), np.array([2.0, 1.5, 3.0]), np.array([0.2, -0.1, -0.1])
    mu = 2.2
    cond = log_cat_prob_sum(np.array([mu]), y, d, sev)[0]
    np.testing.assert_allclose(_module(y, d, sev, mu, 1e-6), cond, atol=1e-5)


def test_far_off_ratings_stay_finite():
    """A rating 40 stages from the latent: log-probabilities around -100, not -inf/nan."""
    y, d, sev = np.array([3, 3]), np.array([3.0, 3.0]), np.array([0.0, 0.0])
    v = _module(y, d, sev, -40.0, 0.1)
    assert np.isfinite(v) and v < -100


def _fake_fit(with_level: bool):
    """A two-draw 'fit' of 2 models x 3 days x 2 raters with one missing model-day, in the
    layout :func:`delusion_bayes.models.fit` returns."""
    rng = np.random.default_rng(3)
    models, days, raters = ["A", "B"], [1, 2, 3], ["r1", "r2"]
    obs = [(r, m, t) for m in range(2) for t in range(3) for r in range(2) if (m, t) != (1, 1)]
    obs = obs[:-1]  # B day 3 has one rating only
    ri, mi, ti = (np.array(v) for v in zip(*obs, strict=True))
    y = rng.integers(0, 4, ri.size)
    post = xr.Dataset(
        {
            "trajectory": (("chain", "draw", "model", "day"), rng.uniform(1, 4, (1, 2, 2, 3))),
            "sigma_eps": (("chain", "draw", "model"), rng.uniform(0.2, 0.8, (1, 2, 2))),
            "severity": (("chain", "draw", "rater"), rng.normal(0, 0.3, (1, 2, 2))),
            "discrimination": (("chain", "draw", "rater"), rng.uniform(1.5, 3, (1, 2, 2))),
        },
        coords={"chain": [0], "draw": [0, 1], "model": models, "day": days, "rater": raters},
    )
    od = xr.Dataset(
        {"y": ("obs", y)},
        coords={
            "obs_rater": ("obs", np.array(raters)[ri]),
            "obs_model": ("obs", np.array(models)[mi]),
            "obs_day": ("obs", np.array(days)[ti]),
        },
    )
    lv = None
    if with_level:
        cells = sorted({(m, t) for m, t in zip(mi, ti, strict=True)})
        lm, lt = (np.array(v) for v in zip(*cells, strict=True))
        lv = rng.integers(0, 3, lm.size)
        od = od.assign(level=("obs_level", lv)).assign_coords(
            obs_level_model=("obs_level", np.array(models)[lm]),
            obs_level_day=("obs_level", np.array(days)[lt]),
        )
        post["beta_level"] = (("chain", "draw"), [[1.2, 0.8]])
        post["u"] = (("chain", "draw", "model"), rng.normal(0, 0.5, (1, 2, 2)))
        post["c_level_1"] = (("chain", "draw"), [[0.3, -0.2]])
        post["log_gap_level"] = (("chain", "draw"), [[0.1, 0.5]])
    dt = xr.DataTree.from_dict({"posterior": post, "observed_data": od})
    dt.attrs["model"] = "disengagement" if with_level else "joint"
    return dt, (ri, mi, ti, y, lv)


@pytest.mark.parametrize("with_level", [False, True])
def test_model_day_plumbing_matches_a_direct_integral(with_level):
    """Each observed model-day's value equals the integral written out directly from the
    posterior arrays (ratings mapped to their rater's severity/discrimination, the latent around
    that model-day's trajectory with its model's day noise, the adjudicated level included)."""
    dt, (ri, mi, ti, y, lv) = _fake_fit(with_level)
    da = model_day_loglik(dt)
    assert da.dims == ("chain", "draw", MODEL_DAY)
    cells = sorted({(m, t) for m, t in zip(mi, ti, strict=True)})
    assert da.sizes[MODEL_DAY] == len(cells) == 5  # the unrated model-day is not there
    assert da[f"{MODEL_DAY}_model"].values.tolist() == [["A", "B"][m] for m, _ in cells]
    post = dt["posterior"]
    for j, (m, t) in enumerate(cells):
        sel = (mi == m) & (ti == t)
        for k in range(2):
            p = {v: post[v].values[0, k] for v in post.data_vars}
            mu, sig = p["trajectory"][m, t], p["sigma_eps"][m]

            def log_f(s, p=p, m=m, j=j, sel=sel):
                ll = log_cat_prob_sum(
                    s, y[sel], p["discrimination"][ri[sel]], p["severity"][ri[sel]]
                )
                if with_level:
                    # eta = beta (s - 2.5) + u_m; P(D > j) = sigmoid(eta - c_j)
                    cut = np.array([p["c_level_1"], p["c_level_1"] + np.exp(p["log_gap_level"])])
                    eta = p["beta_level"] * (s - 2.5) + p["u"][m]
                    pgt = np.concatenate(
                        [np.ones((s.size, 1)), expit(eta[:, None] - cut), np.zeros((s.size, 1))], 1
                    )
                    ll = ll + np.log(pgt[:, lv[j]] - pgt[:, lv[j] + 1])
                return ll

            ref = grid_log_integral(log_f, mu, sig, n=100_001)
            np.testing.assert_allclose(da.values[0, k, j], ref, atol=2e-5)
    assert da.name == MARGINAL_VAR


def test_the_marginal_module_has_no_test_only_helper():
    """Issue 32: ``add_model_day_loglik`` was used by tests only (the fits add the marginal
    log-likelihood in :func:`delusion_bayes.models.latent.add_latent_groups`)."""
    from delusion_bayes.models import marginal

    assert not hasattr(marginal, "add_model_day_loglik")


def test_a_fit_without_ratings_is_refused_by_name():
    dt = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"t50": (("chain", "draw"), [[1.0]])}),
            "observed_data": xr.Dataset({"consensus": ("obs", [1.0])}),
        }
    )
    dt.attrs["model"] = "onset"
    with pytest.raises(ValueError, match="onset fit has no ordinal ratings 'y'"):
        model_day_loglik(dt)


def test_rater_model_integrates_around_the_population_mean():
    """The rater model's latent per model-day is N(mu_theta, sigma_theta): the same integral with
    those in place of the trajectory and the day noise."""
    dt, (ri, mi, ti, y, _) = _fake_fit(False)
    post = dt["posterior"].to_dataset().drop_vars(["trajectory", "sigma_eps"])
    post["mu_theta"] = (("chain", "draw"), [[2.4, 2.1]])
    post["sigma_theta"] = (("chain", "draw"), [[1.3, 0.9]])
    dt["posterior"] = xr.DataTree(post)
    dt.attrs["model"] = "rater"
    da = model_day_loglik(dt)
    cells = sorted({(m, t) for m, t in zip(mi, ti, strict=True)})
    for j, (m, t) in enumerate(cells):
        sel = (mi == m) & (ti == t)
        for k in range(2):
            p = {v: post[v].values[0, k] for v in post.data_vars}
            ref = grid_log_integral(
                lambda s, p=p, sel=sel: log_cat_prob_sum(
                    s, y[sel], p["discrimination"][ri[sel]], p["severity"][ri[sel]]
                ),
                p["mu_theta"],
                p["sigma_theta"],
                n=100_001,
            )
            np.testing.assert_allclose(da.values[0, k, j], ref, atol=2e-5)
    # without either latent model the function says what it needs
    dt["posterior"] = xr.DataTree(post.drop_vars(["mu_theta", "sigma_theta"]))
    with pytest.raises(ValueError, match="neither 'trajectory' and 'sigma_eps'"):
        model_day_loglik(dt)


def _truth_args(ds, spec, noise_scale=1.0):
    """The paper_like truth as the in-graph likelihood's inputs (per observed model-day)."""
    d = spec.data
    L, k, t50 = (ds[f"true_{v}"].values for v in ("L", "k", "t50"))
    days = d["day_values"]
    grid = 1 + (L - 1)[:, None] * expit(k[:, None] * (days[None, :] - t50[:, None]))
    mu = grid[d["md_model"], d["md_day"]]
    sigma = ds["true_day_noise"].values[d["md_model"]] * noise_scale
    return mu, sigma, ds["true_severity"].values, ds["true_discrimination"].values


def _reference(spec, mu, sigma, sev, disc):
    """Each model-day's integral by the adaptive 31-node quadrature of ``marginal_loglik``
    (itself checked above against a 40,001-point trapezoid to 2e-5)."""
    d = spec.data
    rated = (d["md_lo"] > -1e4) | (d["md_hi"] < 1e4)
    y = np.clip(d["md_rating"] - 1, 0, 3).astype(int)
    n_md, n_r = rated.shape
    al, a0, b0 = ordinal_terms(
        y,
        np.broadcast_to(disc, (n_md, n_r)),
        np.broadcast_to(disc * sev, (n_md, n_r)),
        np.broadcast_to(disc[:, None] * CUTS, (n_md, n_r, 3)),
    )
    return marginal_loglik(
        np.where(rated, al, 0.0), np.where(rated, a0, 1e4), np.where(rated, b0, -1e4), mu, sigma
    )


@pytest.mark.parametrize(
    ("case", "tol_max", "tol_sum"),
    [("truth", 2e-4, 2e-3), ("noise_x2", 3e-2, 0.25), ("rater", 2e-3, 0.05)],
)
def test_in_graph_quadrature_matches_the_adaptive_reference(paper_like, case, tol_max, tol_sum):
    """``blocks.marginal_ratings`` (Gauss-Hermite on a data-informed proposal, the likelihood
    NUTS differentiates; the joint model's 12 nodes, the rater model's 16) against the adaptive
    reference on all 449 rated model-days of paper_like: at the truth (day noise up to 0.7)
    every model-day within 2e-4 and the sum within 2e-3; with the day noise doubled (1.4 for
    the oscillating model, beyond its posterior) max 3e-2, sum 0.25; the rater model's wide
    latent (N(2.4, 1.3)) max 2e-3, sum 0.05. Measured: 8e-5 / 5e-4, 1.8e-2 / 0.14,
    5e-4 / 2e-2. The per-rater ``log(1 - e^-d)`` terms of interior categories are added back
    to compare like with like."""
    import pymc as pm
    import pytensor.tensor as pt

    from delusion_bayes.models import build_spec
    from delusion_bayes.models.blocks import GH_NODES, marginal_ratings

    spec = build_spec(paper_like, "joint")
    mu, sigma, sev, disc = _truth_args(paper_like, spec, 2.0 if case == "noise_x2" else 1.0)
    if case == "rater":
        mu, sigma = np.full_like(mu, 2.4), np.full_like(sigma, 1.3)
    with pm.Model():
        per = marginal_ratings(
            spec,
            *(pt.as_tensor(v) for v in (mu, sigma, sev, disc)),
            nodes=GH_NODES["rater" if case == "rater" else "joint"],
        )
    d = spec.data
    interior = (d["md_lo"] > -1e4) & (d["md_hi"] < 1e4)
    const = np.where(interior, np.log1p(-np.exp(-disc))[None, :], 0.0).sum(axis=1)
    err = per.eval() + const - _reference(spec, mu, sigma, sev, disc)
    assert per.eval().shape == (449,)
    assert np.abs(err).max() < tol_max, np.abs(err).max()
    assert abs(err.sum()) < tol_sum, err.sum()


def test_stage_draws_follow_the_conditional_posterior():
    """``sample_latent``: 40,000 draws of one model-day's latent (three raters at 2, 3, 3 under a
    wide prior N(2.2, 1.2)) against a 200,001-point grid of the same density: mean within
    0.01 (Monte Carlo SE ~0.003), SD within 2%, and the probability of each stage category
    (the Bayesian consensus) within 0.01."""
    from delusion_bayes.models.quadrature import sample_latent

    y, d, sev = np.array([1, 2, 2]), np.array([3.0, 2.5, 4.0]), np.array([0.2, -0.1, -0.1])
    mu, sigma, n = 2.2, 1.2, 40_000
    al, a0, b0 = ordinal_terms(y, d, d * sev, d[:, None] * CUTS)
    draws = sample_latent(
        np.broadcast_to(al, (n, 1, 3)),
        np.broadcast_to(a0, (n, 1, 3)),
        np.broadcast_to(b0, (n, 1, 3)),
        np.full((n, 1), mu),
        np.full((n, 1), sigma),
        np.random.default_rng(0),
    )[:, 0]
    s = np.linspace(mu - 10 * sigma, mu + 10 * sigma, 200_001)
    logf = log_cat_prob_sum(s, y, d, sev) - 0.5 * ((s - mu) / sigma) ** 2
    w = np.exp(logf - logf.max())
    w /= w.sum()
    mean = float(np.sum(w * s))
    sd = float(np.sqrt(np.sum(w * (s - mean) ** 2)))
    assert abs(draws.mean() - mean) < 0.01
    assert abs(draws.std() / sd - 1.0) < 0.02
    cat = np.digitize(s, CUTS)
    for c in range(4):
        assert abs(np.mean(np.digitize(draws, CUTS) == c) - w[cat == c].sum()) < 0.01


def test_a_level_on_an_unrated_model_day_is_integrated_not_refused():
    """A model-day with an adjudicated level but no rating (15% of ratings missing, seen in
    the gate grid) is kept, as the fitted graph keeps it (spec.model_day_layout): its value is
    log int P(level | s) N(s; trajectory, sigma_eps) ds, the ratings' product being empty."""
    dt, (ri, mi, ti, y, lv) = _fake_fit(True)
    od = dt["observed_data"].to_dataset()
    od = xr.concat(
        [
            od[["level", "obs_level_model", "obs_level_day"]]
            .isel(obs_level=[0])
            .assign(level=("obs_level", [2]))
            .assign_coords(obs_level_model=("obs_level", ["B"]), obs_level_day=("obs_level", [2])),
            od[["level", "obs_level_model", "obs_level_day"]],
        ],
        "obs_level",
    ).merge(od[["y"]])
    dt["observed_data"] = xr.DataTree(od)
    da = model_day_loglik(dt)
    assert da.sizes[MODEL_DAY] == 6
    j = int(
        np.flatnonzero(
            (da[f"{MODEL_DAY}_model"].values == "B") & (da[f"{MODEL_DAY}_day"].values == 2)
        )[0]
    )
    post = dt["posterior"]
    for k in range(2):
        p = {v: post[v].values[0, k] for v in post.data_vars}
        cut = p["c_level_1"] + np.exp(p["log_gap_level"])

        def log_f(s, p=p, cut=cut):  # level 2 (Level B): P(D >= 2) = sigmoid(eta - c_2)
            return np.log(expit(p["beta_level"] * (s - 2.5) + p["u"][1] - cut))

        ref = grid_log_integral(log_f, p["trajectory"][1, 1], p["sigma_eps"][1], n=100_001)
        np.testing.assert_allclose(da.values[0, k, j], ref, atol=2e-5)


def test_the_latent_kernel_compiles_once_for_read_only_and_broadcast_inputs():
    """Numba compiles the latent pass's kernel once per argument type, and a read-only array
    is another type: the rater model's ``mu`` (``np.broadcast_to`` of an array already of the
    right shape) made a second ~15 s cold compile of the same kernel. Every input, read-only or
    broadcast or not, now reaches the kernel as a C-contiguous writable array: one signature,
    same values."""
    from delusion_bayes.models import quadrature

    rng = np.random.default_rng(3)
    alpha = rng.uniform(1, 3, (4, 2, 3))
    a0, b0 = rng.normal(1, 0.3, (4, 2, 3)), rng.normal(-1, 0.3, (4, 2, 3))
    mu, sigma = rng.normal(0, 1, (4, 2)), rng.uniform(0.5, 1, (4, 2))
    writable = marginal_loglik(alpha, a0, b0, mu, sigma)
    frozen = [v.copy() for v in (alpha, a0, b0, mu, sigma)]
    for v in frozen:
        v.flags.writeable = False
    read_only = marginal_loglik(*frozen)
    broadcast = marginal_loglik(alpha, a0, b0, np.broadcast_to(mu[:1], mu.shape), sigma)
    np.testing.assert_array_equal(read_only, writable)
    np.testing.assert_allclose(broadcast[0], writable[0], rtol=0, atol=0)
    assert len(quadrature.kernel.signatures) == 1, quadrature.kernel.signatures


def test_the_rater_models_pattern_likelihood_is_the_per_model_day_one(paper_like):
    """The rater model's likelihood summed over distinct rating patterns, each weighted by its
    count (``rows="pat"``: 52 rows for paper_like's 449 model-days), equals the same integral
    taken once per model-day (``rows="md"``, as the joint model does), value and gradient, at
    random points: to 1e-9 relative (only the summation order differs)."""
    import pymc as pm
    import pytensor.tensor as pt

    from delusion_bayes.models import build_spec
    from delusion_bayes.models.blocks import marginal_ratings, rater_effects, spec_data
    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.priors import make_rv

    spec = build_spec(paper_like, "rater")
    assert spec.data.pat_count.size == 52 and spec.data.md_lo.shape[0] == 449
    per_pattern = build_model(spec)
    p = spec.priors
    with pm.Model(coords=spec.coords) as per_model_day:
        mu, sigma = make_rv("mu_theta", p["mu_theta"]), make_rv("sigma_theta", p["sigma_theta"])
        severity, disc = rater_effects(spec)
        ones = pt.ones_like(spec_data(spec, "md_model"), dtype="float64")
        marginal_ratings(spec, mu * ones, sigma * ones, severity, disc)
    fns = [(m.compile_logp(), m.compile_dlogp()) for m in (per_pattern, per_model_day)]
    rng = np.random.default_rng(11)
    start = per_pattern.initial_point()
    for _ in range(4):
        point = {k: v + 0.4 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
        (lp_a, g_a), (lp_b, g_b) = ((float(f(point)), df(point)) for f, df in fns)
        assert lp_a == pytest.approx(lp_b, rel=1e-9)
        np.testing.assert_allclose(g_a, g_b, rtol=1e-9, atol=1e-9)


def test_rater_model_days_rated_alike_share_one_integral_to_the_bit(monkeypatch):
    """The rater model's model-days all have the latent prior ``N(mu_theta, sigma_theta)``, so
    those with the same raters' same ratings share one integral (``_shared_integrands``): the
    log-likelihoods and the stage draws (each model-day from its own uniforms) equal, bit for
    bit, those of one integral per model-day; the joint model's (a prior per model-day) are
    never shared."""
    from delusion_bayes.models import marginal, quadrature

    rng = np.random.default_rng(8)
    n_models, n_days, n_draws = 3, 20, 6
    obs = [(r, m, t) for m in range(n_models) for t in range(n_days) for r in range(2)]
    ri, mi, ti = (np.array(v) for v in zip(*obs, strict=True))
    y = rng.integers(1, 3, ri.size)  # ratings 1-2: 4 patterns for 60 model-days
    post = xr.Dataset(
        {
            "mu_theta": (("chain", "draw"), rng.normal(2.0, 0.3, (1, n_draws))),
            "sigma_theta": (("chain", "draw"), rng.uniform(0.8, 1.5, (1, n_draws))),
            "severity": (("chain", "draw", "rater"), rng.normal(0, 0.3, (1, n_draws, 2))),
            "discrimination": (("chain", "draw", "rater"), rng.uniform(1.5, 6, (1, n_draws, 2))),
        },
        coords={"chain": [0], "draw": np.arange(n_draws), "rater": ["r1", "r2"]},
    )
    od = xr.Dataset(
        {"y": ("obs", y)},
        coords={
            "obs_rater": ("obs", np.array(["r1", "r2"])[ri]),
            "obs_model": ("obs", np.array(["A", "B", "C"])[mi]),
            "obs_day": ("obs", ti + 1),
        },
    )
    dt = xr.DataTree.from_dict({"posterior": post, "observed_data": od})
    dt.attrs["model"] = "rater"
    cells = marginal._observed_cells(dt)
    layout = marginal._ModelDays.of(cells, dt["posterior"])
    first, ptr, members = marginal._shared_integrands(cells, layout, one_prior=True)
    assert first.size == 4 and ptr[-1] == layout.n_md == 60
    assert isinstance(marginal._shared_integrands(cells, layout, one_prior=False)[0], slice)
    shared = marginal.loglik_and_stage(dt, np.random.default_rng(1))
    monkeypatch.setattr(
        marginal,
        "_shared_integrands",
        lambda cells, layout, one_prior: (slice(None), *quadrature.one_each(layout.n_md)),
    )
    each = marginal.loglik_and_stage(dt, np.random.default_rng(1))
    for a, b in zip(shared, each, strict=True):
        np.testing.assert_array_equal(a.values, b.values)
    # model-days rated alike: one log-likelihood, but their own stage draws
    ll, stage = (v.values[0] for v in shared)
    group = members[ptr[0] : ptr[1]]
    assert group.size > 1 and np.all(ll[:, group] == ll[:, group[:1]])
    assert np.unique(stage[:, group]).size == stage[:, group].size
