"""Intervention profiles: Table 2, Figure 2 data and the naive-stage profiles (section F).

Trajectory paper, Results: Table 2 compares the five intervention intensities on stabilized
clinical (stage-4) days per model; Figure 2 shows the mean intensity per consensus stage with
Spearman's rho against the consensus stage (descriptive: model-days are serially dependent);
supplement section F gives, for the models that never turned, Spearman's rho of each
intervention with day.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..data.schema import DAY, INTERVENTION_TYPE, MODEL
from ._validate import as_float_array, check_dims, check_option
from .results import BaselineResult


@dataclass
class SpearmanResult:
    """Spearman's rank correlation with its p-value (renders itself)."""

    rho: float
    pvalue: float
    n: int
    n_dropped: int
    alternative: str
    method: str = "Spearman rho (midranks for ties), p from t with n-2 df"

    @property
    def statistic(self) -> float:
        return self.rho

    @property
    def summary(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])

    def to_latex(self, **kwargs: Any) -> str:
        return self.summary.to_latex(index=False, float_format="{:.3g}".format, **kwargs)


def spearman(x: Any, y: Any, alternative: str = "two-sided") -> SpearmanResult:
    """Spearman's rho with ties (Pearson correlation of midranks) and its p-value.

    Pairs with a NaN in either variable are dropped (counted in ``n_dropped``). The p-value uses
    ``t = rho sqrt((n-2)/(1-rho^2))`` on n-2 df (``scipy.stats.spearmanr``; R's ``cor.test``
    with ties). Fewer than 3 pairs or a constant variable give ``rho = NaN``.
    """
    check_option("alternative", alternative, ("two-sided", "less", "greater"))
    xa = as_float_array(x, "x").ravel()
    ya = as_float_array(y, "y").ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length; got {xa.size} and {ya.size}")
    ok = ~(np.isnan(xa) | np.isnan(ya))
    n = int(ok.sum())
    if n < 3 or np.ptp(xa[ok]) == 0 or np.ptp(ya[ok]) == 0:
        return SpearmanResult(
            np.nan,
            np.nan,
            n,
            int((~ok).sum()),
            alternative,
            "not computable: fewer than 3 pairs or a constant variable",
        )
    r = stats.spearmanr(xa[ok], ya[ok], alternative=alternative)
    return SpearmanResult(float(r.statistic), float(r.pvalue), n, int((~ok).sum()), alternative)


def intervention_profiles(
    stage: xr.DataArray,
    intervention: xr.DataArray,
    *,
    stable_at: float = 4,
    level_b: xr.DataArray | None = None,
) -> BaselineResult:
    """Table 2: per-model mean consensus intensity of each intervention on stage-4 days.

    ``stage``: consensus recognition (model, day); ``intervention``: consensus intensity (model,
    day, intervention_type); stage-4 days are ``stage >= stable_at``; ``level_b`` (model, day)
    adds the number of disengagement days. Rows: models; columns ``n_stage4_days``, one mean per
    intervention type (NaN where a model has no stage-4 day) and ``days_level_b``.
    """
    check_dims(stage, [MODEL, DAY], "stage")
    check_dims(intervention, [MODEL, DAY, INTERVENTION_TYPE], "intervention")
    st = stage.transpose(MODEL, DAY)
    iv = intervention.transpose(MODEL, DAY, INTERVENTION_TYPE)
    with np.errstate(invalid="ignore"):
        on4 = (st >= stable_at) & st.notnull()
    n4 = on4.sum(DAY)
    means = iv.where(on4).mean(DAY, skipna=True)
    table = means.to_pandas()
    table.columns = [str(c) for c in table.columns]
    table.insert(0, "n_stage4_days", n4.to_pandas().astype(int))
    if level_b is not None:
        table["days_level_b"] = (level_b.transpose(MODEL, DAY) >= 0.5).sum(DAY).to_pandas()
    table.index.name = MODEL
    return BaselineResult(
        "table2_interventions",
        table,
        "Table 2: mean intervention intensity on stabilized-clinical (stage-4) days",
        [
            f"stage-4 days: consensus recognition >= {stable_at:g}; means of the consensus "
            "intensity (1 absent, 2 rare, 3 frequent) over those days; NaN = no stage-4 day"
        ],
    )


