"""``delusion-bayes``: a thin ``@hydra.main`` over :func:`delusion_bayes.pipeline.run`.

delusion-bayes                                   # default study (paper_like), all stages
delusion-bayes experiment=smoke hydra.run.dir=/tmp/smoke
delusion-bayes -m experiment=smoke baselines.stable_run=2,3 hydra/launcher=joblib
delusion-bayes report.from_run=outputs/2026-11-29/12-00-00   # rebuild the supplement only
"""

from __future__ import annotations

import sys

import hydra

from .config import conf_dir, register_configs

register_configs()


@hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")
def _main(cfg) -> None:
    from .pipeline import run

    run(cfg)


def main() -> None:
    """Console-script entry point (``delusion-bayes`` and ``python -m delusion_bayes``)."""
    _main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
