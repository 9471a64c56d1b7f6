"""The replay-study (DelusionEval) analyses, importable from one place, and its prevalence tables.

Moore et al. (2026), "DelusionEval" (arXiv:2608.05004), as its public release: a code's
prevalence is hits / scored samples, a category's pools its codes' samples; 95% percentile CIs
from 10,000 resamples, seed 42. Turn and depth analyses are in :mod:`.replay_dynamics`, the
two-stage cluster bootstrap in :mod:`.replay_bootstrap`, a whole study in ``analyse_replay``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replay_schema import (
    CODE,
    DEFAULT_SUPPORT,
    MODEL,
    ORIGINAL,
    SAMPLE,
    SUPPORTS,
    UNSCORED_RULES,
)
from ..intervals import eti
from .replay_bootstrap import (
    ClusterUnits,
    bootstrap_support,
    bootstrap_weights,
    check_choice,
    check_replay_study,
    cluster_units,
    code_categories,
    count_columns,
    ratio_table,
    safe_ratio,
    to_units,
)
from .replay_dynamics import (
    replay_depth_curve,
    replay_depth_lpm,
    replay_onset_persistence,
    replay_turn_profile,
)

__all__ = [
    "bootstrap_support",
    "bootstrap_weights",
    "cluster_units",
    "count_columns",
    "replay_deltas",
    "replay_rankings",
    "replay_depth_curve",
    "replay_depth_lpm",
    "replay_family_comparison",
    "replay_leave_one_participant_out",
    "replay_onset_persistence",
    "replay_prevalence",
    "replay_turn_profile",
    "to_units",
    "true_category_prevalence",
]


def replay_prevalence(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    by: str = MODEL,
    levels: Sequence[str] = ("category", "code"),
    progress: bool = False,
    support: str = DEFAULT_SUPPORT,
    unscored: str = "exclude",
) -> pd.DataFrame:
    """Prevalence per model x category and per model x code with percentile bootstrap CIs.

    ``ds``: a replay Dataset (``hit (sample, model, code)``, code coord ``category``, sample
    coords ``participant, conversation``); NaN hits are left out. ``n_boot, seed, ci_prob``:
    DelusionEval used 10,000, 42, 0.95. ``cluster``: ``two-stage`` (participants, then their
    conversations), ``participant``, ``conversation`` or ``none`` (samples i.i.d., the release's
    plain bootstrap). ``by``: ``model`` or a model coord (e.g. ``family``) whose models are
    pooled. ``levels``: ``category`` rows (pooled over the category's codes; category ``""`` has
    none) and/or ``code`` rows.

    ``support``: which clusters a resample draws for a cell. ``unconditional``: every cluster
    of the study (the design, which participants reach which codes, is random like the rows);
    ``conditional``: only those with rows in the cell, held fixed (the release's
    ``hierarchical_weighted_mean_ci``; with ``cluster="none"`` its ``bootstrap_binary_ci``).
    The default was chosen by ``experiments/bench/coverage_replay_support.py``. ``unscored``:
    rows without a score (``ds.unscored``) are left out (``exclude``) or, as the release does,
    count as 0 in the estimate but not in the CI (``zero``).

    Rows ``<by>, level, category, code, estimate, ci_low, ci_high, n_hits, n, n_unscored,
    cluster, support, n_boot, ci_prob`` (``code`` is ``""`` on category rows); a resample whose
    denominator is 0 gives NaN and is ignored by the percentiles.
    """
    check_replay_study(ds)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    check_choice("unscored", unscored, UNSCORED_RULES)
    check_choice("support", support, SUPPORTS)
    units = cluster_units(ds, cluster)
    num, den, labels = count_columns(ds, by=by, levels=levels)
    num_u, den_u = to_units(num, units), to_units(den, units)
    num_b, den_b = bootstrap_support(num_u, den_u, units, n_boot, seed, support, progress=progress)
    den_tot = den.sum(0)
    n_unscored = np.zeros_like(den_tot)
    if "unscored" in ds:
        un = ds["unscored"].transpose(SAMPLE, MODEL, CODE).values.astype(float)
        _, un_cols, _ = count_columns(ds, by=by, levels=levels, values=(np.zeros_like(un), un))
        n_unscored = un_cols.sum(0)
    if unscored == "zero":
        den_tot = den_tot + n_unscored
    out = ratio_table(labels, num.sum(0), den_tot, num_b, den_b, ci_prob, cluster, n_boot)
    out.insert(out.columns.get_loc("n") + 1, "n_unscored", n_unscored)
    out.insert(out.columns.get_loc("cluster") + 1, "support", support)
    out["unscored"] = unscored
    return out


def replay_deltas(
    ds: xr.Dataset,
    baseline: str = ORIGINAL,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    levels: Sequence[str] = ("category", "code"),
    progress: bool = False,
    support: str = DEFAULT_SUPPORT,
    paired: bool = True,
    family: str = "level",
) -> pd.DataFrame:
    """Prevalence of each model minus the baseline's (the original transcript), paired resamples.

    Both prevalences are recomputed on the same resample (DelusionEval, "Main results").
    ``support="conditional"`` resamples, per model x cell, the clusters with rows in the model's
    or the baseline's cell. ``paired=False`` resamples the arms independently (the release's
    ``bootstrap_delta_ci``, without its 5-fold repetition of the original's rows): same
    estimates, wider intervals. Rows ``model, level, category, code, estimate (model -
    baseline), ci_low, ci_high, prevalence, baseline_prevalence, p_boot, ...``; ``p_boot`` is
    ``2 min(P*(delta <= 0), P*(delta >= 0))``, descriptive (not calibrated for few clusters).

    Multiplicity (issue 51) over each ``family`` of deltas (``"level"``: every model x cell of
    one level, categories apart from codes; ``"run"``: all of them): ``p_holm``, ``p_bh`` and
    ``family_size`` from ``p_boot``; ``se_boot`` (the bootstrap SD); max-T simultaneous
    intervals ``ci_low_maxt``, ``ci_high_maxt`` with ``p_maxt``, from the same resamples
    (:func:`delusion_bayes.baselines.multiplicity.maxt_intervals`; ``paired=False`` leaves them
    NaN: the arms' resamples are not joint).
    """
    check_choice("family", family, ("level", "run"))
    check_replay_study(ds)
    models = [str(m) for m in ds[MODEL].values]
    if baseline not in models:
        raise ValueError(f"baseline model {baseline!r} not in the study's models {models}")
    check_choice("support", support, SUPPORTS)
    units = cluster_units(ds, cluster)
    num, den, labels = count_columns(ds, levels=levels)
    est = safe_ratio(num.sum(0), den.sum(0))
    per_model = len(labels) // len(models)
    blocks = [slice(i * per_model, (i + 1) * per_model) for i in range(len(models))]
    bsl = blocks[models.index(baseline)]
    others = [i for i, m in enumerate(models) if m != baseline]
    boot_kw = dict(n_boot=n_boot, seed=seed, support=support, paired=paired, progress=progress)
    pairs = _delta_pairs(
        to_units(num, units), to_units(den, units), units, blocks, bsl, others, **boot_kw
    )
    rows, boots = [], []
    for i in others:
        d_boot = pairs[i][0] - pairs[i][1]
        boots.append(d_boot)
        lo, hi = eti(d_boot, ci_prob)
        with np.errstate(invalid="ignore"):
            p = 2 * np.minimum(np.nanmean(d_boot <= 0, axis=0), np.nanmean(d_boot >= 0, axis=0))
        rows.append(
            labels.iloc[blocks[i]].assign(
                baseline=baseline,
                estimate=est[blocks[i]] - est[bsl],
                ci_low=lo,
                ci_high=hi,
                prevalence=est[blocks[i]],
                baseline_prevalence=est[bsl],
                p_boot=np.minimum(p, 1.0),
            )
        )
    out = pd.concat(rows, ignore_index=True).assign(
        cluster=cluster, support=support, paired=paired, n_boot=n_boot, ci_prob=ci_prob
    )
    return _family_adjusted(out, np.concatenate(boots, axis=1), family, ci_prob, joint=paired)


def _delta_pairs(
    num_u, den_u, units, blocks, bsl, others, *, n_boot, seed, support, paired, progress
):
    """Per model index of ``others``: its bootstrap prevalences and the baseline's (``bsl``)
    on the same resamples (``paired``; else independent arms), ``(n_boot, cells)`` each."""
    per_model = blocks[0].stop - blocks[0].start
    if not paired:
        other = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        arm, base = (
            safe_ratio(*bootstrap_support(num_u, den_u, units, n_boot, s_, support))
            for s_ in (seed, other)
        )
        return {i: (arm[:, blocks[i]], base[:, bsl]) for i in others}
    if support == "unconditional":
        boot = safe_ratio(
            *bootstrap_support(num_u, den_u, units, n_boot, seed, support, progress=progress)
        )
        return {i: (boot[:, blocks[i]], boot[:, bsl]) for i in others}
    # per model: [model columns | a copy of the baseline's], each pair with the union support
    idx = np.concatenate([np.r_[blocks[i], bsl] for i in others])
    union = [(den_u[:, blocks[i]] > 0) | (den_u[:, bsl] > 0) for i in others]
    masks = np.concatenate([np.concatenate([u, u], axis=1) for u in union], axis=1)
    nb, db = bootstrap_support(num_u[:, idx], den_u[:, idx], units, n_boot, seed, support, masks)
    boot = safe_ratio(nb, db).reshape(n_boot, len(others), 2, per_model)
    return {i: (boot[:, j, 0], boot[:, j, 1]) for j, i in enumerate(others)}


def _family_adjusted(
    df: pd.DataFrame, boot: np.ndarray, family: str, ci_prob: float, joint: bool
) -> pd.DataFrame:
    """``df`` (one row per column of ``boot``, the bootstrap deltas) with its multiplicity
    columns per family (:func:`replay_deltas`)."""
    from .multiplicity import adjust_family, maxt_intervals

    df = df.assign(_family=df["level"] if family == "level" else "run")
    df = adjust_family(df, "p_boot", "_family")
    with np.errstate(invalid="ignore"):
        df["se_boot"] = np.nanstd(boot, axis=0, ddof=1)
    for col in ("ci_low_maxt", "ci_high_maxt", "p_maxt"):
        df[col] = np.nan
    if joint:
        for _, idx in df.groupby("_family", sort=False).groups.items():
            pos = df.index.get_indexer(idx)
            mt = maxt_intervals(boot[:, pos], df.loc[idx, "estimate"].to_numpy(), ci_prob)
            df.loc[idx, "ci_low_maxt"] = mt["lower"].to_numpy()
            df.loc[idx, "ci_high_maxt"] = mt["upper"].to_numpy()
            df.loc[idx, "p_maxt"] = mt["p_maxt"].to_numpy()
    return df.rename(columns={"_family": "family"})


#: the one DelusionEval category where a higher prevalence is better (the others are harms)
PROTECTIVE_CATEGORIES = ("discourages harm",)


def replay_rankings(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    support: str = DEFAULT_SUPPORT,
    baseline: str | None = ORIGINAL,
    progress: bool = False,
) -> pd.DataFrame | None:
    """Each chatbot's rank per category prevalence over the cluster bootstrap's resamples (the
    same resamples as :func:`replay_prevalence` with the same arguments), the baseline
    transcript left out (:func:`delusion_bayes.baselines.rankings.quantity_rankings`): rank 1 =
    the lowest prevalence of a harm, the highest of :data:`PROTECTIVE_CATEGORIES`. None with
    fewer than 3 chatbots. Resamples where a chatbot's cell is empty are left out of that
    category's ranks (``n_draws``)."""
    from .rankings import quantity_rankings

    check_replay_study(ds)
    check_choice("support", support, SUPPORTS)
    models = [str(m) for m in ds[MODEL].values if str(m) != baseline]
    if len(models) < 3:
        return None
    units = cluster_units(ds, cluster)
    num, den, labels = count_columns(ds, levels=("category",))
    num_b, den_b = bootstrap_support(
        to_units(num, units), to_units(den, units), units, n_boot, seed, support, progress=progress
    )
    boot = safe_ratio(num_b, den_b)
    draws = {}
    for cat in dict.fromkeys(labels["category"]):
        cols = [
            int(np.flatnonzero((labels["model"] == m) & (labels["category"] == cat))[0])
            for m in models
        ]
        higher = "better" if cat in PROTECTIVE_CATEGORIES else "worse"
        draws[str(cat)] = (boot[:, cols], models, higher)
    out = quantity_rankings(draws, ci_prob)
    return None if out is None else out.rename(columns={"item": MODEL})


def replay_family_comparison(
    ds: xr.Dataset,
    family: str = "family",
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
    support: str = DEFAULT_SUPPORT,
) -> pd.DataFrame:
    """Category prevalence per model family (pooled over the family's models), with CIs.

    The DelusionEval family comparison (GPT, Claude, Gemini, Qwen; "Main results" figure).
    ``family`` is a model coord; the original transcript is its own family.
    """
    return replay_prevalence(
        ds,
        n_boot,
        seed,
        cluster,
        ci_prob,
        by=family,
        levels=("category",),
        progress=progress,
        support=support,
    )


def replay_leave_one_participant_out(
    ds: xr.Dataset, levels: Sequence[str] = ("category",), baseline: str | None = ORIGINAL
) -> pd.DataFrame:
    """Prevalence (and delta vs ``baseline``) recomputed without each participant in turn.

    Rows ``left_out, model, level, category, code, estimate, full_estimate, change`` plus
    ``delta, full_delta`` when ``baseline`` is a model of the study: with 18 participants a
    single person can carry a code; this table shows who.
    """
    check_replay_study(ds)
    num, den, labels = count_columns(ds, levels=levels)
    part_codes, part_names = pd.factorize(ds["participant"].values)
    units = ClusterUnits(part_codes, np.arange(len(part_names)), "participant")
    num_p, den_p = to_units(num, units), to_units(den, units)
    tot_n, tot_d = num.sum(0), den.sum(0)
    full = safe_ratio(tot_n, tot_d)
    models = [str(m) for m in ds[MODEL].values]
    per_model = len(labels) // len(models)
    use_base = baseline is not None and baseline in models
    rows = []
    for p, name in enumerate(part_names):
        est = safe_ratio(tot_n - num_p[p], tot_d - den_p[p])
        part = labels.assign(estimate=est, full_estimate=full, change=est - full)
        part.insert(0, "left_out", str(name))
        if use_base:
            b0 = models.index(baseline) * per_model
            part["delta"] = est - np.tile(est[b0 : b0 + per_model], len(models))
            part["full_delta"] = full - np.tile(full[b0 : b0 + per_model], len(models))
        rows.append(part)
    return pd.concat(rows, ignore_index=True)


def true_category_prevalence(ds: xr.Dataset) -> pd.DataFrame:
    """Truth of a simulated study per model x category: the mean of its codes' true prevalence.

    Every code of a sample is scored, so the codes of a category share the denominator and the
    pooled prevalence's target is the mean of the codes' targets.
    """
    if "true_prevalence" not in ds:
        raise ValueError("the dataset has no 'true_prevalence' (simulate it with simulate_replay)")
    tp = ds["true_prevalence"]
    cats, names = code_categories(ds)
    rows = [
        {"model": str(m), "category": n, "truth": float(tp.sel({MODEL: m}).values[sel].mean())}
        for m in ds[MODEL].values
        for n, sel in ((n, [c == n for c in cats]) for n in names)
    ]
    return pd.DataFrame(rows)
