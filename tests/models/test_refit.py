"""The models stage's automatic refit on divergences and its advice on a failed gate (issue 33).

No sampling: ``make`` returns DataTrees with the sample stats a sampler would write, so the rule
itself is under test (the end-to-end gate on real fits: ``tests/test_own_data.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.stages.models import fit_attempts, gate_advice, refit_if_divergent


def fake_fit(divergences: int, target_accept: float, n_raters: int = 3, n_models: int = 5):
    div = np.zeros((2, 50), bool)
    div.flat[:divergences] = True
    post = xr.Dataset(
        {"t50": (("chain", "draw", "model"), np.full((2, 50, n_models), 40.0)),
         "severity": (("chain", "draw", "rater"), np.zeros((2, 50, n_raters)))},
        attrs={"target_accept": target_accept},
    )  # fmt: skip
    dt = xr.DataTree.from_dict(
        {"posterior": post, "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), div)})}
    )
    dt.attrs.update(fit_time=1.5, variant="joint[logistic,rater]", n_days=12)
    return dt


class Maker:
    """``make(**more)`` as the stage builds it: records the calls, replays planned fits."""

    def __init__(self, *plan):
        self.plan, self.calls = list(plan), []

    def __call__(self, **more):
        self.calls.append(more)
        div, default_ta = self.plan.pop(0)
        return fake_fit(div, more.get("target_accept", default_ta))


INF = {"max_divergences": 0, "refit_target_accept": 0.99}


def test_divergent_fit_is_refitted_once_at_the_configured_target():
    make = Maker((8, 0.9), (0, 0.99))
    dt = refit_if_divergent(make, INF)
    assert make.calls == [{}, {"target_accept": 0.99}]
    attempts = json.loads(dt.attrs["gate_attempts"])
    assert [(a["target_accept"], a["divergences"]) for a in attempts] == [(0.9, 8), (0.99, 0)]


def test_already_at_the_target_goes_halfway_to_one():
    """The onset model samples at 0.99 already: its refit is at 0.995."""
    make = Maker((1, 0.99), (0, 0.995))
    refit_if_divergent(make, INF)
    assert make.calls[1] == {"target_accept": pytest.approx(0.995)}


def test_refit_is_attempted_once_even_if_it_still_diverges():
    make = Maker((8, 0.9), (2, 0.99))
    dt = refit_if_divergent(make, INF)
    assert len(make.calls) == 2
    g = {"passed": False, "max_rhat": 1.0, "min_ess": 900.0, "divergences": 2, "reasons": []}
    rec = fit_attempts(dt, g)
    assert rec["refitted"] is True
    assert rec["attempts"][-1] == {"target_accept": 0.99, "divergences": 2, "seconds": 1.5,
                                   "passed": False, "max_rhat": 1.0, "min_ess": 900.0}  # fmt: skip


@pytest.mark.parametrize("inf", [INF, {**INF, "refit_target_accept": None}])
def test_no_refit_without_divergences_or_when_switched_off(inf):
    make = Maker((0 if inf["refit_target_accept"] else 5, 0.9))
    dt = refit_if_divergent(make, inf)
    assert make.calls == [{}]
    assert len(json.loads(dt.attrs["gate_attempts"])) == 1


def test_advice_names_the_design_reason():
    dt = fake_fit(2, 0.99, n_raters=2, n_models=4)
    g = {"divergences": 2, "reasons": ["2 divergent transitions (allowed 0)"]}
    advice = gate_advice(dt, g)
    assert advice[0].startswith("2 raters: rater severity and discrimination are weakly")
    assert advice[1].startswith("4 chatbots: the between-chatbot scales")
    assert advice[2] == "no chatbot turns within the study: t50 and k are set by their priors"
    assert "sampler.target_accept" in advice[3]
    ok = gate_advice(fake_fit(0, 0.9, n_raters=4, n_models=15), {"divergences": 0, "reasons": []})
    assert ok == ["no chatbot turns within the study: t50 and k are set by their priors"]