def intensity_by_stage(stage: xr.DataArray, intervention: xr.DataArray) -> BaselineResult:
    """Figure 2 data: mean intensity per consensus stage and Spearman rho with the stage.

    Pooled over model-days (descriptive; model-days are serially dependent). A consensus on x.5
    is grouped with the lower stage for the means; rho uses the consensus values themselves.

    Long table: ``intervention_type, stage, mean, sd, n`` plus per-type ``rho, pvalue, n_pairs``.
    """
    check_dims(stage, [MODEL, DAY], "stage")
    check_dims(intervention, [MODEL, DAY, INTERVENTION_TYPE], "intervention")
    st = stage.transpose(MODEL, DAY).values.ravel()
    grp = np.floor(st)  # x.5 goes with the lower stage
    rows = []
    for t in intervention[INTERVENTION_TYPE].values:
        v = intervention.sel({INTERVENTION_TYPE: t}).transpose(MODEL, DAY).values.ravel()
        rho = spearman(st, v)
        for g in np.unique(grp[~np.isnan(grp)]):
            sel = (grp == g) & ~np.isnan(v)
            rows.append(
                {
                    INTERVENTION_TYPE: str(t),
                    "stage": int(g),
                    "mean": float(v[sel].mean()) if sel.any() else np.nan,
                    "sd": float(v[sel].std(ddof=1)) if sel.sum() > 1 else np.nan,
                    "n": int(sel.sum()),
                    "rho": rho.rho,
                    "pvalue": rho.pvalue,
                    "n_pairs": rho.n,
                }
            )
    return BaselineResult(
        "figure2_intensity_by_stage",
        pd.DataFrame(rows),
        "Figure 2: mean intervention intensity by consensus recognition stage",
        [
            "pooled model-days, descriptive; x.5 consensus grouped with the lower stage; "
            "Spearman rho of intensity with the consensus stage (ties: midranks)"
        ],
    )


def naive_profiles(
    stage: xr.DataArray,
    intervention: xr.DataArray,
    *,
    models: Any = None,
    clinical_at: float = 3,
) -> BaselineResult:
    """Section F: Spearman rho of each intervention with day for the never-turning models.

    ``stage, intervention`` as :func:`intervention_profiles`; ``models`` default to those whose
    consensus never reaches ``clinical_at``. Rows ``model x intervention_type`` with ``rho,
    pvalue, n, mean_first_week, mean_last_week``; empty (with a note) when every model turned.
    """
    check_dims(stage, [MODEL, DAY], "stage")
    if models is None:
        with np.errstate(invalid="ignore"):
            never = ~((stage >= clinical_at) & stage.notnull()).any(DAY)
        models = stage[MODEL].values[never.transpose(MODEL).values].tolist()
    days = intervention[DAY].values.astype(float)
    rows = []
    for m in models:
        if m not in intervention[MODEL].values:
            raise ValueError(
                f"model {m!r} is not in the study; models: {intervention[MODEL].values.tolist()}"
            )
        for t in intervention[INTERVENTION_TYPE].values:
            v = intervention.sel({MODEL: m, INTERVENTION_TYPE: t}).transpose(DAY).values
            r = spearman(days, v)
            rows.append(
                {
                    MODEL: m,
                    INTERVENTION_TYPE: str(t),
                    "rho": r.rho,
                    "pvalue": r.pvalue,
                    "n": r.n,
                    "mean_first_week": _mean_or_nan(v[:7]),
                    "mean_last_week": _mean_or_nan(v[-7:]),
                }
            )
    notes = [
        f"never-turning models (consensus never >= {clinical_at:g}): {list(models)}",
        "Spearman rho of consensus intensity with day (ties: midranks); NaN = constant",
    ]
    cols = [MODEL, INTERVENTION_TYPE, "rho", "pvalue", "n", "mean_first_week", "mean_last_week"]
    return BaselineResult(
        "sectionF_naive_profiles",
        pd.DataFrame(rows, columns=cols),
        "Section F: intervention trends with day in never-turning models",
        notes,
    )


def _mean_or_nan(v: np.ndarray) -> float:
    return float(np.nanmean(v)) if np.isfinite(v).any() else np.nan


def plot_intensity_by_stage(table: pd.DataFrame) -> Any:
    """Figure 2 (descriptive): mean intensity per intervention type by consensus stage, from
    :func:`intensity_by_stage`'s summary. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for t, g in table.groupby("intervention_type", sort=False):
        rho = g["rho"].iloc[0]
        ax.plot(g["stage"], g["mean"], marker="o", label=f"{t} (rho = {rho:.2f})")
    ax.set_xlabel("consensus recognition stage")
    ax.set_ylabel("mean intensity (1 absent - 3 frequent)")
    ax.set_xticks([1, 2, 3, 4])
    ax.set_ylim(1, 3)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title("Intervention intensity by recognition stage (descriptive)")
    fig.tight_layout()
    return fig
