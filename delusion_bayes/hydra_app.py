"""The package's Hydra app with one-line user errors, shared by every console script
(``delusion-bayes``, ``delusion-bayes-coverage``): below the command-line modules and the sweeps
alike, so that a library module never imports an entry point (``tests/test_architecture.py``)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import hydra

from .config import conf_dir, register_configs
from .errors import RunInterrupted, UserError

#: the environment variable that shows the full traceback of a user error (Hydra's own switch)
FULL_ERROR_ENV = "HYDRA_FULL_ERROR"
#: the exit status of an error that is the user's to fix (argparse's convention)
USER_ERROR_STATUS = 2
#: the prefix of the one line a user error prints
ERROR_PREFIX = "delusion-bayes: error:"

_state = {"full_error": False, "in_job": False}


def user_error_line(err: BaseException) -> str:
    """The one line ``delusion-bayes`` prints for a user error: the message on one line, then how
    to see the traceback."""
    msg = str(err)
    cause = err.__cause__
    if cause is not None and _is_config_error(err) and str(cause) and str(cause) not in msg:
        msg = f"{msg}: {str(cause).splitlines()[0]}"  # e.g. why an override could not be merged
    msg = " ".join(msg.split()) or type(err).__name__
    return f"{ERROR_PREFIX} {msg} ({FULL_ERROR_ENV}=1 shows the traceback)"


def _is_config_error(err: BaseException) -> bool:
    """Hydra's and OmegaConf's own errors: a bad override, a missing config option, a typo'd
    key. Only while composing (before the job runs); inside the job one is a package bug."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    return isinstance(err, HydraException | OmegaConfBaseException)


def _multirun() -> bool:
    """Whether the job is one of a ``-m`` sweep (Hydra then runs the batch's other jobs before
    raising the first failure: a SystemExit here would cancel them)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:  # not inside a Hydra job
        return False


def one_line_user_errors(task: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``task`` (a Hydra task function) with a :class:`UserError` printed as one line and exit
    status 2, unless ``HYDRA_FULL_ERROR=1`` asked for the traceback."""

    @functools.wraps(task)
    def job(cfg):
        _state["in_job"] = True
        try:
            return task(cfg)
        except UserError as err:
            if _state["full_error"] or _multirun():
                raise  # a sweep runs its other jobs first; run_hydra prints the line after
            # a SystemExit passes Hydra's run_job (it catches Exception), which would otherwise
            # print "Error executing job with overrides" before the message
            print(user_error_line(err), file=sys.stderr)
            raise SystemExit(USER_ERROR_STATUS) from None

    return job


def run_hydra(task: Callable[[Any], Any]) -> int | None:
    """Run ``task`` as the package's Hydra app (``conf/config.yaml``, the command-line overrides
    of ``sys.argv``); a user error (:class:`UserError` in the job, or Hydra/OmegaConf failing to
    compose the overrides before it) prints one line and gives :data:`USER_ERROR_STATUS`, unless
    ``HYDRA_FULL_ERROR=1`` asked for the traceback. Package bugs keep their traceback."""
    before = os.environ.get(FULL_ERROR_ENV)
    _state["full_error"] = before == "1"
    _state["in_job"] = False
    os.environ[FULL_ERROR_ENV] = "1"  # let errors reach us instead of Hydra's printer
    register_configs()  # the typed schema (idempotent), whichever console script called
    app = hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
    try:
        app(one_line_user_errors(task))()
    except RunInterrupted as stop:  # pipeline.run has recorded it in run.json and cleaned up
        print(f"{ERROR_PREFIX} {stop} (run.json records it)", file=sys.stderr)
        return 128 + stop.signum  # a shell's status for a process ended by that signal
    except Exception as err:
        user = isinstance(err, UserError) or (_is_config_error(err) and not _state["in_job"])
        if _state["full_error"] or not user:
            raise
        print(user_error_line(err), file=sys.stderr)
        return USER_ERROR_STATUS
    finally:
        if before is None:
            os.environ.pop(FULL_ERROR_ENV, None)
        else:
            os.environ[FULL_ERROR_ENV] = before
    return None
