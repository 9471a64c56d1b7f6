"""Typed config of the ``design`` group (Hydra ConfigStore schema; values in ``conf/design/``
and ``experiments/design.yaml``). Pure dataclasses, no heavy imports; read by
:mod:`delusion_bayes.sweep.design` through the ``design`` stage (:mod:`delusion_bayes.stages.design`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Bayesian models the design study can fit (those with t50 and milestone posteriors)
DESIGN_MODELS: tuple[str, ...] = ("onset", "joint")


@dataclass
class DesignConfig:
    """One cell of the study-design experiment.

    Attributes
    ----------
    n_raters, n_models, n_days
        The study's size: raters, chatbot models (the preset's roster scaled, see
        :func:`delusion_bayes.data.simulate_study`), days of the scripted conversation.
    discrimination_mean
        Rater noise: the typical rater discrimination of the simulator (3.5 gives the paper's
        recognition alpha near .76; lower = noisier raters, e.g. 2.0).
    n_sims
        Simulated studies per cell analysed with the baselines (cheap).
    n_sims_bayes
        The first ``n_sims_bayes`` of them are also fitted with ``model`` (0 = baselines only).
    model
        The Bayesian model: ``onset`` (default; the fastest model with t50 and milestone
        posteriors) or ``joint`` (several times slower: the default grid would take hours).
    """

    n_raters: int = 4
    n_models: int = 15
    n_days: int = 30
    discrimination_mean: float = 3.5
    n_sims: int = 100
    n_sims_bayes: int = 10
    model: str = "onset"
