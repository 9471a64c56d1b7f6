"""The models stage's automatic refits (divergences, then R-hat/ESS) and its advice on a failed
gate (issue 33).

No sampling: ``make`` returns DataTrees with the sample stats a sampler would write, so the rule
itself is under test (the end-to-end gate on real fits: ``tests/test_own_data.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.inference.refits import fit_attempts, fit_with_refits, gate_advice


def fake_fit(
    divergences: int,
    target_accept: float,
    n_raters: int = 3,
    n_models: int = 5,
    draws: int = 50,
    stuck: bool = False,
):
    """A fit's DataTree; ``stuck``: one parameter whose two chains sit 3 SD apart (R-hat ~2.3),
    else independent normal draws (seeded) that mix."""
    div = np.zeros((2, draws), bool)
    div.flat[:divergences] = True
    mu = np.random.default_rng(draws).normal(size=(2, draws)) + (
        np.array([[0.0], [3.0]]) if stuck else 0.0
    )
    post = xr.Dataset(
        {
            "t50": (("chain", "draw", "model"), np.full((2, draws, n_models), 40.0)),
            "severity": (("chain", "draw", "rater"), np.zeros((2, draws, n_raters))),
            "mu": (("chain", "draw"), mu),
        },
        attrs={"target_accept": target_accept, "tune": draws},
    )
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
        div, default_ta, *stuck = self.plan.pop(0)
        draws = more.get("draws", 50)
        return fake_fit(div, more.get("target_accept", default_ta), draws=draws, stuck=any(stuck))


# ess_min_per_chain 10: the fake fits' 2 x 50 independent draws pass it
# refit_draws_factor off: these tests are of the divergence refit (the mixing refit: below)
INF = {
    "max_divergences": 0,
    "refit_target_accept": 0.99,
    "ess_min_per_chain": 10.0,
    "refit_draws_factor": None,
}


def test_divergent_fit_is_refitted_once_at_the_configured_target():
    make = Maker((8, 0.9), (0, 0.99))
    dt = fit_with_refits(make, INF)
    assert make.calls == [{}, {"target_accept": 0.99}]
    attempts = json.loads(dt.attrs["gate_attempts"])
    assert [(a["target_accept"], a["divergences"]) for a in attempts] == [(0.9, 8), (0.99, 0)]


def test_already_at_the_target_goes_halfway_to_one():
    """The onset model samples at 0.99 already: its refit is at 0.995."""
    make = Maker((1, 0.99), (0, 0.995))
    fit_with_refits(make, INF)
    assert make.calls[1] == {"target_accept": pytest.approx(0.995)}


def test_refit_is_attempted_once_even_if_it_still_diverges():
    make = Maker((8, 0.9), (2, 0.99))
    dt = fit_with_refits(make, INF)
    assert len(make.calls) == 2
    g = {"passed": False, "max_rhat": 1.0, "min_ess": 900.0, "divergences": 2, "reasons": []}
    rec = fit_attempts(dt, g)
    assert rec["refitted"] is True
    assert {k: rec["attempts"][-1][k] for k in ("target_accept", "draws", "divergences")} == {
        "target_accept": 0.99,
        "draws": 50,
        "divergences": 2,
    }
    assert rec["attempts"][-1]["passed"] is False and rec["attempts"][-1]["min_ess"] == 900.0


@pytest.mark.parametrize("inf", [INF, {**INF, "refit_target_accept": None}])
def test_no_refit_without_divergences_or_when_switched_off(inf):
    make = Maker((0 if inf["refit_target_accept"] else 5, 0.9))
    dt = fit_with_refits(make, inf)
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


MIX = {**INF, "refit_draws_factor": 2.0}


def test_poor_mixing_is_refitted_once_with_twice_the_draws():
    """R-hat fails (chains 3 SD apart), no divergences: one refit with 2 x draws and tuning."""
    make = Maker((0, 0.9, True), (0, 0.9))
    dt = fit_with_refits(make, MIX)
    assert make.calls == [{}, {"draws": 100, "tune": 100}]
    first, second = json.loads(dt.attrs["gate_attempts"])
    assert first["max_rhat"] > 1.5 and second["max_rhat"] < 1.05
    assert (first["draws"], second["draws"]) == (50, 100)
    # issue 55: the failing attempt names its failed parameters; the move between attempts is
    # over the headline parameters (L, k, t50, ...), which this fake fit has none of
    assert first["failed"] == ["mu"]
    assert first["moved_mcse"] == second["moved_mcse"] == 0.0 and first["moved_param"] is None


def test_divergence_refit_then_mixing_refit_keeps_the_raised_target():
    make = Maker((4, 0.9), (0, 0.99, True), (0, 0.99))
    dt = fit_with_refits(make, MIX)
    assert make.calls == [{}, {"target_accept": 0.99}, {"draws": 100, "tune": 100,
                                                         "target_accept": 0.99}]  # fmt: skip
    assert len(json.loads(dt.attrs["gate_attempts"])) == 3


def test_longer_chains_that_diverge_get_the_divergence_refit_at_their_length():
    """Sparse 15 x 12 x 3 (30% missing), joint: R-hat 1.0109 at 0.9, then 1 divergence in the
    twice-as-long chains; the divergence remedy had not been used, so it runs with those draws.
    Each remedy still runs at most once: a fourth fit is never made."""
    make = Maker((0, 0.9, True), (1, 0.9), (0, 0.99))
    dt = fit_with_refits(make, MIX)
    assert make.calls == [{}, {"draws": 100, "tune": 100},
                          {"draws": 100, "tune": 100, "target_accept": 0.99}]  # fmt: skip
    first, second, third = json.loads(dt.attrs["gate_attempts"])
    assert (second["divergences"], third["divergences"]) == (1, 0)
    assert third["target_accept"] == 0.99 and third["draws"] == 100
    make = Maker((0, 0.9, True), (1, 0.9), (2, 0.99))
    fit_with_refits(make, MIX)
    assert len(make.calls) == 3
    make = Maker((3, 0.9), (0, 0.99, True), (1, 0.99))  # remedy 1 used first: no third remedy
    fit_with_refits(make, MIX)
    assert len(make.calls) == 3


def test_no_mixing_refit_while_divergent_or_when_switched_off():
    make = Maker((4, 0.9), (2, 0.99, True))
    fit_with_refits(make, MIX)
    assert len(make.calls) == 2  # still divergent: more draws would not help
    make = Maker((0, 0.9, True))
    fit_with_refits(make, {**MIX, "refit_draws_factor": None})
    assert make.calls == [{}]


def test_overview_names_each_refit_and_its_reason():
    from delusion_bayes.report.overview import refit_text

    gate = {"attempts": [
        {"target_accept": 0.9, "draws": 1000, "divergences": 5, "max_rhat": 1.02, "min_ess": 300},
        {"target_accept": 0.99, "draws": 1000, "divergences": 0, "max_rhat": 1.012, "min_ess": 450},
        {"target_accept": 0.99, "draws": 2000, "divergences": 0, "max_rhat": 1.004, "min_ess": 900},
    ]}  # fmt: skip
    assert refit_text(gate) == (
        " (refitted automatically at target_accept 0.99 after 5 divergences at 0.9; then with "
        "2000 draws per chain after R-hat 1.012 / ESS 450 at 1000)"
    )
    assert refit_text({"attempts": gate["attempts"][:1]}) == ""


def test_the_stage_reuses_the_diagnostics_of_the_last_attempt(monkeypatch):
    """The gate's table is the one the refit rule computed for the same fit (not recomputed);
    another fit, even an equal copy, gets its own."""
    import delusion_bayes.inference.diagnostics as diag
    from delusion_bayes.inference.refits import diagnostics_of

    dt = fit_with_refits(Maker((0, 0.9), (0, 0.9)), MIX)  # 2 x 50 draws may or may not mix
    calls = []
    real = diag.diagnose
    monkeypatch.setattr(diag, "diagnose", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = diagnostics_of(dt, MIX)
    assert not calls and first.loc["mu", "r_hat"] > 0.99
    diagnostics_of(dt.copy(), MIX)
    assert calls == [1]
