"""Pipeline stages: one module per stage, each with ``NEEDS`` and ``run(ds, cfg, run_dir)``.

A stage module declares ``NEEDS``: the config nodes it reads (the pipeline hands it only those,
never the whole config) and ``KIND``: the study kinds it applies to. ``run`` writes into
``run_dir / <stage name>/`` and returns a small dict of headline results (for logs and sweeps).
"""

STAGES: tuple[str, ...] = ("baselines", "text", "models", "replay", "design", "report")


def setting(node, key: str, default):
    """``node.key`` from a config node (DictConfig, dataclass or dict), ``default`` when the node
    or the key is missing or the value is ``None`` (an unset optional key)."""
    if node is None:
        return default
    value = node.get(key, default) if hasattr(node, "get") else getattr(node, key, default)
    return default if value is None else value


def sampler_kwargs(s, tune: int = 1000) -> dict:
    """The ``sampler`` config node as keyword arguments of the fitting functions (the models and
    the replay stage share it); ``tune`` is the default when the node sets none."""
    target = setting(s, "target_accept", None)  # None: the model's own default
    return {"draws": int(setting(s, "draws", 1000)), "tune": int(setting(s, "tune", tune)),
            "chains": int(setting(s, "chains", 4)), "cores": int(setting(s, "cores", 2)),
            "seed": int(setting(s, "seed", 0)), "sampler": str(setting(s, "name", "nutpie")),
            "target_accept": None if target is None else float(target),
            "reuse": bool(setting(s, "reuse_fits", False)),
            "adaptation": str(setting(s, "adaptation", "diag"))}  # fmt: skip
