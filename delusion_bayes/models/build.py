"""``build_model(spec) -> pm.Model``: the graph of a
:class:`~delusion_bayes.models.spec.ModelSpec`."""

from __future__ import annotations

from .spec import CustomGraphSpec, ModelSpec


def build_model(spec: ModelSpec | CustomGraphSpec):
    """Build the ``pymc.Model`` of ``spec`` (from :func:`delusion_bayes.models.build_spec`, or a
    spec with its own graph such as the replay model's)."""
    if isinstance(spec, CustomGraphSpec):
        return spec.build()
    from .disengagement import build_disengagement
    from .joint import build_joint
    from .onset import build_onset
    from .rater import build_rater

    builders = {
        "joint": build_joint,
        "onset": build_onset,
        "rater": build_rater,
        "disengagement": build_disengagement,
    }
    if spec.name not in builders:
        raise ValueError(f"no builder for model {spec.name!r}; expected one of {sorted(builders)}")
    return builders[spec.name](spec)
