"""Loud skips (issue 34): a test that needs a resource this machine may lack (the DelusionEval
release under ``../shared/data``, Chromium) skips with the reason locally, and FAILS under
``CI=true``, where a skip would hide that the check never ran (as ``tests/sweep/test_slurm.py``
does with ``DELUSION_BAYES_REQUIRE_SLURM=1``)."""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """``CI=true`` (set by CI services; ``.ci/run`` runs under it)."""
    return os.environ.get("CI", "").lower() == "true"


def needs(missing: bool, reason: str):
    """A mark: skip the test when ``missing`` (saying ``reason``); under ``CI=true`` the test
    fails instead (the ``required_resource`` mark, failed in ``tests/conftest.py``)."""
    if missing and in_ci():
        return pytest.mark.required_resource(reason=reason)
    return pytest.mark.skipif(missing, reason=reason)


def skip_or_fail(reason: str) -> None:
    """Inside a test: ``pytest.skip(reason)``, or ``pytest.fail`` under ``CI=true``."""
    if in_ci():
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)
