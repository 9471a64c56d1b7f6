"""A quiet, informative log: this package's lines at INFO, other libraries' only from WARNING.

Hydra sends every logger's INFO records to the terminal and to ``<run dir>/<job>.log``. Left
alone, that log is mostly other libraries talking about themselves (PyTensor's config parser and
g++ flag probing, ArviZ's backend discovery, matplotlib's font cache, sentence-transformers
loading a model). :func:`quiet_third_party` keeps this package's INFO lines (one per stage with
its time, fits, sampling progress) and drops another library's records below WARNING, so a
warning that matters still shows. ``hydra.verbose=true`` turns the filter off (everything at
DEBUG, as Hydra documents); ``hydra.verbose=[pytensor]`` lets the named loggers through.

Python warnings that a user cannot act on are silenced here too (:data:`IGNORED_WARNINGS`);
every other warning is printed as usual.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable

#: loggers whose INFO lines are kept: this package, the script itself, Hydra's own messages
OWN_LOGGERS: tuple[str, ...] = ("delusion_bayes", "__main__", "hydra")

#: libraries set to WARNING up front (cheaper than filtering every record they emit); the
#: handler filter catches the rest, including loggers named by a file path (PyTensor's C linker)
NOISY_LOGGERS: tuple[str, ...] = (
    "pytensor", "pymc", "arviz", "arviz_base", "arviz_stats", "arviz_plots", "numba", "jax",
    "jaxlib", "numpyro", "nutpie", "matplotlib", "PIL", "fontTools", "h5py", "h5netcdf",
    "sentence_transformers", "transformers", "huggingface_hub", "torch", "filelock", "urllib3",
    "spacy", "numexpr", "asyncio", "onnxruntime",
)  # fmt: skip

#: (message regex, category) of warnings the user cannot act on
IGNORED_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    # PyTensor runs an op without a numba kernel in object mode: slower, same result; the
    # package chose the ops, the user cannot change them
    (r"Numba will use object mode", UserWarning),
    # numba's own NumbaWarning when a jitted helper is compiled in object mode: same
    (r"[\s\S]*falling back to object mode", Warning),
)


class ThirdPartyFilter(logging.Filter):
    """Pass a record at WARNING or above, or one from :data:`OWN_LOGGERS` or ``allowed``."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        super().__init__()
        self.allowed = tuple(OWN_LOGGERS) + tuple(allowed)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        name = record.name
        return any(name == a or name.startswith(a + ".") for a in self.allowed)


def _verbose_names(verbose: object) -> tuple[bool, tuple[str, ...]]:
    """Hydra's ``hydra.verbose``: ``(everything, names)``."""
    if verbose is True or (isinstance(verbose, str) and verbose.lower() in ("true", "root")):
        return True, ()
    if isinstance(verbose, str) and verbose:
        return False, (verbose,)
    if isinstance(verbose, Iterable) and not isinstance(verbose, str | bytes):
        names = tuple(str(v) for v in verbose)
        return ("root" in names), names
    return False, ()


def ignore_unactionable_warnings() -> None:
    """Silence :data:`IGNORED_WARNINGS` (idempotent)."""
    for message, category in IGNORED_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


def quiet_third_party(verbose: object = False) -> None:
    """Keep other libraries' log records below WARNING out of the terminal and the log file.

    Parameters
    ----------
    verbose
        Hydra's ``hydra.verbose``: ``False`` (default) filters; ``True`` leaves logging as it
        is; a logger name or list of names lets those through.

    Notes
    -----
    Call after Hydra configured logging (inside the ``@hydra.main`` function): the filter is
    attached to the root logger's handlers (Hydra's console and file handlers).
    """
    ignore_unactionable_warnings()
    everything, names = _verbose_names(verbose)
    if everything:
        return
    for name in NOISY_LOGGERS:
        if not any(name == n or name.startswith(n + ".") for n in names):
            logging.getLogger(name).setLevel(logging.WARNING)
    root = logging.getLogger()
    for handler in root.handlers:
        if not any(isinstance(f, ThirdPartyFilter) for f in handler.filters):
            handler.addFilter(ThirdPartyFilter(names))


def _hydra_callback_base() -> type:
    try:
        from hydra.experimental.callback import Callback
    except ImportError:  # pragma: no cover - hydra is a dependency
        return object
    return Callback


class QuietLogCallback(_hydra_callback_base()):  # type: ignore[misc]
    """Hydra callback: :func:`quiet_third_party` in every job, after Hydra set up logging.

    Listed under ``hydra.callbacks`` in ``conf/config.yaml``, so that ``delusion-bayes``,
    ``delusion-bayes-coverage`` and every job of a sweep (in whatever process a launcher runs
    it) get the same quiet log.
    """

    def on_job_start(self, config: object, **kwargs: object) -> None:
        verbose = False
        try:
            verbose = config.hydra.verbose  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - no hydra node: the default
            pass
        try:
            from omegaconf import OmegaConf

            if OmegaConf.is_config(verbose):
                verbose = OmegaConf.to_container(verbose)
        except ImportError:  # pragma: no cover
            pass
        quiet_third_party(verbose)
