"""Replay-study (DelusionEval) prevalence tables with percentile and cluster-bootstrap intervals:
prevalence, deltas against the original transcript, model families, leave-one-participant-out.

Implements the analysis of Moore et al. (2026), "DelusionEval" (arXiv:2608.05004), following its
public release: a code's prevalence is hits / scored samples; a category's prevalence is pooled
over all samples of the category's codes (not the mean of code means); 95% percentile bootstrap
intervals from 10,000 resamples with seed 42; deltas against the original transcript; model-family
comparison; context-depth curves; and a linear-probability model of depth controlling for the
prior assistant content. Added here: a two-stage cluster bootstrap (participants, then
conversations within participant; Davison & Hinkley 1997, sec. 3.8), leave-one-participant-out
and turn-position onset/persistence.

Every quantity is a ratio of sums, so every bootstrap works on counts: per-unit (conversation or
sample) hit/total matrices ``H, T (unit x column)`` and resample weights ``W (resample x unit)``
(multinomial over participants, then over each participant's conversations) give all resamples at
once as ``(W @ H) / (W @ T)``: no Python loop per resample.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ..data.replay_schema import (
    CATEGORY,
    CODE,
    DEFAULT_SUPPORT,
    MODEL,
    NO_CATEGORY,
    ORIGINAL,
    SAMPLE,
    UNSCORED_RULES,
)
from ..intervals import eti
from .replay_bootstrap import (
    _bootstrap,
    _check_replay,
    _check_support,
    _ratio,
    _table,
    _Units,
    bootstrap_support,
    cluster_units,
    count_columns,
    to_units,
)


# ------------------------------------------------------------------------------------------
# prevalence, deltas, families, leave-one-participant-out
# ------------------------------------------------------------------------------------------
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

    A code's prevalence is hits / scored samples of that model and code; a category's pools the
    hits and scored samples of all its codes (not the mean of code means), as the DelusionEval
    release computes them.

    Parameters
    ----------
    ds
        Replay Dataset (``hit (sample, model, code)``, code coord ``category``, sample coords
        ``participant, conversation``).
    n_boot, seed, ci_prob
        Resamples, seed and interval probability (DelusionEval: 10,000, 42, 0.95).
    cluster
        ``two-stage`` (participants, then conversations within participant; default),
        ``participant``, ``conversation`` or ``none`` (samples i.i.d., the release's plain
        percentile bootstrap).
    by
        ``model`` or a model coord (e.g. ``family``) whose models are pooled.
    levels
        ``category`` rows (pooled over all samples of the category's codes; codes with category
        ``""`` get none) and/or ``code`` rows.
    support
        Which clusters a resample draws for a cell (a model x code or model x category):

        - ``unconditional``: every cluster of the study, in every cell. A cluster without rows
          in the cell adds nothing, so the number of clusters (and rows) behind a cell varies
          from resample to resample: the study's design (which participants reach which codes)
          is treated as random, like the rows.
        - ``conditional``: only the clusters with rows in the cell (the DelusionEval release's
          ``hierarchical_weighted_mean_ci`` and, with ``cluster="none"``, its i.i.d.
          ``bootstrap_binary_ci``): with ``P_c`` supporting participants each resample draws
          ``P_c`` of them, then their supporting conversations; the support is held fixed.

        The default (:data:`~delusion_bayes.data.replay_schema.DEFAULT_SUPPORT`) was chosen by the coverage
        simulation in ``experiments/bench/coverage_replay_support.py`` (numbers in
        ``docs/real_data.md``).
    unscored
        Rows the study holds without a score (``ds.unscored``, e.g. the release's 188 original-
        transcript rows the judge did not score): ``exclude`` (default) leaves them out of
        numerator and denominator everywhere; ``zero`` counts them as 0 in the point estimate
        and leaves them out of the CI, as the release does (its original-transcript estimates
        then can lie outside their own interval). No effect without an ``unscored`` variable.

    Returns
    -------
    pandas.DataFrame
        ``<by>, level, category, code, estimate, ci_low, ci_high, n_hits, n, n_unscored,
        cluster, support, n_boot, ci_prob`` (``code`` is ``""`` on category rows).

    Notes
    -----
    Missing scores (NaN hits) are left out of numerator and denominator. A resample whose
    denominator is 0 gives NaN and is ignored by the percentiles.
    """
    _check_replay(ds)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if unscored not in UNSCORED_RULES:
        raise ValueError(f"unscored must be one of {list(UNSCORED_RULES)}, got {unscored!r}")
    _check_support(support)
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
    out = _table(labels, num.sum(0), den_tot, num_b, den_b, ci_prob, cluster, n_boot)
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
) -> pd.DataFrame:
    """Prevalence of each model minus the baseline's (the original transcript), paired resamples.

    Both prevalences are recomputed on the same resample, so the interval accounts for the
    samples being shared (DelusionEval, "Main results": every model below the original-transcript
    baseline on four of five categories). The release instead resamples the two arms
    independently (unpaired) and repeats the original's rows 5 times; its point estimates are
    the same, its intervals wider.

    ``support="conditional"`` resamples, per model x cell, the clusters with rows in the model's
    or the baseline's cell (one shared resample for the pair; see :func:`replay_prevalence`).
    ``paired=False`` resamples the model and the baseline independently (the release's
    ``bootstrap_delta_ci``; it also repeats the original's rows 5 times, which is not
    reproduced): same estimates, wider intervals where the arms are correlated.

    Returns
    -------
    pandas.DataFrame
        ``model, level, category, code, estimate (model - baseline), ci_low, ci_high,
        prevalence, baseline_prevalence, p_boot, ...``; ``p_boot`` is the two-sided bootstrap
        proportion ``2 min(P*(delta <= 0), P*(delta >= 0))`` (a descriptive check, not a test
        calibrated for few clusters).
    """
    _check_replay(ds)
    models = [str(m) for m in ds[MODEL].values]
    if baseline not in models:
        raise ValueError(f"baseline model {baseline!r} not in the study's models {models}")
    _check_support(support)
    units = cluster_units(ds, cluster)
    num, den, labels = count_columns(ds, levels=levels)
    num_u, den_u = to_units(num, units), to_units(den, units)
    est = _ratio(num.sum(0), den.sum(0))
    per_model = len(labels) // len(models)
    b0 = models.index(baseline) * per_model
    bsl = slice(b0, b0 + per_model)
    others = [i for i, m in enumerate(models) if m != baseline]
    if not paired:
        other = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
        boots = []
        for s_ in (seed, other):
            nb, db = bootstrap_support(num_u, den_u, units, n_boot, s_, support)
            boots.append(_ratio(nb, db))
        pairs = {
            i: (boots[0][:, i * per_model : (i + 1) * per_model], boots[1][:, bsl]) for i in others
        }
    elif support == "unconditional":
        num_b, den_b, _ = _bootstrap(num_u, den_u, units, n_boot, seed, progress=progress)
        boot = _ratio(num_b, den_b)
        pairs = {i: (boot[:, i * per_model : (i + 1) * per_model], boot[:, bsl]) for i in others}
    else:
        # per model: [model columns | a copy of the baseline's], each pair with the union support
        cols = [np.r_[i * per_model : (i + 1) * per_model, b0 : b0 + per_model] for i in others]
        idx = np.concatenate(cols)
        n2, d2 = num_u[:, idx], den_u[:, idx]
        masks = []
        for i in others:
            m_den, b_den = den_u[:, i * per_model : (i + 1) * per_model], den_u[:, bsl]
            union = (m_den > 0) | (b_den > 0)
            masks.append(np.concatenate([union, union], axis=1))
        num_b, den_b = bootstrap_support(
            n2, d2, units, n_boot, seed, support, masks=np.concatenate(masks, axis=1)
        )
        boot = _ratio(num_b, den_b)
        pairs = {}
        for j, i in enumerate(others):
            base = j * 2 * per_model
            pairs[i] = (
                boot[:, base : base + per_model],
                boot[:, base + per_model : base + 2 * per_model],
            )
    rows = []
    for i, m in enumerate(models):
        if m == baseline:
            continue
        sl = slice(i * per_model, (i + 1) * per_model)
        d_est = est[sl] - est[bsl]
        d_boot = pairs[i][0] - pairs[i][1]
        lo, hi = eti(d_boot, ci_prob)
        with np.errstate(invalid="ignore"):
            p = 2 * np.minimum(np.nanmean(d_boot <= 0, axis=0), np.nanmean(d_boot >= 0, axis=0))
        part = labels.iloc[sl].copy()
        part["baseline"] = baseline
        part["estimate"] = d_est
        part["ci_low"] = lo
        part["ci_high"] = hi
        part["prevalence"] = est[sl]
        part["baseline_prevalence"] = est[b0 : b0 + per_model]
        part["p_boot"] = np.minimum(p, 1.0)
        rows.append(part)
    out = pd.concat(rows, ignore_index=True)
    out["cluster"] = cluster
    out["support"] = support
    out["paired"] = paired
    out["n_boot"] = n_boot
    out["ci_prob"] = ci_prob
    return out


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

    Returns
    -------
    pandas.DataFrame
        ``left_out, model, level, category, code, estimate, full_estimate, change`` plus
        ``delta, full_delta`` when ``baseline`` is a model of the study. With 18 participants a
        single person can carry a code; this table shows who.
    """
    _check_replay(ds)
    num, den, labels = count_columns(ds, levels=levels)
    part_codes, part_names = pd.factorize(ds["participant"].values)
    units = _Units(part_codes, np.arange(len(part_names)), "participant")
    num_p, den_p = to_units(num, units), to_units(den, units)
    tot_n, tot_d = num.sum(0), den.sum(0)
    full = _ratio(tot_n, tot_d)
    models = [str(m) for m in ds[MODEL].values]
    per_model = len(labels) // len(models)
    use_base = baseline is not None and baseline in models
    rows = []
    for p, name in enumerate(part_names):
        est = _ratio(tot_n - num_p[p], tot_d - den_p[p])
        part = labels.copy()
        part.insert(0, "left_out", str(name))
        part["estimate"] = est
        part["full_estimate"] = full
        part["change"] = est - full
        if use_base:
            b0 = models.index(baseline) * per_model
            base = np.tile(est[b0 : b0 + per_model], len(models))
            base_full = np.tile(full[b0 : b0 + per_model], len(models))
            part["delta"] = est - base
            part["full_delta"] = full - base_full
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
    cats = [str(c) for c in ds[CATEGORY].values]
    rows = []
    for m in ds[MODEL].values:
        for cat in dict.fromkeys(cats):
            if cat == NO_CATEGORY:
                continue
            sel = [c == cat for c in cats]
            rows.append(
                {
                    "model": str(m),
                    "category": cat,
                    "truth": float(tp.sel({MODEL: m}).values[sel].mean()),
                }
            )
    return pd.DataFrame(rows)
