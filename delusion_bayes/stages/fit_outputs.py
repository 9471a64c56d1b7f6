"""Files every Bayesian fit writes, whichever stage fitted it (the models stage's four models and
the replay stage's prevalence model): the power-scaling sensitivity of its parameters and of its
reported numbers, and figures drawn so that a plotting failure is a note, never a failed stage."""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pandas as pd
import xarray as xr

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
    dt,
    out: Outputs,
    notes: list,
    *,
    ms=None,
    contrasts=(),
    seed: int = 0,
    replay: bool = False,
    pop_fits=None,
    rule=None,
) -> None:
    """``sensitivity_reported.csv``: the power-scaling sensitivity of every number the fit
    reports (:mod:`delusion_bayes.models.sensitivity_reported`), the population contrasts'
    rows from their grouped fits ``pop_fits`` (per contrast name, each scaled with its own
    ``log_prior``; ``rule``: the milestone rules, ``seed`` the Monte Carlo's, as
    ``contrasts_population.csv``); a note when it cannot be computed (no log_prior /
    log_likelihood)."""
    from ..models import sensitivity_reported as sr

    try:
        draws = sr.replay_reported_draws(dt) if replay else sr.fit_reported_draws(dt, ms, contrasts)
        nan = [k for k, v in draws.items() if not np.isfinite(v.values).all()]
        for k in nan:
            draws.pop(k)
        df = sr.reported_sensitivity(dt, draws)
    except Exception as err:  # noqa: BLE001 - a diagnostic must not fail the stage
        notes.append(f"sensitivity_reported.csv not written: {type(err).__name__}: {err}")
        log.warning("sensitivity of the reported numbers not computed: %s", err)
        return
    df = pd.concat([df, *population_sensitivity(pop_fits or {}, seed, rule or {}, notes)])
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


def population_sensitivity(pop_fits: dict, seed: int, rule: dict, notes: list) -> list:
    """Per grouped fit that passed its gate, the power-scaling sensitivity of its population
    contrasts (:func:`delusion_bayes.models.population.population_delta_draws`) under that
    fit's own prior and likelihood: the prior of the group hyper-means is in ``log_prior``."""
    from ..models import sensitivity_reported as sr
    from ..models.population import population_delta_draws

    tables = []
    for name, pdt in pop_fits.items():
        if not pdt.attrs.get("gate_passed", True):
            continue
        try:
            draws = population_delta_draws(pdt, _contrast_of(pdt, name), seed=seed, **rule)
            tables.append(sr.reported_sensitivity(pdt, draws))
        except Exception as err:  # noqa: BLE001 - a diagnostic must not fail the stage
            notes.append(
                f"sensitivity_reported.csv: population contrast {name!r} left out: "
                f"{type(err).__name__}: {err}"
            )
    return tables


def _contrast_of(pdt, name: str) -> dict:
    """The contrast spec a grouped fit was made for (kept in its attrs by the models stage)."""
    spec = pdt.attrs.get("contrast_spec")
    if spec is None:
        raise ValueError(f"grouped fit {name!r} does not say its contrast (attrs contrast_spec)")
    return json.loads(spec) if isinstance(spec, str) else dict(spec)


#: panels of the rank plot: the parameters with the highest R-hat among ``inference.plot_vars``
RANK_PANELS = 12


def _rank_plot(az, tree):
    """``az.plot_rank`` with room for every panel (ArviZ's default ``plot.max_subplots`` is 40)."""
    n = len(tree["posterior"].data_vars)
    with az.rc_context(rc={"plot.max_subplots": max(40, n)}):
        return az.plot_rank(tree, backend="matplotlib")


#: what a ``/`` in a rank-plot panel's label is drawn as (DataTree forbids ``/`` in names)
PANEL_SLASH = "\u2215"


def worst_mixing(dt, table, plot_vars: list[str], n: int = RANK_PANELS) -> xr.Dataset:
    """The ``n`` parameters of ``plot_vars`` with the highest R-hat (the diagnostics table's
    ``var[coord,...]`` labels), one variable each. Not every element: a reader looks for the
    chains that disagree, which these are, and every panel costs plotting time
    (``docs/dev/design-notes.md#stagesmodelspy``). A DataTree variable name cannot hold ``/``, so a
    ``/`` in a label (a model named ``openai/gpt-4o``) becomes the look-alike U+2215 (``∕``):
    the panel title reads as written."""
    post = dt["posterior"].to_dataset().reset_coords(drop=True)
    rows = table[table["variable"].isin(plot_vars) & ~table["constant"].astype(bool)]
    rows = rows.sort_values("r_hat", ascending=False).head(n)
    out = {}
    for label, var in zip(rows.index, rows["variable"], strict=True):
        da = post[var]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        if extra:
            stacked = da.stack(__p__=extra)
            names = [
                ",".join(str(x) for x in (i if isinstance(i, tuple) else (i,)))
                for i in stacked["__p__"].values
            ]
            da = stacked.isel(__p__=names.index(label[len(var) + 1 : -1])).drop_vars(
                ["__p__", *extra], errors="ignore"
            )
        out[label.replace("/", PANEL_SLASH)] = da
    return xr.Dataset(out)


def fit_figures(dt, elpd, out: Outputs, plot_vars: list[str], notes: list, table) -> None:
    """Rank plot, ordinal PPC (rootogram) and Pareto-k plot, each as PNG."""
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    post_vars = [v for v in plot_vars if v in dt["posterior"].data_vars]
    jobs = []
    if post_vars:
        worst = xr.DataTree.from_dict({"posterior": worst_mixing(dt, table, post_vars)})
        desc = (
            f"rank plot (ECDF difference) of the {len(worst['posterior'].data_vars)} "
            f"parameters of {', '.join(post_vars)} with the highest R-hat"
        )
        jobs.append(("rank.png", desc, lambda: _rank_plot(az, worst)))
    if "posterior_predictive" in dt.children and "y" in dt["posterior_predictive"].data_vars:
        if np.issubdtype(dt["observed_data"]["y"].dtype, np.integer):
            # ordinal ratings: observed vs predicted counts per category
            desc = "posterior predictive rootogram of the ratings (ordinal PPC)"
            plot_ppc = az.plot_ppc_rootogram
        else:  # the onset model's consensus (continuous, x.5 values)
            desc, plot_ppc = "posterior predictive density of the consensus", az.plot_ppc_dist
        jobs.append(("ppc.png", desc, lambda: plot_ppc(dt, var_names=["y"], backend="matplotlib")))
    if elpd is not None:
        desc = "PSIS-LOO Pareto k per left-out unit (inference.loo_unit)"
        jobs.append(("loo_khat.png", desc, lambda: az.plot_khat(elpd, backend="matplotlib")))
    for fname, desc, make in jobs:
        draw_figure(out, fname, desc, make, notes)
