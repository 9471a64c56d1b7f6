"""Compile caching (PyTensor's numba cache under ``<cache_dir>/pytensor``, and in-process memos;
docs/dev/design-notes.md#inferencecachepy) and the opt-in fit cache. Cache folders must be private
(:func:`private_dir`); a cached fit is checked on read (:func:`verify_fit`)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError

log = logging.getLogger(__name__)

#: env var naming the cache root (the top-level ``cache_dir`` config)
CACHE_ENV = "DELUSION_BAYES_CACHE"
_MEMO: dict[str, Any] = {}
#: what each key of :func:`fit_key` was made from (this process), checked by :func:`load_fit`
_KEY_INPUTS: dict[str, dict[str, Any]] = {}


class CacheDirError(UserError, PermissionError):
    """A cache folder others could write to (it holds compiled code that a run executes)."""


def private_dir(path: str | Path) -> Path:
    """Create ``path`` (and parents) as a folder only its owner can write (``0o700``), or check
    that an existing one is: owned by someone else or group/other-writable raises
    :class:`CacheDirError` (another user could substitute compiled code or fits)."""
    path = Path(path).expanduser()
    for p in reversed([p for p in (path, *path.parents) if not p.exists()]):
        with contextlib.suppress(FileExistsError):  # a parallel job made it first
            p.mkdir(mode=0o700)
    st = path.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise CacheDirError(
            f"cache folder {path} belongs to user id {st.st_uid}, not to you ({os.getuid()}); "
            "expected a cache folder of your own (set cache_dir=... or $DELUSION_BAYES_CACHE)."
        )
    if st.st_mode & 0o022:
        raise CacheDirError(
            f"cache folder {path} has mode {oct(st.st_mode & 0o777)}: others can write to it, "
            "and it holds compiled code that runs load and execute; expected a folder only you "
            f"can write to (chmod go-w {path}, or choose another cache_dir)."
        )
    return path


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache root: ``cache_dir``, else ``$DELUSION_BAYES_CACHE``, else
    ``~/.cache/delusion_bayes``."""
    if cache_dir is None:
        cache_dir = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "delusion_bayes"
    return Path(cache_dir).expanduser()


def configure_pytensor_cache(cache_dir: str | Path | None = None) -> Path | None:
    """Point PyTensor's compile cache at ``<cache_root>/pytensor`` and turn numba's fastmath off
    (same draws from a seed, cold or warm cache). Returns the directory in use; once PyTensor is
    imported (it reads ``PYTENSOR_FLAGS`` once), only fastmath can still be turned off."""
    target = cache_root(cache_dir) / "pytensor"
    if "pytensor" in sys.modules:
        import pytensor

        if "numba__fastmath" not in os.environ.get("PYTENSOR_FLAGS", ""):
            pytensor.config.numba__fastmath = False
        current = Path(pytensor.config.base_compiledir)
        if current != target:
            log.debug("PyTensor already imported; its compile cache stays at %s", current)
        return current
    private_dir(target.parent)
    private_dir(target)
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    extra = []
    if "base_compiledir" not in flags:
        extra.append(f"base_compiledir={target}")
    if "numba__fastmath" not in flags:
        extra.append("numba__fastmath=False")
    if extra:
        os.environ["PYTENSOR_FLAGS"] = ",".join([f for f in (flags, *extra) if f])
    return target


def compiled_kernels(compiledir: str | Path | None) -> dict[str, int]:
    """``{file name: mtime_ns}`` of the compiled kernels in PyTensor's numba cache
    (``<compiledir>/numba/*.nbc``); ``{}`` if none. Compared before and after a fit
    (:func:`kernels_written`), it tells whether the fit compiled its model or found it cached."""
    out: dict[str, int] = {}
    try:
        entries = list(os.scandir(Path(compiledir) / "numba")) if compiledir is not None else []
    except OSError:
        return out
    for entry in entries:
        if entry.name.endswith(".nbc"):
            with contextlib.suppress(OSError):  # removed meanwhile
                out[entry.name] = entry.stat().st_mtime_ns
    return out


def kernels_written(before: dict[str, int], after: dict[str, int]) -> int:
    """How many kernel files of ``after`` are new or rewritten since ``before``."""
    return sum(1 for name, mtime in after.items() if before.get(name) != mtime)


