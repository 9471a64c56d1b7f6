"""Provenance of a run: versions, git SHA, config and data hashes (the one place they are made),
written into ``run.json`` and fitted posteriors' attrs."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ._version import __version__

#: distributions whose versions a run records and the supplement lists (when installed)
DEPENDENCIES: tuple[str, ...] = (
    "numpy", "scipy", "pandas", "xarray", "matplotlib", "pymc", "pytensor", "arviz", "arviz-base",
    "arviz-stats", "nutpie", "numpyro", "jax", "hydra-core", "omegaconf", "h5netcdf",
    "sentence-transformers", "torch", "spacy", "krippendorff",
)  # fmt: skip


def versions(names: tuple[str, ...] = DEPENDENCIES) -> dict[str, str]:
    """Installed versions of ``delusion_bayes`` and its dependencies (no module is imported)."""
    out = {}
    for n in ("delusion_bayes", *names):
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def git_sha(path: Path | None = None) -> str | None:
    """HEAD of the checkout holding this package (``-dirty`` with uncommitted tracked changes),
    None outside a checkout."""
    root = path or Path(__file__).resolve().parent
    git = {"cwd": root, "capture_output": True, "text": True, "timeout": 10}
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], **git)
        if sha.returncode != 0 or not sha.stdout.strip():
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **git)
        return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dataset_hash(ds: Any) -> str:
    """A content hash of a study (names, dims, coords, values; not attrs): SHA-256, hex, the same
    whether the study was loaded from netCDF or CSV."""
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        var = ds.variables[name]
        h.update(f"{name}|{var.dims}|".encode())
        values = np.asarray(var.values)
        if values.dtype.kind in "OUS":
            for v in values.ravel():
                h.update(str(v).encode() + b"\x00")
        else:
            h.update(np.ascontiguousarray(values.astype(np.float64)).tobytes())
    return h.hexdigest()


def provenance(cfg: Any, ds: Any | None = None) -> dict[str, Any]:
    """Versions, seed, git SHA, config hash and data hash of a run (written to ``run.json``)."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    text = json.dumps(resolved, sort_keys=True, default=str)
    return {
        "package": "delusion_bayes",
        "version": __version__,
        "git_sha": git_sha(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": versions(),
        "seed": int(cfg.get("seed", 0)),
        "config_hash": hashlib.sha256(text.encode()).hexdigest(),
        "data_hash": dataset_hash(ds) if ds is not None else None,
    }
