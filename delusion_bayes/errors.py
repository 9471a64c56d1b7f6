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
