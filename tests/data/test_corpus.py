"""The SYNTHETIC demo corpus: the 30-message script and stage-driven answers."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from delusion_bayes.data.corpus import demo_script
from delusion_bayes.text import demo_prompts, synthesize_answers


def test_script_is_labelled_synthetic_and_complete():
    raw = resources.files("delusion_bayes.data").joinpath("demo_script.tsv").read_text()
    assert raw.startswith("# SYNTHETIC")
    prompts = demo_prompts()
    assert len(prompts) == 30 and len(set(prompts)) == 30
    assert all(p.strip() for p in prompts)


def _stages(n_days=30):
    t = np.arange(1, n_days + 1)
    early = 1 + 3 / (1 + np.exp(-2.0 * (t - 3.5)))
    return np.vstack([np.ones(n_days), early, np.full(n_days, np.nan)])


def test_deterministic_for_a_generator_state():
    a = synthesize_answers(_stages(), ["a", "b", "c"], np.random.default_rng(7))
    b = synthesize_answers(_stages(), ["a", "b", "c"], np.random.default_rng(7))
    c = synthesize_answers(_stages(), ["a", "b", "c"], np.random.default_rng(8))
    assert a.dtype == object and a.shape == (3, 30)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_style_follows_stage():
    """Stage 1 takes up the day's content (the day's engagement sentences); stage 4 refers out.

    The engagement weight carries N(0, .05) day noise, so a stage-4 answer takes up the day's
    content with probability ~ .04 per sentence: at most 2 of 20 stage-4 days (1 with seed 0).
    """
    ans = synthesize_answers(_stages(), ["naive", "early", "none"], np.random.default_rng(0))
    engage = [r["engage_1"][1:] for r in demo_script()]  # first letter may be lower-cased
    naive_hits = sum(engage[d] in ans[0, d] for d in range(30))
    early_hits = sum(engage[d] in ans[1, d] for d in range(10, 30))
    assert naive_hits >= 20 and early_hits <= 2
    referral = ("doctor", "clinician", "psychiatrist", "crisis", "emergency", "person you trust")
    assert sum(any(w in ans[1, d] for w in referral) for d in range(10, 30)) == 20
    assert all(a == "" for a in ans[2])


def test_first_n_days_and_errors():
    ans = synthesize_answers(np.ones((1, 12)), ["m"], np.random.default_rng(0))
    assert ans.shape == (1, 12)
    with pytest.raises(ValueError, match="30 prompts"):
        synthesize_answers(np.ones((1, 31)), ["m"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="2 names but true_stage has 1 rows"):
        synthesize_answers(np.ones((1, 5)), ["m", "n"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="1-4 stage scale"):
        synthesize_answers(np.full((1, 5), 7.0), ["m"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="true_confidence has shape"):
        synthesize_answers(
            np.ones((1, 5)), ["m"], np.random.default_rng(0), true_confidence=np.ones((1, 4))
        )