def compiled_nutpie(
    model: Any,
    *,
    cache_dir: str | Path | None = None,
    key: str | None = None,
    freeze: bool = False,
):
    """``nutpie.compile_pymc_model(model)``, memoised in-process by ``key`` (at most
    :data:`COMPILED_MEMO_SIZE`, least recently used dropped). A memoised model gets ``model``'s
    current data (its ``pm.Data`` values, by name: nutpie's ``with_data``), so ``key`` must name
    the graph's structure, not its data (:func:`delusion_bayes.models.build.model_for`).
    ``freeze``: compile a copy of the graph with its data and dims as constants (nutpie's
    ``freeze_model``; PyMC's ``freeze_dims_and_data``), which rewrites to a smaller function and
    compiles about twice as fast, but serves only this data: never memoised, ``key`` must be
    None. ``cache_dir`` is unused: the on-disk cache is PyTensor's
    (:func:`configure_pytensor_cache`), which also keeps nutpie's two C callbacks where they
    read no shared data (:mod:`.nutpie_cfuncs`; a frozen graph's always).
    """
    import nutpie

    from .nutpie_cfuncs import cached_callbacks, install

    install()  # nutpie's callbacks without a ~2.5 s compile each process paid (the module says)
    if freeze:
        if key is not None:
            raise ValueError("compiled_nutpie: a frozen graph holds one study's data; key=None")
        # its callbacks from the compile cache (nutpie_cfuncs says why)
        with cached_callbacks(code_fingerprint()):
            return nutpie.compile_pymc_model(model, freeze_model=True)
    if key is not None and key in _MEMO:
        log.info("reusing the compiled model %s from this process", key)
        _MEMO[key] = compiled = _MEMO.pop(key)
        return with_model_data(compiled, model)
    with cached_callbacks(code_fingerprint()):  # those without shared data (nutpie_cfuncs)
        compiled = nutpie.compile_pymc_model(model, freeze_model=False)
    if key is not None:
        _MEMO[key] = compiled
        while len(_MEMO) > COMPILED_MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
    return compiled


#: compiled models kept per process (each holds its numba functions)
COMPILED_MEMO_SIZE = 8


def memoised_models() -> list[str]:
    """The keys of the compiled models :func:`compiled_nutpie` keeps in this process, least
    recently used first."""
    return list(_MEMO)


def forget_compiled() -> None:
    """Drop the compiled models :func:`compiled_nutpie` keeps in this process."""
    _MEMO.clear()


def with_model_data(compiled: Any, model: Any) -> Any:
    """``compiled`` (a nutpie model) with the current value of each of its data variables in
    ``model`` (same name), or its own where ``model`` has none."""
    values = {}
    for var in compiled.shared_var_keys:
        if var.name:  # nutpie's with_data finds a variable by its name
            values[var.name] = model.named_vars.get(var.name, var).get_value()
    return compiled.with_data(**values) if values else compiled


def compiled_marker(compiledir: str | Path, name: str, settings: dict[str, Any]) -> Path:
    """``<compiledir>/done/<key>``: a file that says the compile cache holds everything ``name``
    (a spec's hash, a graph's key) with these ``settings`` compiles, with this code
    (:func:`code_fingerprint`): written after a graph's compile
    (``delusion_bayes.inference.sampling._compile_once``) and after a whole fit
    (:func:`delusion_bayes.models.fit.compile_marker`; the compile prefetch,
    :mod:`delusion_bayes.stages.prefetch`, skips such fits). Kept in the compile folder:
    emptying it empties the markers too."""
    key = _hash_inputs({"name": name, "code": code_fingerprint(), **settings})
    return Path(compiledir) / "done" / key


# fitted posteriors (opt-in: sweeps whose jobs share a fit)
#: the code and libraries a fit depends on: a change to any makes every cached fit stale
_FIT_CODE = ("models", "inference", "data/schema.py")
_FIT_LIBS = ("pymc", "pytensor", "nutpie", "numpyro", "jax", "numba", "arviz", "xarray")


@functools.cache
def code_fingerprint() -> str:
    """Hash of the package's model and inference code and of the sampling libraries' versions
    (computed once per process)."""
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
    inputs = {"spec": spec_hash, "code": code_fingerprint(), **settings}
    key = _hash_inputs(inputs)
    _KEY_INPUTS[key] = json.loads(json.dumps(inputs, sort_keys=True, default=str))
    return key


