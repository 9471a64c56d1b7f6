"""The contrasts of a run as one family of tests (issue 51, item 1): ``contrasts.csv`` carries
Holm (FWER) and Benjamini-Hochberg (FDR) adjusted p-values over the family the config declares
(``baselines.family``: the whole run by default, or each contrast), computed by
``baselines.multiplicity`` (checked against R's ``p.adjust`` in test_multiplicity.py)."""

from __future__ import annotations

import numpy as np
import pytest

from delusion_bayes.baselines import analyse_trajectory
from delusion_bayes.baselines.multiplicity import benjamini_hochberg, holm
from delusion_bayes.config import compose


@pytest.fixture(scope="module")
def cfg():
    return compose(["baselines.n_boot=10", "baselines.alpha_boot=10"]).baselines


@pytest.mark.parametrize("family", ["run", "contrast"])
def test_contrasts_are_adjusted_over_the_declared_family(paper_like, cfg, family):
    cfg.family = family
    res = analyse_trajectory(paper_like, cfg)
    s = res.contrasts.summary
    groups = [s.index] if family == "run" else list(s.groupby("contrast").groups.values())
    assert len(groups) == (1 if family == "run" else 3)
    for idx in groups:
        p = s.loc[idx, "pvalue"].to_numpy(float)
        np.testing.assert_allclose(s.loc[idx, "p_holm"], holm(p), rtol=0, atol=1e-15)
        np.testing.assert_allclose(s.loc[idx, "p_bh"], benjamini_hochberg(p), rtol=0, atol=1e-15)
        assert (s.loc[idx, "family_size"] == np.isfinite(p).sum()).all()
    assert (s["p_holm"] >= s["pvalue"]).all() and (s["p_bh"] >= s["pvalue"]).all()
    assert any(family in n for n in res.contrasts.notes)
    head = res.headline
    assert head["n_contrast_tests"] == 12
    assert head["n_contrast_holm_05"] == int((s["p_holm"] < 0.05).sum())


def test_rankings_from_the_rater_bootstrap(paper_like, small_study, cfg):
    """Issue 51, item 3: a study of >= 3 models gets each model's rank on the milestones over
    the rater bootstrap's resamples. P(best) sums to 1 over the models (ties split), every median
    rank lies in its interval, ranks run 1..n, and a model that never reached clinical framing
    in any resample (censored everywhere) is never the best."""
    cfg.family = "run"
    res = analyse_trajectory(paper_like, cfg)
    t = res.rankings.summary
    assert set(t["quantity"]) == {"first_clinical", "first_stable"}
    for _, rows in t.groupby("quantity"):
        assert len(rows) == 15
        assert abs(rows["p_best"].sum() - 1) < 1e-9 and abs(rows["p_worst"].sum() - 1) < 1e-9
        assert ((rows["rank_lower"] <= rows["rank_median"])
                & (rows["rank_median"] <= rows["rank_upper"])).all()  # fmt: skip
        assert rows["rank_lower"].min() >= 1 and rows["rank_upper"].max() <= 15
    reps = res.milestone_replicates["first_clinical"]
    never = [str(m) for m in reps["model"].values if (reps.sel(model=m) >= 31).all()]
    assert never  # the paper-like study's never-turners
    fc = t[t["quantity"] == "first_clinical"].set_index("model")
    assert (fc.loc[never, "p_best"] == 0).all()
    assert analyse_trajectory(small_study.isel(model=[0, 1]), cfg).rankings is None  # < 3 models
