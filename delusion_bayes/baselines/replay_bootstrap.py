"""The replay bootstrap machinery: resampling units, multinomial weights, hit/total columns.

Every replay quantity is a ratio of sums, so per-unit hit/total matrices ``H, T (unit x column)``
and resample weights ``W (resample x unit)`` (multinomial over participants, then over each
participant's conversations; Davison & Hinkley 1997, sec. 3.8) give all resamples at once as
``(W @ H) / (W @ T)``, with no Python loop per resample.
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
    MODEL,
    NO_CATEGORY,
    SAMPLE,
    SUPPORTS,
)
from ..intervals import eti

#: resample-weight chunks hold at most this many numbers (bounds memory at ~64 MB)
_CHUNK_CELLS = 8_000_000


@dataclass(frozen=True)
class ClusterUnits:
    """Resampling units of a scheme: which unit each row belongs to, each unit's participant."""

    of_row: np.ndarray  # (n_rows,) unit index
    participant: np.ndarray  # (n_units,) participant index of each unit
    scheme: str

    @property
    def n(self) -> int:
        return self.participant.size


def check_choice(name: str, value: str, options: Sequence[str]) -> None:
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


def cluster_units(
    ds: xr.Dataset, cluster: str, rows: str = "sample", window_codes=None
) -> ClusterUnits:
    """Units for rows that are samples (default) or windows (``window_codes`` = row -> window)."""
    check_choice("cluster", cluster, CLUSTER_SCHEMES)
    part = pd.factorize(ds["participant"].values)[0]
    conv = pd.factorize(ds["conversation"].values)[0]
    if rows == "window":
        # a window lies in one conversation: take its first sample's ids
        first = pd.Series(np.arange(window_codes.size)).groupby(window_codes).first().to_numpy()
        part, conv = part[first], conv[first]
    if cluster == "none":
        return ClusterUnits(np.arange(part.size), part, cluster)
    conv_part = pd.Series(part).groupby(conv).first().sort_index().to_numpy()
    return ClusterUnits(conv, conv_part, cluster)


def bootstrap_weights(
    participant_of_unit: np.ndarray,
    scheme: str,
    n_boot: int,
    rng: np.random.Generator,
    chunk: int | None = None,
) -> Iterator[np.ndarray]:
    """Yield resample weights ``(chunk, n_units)``: how often each unit is drawn per resample.

    ``participant_of_unit``: participant index (0..P-1) of each unit. ``scheme``: ``two-stage``
    draws P participants, then each drawn participant's ``n_p`` units, with replacement (``w``
    draws of a participant sum to one Multinomial(w n_p, 1/n_p)); ``participant``: whole
    participants; ``conversation`` / ``none``: units i.i.d. (Multinomial(U, 1/U)).
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
            check_choice("cluster", scheme, CLUSTER_SCHEMES)
        done += b
        yield w


def to_units(values: np.ndarray, units: ClusterUnits) -> np.ndarray:
    """Sum rows into units: ``(n_rows, Q) -> (n_units, Q)`` via a sparse indicator matrix."""
    if units.scheme == "none" and units.of_row.size == units.n:
        return values
    ind = sp.csr_matrix(
        (np.ones(units.of_row.size), (units.of_row, np.arange(units.of_row.size))),
        shape=(units.n, units.of_row.size),
    )
    return np.asarray(ind @ values)


def resample_ratios(
    arrays: Sequence[np.ndarray], units: ClusterUnits, n_boot: int, seed, progress: bool = False
) -> list[np.ndarray]:
    """Resampled column sums ``(n_boot, Q)`` of each unit-level ``(n_units, Q)`` array; ``seed``
    an int or a Generator (whose stream continues)."""
    rng = np.random.default_rng(seed)
    out = [np.empty((n_boot, a.shape[1])) for a in arrays]
    pos = 0
    bar = tqdm(total=n_boot, desc=f"bootstrap ({units.scheme})", disable=not progress, leave=False)
    for w in bootstrap_weights(units.participant, units.scheme, n_boot, rng):
        b = w.shape[0]
        for a, ab in zip(arrays, out, strict=True):
            ab[pos : pos + b] = w @ a
        pos += b
        bar.update(b)
    bar.close()
    return out


def bootstrap_support(
    num: np.ndarray,
    den: np.ndarray,
    units: ClusterUnits,
    n_boot: int,
    seed: int,
    support: str,
    masks: np.ndarray | None = None,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Resampled sums ``(n_boot, Q)`` under ``support`` (see :func:`replay_prevalence`).

    ``unconditional``: every unit of the study in every resample. ``conditional``: per column,
    only the units with rows in it (``masks (n_units, Q)``, default ``den > 0``) are resampled,
    with the scheme's structure among them. Columns with the same support share their resamples.
    """
    check_choice("support", support, SUPPORTS)
    if support == "unconditional":
        num_b, den_b = resample_ratios([num, den], units, n_boot, seed, progress)
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
        sub_units = ClusterUnits(sub, pd.factorize(units.participant[sub])[0], units.scheme)
        cells = [num[np.ix_(sub, cols)], den[np.ix_(sub, cols)]]
        num_b[:, cols], den_b[:, cols] = resample_ratios(cells, sub_units, n_boot, rng)
    return num_b, den_b


