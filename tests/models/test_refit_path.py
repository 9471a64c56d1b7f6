"""The fit-with-refits procedure users get (``inference.refits.fit_with_refits``) as the fit of
an SBC (issue 55, deliver 2): ``models.sbc_reference.run_reference_sbc(..., refits=cfg)`` fits
every simulated study through it, and each attempt keeps its diagnostics, the parameters that
failed the gate and how far the headline posterior means moved from the returned fit's, in
MCSE units (the fields the models stage writes into ``gate.json``)."""

from __future__ import annotations

import json

import pytest

KEYS = {"target_accept", "draws", "tune", "divergences", "seconds", "max_rhat", "min_ess",
        "failed", "moved_mcse", "moved_param"}  # fmt: skip


def _check_attempts(ranks):
    attempts = json.loads(ranks.attrs["attempts"])
    assert len(attempts) == ranks.sizes["sim"]
    for study in attempts:
        assert study and all(KEYS <= set(a) for a in study), study
        assert study[-1]["moved_mcse"] == 0.0
        # 100 draws per chain cannot give the default gate's ESS of 100 per chain: refitted
        # (at a higher target if it diverged, then with twice the draws), failures named
        assert len(study) >= 2 and study[0]["failed"], study
        more = max(a["draws"] for a in study) == 2 * study[0]["draws"]
        assert more or study[1]["target_accept"] > study[0]["target_accept"], study
        assert study[0]["moved_mcse"] >= 0.0 and study[0]["moved_param"] is not None
    return attempts


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["small", "paper_like"])
def test_sbc_fits_through_fit_with_refits(preset, small_study, paper_like):
    """Two ``small`` studies / one ``paper_like`` study (its design: 15 models x 30 days, 4
    raters), 2 chains x 100 draws, the default gate (``InferenceConfig()``)."""
    from delusion_bayes.inference import InferenceConfig
    from delusion_bayes.models.sbc_reference import run_reference_sbc

    ds = small_study if preset == "small" else paper_like
    n = 2 if preset == "small" else 1
    ranks = run_reference_sbc(
        ds, num_simulations=n, draws=100, tune=100, seed=3, refits=InferenceConfig()
    )
    _check_attempts(ranks)


def test_moved_is_in_mcse_units():
    """``_moved``: |difference of means| / hypot of the two MCSEs, the largest over the
    headline parameters, 0 for the returned attempt."""
    from delusion_bayes.inference import refits

    attempts = [
        {"mixed": False, "headline": {"t50[a]": (5.0, 0.3), "L[a]": (4.0, 0.1)}},
        {"mixed": True, "headline": {"t50[a]": (5.5, 0.4), "L[a]": (4.0, 0.1)}},
    ]
    refits._moved(attempts)
    assert attempts[0] == {"moved_mcse": 1.0, "moved_param": "t50[a]"}
    assert attempts[1] == {"moved_mcse": 0.0, "moved_param": None}
