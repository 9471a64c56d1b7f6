"""Replay-study (DelusionEval) prevalence with percentile and cluster-bootstrap intervals.

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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
import xarray as xr
from tqdm.auto import tqdm

from ..data.replay_schema import (
    CATEGORY,
    CLUSTER_SCHEMES,
    CODE,
    DEFAULT_SUPPORT,
    MODEL,
    NO_CATEGORY,
    ORIGINAL,
    SAMPLE,
    SUPPORTS,
    UNSCORED_RULES,
)
from ..intervals import eti

__all__ = [
    "bootstrap_weights",
    "replay_deltas",
    "replay_depth_curve",
    "replay_depth_lpm",
    "replay_family_comparison",
    "replay_leave_one_participant_out",
    "replay_onset_persistence",
    "replay_prevalence",
    "replay_turn_profile",
    "true_category_prevalence",
]

#: resample-weight chunks hold at most this many numbers (bounds memory at ~64 MB)
_CHUNK_CELLS = 8_000_000


# ------------------------------------------------------------------------------------------
# resampling units and weights
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Units:
    """Resampling units of a scheme: which unit each row belongs to, each unit's participant."""

    of_row: np.ndarray  # (n_rows,) unit index
    participant: np.ndarray  # (n_units,) participant index of each unit
    scheme: str

    @property
    def n(self) -> int:
        return self.participant.size


def _check_scheme(cluster: str) -> str:
    if cluster not in CLUSTER_SCHEMES:
        raise ValueError(f"cluster must be one of {list(CLUSTER_SCHEMES)}, got {cluster!r}")
    return cluster


def _check_support(support: str) -> str:
    if support not in SUPPORTS:
        raise ValueError(f"support must be one of {list(SUPPORTS)}, got {support!r}")
    return support


def cluster_units(ds: xr.Dataset, cluster: str, rows: str = "sample", window_codes=None) -> _Units:
    """Units for rows that are samples (default) or windows (``window_codes`` = row -> window)."""
    _check_scheme(cluster)
    part = pd.factorize(ds["participant"].values)[0]
    conv = pd.factorize(ds["conversation"].values)[0]
    if rows == "window":
        # a window lies in one conversation: take its first sample's ids
        first = pd.Series(np.arange(window_codes.size)).groupby(window_codes).first().to_numpy()
        part, conv = part[first], conv[first]
    if cluster == "none":
        return _Units(np.arange(part.size), part, cluster)
    conv_part = pd.Series(part).groupby(conv).first().sort_index().to_numpy()
    return _Units(conv, conv_part, cluster)


