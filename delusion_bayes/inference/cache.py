"""Compile caching, so that a second run does not recompile the model.

What was measured here (joint model, paper_like, 2 shared cores): nutpie's compiled model cannot
be pickled (``TypeError: cannot pickle 'generator' object``), so the on-disk cache is PyTensor's
own: its numba backend caches every compiled kernel under ``<base_compiledir>/numba``. Pointing
``base_compiledir`` at ``<cache_dir>/pytensor`` (via ``PYTENSOR_FLAGS`` before PyTensor is
imported) cut nutpie's compile step from 49 s cold to 15 s warm in a new process; the rest is
graph rewriting. Within one process compiled models are also memoised by the spec hash, so
refitting the same spec (tests, variants, SBC) does not compile at all.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: env var naming the cache root (the top-level ``cache_dir`` config)
CACHE_ENV = "DELUSION_BAYES_CACHE"
_MEMO: dict[str, Any] = {}


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache root: ``cache_dir``, else ``$DELUSION_BAYES_CACHE``, else
    ``~/.cache/delusion_bayes``."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "delusion_bayes"
    return Path(cache_dir).expanduser()


def configure_pytensor_cache(cache_dir: str | Path | None = None) -> Path | None:
    """Point PyTensor's compile cache at ``<cache_root>/pytensor``.

    Must run before PyTensor is first imported (PyTensor reads ``PYTENSOR_FLAGS`` once); later
    calls only log which directory is in use (and still turn numba's fastmath off, which
    PyTensor reads at compile time: a script that imported PyMC before fitting otherwise got
    other draws from the same seed). Returns the directory used, if known.
    """
    target = cache_root(cache_dir) / "pytensor"
    if "pytensor" in sys.modules:
        import pytensor

        if "numba__fastmath" not in os.environ.get("PYTENSOR_FLAGS", ""):
            pytensor.config.numba__fastmath = False
        current = Path(pytensor.config.base_compiledir)
        if current != target:
            log.debug("PyTensor already imported; its compile cache stays at %s", current)
        return current
    target.mkdir(parents=True, exist_ok=True)
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    extra = []
    if "base_compiledir" not in flags:
        extra.append(f"base_compiledir={target}")
    if "numba__fastmath" not in flags:
        # bit-for-bit the same draws from the same seed whether the kernels were just compiled
        # or loaded from this cache: with fastmath (PyTensor's default) LLVM contracts and
        # reorders floating point differently when kernels are inlined (cold) than when
        # cached ones are linked (warm), the joint model's gradient differed by 1e-14, and
        # after 1,000 chaotic NUTS trajectories the same seed gave 0 or 1 divergences and
        # max R-hat 1.007 or 1.018 (paper_like, 2 x 500). Sampling time unchanged (25-34 s).
        extra.append("numba__fastmath=False")
    if extra:
        os.environ["PYTENSOR_FLAGS"] = ",".join([f for f in (flags, *extra) if f])
    return target


def compiled_nutpie(model: Any, *, cache_dir: str | Path | None = None, key: str | None = None):
    """``nutpie.compile_pymc_model(model)``, memoised in-process by ``key``.

    ``cache_dir`` is accepted for symmetry: the on-disk part of the cache is PyTensor's numba
    cache (see :func:`configure_pytensor_cache`), set up by :func:`delusion_bayes.models.fit`.
    """
    import nutpie

    if key is not None and key in _MEMO:
        log.info("reusing the compiled model %s from this process", key)
        return _MEMO[key]
    compiled = nutpie.compile_pymc_model(model)
    if key is not None:
        _MEMO[key] = compiled
    return compiled


def clear_memo() -> None:
    """Forget the in-process compiled models."""
    _MEMO.clear()


# ------------------------------------------------------------------------------------------
# fitted posteriors (opt-in: sweeps whose jobs share a model fit)
# ------------------------------------------------------------------------------------------
#: the code a fit depends on: a change to any of these files (or to a sampler's version) makes
#: every cached fit stale
_FIT_CODE = ("models", "inference", "data/schema.py")
_FIT_LIBS = ("pymc", "pytensor", "nutpie", "numpyro", "jax", "numba", "arviz", "xarray")


@functools.cache
def code_fingerprint() -> str:
    """Hash of the package's model and inference code and of the sampling libraries' versions
    (computed once per process: every fit of a sweep job asks for it)."""
    import hashlib
    from importlib import metadata

    h = hashlib.sha256()
    pkg = Path(__file__).resolve().parents[1]
    for part in _FIT_CODE:
        p = pkg / part
        for f in sorted(p.rglob("*.py")) if p.is_dir() else [p]:
            h.update(str(f.relative_to(pkg)).encode())
            h.update(f.read_bytes())
    for lib in _FIT_LIBS:
        try:
            h.update(f"{lib}={metadata.version(lib)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=none".encode())
    return h.hexdigest()[:16]


def fit_key(spec_hash: str, settings: dict[str, Any]) -> str:
    """Cache key of a fit: the spec (data, priors, variant), every sampler setting that changes
    the draws, and :func:`code_fingerprint`."""
    import hashlib
    import json

    blob = json.dumps({"spec": spec_hash, "code": code_fingerprint(), **settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def fit_path(key: str, cache_dir: str | Path | None = None) -> Path:
    """``<cache_root>/fits/<key>.nc``."""
    return cache_root(cache_dir) / "fits" / f"{key}.nc"


def load_fit(key: str, cache_dir: str | Path | None = None):
    """The cached fit of ``key`` as an in-memory ``xarray.DataTree``, or ``None``.

    An unreadable file (a job killed while writing cannot leave one: :func:`save_fit` renames a
    complete file into place) is logged and ignored.
    """
    import xarray as xr

    path = fit_path(key, cache_dir)
    if not path.is_file():
        return None
    try:
        with xr.open_datatree(path) as dt:
            return dt.load()
    except Exception as err:  # noqa: BLE001 - a bad cache entry must not end the run
        log.warning("ignoring the unreadable cached fit %s (%s); refitting", path, err)
        return None


def save_fit(dt: Any, key: str, cache_dir: str | Path | None = None) -> Path:
    """Write ``dt`` under ``key`` atomically (temporary file, then rename)."""
    path = fit_path(key, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    dt.to_netcdf(tmp)
    tmp.replace(path)
    return path