def safe_ratio(num, den):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def check_replay_study(ds: xr.Dataset) -> None:
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


def code_categories(ds: xr.Dataset) -> tuple[list[str], list[str]]:
    """The category of each code, and the categories in order of appearance (``""`` left out)."""
    cats = [str(c) for c in ds[CATEGORY].values]
    return cats, [c for c in dict.fromkeys(cats) if c != NO_CATEGORY]


def _code_groups(ds: xr.Dataset, levels: Sequence[str]) -> list[tuple[str, str, str, np.ndarray]]:
    """``(level, category, code, indicator over codes)`` for each code group."""
    codes = [str(c) for c in ds[CODE].values]
    cats, names = code_categories(ds)
    out = []
    for level in levels:
        if level == "category":
            out += [
                ("category", n, "", np.array([c == n for c in cats], dtype=float)) for n in names
            ]
        elif level == "code":
            eye = np.eye(len(codes))
            out += [
                ("code", cat, code, eye[i])
                for i, (code, cat) in enumerate(zip(codes, cats, strict=True))
            ]
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
    # (S, M, K) -> (S, Mg * G)
    num = np.einsum("smk,mn,kg->sng", h, mind, cind, optimize=True).reshape(h.shape[0], -1)
    den = np.einsum("smk,mn,kg->sng", v, mind, cind, optimize=True).reshape(h.shape[0], -1)
    labels = pd.DataFrame(
        [(m, *g[:3]) for m in mlabels for g in groups], columns=[by, "level", "category", "code"]
    )
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


def ratio_table(labels, num_tot, den_tot, num_b, den_b, ci_prob, cluster, n_boot):
    lo, hi = eti(safe_ratio(num_b, den_b), ci_prob)
    return labels.assign(
        estimate=safe_ratio(num_tot, den_tot),
        ci_low=lo,
        ci_high=hi,
        n_hits=num_tot,
        n=den_tot,
        cluster=cluster,
        n_boot=n_boot,
        ci_prob=ci_prob,
    )


def bootstrap_ratio_table(labels, num, den, units, n_boot, seed, ci_prob, progress):
    """:func:`ratio_table` of per-row counts ``num, den``, unconditional bootstrap over
    ``units``."""
    num_b, den_b = resample_ratios(
        [to_units(num, units), to_units(den, units)], units, n_boot, seed, progress
    )
    return ratio_table(labels, num.sum(0), den.sum(0), num_b, den_b, ci_prob, units.scheme, n_boot)
