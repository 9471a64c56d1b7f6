"""simulate_study: determinism, sizes, truth stored and in range, the paper's regimes."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.data import simulate_study


def test_paper_like_sizes_and_truth(paper_like):
    sizes = {"rater": 4, "model": 15, "day": 30, "intervention_type": 5, "threshold": 3}
    assert dict(paper_like.sizes) == sizes
    for name in (
        "true_L",
        "true_k",
        "true_t50",
        "true_stage",
        "true_severity",
        "true_discrimination",
        "true_cutpoints",
        "true_p_level_a",
        "true_p_level_b",
    ):
        assert name in paper_like, name
    assert paper_like["true_t50"].dims == ("model",)
    assert {"vendor", "generation", "cohort"} <= set(paper_like.coords)


def test_paper_like_449_model_days(paper_like):
    observed = paper_like["recognition"].notnull().any("rater")
    assert int(observed.sum()) == 449
    assert not bool(observed.sel(model="Claude Opus 4.1", day=30))
    assert paper_like["answer"].sel(model="Claude Opus 4.1", day=30).item() == ""


def test_same_seed_identical_different_seed_not():
    a = simulate_study(preset="paper_like", seed=7)
    b = simulate_study(preset="paper_like", seed=7)
    xr.testing.assert_identical(a, b)
    c = simulate_study(preset="paper_like", seed=8)
    assert not a["recognition"].equals(c["recognition"])


def test_texts_do_not_change_ratings():
    a = simulate_study(preset="paper_like", seed=2, texts=False)
    b = simulate_study(preset="paper_like", seed=2, texts=True)
    xr.testing.assert_identical(a["recognition"], b["recognition"])


def test_values_on_their_scales(paper_like):
    for name, (lo, hi) in {
        "recognition": (1, 4),
        "confidence": (1, 3),
        "intervention": (1, 3),
        "disengagement": (0, 1),
        "level_a": (0, 1),
        "level_b": (0, 1),
    }.items():
        v = paper_like[name].values
        v = v[~np.isnan(v)]
        assert v.min() == lo and v.max() == hi, name
    assert (
        (paper_like["level_b"] <= paper_like["level_a"])
        .where(paper_like["level_a"].notnull())
        .all()
    )


def test_truth_ranges(paper_like):
    assert np.all((paper_like["true_L"] > 1) & (paper_like["true_L"] <= 4))
    assert np.all(paper_like["true_k"] > 0)
    assert abs(float(paper_like["true_severity"].mean())) < 1e-12
    stage = paper_like["true_stage"]
    assert float(stage.min()) > -1 and float(stage.max()) < 6


def _consensus(ds):
    return ds["recognition"].median("rater")


def test_paper_regimes(paper_like):
    """The four regimes of the paper (Results; Table 1) hold in the simulated consensus."""
    c = _consensus(paper_like)

    def first3(m):
        return int(np.argmax((c.sel(model=m) >= 3).values)) + 1

    assert first3("Claude Haiku 4.5") <= 4  # early alarmist: clinical framing by day 3-4
    for m in ("Claude Sonnet 4.5", "Claude Opus 4.5"):
        assert first3(m) <= 7
    for m in ("Claude Opus 4.1", "Claude Opus 4", "Claude Haiku 3.5", "GPT-4o", "Gemini 3.1 Pro"):
        assert 18 <= first3(m) <= 30, m
    for m in ("Claude Sonnet 4", "DeepSeek-V3", "Gemini 2.5 Flash", "Gemini 2.5 Pro"):
        assert float(c.sel(model=m).max()) < 3, m  # never clinical
        assert float(paper_like["true_t50"].sel(model=m)) > 30
    lb = paper_like["level_b"].sum("day")
    assert (
        float(lb.sel(model="GPT-5.1 Instant")) == 0 and float(lb.sel(model="GPT-5.1 Thinking")) == 0
    )
    assert all(
        float(lb.sel(model=m)) >= 20
        for m in ("Claude Haiku 4.5", "Claude Sonnet 4.5", "Claude Opus 4.5")
    )
    # GPT-5.1 recognises (reaches stage 4) but never disengages
    assert float(c.sel(model="GPT-5.1 Instant").max()) == 4


def test_interventions_follow_figure_2(paper_like):
    """Education falls and recommendation rises with the consensus stage (paper, Figure 2)."""
    c = _consensus(paper_like).round()
    mean = paper_like["intervention"].mean("rater")

    def at(stage, itype):
        return float(mean.sel(intervention_type=itype).where(c == stage).mean())

    assert at(1, "education") > 2.0 > at(4, "education")
    assert at(4, "recommendation") > 2.5 > 1.5 > at(1, "recommendation")
    # emotional support peaks at the transition (stages 2-3), not at the ends
    assert at(2, "emotional_support") > at(1, "emotional_support")


def test_small_and_null_presets():
    small = simulate_study(preset="small", seed=0)
    assert (
        dict(small.sizes)["model"] == 5 and small.sizes["rater"] == 3 and small.sizes["day"] == 12
    )
    null = simulate_study(preset="null", seed=0)
    assert null.sizes["model"] == 15 and set(null["true_regime"].values) == {"exchangeable"}


def test_overrides_and_errors():
    ds = simulate_study(preset="small", seed=0, n_raters=6, n_days=8)
    assert ds.sizes["rater"] == 6 and ds.sizes["day"] == 8
    with pytest.raises(ValueError, match=r"unknown simulate_study override\(s\) \['n_rater'\]"):
        simulate_study(preset="small", n_rater=3)
    with pytest.raises(ValueError, match=r"unknown preset 'paper'"):
        simulate_study(preset="paper")


# ------------------------------------------------------------------------------------------
# n_models: the roster scaled for the study-design experiment
# ------------------------------------------------------------------------------------------
def _shares(ds, coord, value):
    return float((ds[coord].values == value).mean())


@pytest.mark.parametrize("n", [8, 15, 20, 30, 45])
def test_n_models_sizes_and_group_shares(n):
    """The scaled roster has n distinct models and keeps the contrasts' group shares: exact
    for whole copies (30, 45), within one model of the roster's share otherwise."""
    base = simulate_study(preset="paper_like", seed=0, texts=False)
    ds = simulate_study(preset="paper_like", seed=0, texts=False, n_models=n)
    assert ds.sizes["model"] == n and len(set(ds["model"].values)) == n
    for coord, value in (("cohort", "late-2025"), ("vendor", "anthropic"), ("generation", "4.5")):
        tol = 1e-12 if n % 15 == 0 else 1.0 / n + 1e-12
        assert abs(_shares(ds, coord, value) - _shares(base, coord, value)) <= tol, (coord, n)
    never = float((ds["true_regime"].values == "never").mean())
    assert abs(never - 4 / 15) <= (1e-12 if n % 15 == 0 else 1.0 / n + 1e-12)
    # every contrast group keeps at least one model on each side
    for coord, value in (("cohort", "late-2025"), ("vendor", "anthropic"), ("generation", "4.5")):
        assert 0 < (ds[coord].values == value).sum() < n


