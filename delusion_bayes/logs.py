"""A quiet, informative log: this package's lines at INFO, other libraries' only from WARNING
(``hydra.verbose=true``: all; ``hydra.verbose=[pytensor]``: those too), and no warnings a user
cannot act on (:data:`IGNORED_WARNINGS`)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable

from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

#: loggers whose INFO lines are kept: this package, the script itself, Hydra's own messages
OWN_LOGGERS: tuple[str, ...] = ("delusion_bayes", "__main__", "hydra")

#: libraries set to WARNING up front (cheaper); the handler filter catches the rest
NOISY_LOGGERS: tuple[str, ...] = (
    "pytensor", "pymc", "arviz", "arviz_base", "arviz_stats", "arviz_plots", "numba", "jax",
    "jaxlib", "numpyro", "nutpie", "matplotlib", "PIL", "fontTools", "h5py", "h5netcdf",
    "sentence_transformers", "transformers", "huggingface_hub", "torch", "filelock", "urllib3",
    "spacy", "numexpr", "asyncio", "onnxruntime",
)  # fmt: skip

#: (message regex, category) of warnings the user cannot act on
IGNORED_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    # PyTensor (an op without a numba kernel) or numba (a jitted helper) in object mode: slower,
    # same result, and the package chose the ops
    (r"Numba will use object mode", UserWarning),
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
        return any(record.name == a or record.name.startswith(a + ".") for a in self.allowed)


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
    """Keep other libraries' log records below WARNING out of the root logger's handlers (call
    after Hydra configured logging). ``verbose`` is ``hydra.verbose``: ``False`` filters, ``True``
    leaves logging as it is, a logger name or list of names lets those through."""
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


class QuietLogCallback(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/config.yaml``): :func:`quiet_third_party` in
    every job of every command and launcher, after Hydra set up logging."""

    def on_job_start(self, config: object, **kwargs: object) -> None:
        try:
            verbose = config.hydra.verbose  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - no hydra node: the default
            verbose = False
        if OmegaConf.is_config(verbose):
            verbose = OmegaConf.to_container(verbose)
        quiet_third_party(verbose)
