"""Planted bug (issue 55): the prior of the t50 population scale off by a factor 2 in the
fitted graph, ``sigma_t50 ~ HalfNormal(0.25)`` instead of ``HalfNormal(0.5)``, in the joint and
onset models' definitions (re-registered with the changed prior table). Twice as wide
(``HalfNormal(1.0)``) was measured too: the reference SBC did not catch it (S = 40, seed 7:
sigma_t50's mean rank 0.46, p = 0.48; docs/dev/development.md). Load with
``pytest -p tests.wrong_impl.prior_scale``; the reference-prior SBC
(``tests/models/test_sbc_reference.py``) must then fail."""

from __future__ import annotations

from dataclasses import replace

#: the broken prior scale of sigma_t50 (the model's: 0.5)
SCALE = 0.25


def pytest_configure(config):
    from delusion_bayes.models import registry

    for name in ("joint", "onset"):
        d = registry.model_def(name)
        priors = {**d.priors, "sigma_t50": {"dist": "HalfNormal", "sigma": SCALE}}
        registry.register(replace(d, priors=priors), replace=True)


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: sigma_t50 prior scale 0.5 -> 0.25 (joint, onset)"
