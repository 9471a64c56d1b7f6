"""Wrong implementation 1 (issue 34): every interval that ``delusion_bayes.intervals.eti`` and
``interval`` return is halved around its centre. Load with
``pytest -p tests.wrong_impl.halve_intervals``; the ``calibration`` tests must then fail."""

from __future__ import annotations

import importlib

import pytest

HALVED = pytest.StashKey[int]()

#: the modules that import the helpers by name (``grep -rn "intervals import" delusion_bayes``)
IMPORTERS = (
    "delusion_bayes.report.trajectories", "delusion_bayes.sweep.coverage",
    "delusion_bayes.baselines.replay", "delusion_bayes.baselines.logistic",
    "delusion_bayes.baselines.alpha", "delusion_bayes.baselines.replay_bootstrap",
    "delusion_bayes.baselines.replay_dynamics", "delusion_bayes.models.population",
    "delusion_bayes.models.derived", "delusion_bayes.models.replay_posterior",
)  # fmt: skip


def _halve(lo, hi):
    centre, half = (lo + hi) / 2.0, (hi - lo) / 4.0
    return centre - half, centre + half


def pytest_configure(config):
    from tests.wrong_impl import rebind

    ivl = importlib.import_module("delusion_bayes.intervals")
    for name in IMPORTERS:
        importlib.import_module(name)
    eti0, interval0 = ivl.eti, ivl.interval

    def eti(*args, **kwargs):
        return _halve(*eti0(*args, **kwargs))

    def interval(*args, **kwargs):
        return _halve(*interval0(*args, **kwargs))

    n = rebind(eti0, eti, "eti") + rebind(interval0, interval, "interval")
    config.stash[HALVED] = n


def pytest_report_header(config):
    return f"WRONG IMPLEMENTATION LOADED: intervals halved ({config.stash[HALVED]} bindings)"
