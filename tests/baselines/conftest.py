"""Shared fixtures of the baselines tests: one simulated paper-like study per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def traj():
    """paper_like, seed 0, without texts (the baselines never read them): do not modify."""
    from delusion_bayes.data import simulate_study

    return simulate_study(preset="paper_like", seed=0, texts=False)


@pytest.fixture(scope="session")
def traj_consensus(traj):
    from delusion_bayes.baselines import consensus

    return consensus(traj[["recognition", "intervention"]])
