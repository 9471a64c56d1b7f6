"""Planted bug (issue 55): the posterior milestones censored one day late (``n_days + 2``, or
the caller's censoring day + 1: a never-reached milestone is reported a day later than the
baselines' and the truth's ``n_days + 1``). Wraps
``delusion_bayes.models.derived.posterior_milestones`` wherever it is bound. Load with
``pytest -p tests.wrong_impl.censor_off_by_one``."""

from __future__ import annotations

import importlib


def pytest_configure(config):
    from tests.wrong_impl import rebind

    derived = importlib.import_module("delusion_bayes.models.derived")
    importlib.import_module("delusion_bayes.stages.fit_tables")
    original = derived.posterior_milestones

    def posterior_milestones(dt, *, censor=None, **kwargs):
        cens = original(dt, censor=censor, **kwargs).attrs["censor_day"]
        return original(dt, censor=int(cens) + 1, **kwargs)

    rebind(original, posterior_milestones, "posterior_milestones")


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: posterior milestones censored at n_days + 2"
