"""Files every Bayesian fit writes, whichever stage fitted it (the models stage's four models and
the replay stage's prevalence model): the power-scaling sensitivity of its parameters and of its
reported numbers, and figures drawn so that a plotting failure is a note, never a failed stage."""

from __future__ import annotations

import logging
import time

import numpy as np

from ..plotting import plain_text, save_figure
from . import Outputs

log = logging.getLogger(__name__)


def draw_figure(out: Outputs, fname: str, desc: str, make, notes: list) -> None:
    """``make()``'s figure as ``fname`` (PNG) in ``out``; a plotting failure is a note, never a
    failed stage."""
    import matplotlib.pyplot as plt

    try:
        with plain_text():  # a model named "$x_1$" is a name, never mathtext
            save_figure(make(), (out.path / fname).with_suffix(""), ("png",), dpi=110)
        out.files[fname] = desc
    except Exception as err:  # noqa: BLE001
        notes.append(f"{fname} not drawn: {type(err).__name__}: {err}")
        log.warning("%s not drawn: %s", fname, err)
    finally:
        plt.close("all")


def sensitivity_outputs(dt, out: Outputs, notes: list, var_names=None) -> float | None:
    """``sensitivity.csv`` (power-scaling sensitivity of ``var_names``, default every reported
    parameter) and ``sensitivity.png`` into ``out`` (the replay stage's too); returns the seconds
    taken, None (and a note) when the check failed (e.g. no ``log_prior``/``log_likelihood``)."""
    from ..models.sensitivity import THRESHOLD, plot_sensitivity, sensitivity_table

    t0 = time.perf_counter()
    try:
        df = sensitivity_table(dt, var_names)
    except Exception as err:  # noqa: BLE001 - a diagnostic must not fail the stage
        notes.append(f"sensitivity.csv not written: {type(err).__name__}: {err}")
        log.warning("power-scaling sensitivity not computed: %s", err)
        return None
    seconds = time.perf_counter() - t0
    out.write(
        "sensitivity.csv",
        df,
        f"power-scaling sensitivity (CJS) of the prior and of the likelihood "
        f"({df.attrs['likelihood']}) per parameter, priorsense's verdict at "
        f"{THRESHOLD:g}",
    )
    n = df["verdict"].value_counts()
    log.info(
        "power-scaling sensitivity of %s: %.1f s, %d prior-data conflict, %d weak "
        "likelihood of %d parameters",
        out.path.name,
        seconds,
        n.get("prior-data conflict", 0),
        n.get("weak likelihood", 0),
        len(df),
    )
    title = f"Power-scaling sensitivity of {out.path.name}"
    desc = "prior against likelihood sensitivity per parameter"
    draw_figure(out, "sensitivity.png", desc, lambda: plot_sensitivity(df, title), notes)
    return seconds


def reported_outputs(
    dt, out: Outputs, notes: list, *, ms=None, contrasts=(), seed: int = 0, replay: bool = False
) -> None:
    """``sensitivity_reported.csv``: the power-scaling sensitivity of every number the fit
    reports (:mod:`delusion_bayes.models.sensitivity_reported`); a note when it cannot be
    computed (no log_prior / log_likelihood)."""
    from ..models import sensitivity_reported as sr

    try:
        draws = (
            sr.replay_reported_draws(dt)
            if replay
            else sr.fit_reported_draws(dt, ms, contrasts, seed=seed)
        )
        nan = [k for k, v in draws.items() if not np.isfinite(v.values).all()]
        for k in nan:
            draws.pop(k)
        df = sr.reported_sensitivity(dt, draws)
    except Exception as err:  # noqa: BLE001 - a diagnostic must not fail the stage
        notes.append(f"sensitivity_reported.csv not written: {type(err).__name__}: {err}")
        log.warning("sensitivity of the reported numbers not computed: %s", err)
        return
    if nan:
        notes.append(
            f"sensitivity_reported.csv: {len(nan)} reported numbers left out (NaN in "
            f"some draws), e.g. {[' / '.join(k) for k in nan[:3]]}"
        )
    out.write(
        "sensitivity_reported.csv",
        df,
        "power-scaling sensitivity of each reported number (t50, milestones, contrasts, "
        "consensus; replay: prevalences, deltas), Pareto k of the weights, refit shift",
    )
    log.info(
        "sensitivity of %d reported numbers of %s: %d flagged",
        len(df),
        out.path.name,
        int((df["verdict"] != "-").sum()),
    )
