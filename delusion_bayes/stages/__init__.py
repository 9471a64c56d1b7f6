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
