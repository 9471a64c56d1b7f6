"""Planted bug (issue 55): the joint model's day noise left out of the likelihood (each
model-day's stage integrated at ``sigma = 0.01`` around the trajectory instead of
``sigma_eps[m]``; ``sigma_eps`` stays a free variable with its prior). Re-registers the joint
definition with that builder. Load with ``pytest -p tests.wrong_impl.no_day_noise``."""

from __future__ import annotations

from dataclasses import replace

#: the day-noise SD the broken likelihood uses (stage units; ~0: no day noise)
TINY = 0.01


def build_joint_without_day_noise(spec):
    import pymc as pm
    import pytensor.tensor as pt

    from delusion_bayes.models import blocks

    with pm.Model(coords=spec.coords) as model:
        mu = blocks.onset_trajectory(spec)
        sigma_eps = blocks.day_noise_scale(spec)
        severity, disc = blocks.rater_effects(spec)
        md_model, md_day = blocks.spec_data(spec, "md_model"), blocks.spec_data(spec, "md_day")
        tiny = pt.full_like(sigma_eps, TINY)
        blocks.marginal_ratings(spec, mu[md_model, md_day], tiny[md_model], severity, disc)
    return model


def pytest_configure(config):
    from delusion_bayes.models import registry

    d = registry.model_def("joint")
    registry.register(replace(d, build=build_joint_without_day_noise), replace=True)


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: day noise left out of the joint likelihood"
