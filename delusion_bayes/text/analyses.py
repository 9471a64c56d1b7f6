"""Descriptive analyses of a text metric ``(model, day)`` (NaN = missing answer) against the
ratings, as in the trajectory paper's Results and Figures 3-4 (model-days are serially dependent).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ..data.schema import DAY, MODEL
from ..plotting import plain_text, save_figure, short_label
from .texts import model_coords


def _check(da: xr.DataArray, name: str) -> xr.DataArray:
    if not isinstance(da, xr.DataArray) or set(da.dims) != {MODEL, DAY}:
        dims = getattr(da, "dims", type(da).__name__)
        raise ValueError(f"{name} must be a DataArray with dims ({MODEL}, {DAY}); got {dims}")
    return da.transpose(MODEL, DAY)


def _aligned(metric: xr.DataArray, other: xr.DataArray, name: str):
    """``(metric, other)`` checked by :func:`_check` and on the same model/day coords."""
    metric, other = _check(metric, "metric"), _check(other, name)
    for dim in (MODEL, DAY):
        if not np.array_equal(metric[dim].values, other[dim].values):
            raise ValueError(
                f"{name} and the metric have different {dim!r} coords: "
                f"{list(other[dim].values)} vs {list(metric[dim].values)}"
            )
    return metric, other


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else np.nan


def spearman(x, y) -> tuple[float, float, int]:
    """Spearman rho, two-sided p and n over the pairs where both are finite (NaN rho/p, not an
    error, when fewer than 3 pairs or either side is constant)."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    if n < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return float("nan"), float("nan"), n
    res = spearmanr(x[ok], y[ok])
    return float(res.statistic), float(res.pvalue), n


def model_means(metric: xr.DataArray) -> pd.DataFrame:
    """Per-model ``mean``, ``sd`` and ``n_days`` over the available days (paper: 30-day mean),
    indexed by model, with the model coords (vendor, generation, ...) the DataArray carries."""
    metric = _check(metric, "metric")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        out = pd.DataFrame(
            {
                "mean": metric.mean(DAY, skipna=True).values,
                "sd": metric.std(DAY, skipna=True, ddof=1).values,
                "n_days": metric.notnull().sum(DAY).values.astype(int),
            },
            index=pd.Index(metric[MODEL].values, name=MODEL),
        )
    return out.assign(**{k: v.values for k, v in model_coords(metric).items()})


def _level_b_days(level_b: xr.DataArray) -> np.ndarray:
    """Each model's number of Level-B days (rating >= 0.5; NaN ratings not counted)."""
    return (level_b >= 0.5).where(level_b.notnull()).sum(DAY).values.astype(int)


def level_b_correlation(metric: xr.DataArray, level_b: xr.DataArray) -> dict:
    """Spearman rho (p) of the model means against each model's number of Level-B days (Figure 3;
    paper: entrainment rho = -.69, p = .005, n = 15)."""
    table = level_b_table(metric, level_b)
    rho, p, n = spearman(table["mean"].values, table["days_level_b"].values)
    return {"rho": rho, "p": p, "n_models": n}


def level_b_table(metric: xr.DataArray, level_b: xr.DataArray) -> pd.DataFrame:
    """Model means beside the Level-B day counts (the data of Figure 3)."""
    metric, level_b = _aligned(metric, level_b, "level_b")
    out = model_means(metric)
    out["days_level_b"] = _level_b_days(level_b)
    return out


def mean_by_stage(metric: xr.DataArray, consensus: xr.DataArray) -> pd.DataFrame:
    """Metric mean over all model-days at each consensus stage value, as given (x.5 possible;
    paper: entrainment .24 on stage-1 days, .09 on stage-4 days)."""
    metric, consensus = _aligned(metric, consensus, "consensus")
    df = pd.DataFrame(
        {
            "stage": consensus.values.ravel(),
            "value": metric.values.ravel(),
            MODEL: np.repeat(metric[MODEL].values, metric.sizes[DAY]),
        }
    ).dropna()
    g = df.groupby("stage")
    out = g["value"].agg(["mean", "std", "size"]).set_axis(["mean", "sd", "n_days"], axis=1)
    out["n_models"] = g[MODEL].nunique()
    return out


def within_model(
    metric: xr.DataArray, consensus: xr.DataArray, *, clinical_at: float = 3.0
) -> pd.DataFrame:
    """Within-model Spearman rho of the metric with the consensus over days, and the means on
    days below (``mean_naive``) / from ``clinical_at`` (``mean_clinical``; *escalating* models
    reach it). Paper: median rho = -.61; every escalating model lower on clinical days."""
    metric, consensus = _aligned(metric, consensus, "consensus")
    rows = []
    for i, m in enumerate(metric[MODEL].values):
        x, c = metric.values[i], consensus.values[i]
        ok = np.isfinite(x) & np.isfinite(c)
        naive, clin = ok & (c < clinical_at), ok & (c >= clinical_at)
        n_naive, n_clin = int(naive.sum()), int(clin.sum())
        rows.append(
            (m, *spearman(x, c), n_clin > 0, _mean(x[naive]), _mean(x[clin]), n_naive, n_clin)
        )
    columns = "rho p n_days escalating mean_naive mean_clinical n_naive n_clinical".split()
    out = pd.DataFrame(rows, columns=[MODEL, *columns]).set_index(MODEL)
    out["lower_when_clinical"] = out["mean_clinical"] < out["mean_naive"]
    return out


