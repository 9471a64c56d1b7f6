"""The trajectory paper's whole analysis as one library function: :func:`analyse_trajectory`.

The ``baselines`` stage (which only writes the result), the coverage study and users call it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..config import group_config
from ..data.schema import ADJUDICATED_VARIABLES, DAY, MODEL, RATED_VARIABLES, RATER, RESAMPLE
from ..data.schema import censor_day as default_censor_day
from ..plotting import save_figure, style
from .config import BaselinesConfig
from .consensus import consensus
from .logistic import logistic_bootstrap
from .milestones import milestones
from .multiplicity import adjust_family
from .permutation import Skipped, applicable_contrasts, min_two_sided_p, permutation_contrasts
from .profiles import intensity_by_stage, intervention_profiles, naive_profiles
from .rankings import plot_ranks, rankings
from .reliability import reliability_table
from .results import BaselineResult

#: suffix of a second coder's re-coding of an adjudicated variable, e.g. ``level_b_recoded``
#: (model x day, 0/1, NaN outside the re-coded subsample); optional user variables
RECODED_SUFFIX = "_recoded"


def recoded_codes(ds: xr.Dataset) -> xr.Dataset | None:
    """A second coder's ``level_a``/``level_b`` from ``<name>_recoded`` variables, else ``None``.

    The paper re-coded a random 20% subsample; such variables add agreement rows to Table C1.
    """
    found = {v: ds[v + RECODED_SUFFIX] for v in ADJUDICATED_VARIABLES if v + RECODED_SUFFIX in ds}
    return xr.Dataset(found) if found else None


def t50_for_ranking(table: Any, first_clinical: np.ndarray, censor: int) -> np.ndarray:
    """t50 as it enters rank tests: a model that never turned ranks last, like its milestone.

    A model whose first clinical framing is censored enters as ``+inf`` (tied last, like a
    censored latency) whatever its fit says (a curve fitted inside the naive range is not a
    turn). A model that turned but whose fit has no located transition (``flat`` or
    ``unidentified`` with NaN t50) enters as ``-inf``; otherwise the fitted value is kept.
    """
    t50 = table["t50"].to_numpy(dtype=float).copy()
    weak = table["status"].isin(["flat", "unidentified", "no_turn"]).to_numpy()
    never = np.asarray(first_clinical, dtype=float) >= censor
    t50[never] = np.inf
    t50[weak & ~never & np.isnan(t50)] = -np.inf
    return t50


@dataclass
class TrajectoryAnalysis:
    """Every result of :func:`analyse_trajectory` (the paper's tables, one object each)."""

    consensus: xr.Dataset  #: consensus per model-day of the rated variables, model coords kept
    reliability: BaselineResult  #: Table C1
    milestones: xr.Dataset  #: Table 1 (per model, censored latencies and day counts)
    logistic: BaselineResult  #: Table D1, ``extra["replicates"]`` the rater bootstrap
    censor_day: int
    contrasts: BaselineResult | None = None  #: rank-sum permutation contrasts
    interventions: BaselineResult | None = None  #: Table 2
    intensity: BaselineResult | None = None  #: Figure 2 data
    naive: BaselineResult | None = None  #: section F
    #: milestones recomputed on the rater bootstrap's own resamples (resample, model)
    milestone_replicates: xr.Dataset | None = None
    #: each model's rank on the milestones over those resamples (studies of >= 3 models)
    rankings: BaselineResult | None = None
    notes: list[str] = field(default_factory=list)
    #: the analyses this study cannot support (missing items, adjudication, metadata), with why
    skipped: list[Skipped] = field(default_factory=list)
    #: the settings used (the config's values, defaults filled in, the seed actually used)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> dict[str, Any]:
        rec = self.reliability.summary.loc["recognition"]
        ms, d1 = self.milestones, self.logistic.summary
        head: dict[str, Any] = {
            "alpha_recognition": float(rec["alpha"]),
            "icc2k_recognition": float(rec["icc2_k"]),
            "n_models": int(ms.sizes[MODEL]),
            "n_never_clinical": int((ms["first_clinical"] >= self.censor_day).sum()),
            "median_first_clinical": float(ms["first_clinical"].median()),
            "n_fits_ok": int((d1["status"] == "ok").sum()),
            "n_fits_no_turn": int((d1["status"] == "no_turn").sum()),
        }
        con = self.contrasts
        if con is not None and len(con.summary):
            s = con.summary
            best = s.loc[s["pvalue"].idxmin()]
            head["min_contrast_p"] = float(best["pvalue"])
            head["min_contrast"] = f"{best['contrast']}: {best['quantity']}"
            if "p_holm" in s:  # the family's adjusted counts: what the overview reports
                head["n_contrast_tests"] = int(s["pvalue"].notna().sum())
                head["n_contrast_holm_05"] = int((s["p_holm"] < 0.05).sum())
                head["n_contrast_bh_05"] = int((s["p_bh"] < 0.05).sum())
        return head


def _settings(cfg: Any) -> dict[str, Any]:
    """The baselines config (any form, or None) as plain values, unset keys at the defaults."""
    out = asdict(group_config(BaselinesConfig, cfg))
    out["contrasts"] = list(out["contrasts"] or [])
    return out


def _adjudication_skips(level_a, level_b) -> list[Skipped]:
    """The Table 1 columns a study without adjudicated levels cannot fill, with the reason."""
    skipped: list[Skipped] = []
    if level_b is None:
        skipped.append(
            Skipped(
                "Table 1: first_level_b, days_level_b",
                "needs level_b (adjudication.csv), which the study does not have",
            )
        )
    if level_a is None:
        skipped.append(
            Skipped(
                "Table 1: days_level_a",
                "needs level_a (adjudication.csv), which the study does not have",
            )
        )
    return skipped


def _milestone_replicates(ds, d1, rule: str, half: str, min_raters: int, ms_kw: dict):
    """The milestones recomputed on each of the rater bootstrap's resamples (its own rater
    draws), for milestone intervals (the coverage study)."""
    rec = ds["recognition"].transpose(RATER, MODEL, DAY)
    idx = d1.extra["replicates"]["rater_index"].values
    boot = xr.DataArray(
        rec.values[idx],
        dims=(RESAMPLE, RATER, MODEL, DAY),
        coords={MODEL: rec[MODEL].values, DAY: rec[DAY].values},
    )
    return milestones(consensus(boot, rule, half, min_raters=min_raters), **ms_kw)


#: rankings are written for studies of at least this many models (issue 51)
MIN_RANKED = 3
#: the milestones ranked (earlier recognition ranks better)
RANKED_MILESTONES = ("first_clinical", "first_stable")


def milestone_rankings(
    draws: xr.Dataset, prob: float = 0.95, over: str = "the rater bootstrap's resamples"
) -> BaselineResult | None:
    """Each model's rank on :data:`RANKED_MILESTONES` over ``draws`` (the rater bootstrap's
    resamples, dim ``resample``, or posterior draws, dims ``chain, draw``): the median rank, a
    ``prob`` rank interval, P(best) (earliest), P(worst) and the models that cannot be told
    apart from the best (:func:`~delusion_bayes.baselines.rankings.rankings`). A censored
    milestone ties at the censoring day. Both carry the uncertainty about these conversations
    (the raters' disagreement; the posterior's measurement model), not about new ones."""
    frames = []
    for q in RANKED_MILESTONES:
        if q not in draws:
            continue
        da = draws[q]
        try:
            df = rankings(da, [str(m) for m in da[MODEL].values], higher_is="worse", prob=prob)
        except ValueError:  # no draw where every model has the milestone: nothing to rank
            continue
        frames.append(df.assign(quantity=q, n_draws=df.attrs.get("n_draws", 0)))
    if not frames:
        return None
    table = pd.concat(frames, ignore_index=True).rename(columns={"item": MODEL})
    notes = [
        f"ranks over {over} (earlier milestone = better rank, ties share the average rank); "
        f"{prob:.0%} equal-tailed rank intervals; group 1 = the models whose rank interval "
        "overlaps the best model's"
    ]
    return BaselineResult("rankings", table, f"Rankings of the models on the milestones ({over})",
                          notes)  # fmt: skip


def save_rank_figure(table: pd.DataFrame, stem: Any) -> list:
    """One panel per ranked milestone (:func:`milestone_rankings`' table), models sorted, median
    rank with its interval, P(best) at the right; saved as ``stem.png``/``.pdf`` (the paths).
    Drawn and saved inside the package style, where model names are never mathtext (the tick
    labels are made when the figure is drawn: a ``$x_1$`` in a name would otherwise fail)."""
    import matplotlib.pyplot as plt

    quantities = list(dict.fromkeys(table["quantity"]))
    n = int(table[MODEL].nunique())
    ncols = min(3, len(quantities))  # rows of at most 3 panels: 5 categories stay readable
    nrows = -(-len(quantities) // ncols)
    with style():
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(5.2 * ncols, (0.9 + 0.32 * n) * nrows), squeeze=False
        )
        for ax, q in zip(axes.flat, quantities, strict=False):
            rows = table[table["quantity"] == q].rename(columns={MODEL: "item"})
            plot_ranks(rows, ax=ax, title=str(q).replace("_", " "))
        for ax in axes.flat[len(quantities) :]:
            ax.set_visible(False)
        fig.tight_layout()
        return save_figure(fig, stem)


def _add_contrasts(res: TrajectoryAnalysis, b: dict, seed: int) -> None:
    """The exact permutation tests of the contrasts the study's metadata support, on the
    milestones and the logistic parameters (t50 ranked as :func:`t50_for_ranking` says); a
    contrast it cannot form joins ``res.skipped``."""
    ms, d1, cens = res.milestones, res.logistic, res.censor_day
    table = d1.summary.reindex(ms[MODEL].values)
    quantities = ms.copy()
    for p in ("L", "k"):
        quantities[p] = (MODEL, table[p].to_numpy(dtype=float))
    quantities["t50"] = (MODEL, t50_for_ranking(table, ms["first_clinical"].values, cens))
    usable, cannot = applicable_contrasts(quantities, b["contrasts"], quantities.data_vars)
    res.skipped += cannot
    if usable:
        res.contrasts = permutation_contrasts(
            quantities, usable, max_exact=int(b["max_exact"]), n_mc=int(b["n_mc"]), seed=seed
        )
        res.contrasts.notes.append(t50_for_ranking.__doc__.split("\n\n")[0].strip())
        family = str(b.get("family", "run"))
        res.contrasts.summary = adjust_family(
            res.contrasts.summary, "pvalue", None if family == "run" else "contrast"
        )
        m = res.contrasts.summary["family_size"]
        res.contrasts.notes.append(
            "p (Holm) controls the family-wise error rate, p (BH) the false discovery rate "
            + (
                f"(Benjamini-Hochberg), over the family of all {int(m.max())} tests of this run "
                "(baselines.family=run)"
                if family == "run"
                else "(Benjamini-Hochberg), within each contrast's tests (baselines.family="
                "contrast)"
            )
        )
        res.contrasts.notes += _power_notes(res.contrasts.summary)


def _add_interventions(res: TrajectoryAnalysis, b: dict, level_b) -> None:
    """Table 2, Figure 2 and section F from the intervention ratings, or the reason they are
    skipped."""
    cons = res.consensus
    if "intervention" in cons.data_vars:
        stage, interv = cons["recognition"], cons["intervention"]
        res.interventions = intervention_profiles(
            stage, interv, stable_at=float(b["stable_at"]), level_b=level_b
        )
        res.intensity = intensity_by_stage(stage, interv)
        res.naive = naive_profiles(stage, interv, clinical_at=float(b["clinical_at"]))
        return
    res.skipped.append(
        Skipped(
            "Table 2, Figure 2, section F (interventions)",
            "needs intervention ratings (items education, psychoeducation, "
            "emotional_support, interpretation, recommendation in ratings.csv)",
            (
                "table2_interventions.csv",
                "figure2_intensity_by_stage.csv",
                "sectionF_naive_profiles.csv",
            ),
        )
    )


def analyse_trajectory(
    ds: xr.Dataset,
    cfg: Any = None,
    *,
    seed: int | None = None,
    progress: bool = False,
    milestone_replicates: bool = False,
) -> TrajectoryAnalysis:
    """The trajectory paper's analysis of one study: consensus, reliability (Table C1),
    milestones (Table 1), logistic fits with a rater bootstrap (Table D1), permutation contrasts,
    intervention profiles (Table 2, Figure 2, section F).

    ``cfg``: the ``baselines`` config (any form; ``None`` for the defaults); ``seed`` overrides
    ``cfg.seed``. ``milestone_replicates``: also recompute the milestones on each of the rater
    bootstrap's resamples (the same draws), for milestone intervals (the coverage study).
    """
    b = _settings(cfg)
    seed = int(b["seed"] if seed is None else seed)
    rule, half, min_raters = str(b["consensus"]), str(b["half_rule"]), int(b["min_raters"])
    n_days = int(ds[DAY].max())
    cens = default_censor_day(n_days) if b["censor_day"] is None else int(b["censor_day"])
    notes: list[str] = []
    model_coords = {k: ds.coords[k] for k in ds.coords if ds.coords[k].dims == (MODEL,)}

    rated = [v for v in RATED_VARIABLES if v in ds.data_vars]
    cons = consensus(ds[rated], rule, half, min_raters=min_raters).assign_coords(model_coords)
    cons.attrs.update(consensus=rule, half_rule=half, min_raters=min_raters)
    rel = reliability_table(
        ds,
        level=str(b["alpha_level"]),
        n_boot=int(b["alpha_boot"]),
        ci=float(b["ci"]),
        seed=seed,
        recoded=recoded_codes(ds),
    )

    level_a, level_b = ds.get("level_a"), ds.get("level_b")
    skipped = _adjudication_skips(level_a, level_b)
    ms_kw = dict(
        stable_run=int(b["stable_run"]),
        censor_day=cens,
        missing=str(b["missing"]),
        clinical_at=float(b["clinical_at"]),
        stable_at=float(b["stable_at"]),
    )
    ms = milestones(cons["recognition"], level_b, level_a=level_a, **ms_kw)
    ms = ms.assign_coords(model_coords)

    d1 = logistic_bootstrap(
        ds["recognition"],
        n_boot=int(b["n_boot"]),
        seed=seed,
        rule=rule,
        half_rule=half,
        min_raters=min_raters,
        floor=float(b["logistic_floor"]),
        upper=float(RATED_VARIABLES["recognition"].scale.high),
        k_max=float(b["k_max"]),
        ci=float(b["ci"]),
        turn_at=float(b["clinical_at"]),
        progress=progress,
    )
    res = TrajectoryAnalysis(
        cons, rel, ms, d1, cens, notes=notes, skipped=skipped, settings={**b, "seed": seed}
    )
    if milestone_replicates or ds.sizes[MODEL] >= MIN_RANKED:
        res.milestone_replicates = _milestone_replicates(ds, d1, rule, half, min_raters, ms_kw)
    if ds.sizes[MODEL] >= MIN_RANKED:
        res.rankings = milestone_rankings(res.milestone_replicates, float(b["ci"]))

    if b["contrasts"]:
        _add_contrasts(res, b, seed)
    else:
        notes.append("no contrasts configured (baselines.contrasts is empty)")
    _add_interventions(res, b, level_b)
    return res


def _power_notes(summary: Any) -> list[str]:
    """One note per contrast whose groups are too small for any p below 0.05 (exact test)."""
    out = []
    sizes = summary.drop_duplicates("contrast")[["contrast", "n_a", "n_b"]]
    for name, n_a, n_b in sizes.itertuples(index=False):
        if n_a and n_b and (p := min_two_sided_p(n_a, n_b)) > 0.05:
            out.append(
                f"contrast {name!r}: with {n_a} vs {n_b} models the smallest attainable "
                f"two-sided p is {p:.2g}; the test cannot reject at 0.05"
            )
    return out
