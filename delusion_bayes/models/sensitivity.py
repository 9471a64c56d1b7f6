"""Power-scaling prior and likelihood sensitivity of a fit (Kallioinen et al. 2024;
``arviz_stats.psense``): how much each marginal posterior moves when the prior or likelihood is
raised to a power near 1, without refitting. Needs a ``log_prior`` group
(:func:`log_prior_dataset`) and one ``log_likelihood`` variable (:func:`likelihood_var`:
``y_model_day`` where the stage is integrated out, as ``y`` given a drawn stage would count the
ratings twice).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Collection, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

#: priorsense's threshold on the CJS-based sensitivity (Kallioinen et al. 2024;
#: ``arviz_stats.psense_summary(threshold=0.05)``)
THRESHOLD = 0.05
#: ``psense_summary``'s diagnosis -> the verdict written to ``sensitivity.csv``
VERDICTS: dict[str, str] = {
    "potential prior-data conflict": "prior-data conflict",
    "potential strong prior / weak likelihood": "weak likelihood",
    "✓": "-",
}
#: sampling coordinates of a reported parameter (``z_log_k`` -> ``k``, ``w_t50`` -> ``t50``)
_COORDINATE_PREFIXES = ("z_", "w_")
_COORDINATE_SUFFIXES = ("_centred", "_zerosum", "_raw")
#: free variables whose reported transform is in the posterior too: one row, the reported one
_REPORTED_AS = {"log_L1": "L", "log_disc": "discrimination", "log_disc_shared": "discrimination"}


def prior_terms(pm_model: Any, prior_keys: Collection[str]) -> list[str]:
    """The free variables and ``*_prior`` Potentials of ``pm_model`` named after an entry of its
    prior table (``sd_*`` for ``group_sd``, ``log_disc_shared`` for ``log_disc``); not the
    hierarchy's population terms, as priorsense's ``lprior``."""
    keys = set(prior_keys)
    out = [
        str(rv.name)
        for rv in pm_model.free_RVs
        if str(rv.name) in keys
        or (rv.name == "log_disc_shared" and "log_disc" in keys)
        or (str(rv.name).startswith("sd_") and "group_sd" in keys)
    ]
    out += [
        str(p.name)
        for p in pm_model.potentials
        if str(p.name).endswith("_prior") and str(p.name).removesuffix("_prior") in keys
    ]
    return out


def log_prior_dataset(
    dt: xr.DataTree, pm_model: Any, var_names: Sequence[str] | None = None
) -> xr.Dataset:
    """The ``log_prior`` group of a fit: one ``(chain, draw)`` variable per prior term of
    ``pm_model`` (summed over its elements, no Jacobian) at the posterior draws of ``dt``.

    ``var_names`` default to every free variable but a ``pm.Flat`` and every ``*_prior``
    Potential (as ``pm.compute_log_prior``, in one ``vectorize_graph`` evaluation).
    """
    import pytensor
    import pytensor.tensor as pt
    from pymc.model.transform.conditioning import remove_value_transforms
    from pytensor.graph.replace import vectorize_graph
    from pytensor.graph.traversal import graph_inputs

    from .build import start_values_cleared

    with start_values_cleared(pm_model):  # the model rebuilt without transforms refuses them
        umodel = remove_value_transforms(pm_model)
    pots = {str(p.name): p for p in umodel.potentials}
    rvs, pot_names = _prior_terms_of(umodel, pots, var_names)
    names = [str(rv.name) for rv in rvs] + pot_names
    terms = [t.sum() for t in umodel.logp(vars=rvs, sum=False)] if rvs else []
    # a Potential is written in terms of the random variables: evaluate it at their values
    terms += umodel.replace_rvs_by_values([pots[n] for n in pot_names])
    values = set(umodel.value_vars)
    inputs = list(dict.fromkeys(v for v in graph_inputs(terms) if v in values))
    batched = [
        pt.tensor(name=v.name, dtype=v.type.dtype, shape=(None, *v.type.shape)) for v in inputs
    ]
    vec = vectorize_graph(terms, replace=dict(zip(inputs, batched, strict=True)))
    fn = pytensor.function(batched, vec, mode="FAST_COMPILE", on_unused_input="ignore")
    post = dt["posterior"].to_dataset()
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    args = []
    for v in inputs:
        da = post[v.name].transpose("chain", "draw", ...)
        args.append(da.values.reshape((n_chain * n_draw, *da.shape[2:])).astype(v.type.dtype))
    out = fn(*args) if terms else []
    ds = xr.Dataset(
        {
            n: (
                ("chain", "draw"),
                np.broadcast_to(np.asarray(o, float), (n_chain * n_draw,)).reshape(n_chain, n_draw),
            )
            for n, o in zip(names, out, strict=True)
        },
        coords={"chain": post["chain"].values, "draw": post["draw"].values},
    )
    ds.attrs["description"] = (
        "log prior per term (free variables at their constrained values, no transform "
        "Jacobian), each summed over its elements; the terms power-scaling scales "
        "(delusion_bayes.models.sensitivity)"
    )
    return ds


def _prior_terms_of(umodel: Any, pots: dict[str, Any], var_names: Sequence[str] | None):
    """The free variables and the ``*_prior`` Potentials whose log density
    :func:`log_prior_dataset` evaluates (``var_names``, checked, or its default)."""
    from pymc.distributions.continuous import FlatRV

    if var_names is None:
        rvs = [rv for rv in umodel.free_RVs if not isinstance(rv.owner.op, FlatRV)]
        return rvs, [n for n in pots if n.endswith("_prior")]
    unknown = [n for n in var_names if n not in umodel.named_vars and n not in pots]
    if unknown:
        raise ValueError(
            f"log_prior_dataset: {unknown} are neither free variables nor Potentials of the model"
        )
    rvs = [umodel.named_vars[n] for n in var_names if n not in pots]
    return rvs, [n for n in var_names if n in pots]


def likelihood_var(dt: xr.DataTree) -> str | None:
    """The ``log_likelihood`` variable power-scaling scales (module docstring), or None."""
    if "log_likelihood" not in dt.children:
        return None
    names = list(dt["log_likelihood"].data_vars)
    for name in ("y_model_day", "y"):
        if name in names:
            return name
    return names[0] if len(names) == 1 else None


def reported_vars(dt: xr.DataTree, var_names: Sequence[str] | None = None) -> list[str]:
    """The posterior variables of the sensitivity table: ``var_names`` when given, else every
    reported parameter: not per model-day, not a sampling coordinate of another one (``z_*``,
    ``w_*``, ``*_centred``; ``log_L1`` when ``L`` is there), never NaN."""
    post = dt["posterior"].to_dataset()
    if var_names is not None:
        missing = [v for v in var_names if v not in post.data_vars]
        if missing:
            raise ValueError(
                f"sensitivity_table: {missing} not in the posterior (has {sorted(post.data_vars)})"
            )
        return list(var_names)
    return [
        str(name)
        for name, da in post.data_vars.items()
        if "day" not in da.dims
        and name not in ("trajectory", "stage")
        and not name.startswith(_COORDINATE_PREFIXES)
        and not name.endswith(_COORDINATE_SUFFIXES)
        and _REPORTED_AS.get(str(name)) not in post.data_vars
        and np.isfinite(da.values).all()
    ]


@contextlib.contextmanager
def quiet_psense() -> Iterator[None]:
    """Silence ``arviz_stats.psense`` below ERROR inside the block: ``psense_summary`` logs a
    WARNING with a link whenever it flags anything; a never-turner's t50 is always flagged, so
    the verdict column carries the news instead."""
    alog = logging.getLogger("arviz_stats.psense")
    level = alog.level
    alog.setLevel(logging.ERROR)
    try:
        yield
    finally:
        alog.setLevel(level)


def power_scale_sense(
    values: np.ndarray,
    lower_w: np.ndarray,
    upper_w: np.ndarray,
    alphas: tuple[float, float],
    chunk: int = 128,
) -> np.ndarray:
    """The CJS power-scaling sensitivity of every column of ``values`` (``(draws, rows)``),
    given the normalised importance weights (``(draws,)``) of the lower and upper power
    ``alphas``: ``arviz_stats``' ``power_scale_sense`` (what ``psense`` returns) for all rows at
    once. NaN for a constant row, as ArviZ.

    Why by hand: ArviZ computes it one row at a time in Python, sorting the row's draws four
    times (each weight vector, for ``x`` and ``-x``); a fit's reported numbers are ~1,000 rows
    of 4,000 draws, and that was ~1 s per fit. Here each row is sorted once, in one call for a
    chunk of rows, and the CJS of ``-x`` is read from the same order reversed: ties have a bin
    width of 0, so their order within the tie changes nothing. Agrees with ``arviz_stats.psense``
    to rounding: the CJS is the square root of a difference of sums of ~4,000 terms, so another
    summation order moves it by up to ~1e-9 (on the main job's fits: at most 5e-10, against
    priorsense's threshold of 0.05; ``tests/models/test_sensitivity.py``)."""
    rows = np.ascontiguousarray(np.asarray(values, float).T)  # (rows, draws): sorts in place
    n = rows.shape[1]
    out = np.empty(rows.shape[0])
    cdf_p = np.linspace(1 / n, 1 - 1 / n, n - 1)
    log_p = np.log2(cdf_p)
    for lo in range(0, rows.shape[0], chunk):
        block = rows[lo : lo + chunk]
        order = np.argsort(block, axis=1)
        width = np.diff(np.take_along_axis(block, order, 1), axis=1)
        grads = []
        for w, alpha, sign in ((lower_w, alphas[0], -1.0), (upper_w, alphas[1], 1.0)):
            ws = np.asarray(w, float)[order]
            ws /= ws.sum(1, keepdims=True)
            up = _cjs(cdf_p, log_p, np.cumsum(ws, 1)[:, :-1], width)
            ws = ws[:, ::-1]
            down = _cjs(cdf_p, log_p, np.cumsum(ws, 1)[:, :-1], width[:, ::-1])
            grads.append(sign * np.maximum(up, down) / np.log2(alpha))
        out[lo : lo + chunk] = (grads[0] + grads[1]) / 2
    return out


def _cjs(cdf_p: np.ndarray, log_p: np.ndarray, cdf_q: np.ndarray, width: np.ndarray):
    """``arviz_stats``' ``_cjs_dist`` per row: the cumulative Jensen-Shannon distance of the
    draws' ECDF ``cdf_p`` and the weighted ECDF ``cdf_q`` over bins of ``width``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_int = width @ cdf_p
        q_int = (cdf_q * width).sum(1)
        log_q = np.log2(np.where(cdf_q != 0, cdf_q, 1.0))  # 0 where cdf_q is 0, as ArviZ
        mid = 0.5 * (cdf_p + cdf_q)
        log_mid = np.log2(np.where(mid != 0, mid, 1.0))
        half = 0.5 / np.log(2)
        pq = (width * (cdf_p * (log_p - log_mid))).sum(1) + half * (q_int - p_int)
        qp = (width * (cdf_q * (log_q - log_mid))).sum(1) + half * (p_int - q_int)
        return np.sqrt((np.maximum(pq, 0) + np.maximum(qp, 0)) / (p_int + q_int))


def sensitivity_table(
    dt: xr.DataTree,
    var_names: Sequence[str] | None = None,
    *,
    threshold: float = THRESHOLD,
    likelihood: str | None = None,
) -> pd.DataFrame:
    """Prior and likelihood power-scaling sensitivity per parameter, with priorsense's verdict.

    ``dt`` needs ``posterior``, ``log_prior`` and ``log_likelihood`` groups; ``var_names``
    default to :func:`reported_vars`, ``likelihood`` to :func:`likelihood_var`.

    Returns one row per scalar parameter: ``parameter`` (``t50[Late]``), ``variable``,
    ``prior`` and ``likelihood`` (CJS-based sensitivity), ``diagnosis`` (``psense_summary``'s),
    ``verdict`` (:data:`VERDICTS`) and ``threshold``; ``attrs``: the likelihood variable, prior
    terms and seconds taken. Raises ValueError without a ``log_prior`` group or a
    log-likelihood variable to scale.
    """
    from arviz_stats import psense_summary

    t0 = time.perf_counter()
    if "log_prior" not in dt.children:
        raise ValueError(
            "sensitivity_table needs a log_prior group (models.fit adds it; "
            "models.sensitivity.log_prior_dataset computes it for a PyMC model)"
        )
    like = likelihood or likelihood_var(dt)
    if like is None or "log_likelihood" not in dt.children:
        raise ValueError(
            "sensitivity_table needs a log_likelihood group with one variable "
            f"to scale; the fit has {sorted(dt.children)}"
        )
    names = reported_vars(dt, var_names)
    post = dt["posterior"].to_dataset().reset_coords(drop=True)[names]
    tree = xr.DataTree.from_dict(
        {
            "posterior": post,
            "log_prior": dt["log_prior"].to_dataset(),
            "log_likelihood": dt["log_likelihood"].to_dataset()[[like]].reset_coords(drop=True),
        }
    )
    with quiet_psense():
        df = psense_summary(tree, var_names=names, threshold=threshold, round_to=4)
    df = df.reset_index().rename(columns={"index": "parameter"})
    df["parameter"] = [str(p).replace(", ", ",") for p in df["parameter"]]  # as diagnostics.csv
    df.insert(1, "variable", [p.split("[")[0] for p in df["parameter"]])
    df["verdict"] = df["diagnosis"].map(VERDICTS).fillna("-")
    df["threshold"] = float(threshold)
    df = df[["parameter", "variable", "prior", "likelihood", "diagnosis", "verdict", "threshold"]]
    df.attrs.update(
        likelihood=like,
        prior_terms=list(dt["log_prior"].data_vars),
        seconds=time.perf_counter() - t0,
    )
    return df


def noise_floor(dt: xr.DataTree, seed: int = 0, **kwargs: Any) -> pd.DataFrame:
    """:func:`sensitivity_table` of ``dt`` with its ``log_prior`` and ``log_likelihood`` draws
    shuffled against the posterior draws: what it shows is the Monte Carlo noise of the
    estimate at this number of draws (measured floors: ``docs/dev/models.md``)."""
    post = dt["posterior"].to_dataset()
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    perm = np.random.default_rng(seed).permutation(n_chain * n_draw)

    def shuffle(da: xr.DataArray) -> xr.DataArray:
        da = da.transpose("chain", "draw", ...)
        flat = da.values.reshape((n_chain * n_draw, *da.shape[2:]))[perm]
        return da.copy(data=flat.reshape(da.shape))

    groups = {g: dt[g].to_dataset().map(shuffle) for g in ("log_prior", "log_likelihood")}
    return sensitivity_table(xr.DataTree.from_dict({"posterior": post, **groups}), **kwargs)


def flagged(df: pd.DataFrame, verdict: str) -> list[str]:
    """The parameters of ``df`` (a :func:`sensitivity_table`) with ``verdict``."""
    return df.loc[df["verdict"] == verdict, "parameter"].astype(str).tolist()


#: labels drawn next to their point in :func:`plot_sensitivity` (every value is in the CSV)
MAX_LABELS = 10


def plot_sensitivity(df: pd.DataFrame, title: str = "") -> Any:
    """Prior against likelihood sensitivity, one point per parameter (log axes, the threshold
    dotted); up to :data:`MAX_LABELS` flagged parameters labelled, the prior-dominated first."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from ..plotting import ACCENT, short_label, style

    floor = 1e-3
    x = df["prior"].astype(float).clip(lower=floor)
    y = df["likelihood"].astype(float).clip(lower=floor)
    thr = float(df["threshold"].iloc[0]) if len(df) else THRESHOLD
    with style():
        fig, ax = plt.subplots(figsize=(5.2, 4.2))
        ok = df["verdict"] == "-"
        ax.scatter(x[ok], y[ok], s=14, color="#9a9a9a", marker="o", label="-", zorder=2)
        for verdict, marker, color in (
            ("weak likelihood", "v", "#000000"),
            ("prior-data conflict", "D", ACCENT),
        ):
            sel = df["verdict"] == verdict
            if sel.any():
                ax.scatter(
                    x[sel],
                    y[sel],
                    s=22,
                    marker=marker,
                    color=color,
                    zorder=3,
                    label=f"{verdict} ({int(sel.sum())})",
                )
        ax.set(xscale="log", yscale="log")
        ax.set_xlim(left=min(x.min(), thr) / 1.3)
        ax.set_ylim(bottom=min(y.min(), thr) / 1.3)
        # plain numbers: the package style turns mathtext off, and log ticks are mathtext
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
        ax.axvline(thr, ls=":", color="#333333", lw=0.8)
        ax.axhline(thr, ls=":", color="#333333", lw=0.8)
        # the prior-dominated first (what a reader looks for), then the most prior-sensitive
        flagged_rows = df[~ok].assign(_x=x[~ok], _w=df["verdict"] != "weak likelihood")
        flagged_rows = flagged_rows.sort_values(["_w", "_x"], ascending=[True, False])
        for _, r in flagged_rows.head(MAX_LABELS).iterrows():
            ax.annotate(
                short_label(r["parameter"]),
                (max(r["prior"], floor), max(r["likelihood"], floor)),
                fontsize=6,
                xytext=(3, 2),
                textcoords="offset points",
            )
        ax.set(
            xlabel=f"prior sensitivity (CJS; threshold {thr:g})",
            ylabel="likelihood sensitivity (CJS)",
            title=title or "Power-scaling sensitivity",
        )
        ax.legend(loc="lower left")
        fig.tight_layout()
    return fig


__all__ = [
    "MAX_LABELS",
    "THRESHOLD",
    "VERDICTS",
    "flagged",
    "likelihood_var",
    "log_prior_dataset",
    "noise_floor",
    "plot_sensitivity",
    "power_scale_sense",
    "prior_terms",
    "quiet_psense",
    "reported_vars",
    "sensitivity_table",
]
