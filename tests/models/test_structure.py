"""One graph per model structure: the spec's arrays are graph inputs (``pm.Data``), so studies of
one design share a graph and its compiled log-density (``models.build.model_for``,
``inference.cache.compiled_nutpie``), including the parameterisation's index sets (which models
are centred or sampled beyond a wall: masks, ``models.blocks``)."""

from __future__ import annotations

import numpy as np
import pytest
from pymc.model.transform.optimization import freeze_dims_and_data

from delusion_bayes.data import simulate_study
from delusion_bayes.models import build_spec
from delusion_bayes.models.build import build_model, forget_graphs, model_for


def _flipped(spec):
    """``spec`` with another parameterisation: model 0 a never-turner (wall coordinate), model 3
    turned and centred, model 1's day noise centred, model 2's log k centred."""
    d = spec.data
    d.t50_centred = d.t50_centred.copy()
    d.t50_centred[0], d.t50_centred[3] = False, True
    d.log_k_centred = d.log_k_centred.copy()
    d.log_k_centred[2] = True
    if d.eps_centred is not None:
        d.eps_centred = d.eps_centred.copy()
        d.eps_centred[1] = not d.eps_centred[1]
    return spec


@pytest.fixture(scope="module")
def studies():
    return simulate_study("small", seed=0), simulate_study("small", seed=1)


def test_structure_key_ignores_the_values_not_the_shapes_nor_the_priors(studies):
    a, b = (build_spec(ds, "joint") for ds in studies)
    assert a.hash() != b.hash()
    assert a.structure_key() == b.structure_key()
    assert _flipped(build_spec(studies[1], "joint")).structure_key() == a.structure_key()
    other_prior = build_spec(studies[0], "joint", priors={"mu_t50": {"mu": 0.5}})
    assert other_prior.structure_key() != a.structure_key()
    gap = studies[0].copy(deep=True)
    gap["recognition"].loc[{"day": gap["day"].values[4]}] = np.nan  # a day nobody rated
    assert build_spec(gap, "joint").structure_key() != a.structure_key()
    assert build_spec(studies[0], "onset").structure_key() != a.structure_key()


@pytest.mark.parametrize("name", ["joint", "onset", "disengagement", "rater"])
def test_the_reused_graph_has_the_log_density_of_a_fresh_one(studies, name):
    """The graph built for one study, given another's data (with other masks), evaluates the
    other study's log density at random points: equal to a graph built for it to 1e-9, and not
    to the first study's (so a graph that kept its data would fail)."""
    forget_graphs()
    first = build_spec(studies[0], name)
    second = _flipped(build_spec(studies[1], name))
    shared, key = model_for(first)
    logp_first = shared.compile_logp()
    rng = np.random.default_rng(5)
    points = []
    for _ in range(3):
        point = shared.initial_point()
        points.append({k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in point.items()})
    before = [float(logp_first(p)) for p in points]
    again, key2 = model_for(second)
    assert again is shared and key2 == key
    fresh = build_model(second).compile_logp()
    reused = shared.compile_logp()
    # what a one-off fit compiles (share_graph=False): the graph with the data frozen in
    frozen = freeze_dims_and_data(shared).compile_logp()
    for p, b in zip(points, before, strict=True):
        assert float(reused(p)) == pytest.approx(float(fresh(p)), rel=1e-9, abs=1e-9)
        assert float(frozen(p)) == pytest.approx(float(fresh(p)), rel=1e-9, abs=1e-9)
        assert abs(float(reused(p)) - b) > 1e-3