def test_n_models_copies_share_the_truth_not_the_noise():
    ds = simulate_study(preset="paper_like", seed=0, texts=False, n_models=30)
    a, b = ds.sel(model="GPT-4o"), ds.sel(model="GPT-4o #2")
    for v in ("true_L", "true_k", "true_t50", "true_regime", "cohort", "vendor", "generation"):
        assert a[v].item() == b[v].item(), v
    assert not np.array_equal(a["true_stage"].values, b["true_stage"].values)
    # the paper's one missing answer stays with the original model only
    observed = ds["recognition"].notnull().any("rater")
    assert int(observed.sum()) == 30 * 30 - 1


def test_n_models_is_reproducible_and_leaves_the_presets_alone():
    a = simulate_study(preset="paper_like", seed=4, n_models=8, texts=False)
    b = simulate_study(preset="paper_like", seed=4, n_models=8, texts=False)
    xr.testing.assert_identical(a, b)
    # the roster's own size is the preset itself, value for value (tests pin those values)
    for preset in ("paper_like", "null", "small"):
        size = simulate_study(preset=preset, seed=3).sizes["model"]
        xr.testing.assert_identical(
            simulate_study(preset=preset, seed=3),
            simulate_study(preset=preset, seed=3, n_models=size),
        )
    # 8 models: the first 8 of the stratified order, in roster order
    assert list(a["model"].values) == [
        "Claude Sonnet 4.5",
        "GPT-5.1 Instant",
        "Claude Opus 4.1",
        "Claude Opus 4",
        "Claude Opus 3",
        "Gemini 3.1 Pro",
        "Claude Sonnet 4",
        "Gemini 2.5 Flash",
    ]
    null = simulate_study(preset="null", seed=0, n_models=30, texts=False)
    assert null.sizes["model"] == 30 and set(null["true_regime"].values) == {"exchangeable"}
    with pytest.raises(ValueError, match="n_models = 1"):
        simulate_study(preset="small", n_models=1)
