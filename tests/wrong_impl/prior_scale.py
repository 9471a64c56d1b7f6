"""Planted bug (issue 55): the prior of the t50 population scale off by a factor 2 in the
fitted graph, ``sigma_t50 ~ Gamma(3, 12)`` instead of ``Gamma(3, 6)`` (the scale halved), in the
joint and onset models' definitions (re-registered with the changed prior table). Under the
former HalfNormal(0.5) default, twice as wide (``HalfNormal(1.0)``) was measured too: the
reference SBC did not catch it (S = 40, seed 7: sigma_t50's mean rank 0.46, p = 0.48;
docs/dev/development.md). Load with
``pytest -p tests.wrong_impl.prior_scale``; the reference-prior SBC
(``tests/models/test_sbc_reference.py``) must then fail."""

from __future__ import annotations

from dataclasses import replace

#: the broken prior rate of sigma_t50 (the model's: 6, mean 0.5)
RATE = 12.0


def pytest_configure(config):
    from delusion_bayes.models import registry

    for name in ("joint", "onset"):
        d = registry.model_def(name)
        priors = {**d.priors, "sigma_t50": {"dist": "Gamma", "alpha": 3.0, "beta": RATE}}
        registry.register(replace(d, priors=priors), replace=True)


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: sigma_t50 prior Gamma(3, 6) -> Gamma(3, 12) (joint, onset)"
