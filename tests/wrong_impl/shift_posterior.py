"""Wrong implementation 2 (issue 34): every posterior variable of the DataTree that
``delusion_bayes.models.fit.fit`` returns is shifted by +0.7 of its own SD over
``(chain, draw)``. Load with ``pytest -p tests.wrong_impl.shift_posterior``; the
``calibration`` tests must then fail."""

from __future__ import annotations

import importlib

import pytest

SHIFT = 0.7
SHIFTED = pytest.StashKey[int]()


def shift(dt):
    """``dt`` with each posterior variable ``x`` replaced by ``x + 0.7 * sd(x)``."""
    post = dt["posterior"].to_dataset()
    moved = post.copy()
    for v, x in post.data_vars.items():
        if x.dtype.kind == "f" and {"chain", "draw"} <= set(x.dims):
            moved[v] = x + SHIFT * x.std(("chain", "draw"))
            moved[v].attrs = x.attrs
    dt["posterior"] = moved
    return dt


def pytest_configure(config):
    from tests.wrong_impl import rebind

    importlib.import_module("delusion_bayes.models")
    fit_module = importlib.import_module("delusion_bayes.models.fit")
    fit0 = fit_module.fit

    def fit(*args, **kwargs):
        return shift(fit0(*args, **kwargs))

    config.stash[SHIFTED] = rebind(fit0, fit, "fit")


def pytest_report_header(config):
    return (
        f"WRONG IMPLEMENTATION LOADED: posterior shifted +0.7 SD ({config.stash[SHIFTED]} bindings)"
    )
