"""Shared test setup: a non-interactive matplotlib backend, seeded studies shared per session."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def paper_like():
    """The bundled default study (paper_like, seed 0): do not modify in tests (copy first)."""
    from delusion_bayes.data import simulate_study

    return simulate_study(preset="paper_like", seed=0)


@pytest.fixture(scope="session")
def small_study():
    """The small study (3 raters x 5 models x 12 days, seed 0): do not modify (copy first)."""
    from delusion_bayes.data import simulate_study

    return simulate_study(preset="small", seed=0)
