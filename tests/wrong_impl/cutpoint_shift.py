"""Planted bug (issue 55): the middle fixed cutpoint of the rating models moved from 2.5 to
2.8 where the spec turns ratings into the likelihood's category bounds
(``delusion_bayes.models.modelspec.STAGE_CUTPOINTS``, read by the ``md_lo``/``md_hi`` data the
graph integrates over); the simulator (``data.schema.STAGE_CUTPOINTS``) keeps 2.5. Load with
``pytest -p tests.wrong_impl.cutpoint_shift``."""

from __future__ import annotations

SHIFTED = (1.5, 2.8, 3.5)


def pytest_configure(config):
    from delusion_bayes.models import modelspec

    modelspec.STAGE_CUTPOINTS = SHIFTED


def pytest_report_header(config):
    return "WRONG IMPLEMENTATION LOADED: model cutpoints (1.5, 2.5, 3.5) -> (1.5, 2.8, 3.5)"
