"""Planted bug (issue 55): the joint model's likelihood ignores the rater severity (the
builder passes zeros to ``blocks.marginal_ratings``; ``severity`` stays a free variable with its
prior, so the posterior still has it). Re-registers the joint definition with that builder.
Load with ``pytest -p tests.wrong_impl.drop_severity``."""

from __future__ import annotations

from dataclasses import replace


def build_joint_without_severity(spec):
    import pymc as pm
    import pytensor.tensor as pt

    from delusion_bayes.models import blocks

    with pm.Model(coords=spec.coords) as model:
        mu = blocks.onset_trajectory(spec)
        sigma_eps = blocks.day_noise_scale(spec)
        severity, disc = blocks.rater_effects(spec)
        md_model, md_day = blocks.spec_data(spec, "md_model"), blocks.spec_data(spec, "md_day")
        blocks.marginal_ratings(
            spec, mu[md_model, md_day], sigma_eps[md_model], pt.zeros_like(severity), disc
        )
    return model


def pytest_configure(config):
    from delusion_bayes.models import registry

    d = registry.model_def("joint")
    registry.register(replace(d, build=build_joint_without_severity), replace=True)


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: rater severity dropped from the joint likelihood"
