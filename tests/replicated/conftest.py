"""Shared fixtures of the replicated-study tests: the two real Spiral-Bench files (loaded once)
and a hand-made study small enough to compute on paper.

Data: ``../shared/data/spiral-bench/`` (``claude-3.5-sonnet.json``, ``llama-4-maverick.json``:
github.com/sam-paech/spiral-bench at 6b990fa, ``res_v0.2/``; MIT; Paech 2025). The tests that
need them skip when the folder is absent (and fail under ``CI=true``, ``tests/resources.py``);
nothing is copied into the repository.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from ..resources import needs

SPIRAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "spiral-bench"
FILES = ("claude-3.5-sonnet.json", "llama-4-maverick.json")

needs_spiral = needs(
    not all((SPIRAL / f).is_file() for f in FILES),
    f"Spiral-Bench result files not found at {SPIRAL} (../shared/data/spiral-bench/)",
)


@pytest.fixture(scope="session")
def spiral():
    """Both shared Spiral-Bench files as one replicated study (do not modify)."""
    from delusion_bayes.data.spiral_bench import load_spiral_bench

    return load_spiral_bench(SPIRAL)


def tiny_study(
    means: list[list[float]],
    categories: list[list[str]] | None = None,
    n_turns: int = 2,
) -> xr.Dataset:
    """One rater, one count item; chatbot ``m`` conversation ``c`` scores ``means[m][c]`` on
    every one of its ``n_turns`` turns (so the conversation mean is that number)."""
    from delusion_bayes.data.replicated import item_scale_coords

    n_m, n_c = len(means), max(len(m) for m in means)
    score = np.full((1, n_m, n_c, n_turns, 1), np.nan)
    present = np.zeros((n_m, n_c), dtype=bool)
    for mi, row in enumerate(means):
        score[0, mi, : len(row)] = np.asarray(row, dtype=float)[:, None, None]
        present[mi, : len(row)] = True
    coords = {
        "rater": ["R1"],
        "rater_kind": ("rater", ["human"]),
        "model": [f"m{i + 1}" for i in range(n_m)],
        "conversation": [f"c{i + 1}" for i in range(n_c)],
        "turn": np.arange(1, n_turns + 1),
        "item": ["x"],
        **item_scale_coords(["count"], [0.0], [np.nan]),
    }
    if categories is not None:
        coords["category"] = (("model", "conversation"), np.array(categories, dtype=object))
    return xr.Dataset(
        {
            "score": (("rater", "model", "conversation", "turn", "item"), score),
            "has_conversation": (("model", "conversation"), present),
        },
        coords=coords,
        attrs={"kind": "replicated", "source": "test"},
    )
