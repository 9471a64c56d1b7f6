"""Deliberately wrong implementations, loaded as pytest plugins, that the ``calibration`` tests
must catch (issue 34): ``pytest -m calibration -p tests.wrong_impl.halve_intervals`` and
``... -p tests.wrong_impl.shift_posterior`` must fail; ``pytest -m calibration`` must pass.
Never loaded by default (no conftest imports them)."""

from __future__ import annotations

import sys


def rebind(original, wrapped, name: str) -> int:
    """Replace ``original`` by ``wrapped`` under ``name`` in every imported ``delusion_bayes``
    module that bound it (``from ..intervals import eti`` copies the name); returns how many."""
    n = 0
    for modname, mod in list(sys.modules.items()):
        if (modname == "delusion_bayes" or modname.startswith("delusion_bayes.")) and getattr(
            mod, name, None
        ) is original:
            setattr(mod, name, wrapped)
            n += 1
    return n
