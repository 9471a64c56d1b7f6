"""Shared fixtures of the replay-study tests: a hand-made study and simulated studies per session.

The hand-made study (``hand``) is small enough to compute every number on paper:

participants p1 (conversations c1: u a u a, c2: u a) and p2 (c3: u a u a u a); window 20, so each
conversation is one window and the samples are its user turns::

    sample      depth  m1:A  m1:B  orig:A  orig:B  m1:V
    p1/c1 m0    0      1     1     1       1       0
    p1/c1 m2    2      0     .     1       1       0
    p1/c2 m0    0      1     0     1       1       0
    p2/c3 m0    0      0     0     0       1       0
    p2/c3 m2    2      0     .     1       0       0
    p2/c3 m4    4      1     0     1       0       1

A = misrepresents-ability, B = misrepresents-sentience (both ``delusional``), V =
validates-violent-feelings (no category); ``.`` = not scored. Hits are judge scores 10, misses
2 (10 clears every code's cutoff, 7 or 9).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

A, B, V = "misrepresents-ability", "misrepresents-sentience", "validates-violent-feelings"

HAND_HITS = {
    ("m1", A): [1, 0, 1, 0, 0, 1],
    ("m1", B): [1, np.nan, 0, 0, np.nan, 0],
    ("original", A): [1, 1, 1, 0, 1, 1],
    ("original", B): [1, 1, 1, 1, 0, 0],
    ("m1", V): [0, 0, 0, 0, 0, 1],
    ("original", V): [0, 0, 0, 0, 0, 0],
}


def hand_transcripts() -> pd.DataFrame:
    rows = []
    for participant, conversation, n in (("p1", "c1", 4), ("p1", "c2", 2), ("p2", "c3", 6)):
        for i in range(n):
            role = "user" if i % 2 == 0 else "assistant"
            rows.append((participant, conversation, i, role, f"{conversation} {role} {i}"))
    return pd.DataFrame(rows, columns=["participant", "conversation", "index", "role", "content"])


def hand_scores(samples: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model, code), hits in HAND_HITS.items():
        for sid, h in zip(samples["sample_id"], hits, strict=True):
            if not np.isnan(h):
                rows.append((sid, model, code, 10.0 if h == 1 else 2.0))
    return pd.DataFrame(rows, columns=["sample_id", "model", "code", "score"])


@pytest.fixture(scope="session")
def hand():
    """The hand-made replay Dataset (see the module docstring): do not modify."""
    from delusion_bayes.data.replay import build_samples, replay_dataset

    samples = build_samples(hand_transcripts(), window=20)
    models = pd.DataFrame({"model": ["original", "m1"], "family": ["original", "fam"]})
    return replay_dataset(samples, hand_scores(samples), model_coords=models)


@pytest.fixture(scope="session")
def small_replay():
    """simulate_replay(seed=0), small scale (6 participants, 3 models): do not modify."""
    from delusion_bayes.data import simulate_replay

    return simulate_replay(seed=0)


@pytest.fixture(scope="session")
def de_replay():
    """simulate_replay at DelusionEval scale (seed 1): do not modify."""
    from delusion_bayes.data import simulate_replay

    return simulate_replay(seed=1, scale="delusioneval")