@pytest.mark.slow
def test_a_fit_on_the_reused_graph_is_the_fresh_fit_draw_for_draw(studies):
    """Fitting study B after study A (graph and compiled model reused, B's data swapped in with
    nutpie's ``with_data``) gives B's fresh fit draw for draw, without compiling."""
    from delusion_bayes.models.fit import fit

    kw = dict(
        draws=60,
        tune=60,
        chains=2,
        seed=3,
        log_prior=False,
        posterior_predictive=False,
        share_graph=True,
    )
    second = _flipped(build_spec(studies[1], "onset"))
    forget_graphs()
    fresh = fit(studies[1], "onset", spec=second, **kw)
    forget_graphs()
    fit(studies[0], "onset", **kw)
    reused = fit(studies[1], "onset", spec=second, **kw)
    compile_time = {
        k: dt["posterior"].attrs["compile_time"] for k, dt in (("fresh", fresh), ("reused", reused))
    }
    assert compile_time["reused"] < 0.5 * compile_time["fresh"]
    for v in ("L", "k", "t50", "sigma_y", "t50_centred", "w_t50"):
        np.testing.assert_array_equal(reused["posterior"][v].values, fresh["posterior"][v].values)
    # the kept entries of the masked vectors: model 0 beyond the wall, models 1-4 centred
    assert reused["posterior"]["w_t50"].shape[-1] == 1
    assert reused["posterior"]["t50_centred"].shape[-1] == 4
    np.testing.assert_array_equal(
        reused["log_likelihood"]["y"].values, fresh["log_likelihood"]["y"].values
    )


@pytest.mark.slow
def test_rater_studies_with_other_pattern_counts_share_one_compiled_graph(studies):
    """The rater model's rows are the distinct rating patterns (16 in study A, 22 in study B):
    B fitted on A's compiled graph, its longer pattern arrays swapped in, gives B's fresh fit
    draw for draw, and its per-rating log-likelihood too, without compiling again."""
    from delusion_bayes.models.fit import fit

    kw = dict(draws=60, tune=60, chains=2, seed=3, log_prior=False, posterior_predictive=False)
    kw["share_graph"] = True
    a, b = (build_spec(ds, "rater") for ds in studies)
    assert (a.data.pat_count.size, b.data.pat_count.size) == (16, 22)
    forget_graphs()
    fresh = fit(studies[1], "rater", spec=b, **kw)
    forget_graphs()
    fit(studies[0], "rater", spec=a, **kw)
    reused = fit(studies[1], "rater", spec=b, **kw)
    times = [dt["posterior"].attrs["compile_time"] for dt in (fresh, reused)]
    assert times[1] < 0.5 * times[0]
    for v in ("mu_theta", "sigma_theta", "severity", "discrimination"):
        np.testing.assert_array_equal(reused["posterior"][v].values, fresh["posterior"][v].values)
    np.testing.assert_array_equal(
        reused["log_likelihood"]["y"].values, fresh["log_likelihood"]["y"].values
    )


@pytest.mark.slow
def test_a_one_off_fit_compiles_its_own_frozen_graph_and_repeats_from_its_seed(studies):
    """``share_graph=False`` (the main job's fits): nothing is memoised, so a second fit of the
    same study compiles again and gives the same draws (nothing depends on what the process
    fitted before); its posterior agrees with the shared graph's within Monte Carlo error."""
    from delusion_bayes.inference.cache import memoised_models
    from delusion_bayes.models.fit import fit

    kw = dict(draws=200, tune=200, chains=2, seed=3, log_prior=False, posterior_predictive=False)
    forget_graphs()
    first = fit(studies[0], "onset", **kw)
    fit(studies[1], "onset", **kw)
    again = fit(studies[0], "onset", **kw)
    assert memoised_models() == []
    for v in ("L", "k", "t50"):
        np.testing.assert_array_equal(again["posterior"][v].values, first["posterior"][v].values)
    shared = fit(studies[0], "onset", **kw, share_graph=True)
    assert not np.array_equal(shared["posterior"]["t50"].values, first["posterior"]["t50"].values)
    a, b = (dt["posterior"]["t50"] for dt in (first, shared))
    se = np.hypot(a.std(("chain", "draw")), b.std(("chain", "draw"))) / np.sqrt(100)
    z = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))) / se
    assert float(z.max()) < 5.0
