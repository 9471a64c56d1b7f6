"""Sampler settings: impossible values are refused by name, and ``sampler.adaptation`` reaches
nutpie."""

from __future__ import annotations

import pytest

from delusion_bayes.inference.config import ADAPTATIONS, SamplerConfig, check_sampler_settings


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"draws": 0}, "sampler.draws=0: expected a whole number >= 1"),
        ({"tune": -1}, "sampler.tune=-1: expected a whole number >= 0"),
        ({"chains": 2.5}, "sampler.chains=2.5: expected a whole number >= 1"),
        ({"target_accept": 1.0}, "sampler.target_accept=1.0: expected null"),
        (
            {"adaptation": "dense"},
            "sampler.adaptation='dense': expected one of ['diag', 'low_rank']",
        ),
    ],
)
def test_bad_settings_are_named(kw, message):
    settings = {"draws": 100, "tune": 100, "chains": 2, **kw}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_sampler_settings(**settings)


def test_default_adaptation_is_accepted():
    assert SamplerConfig().adaptation in ADAPTATIONS
    check_sampler_settings(draws=1, tune=0, chains=1, adaptation="low_rank")  # no error


@pytest.mark.slow
@pytest.mark.parametrize("adaptation", ["diag", "low_rank"])
def test_adaptation_reaches_nutpie(adaptation):
    """nutpie records ``num_eigenvalues`` (the low-rank correction's size) only when it adapts a
    low-rank mass matrix, so its presence shows which adaptation ran."""
    pytest.importorskip("nutpie")
    import pymc as pm

    from delusion_bayes.inference.sampling import sample

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=3)
    cfg = SamplerConfig(
        draws=30, tune=30, chains=1, cores=1, adaptation=adaptation, progressbar=False
    )
    dt = sample(model, cfg)
    assert dt["posterior"]["x"].shape == (1, 30, 3)
    assert ("num_eigenvalues" in dt["sample_stats"].data_vars) == (adaptation == "low_rank")
