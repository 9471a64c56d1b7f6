"""Errors that are the user's to fix (a config value, a study file, a run folder, a missing extra).

Every such error derives from :class:`UserError` *as well as* its historical base class
(``ValueError``, ``RuntimeError``, ``ImportError`` ...), so existing ``except ValueError`` code
keeps working. ``delusion-bayes`` prints a :class:`UserError` as one line and exits with status 2
(``delusion_bayes.cli``); anything else is a package bug and keeps its traceback."""

from __future__ import annotations


class UserError(Exception):
    """An error the user fixes by changing a config value, a study file, a folder or an install.
    Its message says what was found, what was expected and what to do next."""


class ConfigError(UserError, ValueError):
    """A config value (a Hydra override or a YAML entry) is out of range or unknown."""


class MissingExtraError(UserError, ImportError):
    """An optional dependency (a ``delusion_bayes[...]`` extra) is not installed."""


class InputNotFoundError(UserError, FileNotFoundError):
    """A study, transcript or result file named in the config does not exist."""


class RunInterrupted(BaseException):  # noqa: N818 - an interruption, not an error
    """SIGTERM or SIGINT (Ctrl-C) arrived during a run (:func:`delusion_bayes.pipeline.run`).

    A ``BaseException`` like ``KeyboardInterrupt``, so that no stage's ``except Exception``
    records it as a stage failure, but not a ``KeyboardInterrupt``: a sampler that catches that
    one to return its partial draws (nutpie does) would otherwise carry on with them. The run
    closes its background processes, writes ``run.json`` with ``interrupted`` and re-raises;
    ``delusion-bayes`` exits with ``128 + signum`` as a shell does."""

    def __init__(self, signum: int):
        import signal

        self.signum = int(signum)
        self.signal = signal.Signals(self.signum).name
        super().__init__(f"interrupted by {self.signal}")