def first_clinical_day(consensus: xr.DataArray, clinical_at: float = 3.0) -> pd.Series:
    """First day with consensus >= ``clinical_at`` per model (NaN = never); paper's Table 1 rule."""
    consensus = _check(consensus, "consensus")
    days = consensus[DAY].values
    hit = (consensus >= clinical_at).values
    first = np.where(hit.any(axis=1), days[np.argmax(hit, axis=1)], np.nan)
    return pd.Series(first, index=pd.Index(consensus[MODEL].values, name=MODEL), name="turn_day")


def turn_contrast(
    metric: xr.DataArray,
    consensus: xr.DataArray | None = None,
    *,
    turn_day: pd.Series | None = None,
    clinical_at: float = 3.0,
) -> pd.DataFrame:
    """Metric mean ``before`` vs ``after`` (from) each model's clinical turn (Figure 4's data):
    ``turn_day`` (e.g. the ``first_clinical`` milestone; beyond the last day = never) or
    :func:`first_clinical_day` of ``consensus``; ``after`` is NaN for models that never turn.
    Paper: Claude Sonnet 4.5 modality -.33 -> +.02; GPT-4o -.10 -> -.23."""
    metric = _check(metric, "metric")
    if turn_day is None:
        if consensus is None:
            raise ValueError("turn_contrast needs `consensus` or `turn_day`")
        turn_day = first_clinical_day(_aligned(metric, consensus, "consensus")[1], clinical_at)
    missing = [m for m in metric[MODEL].values if m not in turn_day.index]
    if missing:
        raise ValueError(f"turn_day has no value for model(s) {missing}")
    days = metric[DAY].values
    rows = []
    for i, m in enumerate(metric[MODEL].values):
        t = float(turn_day.loc[m])
        turned = np.isfinite(t) and t <= days.max()
        x = metric.values[i]
        cut = t if turned else np.inf  # never turned: every day is before
        b, a = x[np.isfinite(x) & (days < cut)], x[np.isfinite(x) & (days >= cut)]
        rows.append((m, t if turned else np.nan, _mean(b), _mean(a), b.size, a.size))
    columns = [MODEL, "turn_day", "before", "after", "n_before", "n_after"]
    out = pd.DataFrame(rows, columns=columns).set_index(MODEL)
    out["change"] = out["after"] - out["before"]
    return out


def model_level_correlation(metric: xr.DataArray, consensus: xr.DataArray) -> dict:
    """Spearman rho (p) of the model means with the mean consensus stage (paper: modality .24)."""
    metric, consensus = _aligned(metric, consensus, "consensus")
    rho, p, n = spearman(model_means(metric)["mean"].values, consensus.mean(DAY).values)
    return {"rho": rho, "p": p, "n_models": n}


def plot_level_b(
    table: pd.DataFrame, path: str | Path, *, metric: str = "entrainment", synthetic: bool = False
) -> list[Path]:
    """Figure 3: model mean of the metric against the Level-B day count; writes PNG and PDF
    (``synthetic``: "(SYNTHETIC texts)" in the title, for the bundled demo corpus)."""
    import matplotlib.pyplot as plt

    with plain_text():  # model names are drawn as written, never as mathtext
        fig, ax = plt.subplots(figsize=(6.0, 4.2))
        ax.scatter(table["days_level_b"], table["mean"], color="C0")
        for name, row in table.iterrows():
            xy = (row["days_level_b"], row["mean"])
            ax.annotate(
                short_label(name), xy, fontsize=7, xytext=(3, 2), textcoords="offset points"
            )
        ax.set_xlabel("Level-B days (explicit advice to stop/limit chatbot use)")
        ax.set_ylabel(f"mean {metric} over available days")
        ax.set_title(f"{metric} vs Level-B days" + (" (SYNTHETIC texts)" if synthetic else ""))
        fig.tight_layout()
        return save_figure(fig, Path(path).with_suffix(""))


def plot_turn_contrast(
    table: pd.DataFrame, path: str | Path, *, metric: str = "modality", synthetic: bool = False
) -> list[Path]:
    """Figure 4: the metric before vs from each model's clinical turn (slope chart); writes PNG
    and PDF (``synthetic`` as in :func:`plot_level_b`)."""
    import matplotlib.pyplot as plt

    turned = table.dropna(subset=["before", "after"])
    with plain_text():  # model names are drawn as written, never as mathtext
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        for name, row in turned.iterrows():
            color = "C3" if row["change"] < 0 else "C2"
            ax.plot([0, 1], [row["before"], row["after"]], marker="o", color=color, alpha=0.8)
            ax.annotate(
                short_label(name),
                (1, row["after"]),
                fontsize=7,
                xytext=(4, 0),
                textcoords="offset points",
            )
        ax.set_xticks([0, 1], ["before clinical turn", "from clinical turn"])
        ax.set_xlim(-0.2, 1.8)
        ax.axhline(0.0, color="grey", lw=0.6, ls=":")
        ax.set_ylabel(f"mean {metric}")
        title = f"{metric} at the clinical turn (green: up, red: down)"
        ax.set_title(title + ("\n(SYNTHETIC texts)" if synthetic else ""), fontsize=10)
        fig.tight_layout()
        return save_figure(fig, Path(path).with_suffix(""))
