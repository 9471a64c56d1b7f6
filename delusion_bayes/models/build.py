"""``build_model(spec) -> pm.Model``: the graph of a :class:`~delusion_bayes.models.spec.ModelSpec`."""

from __future__ import annotations

from .spec import ModelSpec


def build_model(spec: ModelSpec):
    """Build the ``pymc.Model`` of ``spec`` (from :func:`delusion_bayes.models.build_spec`)."""
    if hasattr(spec, "build"):  # a spec that brings its own graph (the replay model)
        return spec.build()
    from .disengagement import build_disengagement
    from .joint import build_joint
    from .onset import build_onset
    from .rater import build_rater

    builders = {"joint": build_joint, "onset": build_onset, "rater": build_rater,
                "disengagement": build_disengagement}  # fmt: skip
    if spec.name not in builders:
        raise ValueError(f"no builder for model {spec.name!r}; expected one of {sorted(builders)}")
    return builders[spec.name](spec)
