"""Planted bug (issue 55): the prior of the day-noise hyper-mean's scale off by a factor 2 in
the fitted graph, ``mu_log_eps ~ Normal(-1.6, 0.375)`` instead of ``Normal(-1.6, 0.75)``, in
the joint model's definition (re-registered with the changed prior table). Load with
``pytest -p tests.wrong_impl.day_noise_prior``."""

from __future__ import annotations

from dataclasses import replace

#: the broken prior SD of mu_log_eps (the model's: 0.75)
SCALE = 0.375


def pytest_configure(config):
    from delusion_bayes.models import registry

    d = registry.model_def("joint")
    priors = {**d.priors, "mu_log_eps": {"dist": "Normal", "mu": -1.6, "sigma": SCALE}}
    registry.register(replace(d, priors=priors), replace=True)


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: mu_log_eps prior SD 0.75 -> 0.375 (joint)"