def _hash_inputs(inputs: dict[str, Any]) -> str:
    blob = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def content_digest(dt: Any) -> str:
    """SHA-256 of every array in every group of a fit (names, dims, values; not attrs)."""
    h = hashlib.sha256()
    for node in sorted(dt.subtree, key=lambda n: n.path):
        ds = node.to_dataset()
        for name in sorted(map(str, ds.variables)):
            var = ds.variables[name]
            # dtype-free, so that the netCDF round trip (<U to object, ...) keeps the digest
            h.update(f"{node.path}/{name}|{var.dims}|{var.shape}|".encode())
            # (an object array of None comes back from netCDF as float NaN: read alike)
            values = np.asarray(var.values)
            if values.dtype.kind in "mM":
                values = values.view(np.int64)
            try:
                numbers = values.astype(np.float64)
            except (TypeError, ValueError):
                for v in values.ravel():
                    h.update(str(v).encode() + b"\x00")
            else:
                h.update(b"f" + np.ascontiguousarray(numbers).tobytes())
    return h.hexdigest()


#: attrs a cached fit carries so that :func:`load_fit` can check it is the fit of its key
CACHE_ATTRS = ("cache_key", "cache_inputs", "cache_content_sha256")


def verify_fit(dt: Any, key: str) -> str | None:
    """Why ``dt`` is not the cached fit of ``key`` (None when it is): checks the stored key, that
    the stored inputs hash to it and equal this process's, the draws' shape, the content digest."""
    attrs = dict(dt.attrs)
    if missing := [a for a in CACHE_ATTRS if a not in attrs]:
        return f"it has no {missing} (written by an older version, or not by save_fit)"
    if attrs["cache_key"] != key:
        return f"it is the cached fit of key {attrs['cache_key']!r}, not of {key!r}"
    try:
        stored = json.loads(attrs["cache_inputs"])
    except (TypeError, ValueError):
        return "its stored key inputs are not JSON"
    if _hash_inputs(stored) != key:
        return f"its stored key inputs {stored} do not hash to {key!r}"
    expected = _KEY_INPUTS.get(key)
    if expected is not None and stored != expected:
        diff = {
            k: (stored.get(k), expected.get(k))
            for k in set(stored) | set(expected)
            if stored.get(k) != expected.get(k)
        }
        return f"its stored key inputs differ from this fit's (stored, wanted): {diff}"
    if "spec_hash" in attrs and str(attrs["spec_hash"]) != str(stored.get("spec")):
        return (
            f"it is a fit of spec {attrs['spec_hash']!r}, its key inputs say {stored.get('spec')!r}"
        )
    if "posterior" in dt.children:
        post = dt["posterior"]
        for dim in ("chain", "draw"):
            want = stored.get(f"{dim}s")
            have = post.sizes.get(dim)
            if want is not None and have is not None and int(want) != int(have):
                return f"its posterior has {have} {dim}s, its key says {want}"
    if content_digest(dt) != attrs["cache_content_sha256"]:
        return "its arrays do not match the content digest stored when it was written"
    return None


def fit_path(key: str, cache_dir: str | Path | None = None) -> Path:
    """``<cache_root>/fits/<key>.nc``."""
    return cache_root(cache_dir) / "fits" / f"{key}.nc"


def load_fit(key: str, cache_dir: str | Path | None = None):
    """The cached fit of ``key`` as an in-memory ``xarray.DataTree``, or ``None`` (also for an
    unreadable or unverified file, logged)."""
    import xarray as xr

    path = fit_path(key, cache_dir)
    if not path.is_file():
        return None
    private_dir(path.parent)
    try:
        with xr.open_datatree(path) as dt:
            dt = dt.load()
    except Exception as err:  # noqa: BLE001 - a bad cache entry must not end the run
        log.warning("ignoring the unreadable cached fit %s (%s); refitting", path, err)
        return None
    if (problem := verify_fit(dt, key)) is not None:
        log.warning("ignoring the cached fit %s: %s; refitting", path, problem)
        return None
    return dt


def save_fit(dt: Any, key: str, cache_dir: str | Path | None = None) -> Path:
    """Write ``dt`` under ``key`` atomically (temporary file, then rename), with the key, the
    inputs it was computed from and a digest of the arrays in its attrs (checked on read)."""
    path = fit_path(key, cache_dir)
    private_dir(path.parent.parent)
    private_dir(path.parent)
    inputs = _KEY_INPUTS.get(key)
    if inputs is None:
        raise ValueError(
            f"save_fit: key {key!r} was not made by fit_key in this process; expected the key "
            "returned by fit_key(spec_hash, settings) (its inputs are stored with the fit)."
        )
    dt = dt.copy()
    dt.attrs.update(
        cache_key=key,
        cache_inputs=json.dumps(inputs, sort_keys=True),
        cache_content_sha256=content_digest(dt),
    )
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    dt.to_netcdf(tmp)
    tmp.replace(path)
    return path
