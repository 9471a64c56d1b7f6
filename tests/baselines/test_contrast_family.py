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