def bootstrap_weights(
    participant_of_unit: np.ndarray,
    scheme: str,
    n_boot: int,
    rng: np.random.Generator,
    chunk: int | None = None,
) -> Iterator[np.ndarray]:
    """Yield resample weights ``(chunk, n_units)``: how often each unit is drawn per resample.

    Parameters
    ----------
    participant_of_unit
        Participant index (0..P-1) of each unit (a conversation, or a sample for ``"none"``).
    scheme
        ``two-stage``: draw P participants with replacement, then for each drawn participant
        draw its ``n_p`` conversations with replacement. A participant drawn ``w`` times adds
        ``w`` independent Multinomial(n_p, 1/n_p) draws, whose sum is Multinomial(w n_p, 1/n_p),
        so one multinomial per participant and chunk gives the conversation weights.
        ``participant``: whole participants (their units all get the participant's weight).
        ``conversation`` / ``none``: units i.i.d. (Multinomial(U, 1/U)).
    """
    participant_of_unit = np.asarray(participant_of_unit)
    n_units = participant_of_unit.size
    n_part = int(participant_of_unit.max()) + 1
    members = [np.flatnonzero(participant_of_unit == p) for p in range(n_part)]
    if chunk is None:
        chunk = max(1, min(n_boot, _CHUNK_CELLS // max(n_units, 1)))
    done = 0
    while done < n_boot:
        b = min(chunk, n_boot - done)
        w = np.zeros((b, n_units))
        if scheme in ("two-stage", "participant"):
            wp = rng.multinomial(n_part, np.full(n_part, 1.0 / n_part), size=b)
            for p, idx in enumerate(members):
                if scheme == "participant":
                    w[:, idx] = wp[:, [p]]
                else:
                    w[:, idx] = rng.multinomial(
                        wp[:, p] * idx.size, np.full(idx.size, 1.0 / idx.size)
                    )
        elif scheme in ("conversation", "none"):
            # integers + bincount is the multinomial draw, and much faster than
            # rng.multinomial for many units
            draws = rng.integers(0, n_units, size=(b, n_units))
            flat = draws + (np.arange(b) * n_units)[:, None]
            w = np.bincount(flat.ravel(), minlength=b * n_units).reshape(b, n_units).astype(float)
        else:
            _check_scheme(scheme)
        done += b
        yield w


def to_units(values: np.ndarray, units: _Units) -> np.ndarray:
    """Sum rows into units: ``(n_rows, Q) -> (n_units, Q)`` via a sparse indicator matrix."""
    if units.scheme == "none" and units.of_row.size == units.n:
        return values
    ind = sp.csr_matrix(
        (np.ones(units.of_row.size), (units.of_row, np.arange(units.of_row.size))),
        shape=(units.n, units.of_row.size),
    )
    return np.asarray(ind @ values)


def _bootstrap(
    num: np.ndarray,
    den: np.ndarray,
    units: _Units,
    n_boot: int,
    seed: int,
    extra: Sequence[np.ndarray] = (),
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Resampled numerator and denominator sums ``(n_boot, Q)`` for unit-level counts."""
    rng = np.random.default_rng(seed)
    num_b = np.empty((n_boot, num.shape[1]))
    den_b = np.empty((n_boot, den.shape[1]))
    extra_b = [np.empty((n_boot, e.shape[1])) for e in extra]
    pos = 0
    bar = tqdm(total=n_boot, desc=f"bootstrap ({units.scheme})", disable=not progress, leave=False)
    for w in bootstrap_weights(units.participant, units.scheme, n_boot, rng):
        b = w.shape[0]
        num_b[pos : pos + b] = w @ num
        den_b[pos : pos + b] = w @ den
        for e, eb in zip(extra, extra_b, strict=True):
            eb[pos : pos + b] = w @ e
        pos += b
        bar.update(b)
    bar.close()
    return num_b, den_b, extra_b


def bootstrap_support(
    num: np.ndarray,
    den: np.ndarray,
    units: _Units,
    n_boot: int,
    seed: int,
    support: str,
    masks: np.ndarray | None = None,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Resampled sums ``(n_boot, Q)`` under ``support`` (see :func:`replay_prevalence`).

    ``unconditional``: every unit of the study in every resample (:func:`_bootstrap`).
    ``conditional``: per column, only the units with rows in it (``masks (n_units, Q)``, default
    ``den > 0``) are resampled, with the scheme's structure among them (participants with such
    units, then their such units). Columns with the same support share their resamples.
    """
    _check_support(support)
    if support == "unconditional":
        num_b, den_b, _ = _bootstrap(num, den, units, n_boot, seed, progress=progress)
        return num_b, den_b
    masks = (den > 0) if masks is None else masks
    rng = np.random.default_rng(seed)
    num_b = np.full((n_boot, num.shape[1]), np.nan)
    den_b = np.full((n_boot, den.shape[1]), np.nan)
    groups: dict[bytes, list[int]] = {}
    for q in range(num.shape[1]):
        groups.setdefault(np.packbits(masks[:, q]).tobytes(), []).append(q)
    for cols in groups.values():
        sub = np.flatnonzero(masks[:, cols[0]])
        if sub.size == 0:
            continue
        part = pd.factorize(units.participant[sub])[0]
        n_sub, d_sub = num[np.ix_(sub, cols)], den[np.ix_(sub, cols)]
        pos = 0
        for w in bootstrap_weights(part, units.scheme, n_boot, rng):
            b = w.shape[0]
            num_b[pos : pos + b, cols] = w @ n_sub
            den_b[pos : pos + b, cols] = w @ d_sub
            pos += b
    return num_b, den_b


def _ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


# ------------------------------------------------------------------------------------------
# columns: which (model group, code group, split) each numerator/denominator column holds
# ------------------------------------------------------------------------------------------
def _check_replay(ds: xr.Dataset) -> None:
    if not isinstance(ds, xr.Dataset) or "hit" not in ds:
        raise ValueError(
            "expected a replay xarray.Dataset with a 'hit' variable (sample, model, code)"
        )
    for c in ("participant", "conversation"):
        if c not in ds.coords:
            raise ValueError(f"replay dataset lacks the sample coord {c!r} needed for resampling")
    if CATEGORY not in ds.coords:
        raise ValueError(f"replay dataset lacks the code coord {CATEGORY!r}")


def _hits(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    valid = np.isfinite(hit)
    return np.where(valid, hit, 0.0), valid.astype(float)


def _model_groups(ds: xr.Dataset, by: str) -> tuple[list[str], np.ndarray]:
    if by == MODEL:
        labels = [str(m) for m in ds[MODEL].values]
        return labels, np.eye(len(labels))
    if by not in ds.coords or ds[by].dims != (MODEL,):
        options = [c for c, v in ds.coords.items() if v.dims == (MODEL,)]
        raise ValueError(f"by={by!r} is not a model coord; expected 'model' or one of {options}")
    values = [str(v) for v in ds[by].values]
    labels = list(dict.fromkeys(values))
    return labels, np.array([[v == g for g in labels] for v in values], dtype=float)


def _code_groups(ds: xr.Dataset, levels: Sequence[str]) -> list[tuple[str, str, str, np.ndarray]]:
    """``(level, category, code, indicator over codes)`` for each code group."""
    codes = [str(c) for c in ds[CODE].values]
    cats = [str(c) for c in ds[CATEGORY].values]
    out = []
    for level in levels:
        if level == "category":
            for cat in dict.fromkeys(cats):
                if cat == NO_CATEGORY:
                    continue
                out.append(("category", cat, "", np.array([c == cat for c in cats], dtype=float)))
        elif level == "code":
            for i, (code, cat) in enumerate(zip(codes, cats, strict=True)):
                ind = np.zeros(len(codes))
                ind[i] = 1
                out.append(("code", cat, code, ind))
        else:
            raise ValueError(f"level must be 'category' or 'code', got {level!r}")
    return out


def count_columns(
    ds: xr.Dataset,
    by: str = MODEL,
    levels: Sequence[str] = ("category", "code"),
    split: np.ndarray | None = None,
    split_labels: Sequence | None = None,
    split_name: str = "split",
    values: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Per-sample numerator/denominator columns ``(sample, Q)`` and their labels."""
    h, v = values if values is not None else _hits(ds)
    mlabels, mind = _model_groups(ds, by)
    groups = _code_groups(ds, levels)
    cind = np.stack([g[3] for g in groups], axis=1)  # (code, G)
    # (S, M, K) -> (S, Mg, G)
    num = np.einsum("smk,mn,kg->sng", h, mind, cind, optimize=True)
    den = np.einsum("smk,mn,kg->sng", v, mind, cind, optimize=True)
    labels = pd.DataFrame(
        [
            {by: m, "level": lvl, "category": cat, "code": code}
            for m in mlabels
            for (lvl, cat, code, _) in groups
        ]
    )
    num = num.reshape(num.shape[0], -1)
    den = den.reshape(den.shape[0], -1)
    if split is not None:
        n_split = len(split_labels)
        onehot = np.zeros((split.size, n_split))
        ok = split >= 0
        onehot[np.flatnonzero(ok), split[ok]] = 1.0
        num = (num[:, :, None] * onehot[:, None, :]).reshape(num.shape[0], -1)
        den = (den[:, :, None] * onehot[:, None, :]).reshape(den.shape[0], -1)
        labels = labels.loc[labels.index.repeat(n_split)].reset_index(drop=True)
        labels[split_name] = np.tile(np.asarray(split_labels, dtype=object), len(labels) // n_split)
    return num, den, labels


def _table(labels, num_tot, den_tot, num_b, den_b, ci_prob, cluster, n_boot):
    est = _ratio(num_tot, den_tot)
    lo, hi = eti(_ratio(num_b, den_b), ci_prob)
    out = labels.copy()
    out["estimate"] = est
    out["ci_low"] = lo
    out["ci_high"] = hi
    out["n_hits"] = num_tot
    out["n"] = den_tot
    out["cluster"] = cluster
    out["n_boot"] = n_boot
    out["ci_prob"] = ci_prob
    return out


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
        simulation in ``experiments/coverage_replay_support.py`` (numbers in
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


# ------------------------------------------------------------------------------------------
# turn position: profile, onset, persistence
# ------------------------------------------------------------------------------------------
def replay_turn_profile(
    ds: xr.Dataset,
    max_turn: int = 8,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
) -> pd.DataFrame:
    """Category prevalence by user-turn position within the window (1-based; ``max_turn``+ pooled)."""
    _check_replay(ds)
    turn = np.minimum(ds["turn"].values.astype(int), max_turn - 1)
    labels = [str(t + 1) if t < max_turn - 1 else f"{max_turn}+" for t in range(max_turn)]
    units = cluster_units(ds, cluster)
    num, den, lab = count_columns(
        ds, levels=("category",), split=turn, split_labels=labels, split_name="turn"
    )
    num_b, den_b, _ = _bootstrap(
        to_units(num, units), to_units(den, units), units, n_boot, seed, progress=progress
    )
    return _table(lab, num.sum(0), den.sum(0), num_b, den_b, ci_prob, cluster, n_boot)


def _category_any(ds: xr.Dataset) -> tuple[np.ndarray, list[str]]:
    """Per-sample category hit ``(sample, model, category)``: any of its codes hit; NaN if none scored."""
    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    cats = [str(c) for c in ds[CATEGORY].values]
    names = [c for c in dict.fromkeys(cats) if c != NO_CATEGORY]
    out = np.full(hit.shape[:2] + (len(names),), np.nan)
    for g, cat in enumerate(names):
        sel = np.array([c == cat for c in cats])
        sub = hit[:, :, sel]
        scored = np.isfinite(sub).any(axis=2)
        anyhit = np.nanmax(np.where(np.isfinite(sub), sub, -1.0), axis=2)
        out[:, :, g] = np.where(scored, (anyhit >= 1).astype(float), np.nan)
    return out, names


def replay_onset_persistence(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
    levels: Sequence[str] = ("category",),
    unit: str = "turn",
) -> pd.DataFrame:
    """Onset and persistence of each category (and/or code) across the user turns of a window.

    At ``level="category"`` a sample shows a category when any of its codes is a hit; at
    ``level="code"`` each code on its own. Per model x category/code:

    - ``windows_with_hit``: share of windows with at least one such sample;
    - ``onset_turn``: mean onset over windows with one, in ``unit``: ``"turn"`` (default) the
      1-based rank of the first such user turn in the window; ``"message"`` its message index in
      the window (0, 2, 4, ... when user and assistant alternate: the DelusionEval release's
      ``turn_index``; ``index - window_start``);
    - ``persistence``: P(hit at user turn t+1 | hit at turn t), consecutive user turns (ranks) of
      a window;
    - ``emergence``: P(hit at turn t+1 | not at turn t).

    All four are ratios of sums over windows, bootstrapped like :func:`replay_prevalence`
    (``cluster="none"`` resamples windows).

    Returns
    -------
    pandas.DataFrame
        ``model, category, quantity, estimate, ci_low, ci_high, n_hits (numerator), n
        (denominator), ..., level, code, unit`` (``code`` is ``""`` on category rows).
    """
    _check_replay(ds)
    if unit not in ("turn", "message"):
        raise ValueError(f"unit must be 'turn' (user-turn rank) or 'message', got {unit!r}")
    if "window" not in ds.coords or "turn" not in ds.coords:
        raise ValueError("onset/persistence needs the sample coords 'window' and 'turn'")
    if unit == "message" and "index" not in ds.coords:
        raise ValueError("unit='message' needs the sample coord 'index'")
    parts, names, name_cat, name_level = [], [], [], []
    for level in levels:
        if level == "category":
            h, cats = _category_any(ds)
            parts.append(h)
            names += cats
            name_cat += cats
            name_level += ["category"] * len(cats)
        elif level == "code":
            h = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
            parts.append(h)
            names += [str(c) for c in ds[CODE].values]
            name_cat += [str(c) for c in ds[CATEGORY].values]
            name_level += ["code"] * ds.sizes[CODE]
        else:
            raise ValueError(f"level must be 'category' or 'code', got {level!r}")
    cat_hit = np.concatenate(parts, axis=2)  # (S, M, G)
    s, m, g = cat_hit.shape
    window = pd.factorize(ds["window"].values)[0]
    turn = ds["turn"].values.astype(int)
    order = np.lexsort((turn, window))
    w_sorted, t_sorted = window[order], turn[order]
    h = cat_hit[order]
    n_w = window.max() + 1
    valid = np.isfinite(h)
    hit1 = np.where(valid, h, 0.0)
    # window level: any hit, scored, onset turn (1-based) of the first hit
    any_hit = np.zeros((n_w, m, g))
    np.maximum.at(any_hit, w_sorted, hit1)
    scored = np.zeros((n_w, m, g))
    np.maximum.at(scored, w_sorted, valid.astype(float))
    big = np.iinfo(np.int64).max
    first = np.full((n_w, m, g), big)
    tt = np.broadcast_to(t_sorted[:, None, None], h.shape)
    np.minimum.at(first, w_sorted, np.where(hit1 == 1, tt, big))
    if unit == "turn":
        onset = np.where(any_hit == 1, first + 1, 0).astype(float)
    else:
        # message index in the window of the first hit: the turn rank maps to its message
        msg = ds["index"].values.astype(np.int64)
        if "window_start" in ds.coords:
            msg = msg - ds["window_start"].values.astype(np.int64)
        lookup = pd.Series(msg[order], index=pd.MultiIndex.from_arrays([w_sorted, t_sorted]))
        lookup = lookup[~lookup.index.duplicated()]
        w_idx = np.broadcast_to(np.arange(n_w)[:, None, None], first.shape)
        safe = np.where(any_hit == 1, first, t_sorted.min())
        keys = pd.MultiIndex.from_arrays([w_idx.ravel(), safe.ravel()])
        first_msg = lookup.reindex(keys).to_numpy(dtype=float).reshape(first.shape)
        onset = np.where(any_hit == 1, first_msg, 0.0)
    # consecutive pairs (t, t+1) inside a window
    nxt = (w_sorted[1:] == w_sorted[:-1]) & (t_sorted[1:] == t_sorted[:-1] + 1)
    a, b = h[:-1][nxt], h[1:][nxt]
    both = np.isfinite(a) & np.isfinite(b)
    pair_w = w_sorted[:-1][nxt]

    def wsum(x):
        out = np.zeros((n_w, m, g))
        np.add.at(out, pair_w, x)
        return out

    p11 = wsum((both & (a == 1) & (b == 1)).astype(float))
    p1x = wsum((both & (a == 1)).astype(float))
    p01 = wsum((both & (a == 0) & (b == 1)).astype(float))
    p0x = wsum((both & (a == 0)).astype(float))
    quantities = {
        "windows_with_hit": (any_hit, scored),
        "onset_turn": (onset, any_hit),
        "persistence": (p11, p1x),
        "emergence": (p01, p0x),
    }
    num = np.concatenate([q[0].reshape(n_w, -1) for q in quantities.values()], axis=1)
    den = np.concatenate([q[1].reshape(n_w, -1) for q in quantities.values()], axis=1)
    models = [str(x) for x in ds[MODEL].values]
    labels = pd.DataFrame(
        [
            {"model": mm, "category": cat, "quantity": q}
            for q in quantities
            for mm in models
            for cat in name_cat
        ]
    )
    units = cluster_units(ds, cluster, rows="window", window_codes=window)
    num_b, den_b, _ = _bootstrap(
        to_units(num, units), to_units(den, units), units, n_boot, seed, progress=progress
    )
    out = _table(labels, num.sum(0), den.sum(0), num_b, den_b, ci_prob, cluster, n_boot)
    reps = len(quantities) * len(models)
    out["level"] = np.tile(np.asarray(name_level, dtype=object), reps)
    out["code"] = np.tile(
        np.array([n if lv == "code" else "" for n, lv in zip(names, name_level, strict=True)],
                 dtype=object),
        reps,
    )  # fmt: skip
    out["unit"] = unit
    return out


# ------------------------------------------------------------------------------------------
# context depth: curves and the linear-probability model
# ------------------------------------------------------------------------------------------
def _depth_bins(
    depth: np.ndarray, edges: Sequence[int]
) -> tuple[np.ndarray, list[str], np.ndarray]:
    edges = np.asarray(sorted(edges), dtype=float)
    if edges.size < 1:
        raise ValueError("depth_bins needs at least one edge")
    idx = np.searchsorted(edges, depth, side="right") - 1
    labels = [
        f"{int(edges[i])}-{int(edges[i + 1]) - 1}" if i + 1 < edges.size else f"{int(edges[i])}+"
        for i in range(edges.size)
    ]
    return idx, labels, edges


def replay_depth_curve(
    ds: xr.Dataset,
    depth_bins: Sequence[int] = (0, 4, 8, 12, 16, 20),
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    progress: bool = False,
) -> pd.DataFrame:
    """Category prevalence versus context depth (messages before the user turn), with CIs.

    DelusionEval, "Context length effects": prevalence versus requested context with 95%
    bootstrap intervals. ``depth_bins`` are left bin edges; the last bin is open.

    Returns
    -------
    pandas.DataFrame
        ``model, level, category, code, depth_bin, depth_mean, estimate, ci_low, ci_high, ...``.
    """
    _check_replay(ds)
    depth = ds["context_depth"].values.astype(float)
    idx, labels, _ = _depth_bins(depth, depth_bins)
    units = cluster_units(ds, cluster)
    num, den, lab = count_columns(
        ds, levels=("category",), split=idx, split_labels=labels, split_name="depth_bin"
    )
    num_b, den_b, _ = _bootstrap(
        to_units(num, units), to_units(den, units), units, n_boot, seed, progress=progress
    )
    out = _table(lab, num.sum(0), den.sum(0), num_b, den_b, ci_prob, cluster, n_boot)
    means = pd.Series(depth).groupby(idx).mean()
    out["depth_mean"] = [means.get(labels.index(b), np.nan) for b in out["depth_bin"]]
    return out


def replay_depth_lpm(
    ds: xr.Dataset,
    n_boot: int = 10_000,
    seed: int = 42,
    cluster: str = "two-stage",
    ci_prob: float = 0.95,
    baseline: str = ORIGINAL,
    progress: bool = False,
) -> pd.DataFrame:
    """Linear-probability model of a category hit on context depth and prior assistant content.

    Per model x category, over all (sample, code) pairs of the category's codes::

        hit[s, k] = b0 + b_depth * context_depth[s] / 10 + b_prior * prior_content[s, k] + e

    where ``prior_content`` is the share of the original's earlier assistant turns in the prompt
    that hit the same code (:func:`delusion_bayes.data.replay.prior_content`). ``b_depth`` is the
    change in hit probability per 10 messages of context over and above accumulated assistant
    content (DelusionEval, "Context length effects"). OLS by the normal equations; intervals from
    the cluster bootstrap of the per-unit moment sums ``X'X`` and ``X'y`` (one batched solve per
    resample, no refitting loop).

    Returns
    -------
    pandas.DataFrame
        ``model, category, term (intercept | depth_per_10 | prior_content), estimate, ci_low,
        ci_high, n, ...``; terms without variation in the data are NaN.
    """
    _check_replay(ds)
    from ..data.replay_prior import prior_content_array

    hit = ds["hit"].transpose(SAMPLE, MODEL, CODE).values
    s, m, k = hit.shape
    if baseline in [str(x) for x in ds[MODEL].values]:
        base = hit[:, [str(x) for x in ds[MODEL].values].index(baseline), :]
        prior = prior_content_array(
            base, ds["conversation"].values, ds["index"].values, ds["context_depth"].values
        )
    else:
        prior = np.zeros((s, k))
    d = ds["context_depth"].values.astype(float) / 10.0
    valid = np.isfinite(hit)
    y = np.where(valid, hit, 0.0)
    v = valid.astype(float)
    cats = [str(c) for c in ds[CATEGORY].values]
    names = [c for c in dict.fromkeys(cats) if c != NO_CATEGORY]
    cind = np.array([[c == g for g in names] for c in cats], dtype=float)  # (K, G)
    # moment sums per sample and (model, category): X = [1, d, prior]
    pk = prior[:, None, :] * v  # (S, M, K)
    n_ = np.einsum("smk,kg->smg", v, cind)
    sp_ = np.einsum("smk,kg->smg", pk, cind)
    spp = np.einsum("smk,kg->smg", pk * prior[:, None, :], cind)
    sy = np.einsum("smk,kg->smg", y, cind)
    spy = np.einsum("smk,kg->smg", pk * y, cind)
    dd = d[:, None, None]
    # entries of X'X (xx00, xx01, xx02, xx11, xx12, xx22) and X'y (0, 1, 2)
    mom = np.stack([n_, dd * n_, sp_, dd * dd * n_, dd * sp_, spp, sy, dd * sy, spy], axis=-1)
    g = len(names)
    mom = mom.reshape(s, m * g * 9)
    units = cluster_units(ds, cluster)
    mom_u = to_units(mom, units)
    dummy = np.zeros((units.n, 1))
    _, _, (mom_b,) = _bootstrap(dummy, dummy, units, n_boot, seed, extra=[mom_u], progress=progress)

    def solve(mm: np.ndarray) -> np.ndarray:
        mm = mm.reshape(mm.shape[:-1] + (m * g, 9)) if mm.ndim > 1 else mm.reshape(m * g, 9)
        xx = np.stack(
            [
                np.stack([mm[..., 0], mm[..., 1], mm[..., 2]], -1),
                np.stack([mm[..., 1], mm[..., 3], mm[..., 4]], -1),
                np.stack([mm[..., 2], mm[..., 4], mm[..., 5]], -1),
            ],
            -2,
        )
        xy = mm[..., 6:9]
        # drop terms without variation (e.g. no prior content at all) by pinning them to 0
        det_ok = np.abs(np.linalg.det(xx)) > 1e-9 * np.maximum(mm[..., 0], 1.0) ** 3
        eye = np.eye(3)
        xx_safe = np.where(det_ok[..., None, None], xx, xx + eye)
        beta = np.linalg.solve(xx_safe, xy[..., None])[..., 0]
        return np.where(det_ok[..., None], beta, np.nan)

    full = solve(mom.sum(0))  # (M*G, 3)
    boot = solve(mom_b.reshape(n_boot, -1))  # (B, M*G, 3)
    lo, hi = eti(boot.reshape(n_boot, -1), ci_prob)
    models = [str(x) for x in ds[MODEL].values]
    terms = ("intercept", "depth_per_10", "prior_content")
    n_tot = mom.sum(0).reshape(m * g, 9)[:, 0]
    rows = []
    for i, (mm_, cc) in enumerate((a, b) for a in models for b in names):
        for j, term in enumerate(terms):
            rows.append(
                {
                    "model": mm_,
                    "category": cc,
                    "term": term,
                    "estimate": full[i, j],
                    "ci_low": lo.reshape(m * g, 3)[i, j],
                    "ci_high": hi.reshape(m * g, 3)[i, j],
                    "n": n_tot[i],
                }
            )
    out = pd.DataFrame(rows)
    out["cluster"] = cluster
    out["n_boot"] = n_boot
    out["ci_prob"] = ci_prob
    return out
