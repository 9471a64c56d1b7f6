"""Three-parameter logistic fits of consensus trajectories and the rater-resampling bootstrap.

Trajectory paper, supplement D (Table D1): ``m(t) = floor + (L - floor) / (1 + exp(-k (t -
t50)))`` by least squares per model, uncertainty from resampling raters. Why by hand:
``scipy.optimize.curve_fit`` solves one problem per call (1,000 replicates x 15 models); here a
box-bounded Levenberg-Marquardt solves all at once, warm-started from the original fits
(``experiments/bench/bench_baselines.py`` compares the two).

Bounds: ``floor <= L <= upper`` (default unbounded), ``0 <= k <= k_max`` (default 20 per day: a
steeper curve is a step on daily data), ``t_min - span <= t50 <= t_max + span`` with
``span = t_max - t_min``. Status: ``flat`` (no variation: ``L`` the constant, ``k``, ``t50`` NaN,
not converged), ``no_convergence``, ``unidentified`` (``k`` at 0 or ``t50`` on a bound), ``ok``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit
from tqdm.auto import tqdm

from ..data.schema import DAY, K_MAX, MODEL, RATER, RESAMPLE
from ..intervals import eti
from ._validate import as_float_array, check_dims
from .config import LOGISTIC_PARAMS as PARAMS
from .consensus import consensus_np
from .results import BaselineResult


def logistic(t: Any, L: Any, k: Any, t50: Any, floor: float = 1.0) -> np.ndarray:
    """``floor + (L - floor) / (1 + exp(-k (t - t50)))`` (broadcasting)."""
    t = np.asarray(t, dtype=float)
    return floor + (np.asarray(L) - floor) * expit(np.asarray(k) * (t - np.asarray(t50)))


def param_bounds(
    t: np.ndarray, floor: float, upper: float | None, k_max: float
) -> tuple[np.ndarray, np.ndarray]:
    span = float(np.max(t) - np.min(t))
    lower = np.array([floor, 0.0, np.min(t) - span])
    up = np.array([np.inf if upper is None else upper, k_max, np.max(t) + span])
    if not lower[0] < up[0]:
        raise ValueError(f"upper={upper} must exceed floor={floor}")
    return lower, up


def model_jacobian(t: np.ndarray, p: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Model values (B, T) and Jacobian (B, T, 3) for parameters ``p`` (B, 3)."""
    L, k, t50 = p[:, 0:1], p[:, 1:2], p[:, 2:3]
    d = t[None, :] - t50
    s = expit(k * d)
    amp = L - floor
    ds = s * (1.0 - s)
    f = floor + amp * s
    jac = np.stack([s, amp * ds * d, -amp * ds * k], axis=-1)
    return f, jac


def _lm(
    t: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    p0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    floor: float,
    max_iter: int = 500,
    ftol: float = 1e-12,
    ftol_slow: float = 1e-10,
    slow_after: int = 100,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Batched projected Levenberg-Marquardt on B independent 3-parameter problems.

    Parameters at a bound with an outward gradient are held for the step; clipped steps are kept
    only if the RSS decreases (damping ``H + lambda diag(H)``). Converged: the Gauss-Newton step
    predicts a reduction ``g' H^-1 g`` below ``ftol * RSS + 1e-14 * SST`` (scale-free, unlike a
    step-size test) or the projected gradient vanishes; after ``slow_after`` iterations (a flat
    valley) the tolerance relaxes to ``ftol_slow``. Returns ``p`` (B, 3), rss, converged, n_iter.
    """
    b = y.shape[0]
    yz = np.where(mask, y, 0.0)
    p = np.clip(p0.astype(float), lower, upper)
    lam = np.full(b, 1e-3)
    done = np.zeros(b, dtype=bool)
    n_iter = np.zeros(b, dtype=np.int64)
    f = logistic(t, p[:, 0:1], p[:, 1:2], p[:, 2:3], floor)
    rss = (((f - yz) * mask) ** 2).sum(axis=1)
    n_obs = np.maximum(mask.sum(axis=1), 1)
    sst = (((yz - (yz.sum(axis=1) / n_obs)[:, None]) * mask) ** 2).sum(axis=1)
    eye = np.eye(3)
    for _ in range(max_iter):
        idx = np.flatnonzero(~done)
        if idx.size == 0:
            break
        pi, mi, yi = p[idx], mask[idx], yz[idx]
        f, jac = model_jacobian(t, pi, floor)
        r = (f - yi) * mi
        jac = jac * mi[..., None]
        jt = jac.transpose(0, 2, 1)
        g = np.matmul(jt, r[..., None])[..., 0]
        h = np.matmul(jt, jac)
        at_lo = (pi <= lower + 1e-12) & (g > 0)
        at_hi = (pi >= upper - 1e-12) & (g < 0)
        free = ~(at_lo | at_hi)
        fm = free[:, :, None] & free[:, None, :]
        diag = np.maximum(np.einsum("bpp->bp", h), 1e-12)
        hf = np.where(fm, h, 0.0)
        rhs = np.where(free, -g, 0.0)
        a = hf + eye * np.where(free, lam[idx, None] * diag, 1.0)[:, None, :]
        a_gn = hf + eye * np.where(free, 1e-12 * diag, 1.0)[:, None, :]
        mats, vecs = np.stack([a, a_gn]), np.stack([rhs, rhs])[..., None]
        try:
            both = np.linalg.solve(mats, vecs)[..., 0]
        except np.linalg.LinAlgError:  # an exactly singular system somewhere in the batch
            both = (np.linalg.pinv(mats) @ vecs)[..., 0]
        step, gn = both[0], both[1]
        pred = np.where(np.isfinite(gn).all(axis=1), (gn * rhs).sum(axis=1), np.inf)  # g' H^-1 g
        step = np.where(np.isfinite(step), step, 0.0)
        p_new = np.clip(pi + step, lower, upper)
        f_new = logistic(t, p_new[:, 0:1], p_new[:, 1:2], p_new[:, 2:3], floor)
        rss_new = (((f_new - yi) * mi) ** 2).sum(axis=1)
        old = rss[idx]
        better = rss_new < old
        n_iter[idx] += 1
        p[idx] = np.where(better[:, None], p_new, pi)
        rss[idx] = np.where(better, rss_new, old)
        lam[idx] = np.where(better, np.maximum(lam[idx] / 3.0, 1e-12), lam[idx] * 4.0)
        proj_g = np.where(free, g, 0.0)
        tiny_g = np.max(np.abs(proj_g), axis=1) <= 1e-12 * (1.0 + old)
        tol = np.where(n_iter[idx] > slow_after, ftol_slow, ftol)
        small_pred = np.abs(pred) <= tol * rss[idx] + 1e-14 * sst[idx]
        done[idx] = small_pred | tiny_g | (lam[idx] > 1e12)
    return p, rss, done, n_iter


def _starts(
    t: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    floor: float,
    lower,
    upper,
    ks: tuple[float, ...] = (0.3, 1.0, 3.0),
):
    """Multistart grid (S, B, 3): plateau at the max, midpoints across the span, ``ks`` slopes."""
    ymax = np.max(np.where(mask, y, -np.inf), axis=1)
    l0 = np.clip(np.where(np.isfinite(ymax), ymax, floor + 1.0), lower[0], upper[0])
    l0 = np.where(l0 <= floor, floor + 1e-3, l0)
    grid = [
        np.stack([l0, np.full_like(l0, k), np.full_like(l0, t50)], axis=1)
        for t50 in np.quantile(t, [0.1, 0.3, 0.5, 0.7, 0.9])
        for k in ks
    ]
    return np.clip(np.stack(grid), lower, upper)


def _candidates(series: tuple, p0: Any, multistart: Any, flat: np.ndarray, lead: tuple):
    """The starting points of the fits and the series each belongs to: a multistart grid per
    series without ``p0``; else the warm starts, plus a 5-point grid (``k = 1``) for the
    ``multistart`` series that are not flat."""
    t, yb, mask, floor, lower, up = series
    b_all = yb.shape[0]
    if p0 is None:
        cand = _starts(t, yb, mask, floor, lower, up)  # (S, B, 3)
        return cand.reshape(-1, 3), np.tile(np.arange(b_all), cand.shape[0])
    p0a = as_float_array(p0, "p0").reshape(-1, 3)
    if p0a.shape[0] != b_all:
        raise ValueError(f"p0 must have shape {(*lead, 3)}; got {np.shape(p0)}")
    cand, owner = p0a, np.arange(b_all)
    if multistart is not None:
        ms = np.broadcast_to(np.asarray(multistart, dtype=bool), lead).reshape(-1)
        sel = np.flatnonzero(ms & ~flat)
        if sel.size:
            grid = _starts(t, yb[sel], mask[sel], floor, lower, up, ks=(1.0,))
            cand = np.concatenate([cand, grid.reshape(-1, 3)])
            owner = np.concatenate([owner, np.tile(sel, grid.shape[0])])
    return cand, owner


def fit_logistic_batch(
    t: Any,
    y: Any,
    floor: float = 1.0,
    *,
    upper: float | None = None,
    k_max: float = K_MAX,
    p0: Any = None,
    multistart: Any = None,
    max_iter: int = 500,
) -> dict[str, np.ndarray]:
    """Fit the logistic to many series at once (vectorised Levenberg-Marquardt).

    ``t`` (T,): time points shared by all series ``y`` (..., T), NaN = missing (excluded).
    ``floor, upper, k_max``: bounds (module docstring). ``p0`` (..., 3): warm starts
    ``(L, k, t50)``; default a 15-point multistart grid per series, lowest RSS kept.
    ``multistart`` (...) bool, with ``p0``: series also started from a 5-point grid (``k = 1``),
    for warm starts in a degenerate corner (``k = 0`` or on a bound) a local method cannot leave.

    Returns a dict of ``L, k, t50, rss, r2, converged, flat, n_obs, n_iter`` with shape
    ``y.shape[:-1]`` and ``at_bound`` (..., 3) booleans.
    """
    t = as_float_array(t, "t", ndim=1)
    yarr = as_float_array(y, "y")
    if yarr.shape[-1] != t.size:
        raise ValueError(f"y's last axis ({yarr.shape[-1]}) must match len(t) ({t.size})")
    lead = yarr.shape[:-1]
    yb = yarr.reshape(-1, t.size)
    mask = ~np.isnan(yb)
    n_obs = mask.sum(axis=1)
    lower, up = param_bounds(t, floor, upper, k_max)
    ymin = np.min(np.where(mask, yb, np.inf), axis=1)
    ymax = np.max(np.where(mask, yb, -np.inf), axis=1)
    flat = (n_obs < 4) | ~(ymax > ymin)
    b_all = yb.shape[0]
    series = (t, yb, mask, floor, lower, up)
    cand, owner = _candidates(series, p0, multistart, flat, lead)
    p_c, rss_c, conv_c, nit_c = _lm(t, yb[owner], mask[owner], cand, lower, up, floor, max_iter)
    # per series: the lowest RSS among converged starts (any start if none converged)
    score = np.where(conv_c, rss_c, np.inf)
    any_conv = np.zeros(b_all, dtype=bool)
    np.logical_or.at(any_conv, owner, conv_c)
    score = np.where(any_conv[owner], score, rss_c)
    order = np.lexsort((score, owner))
    pick = order[np.unique(owner[order], return_index=True)[1]]
    p, rss, conv = p_c[pick], rss_c[pick], conv_c[pick]
    nit = np.bincount(owner, weights=nit_c, minlength=b_all).astype(np.int64)
    yz = np.where(mask, yb, 0.0)
    mean = yz.sum(axis=1) / np.maximum(n_obs, 1)
    sst = (((yz - mean[:, None]) * mask) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(sst > 0, 1.0 - rss / sst, np.nan)
    with np.errstate(invalid="ignore"):
        at_bound = (np.isfinite(lower) & (np.abs(p - lower) <= 1e-9 * (1 + np.abs(lower)))) | (
            np.isfinite(up) & (np.abs(p - up) <= 1e-9 * (1 + np.abs(up)))
        )
    # flat series: no identifiable curve (flagged, not a silent NaN)
    const = np.where(n_obs > 0, mean, np.nan)
    p = np.where(flat[:, None], np.stack([const, np.nan * const, np.nan * const], 1), p)
    rss = np.where(flat, sst, rss)
    out = dict(
        zip(PARAMS, p.T, strict=True),
        rss=rss,
        r2=r2,
        converged=conv & ~flat,
        flat=flat,
        n_obs=n_obs,
        n_iter=nit,
    )
    out = {key: v.reshape(lead) for key, v in out.items()}
    out["at_bound"] = (at_bound & ~flat[:, None]).reshape(*lead, 3)
    return out


@dataclass
class LogisticFit:
    """One logistic fit (a row of Table D1) that renders itself."""

    L: float
    k: float
    t50: float
    r2: float
    rss: float
    converged: bool
    status: str
    at_bound: tuple[str, ...]
    n_obs: int
    n_iter: int
    floor: float

    @property
    def summary(self) -> pd.DataFrame:
        """One-row DataFrame of the fit."""
        row = asdict(self)
        del row["n_iter"], row["floor"]
        return pd.DataFrame([{**row, "at_bound": ",".join(self.at_bound)}])

    def to_latex(self, **kwargs: Any) -> str:
        """The summary row as LaTeX."""
        return self.summary.to_latex(index=False, float_format="{:.3g}".format, **kwargs)

    def predict(self, t: Any) -> np.ndarray:
        """Fitted curve at ``t`` (the constant for a flat series)."""
        if self.status == "flat":
            return np.full(np.shape(t), self.L, dtype=float)
        return logistic(t, self.L, self.k, self.t50, self.floor)


def _status(
    flat: bool,
    conv: bool,
    at_bound: Any = (False, False, False),
    k: float = 1.0,
    L: float = np.nan,
    turn_at: float | None = None,
) -> str:
    """``flat`` | ``no_convergence`` | ``no_turn`` (plateau ``L`` below ``turn_at``: the curve
    stays inside the naive range) | ``unidentified`` (k = 0 or t50 on a bound) | ``ok``."""
    if flat:
        return "flat"
    if not conv:
        return "no_convergence"
    if turn_at is not None and L < turn_at:
        return "no_turn"
    return "unidentified" if (at_bound[2] or k <= 1e-9) else "ok"


def fit_logistic(
    t: Any,
    y: Any,
    floor: float = 1.0,
    *,
    upper: float | None = None,
    k_max: float = K_MAX,
    p0: Any = None,
) -> LogisticFit:
    """Least-squares fit of ``y = floor + (L - floor) / (1 + exp(-k (t - t50)))``.

    ``t, y`` (T,): days and consensus scores (NaN = missing day). ``floor``: lower asymptote (1
    on the stage scale; 0 gives the NIST Rat42 model ``b1 / (1 + exp(b2 - b3 x))`` with
    ``L = b1, k = b3, t50 = b2 / b3``). ``upper, k_max``: bounds (module docstring). ``p0``:
    a start ``(L, k, t50)``, default a multistart grid.
    """
    p0 = None if p0 is None else np.asarray(p0, dtype=float)[None]
    res = fit_logistic_batch(
        t, as_float_array(y, "y", ndim=1)[None], floor, upper=upper, k_max=k_max, p0=p0
    )
    r = {key: v[0] for key, v in res.items()}
    return LogisticFit(
        **{n: float(r[n]) for n in (*PARAMS, "r2", "rss")},
        converged=bool(r["converged"]),
        status=_status(bool(r["flat"]), bool(r["converged"]), r["at_bound"], float(r["k"])),
        at_bound=_bound_names(r["at_bound"]),
        n_obs=int(r["n_obs"]),
        n_iter=int(r["n_iter"]),
        floor=float(floor),
    )


def _bound_names(at_bound: np.ndarray) -> tuple[str, ...]:
    return tuple(n for n, b in zip(PARAMS, at_bound, strict=True) if b)


def _fit_table(
    res: dict[str, np.ndarray], models: np.ndarray, turn_at: float | None = None
) -> pd.DataFrame:
    fits = zip(res["flat"], res["converged"], res["at_bound"], res["k"], res["L"], strict=True)
    table = pd.DataFrame(
        {MODEL: models, **{n: res[n] for n in (*PARAMS, "r2", "rss", "converged")}}
    )
    table["status"] = [_status(f, c, ab, float(k), float(L), turn_at) for f, c, ab, k, L in fits]
    table["at_bound"] = [",".join(_bound_names(ab)) for ab in res["at_bound"]]
    table["n_obs"] = res["n_obs"]
    return table.set_index(MODEL)


def _warm_starts(base: dict, x: np.ndarray, t: np.ndarray, floor: float, lower, up):
    """The replicates' warm starts (the original fit per model; a flat original, which has no
    curve, starts mid-study) and which models also get grid starts: those without a located
    transition (flat, k or t50 on a bound, not converged), whose warm start is a degenerate
    corner."""
    p0 = np.stack([base[n] for n in PARAMS], axis=-1)
    default = np.clip(
        [np.nanmax(x) if np.isfinite(x).any() else floor + 1, 1.0, t.mean()], lower, up
    )
    p0 = np.where(np.isfinite(p0), p0, default)
    weak = base["flat"] | ~base["converged"] | base["at_bound"][:, 1] | base["at_bound"][:, 2]
    return p0, weak


def _refit_replicates(x, t, idx_all, cons_kw, bounds, p0, weak, chunk, progress) -> dict:
    """Refit every model on each replicate's consensus (raters ``idx_all[b]``), ``chunk``
    replicates per vectorised batch; ``{L, k, t50, converged, flat}`` of shape (n_boot, model)."""
    n_boot, n_m = idx_all.shape[0], x.shape[1]
    reps = {n: np.full((n_boot, n_m), np.nan) for n in PARAMS}
    reps |= {n: np.zeros((n_boot, n_m), dtype=bool) for n in ("converged", "flat")}
    batches = range(0, n_boot, chunk)
    off = not progress or not n_boot
    for s in tqdm(batches, desc="rater bootstrap", unit="chunk", disable=off):
        e = min(n_boot, s + chunk)
        cb = consensus_np(x[idx_all[s:e]], axis=1, **cons_kw)  # x[...]: (b, R, M, T)
        res = fit_logistic_batch(
            t,
            cb,
            bounds["floor"],
            upper=bounds["upper"],
            k_max=bounds["k_max"],
            p0=np.broadcast_to(p0, (e - s, n_m, 3)),
            multistart=np.broadcast_to(weak, (e - s, n_m)),
        )
        for n, arr in reps.items():
            arr[s:e] = res[n]
    return reps


def _bootstrap_notes(rule: str, half_rule: str, bounds: dict, ci: float, n_boot: int) -> list:
    """Table D1's notes: the curve, its bounds, the intervals and the ``flat`` status."""
    floor, upper, k_max = bounds["floor"], bounds["upper"], bounds["k_max"]
    t_lo, t_hi = bounds["t50"]
    return [
        f"m(t) = {floor:g} + (L - {floor:g}) / (1 + exp(-k (t - t50))) by least squares on the "
        f"{rule} consensus (half rule {half_rule!r})",
        f"bounds: L in [{floor:g}, {upper if upper is not None else 'inf'}], k in [0, {k_max:g}], "
        f"t50 in [{t_lo:g}, {t_hi:g}]",
        f"{ci:.0%} percentile CIs from {n_boot} rater-resampling replicates (seeded); flat "
        "replicates (no variation) have no curve and are not in the percentiles",
        "status 'flat': the consensus never varies (no identifiable curve)",
    ]


def logistic_bootstrap(
    ratings: xr.DataArray,
    *,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = 0,
    rule: str = "median",
    half_rule: str = "keep",
    min_raters: int = 1,
    floor: float = 1.0,
    upper: float | None = None,
    k_max: float = K_MAX,
    ci: float = 0.95,
    turn_at: float | None = None,
    chunk: int = 100,
    progress: bool = True,
) -> BaselineResult:
    """Table D1: logistic fit per model with a rater-resampling bootstrap.

    ``ratings``: ``recognition`` (rater, model, day). Each of ``n_boot`` replicates (paper:
    1,000; same ``seed``, same replicates) draws as many raters as the study has, with
    replacement, recomputes the consensus (``rule, half_rule, min_raters`` as
    :func:`~delusion_bayes.baselines.consensus.consensus`) and refits every model, warm-started
    at the original fit (fits without a located transition also from a 5-point grid), ``chunk``
    replicates per vectorised batch. ``floor, upper, k_max``: module docstring. ``turn_at``: a
    fit whose plateau ``L`` stays below it (the clinical threshold, 3) gets status ``no_turn``
    (e.g. a small step fitted to a bump is not a turn).

    Returns a BaselineResult: per model ``L, k, t50, r2, rss, converged, status, at_bound,
    n_obs``, ``{L,k,t50}_ci_low/_ci_high`` (``ci`` percentile) and ``n_boot_used`` (non-flat
    converged replicates in the percentiles). ``extra["replicates"]``: an ``xr.Dataset`` over
    ``(resample, model)`` of ``L, k, t50, converged, flat``, the rater draws ``rater_index``
    (resample, rater_draw; positions on ``rater``) and the warm starts ``p0`` (model, param), so
    any replicate can be refitted independently.
    """
    check_dims(ratings, [RATER, MODEL, DAY], f"ratings {ratings.name!r}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0; got {n_boot}")
    da = ratings.transpose(RATER, MODEL, DAY)
    x = da.values.astype(float)
    t = da[DAY].values.astype(float)
    n_r, n_m, _ = x.shape
    cons_kw = {"rule": rule, "half_rule": half_rule, "min_raters": min_raters}
    cons = consensus_np(x, axis=0, **cons_kw)
    base = fit_logistic_batch(t, cons, floor, upper=upper, k_max=k_max)
    table = _fit_table(base, da[MODEL].values, turn_at)
    lower, up = param_bounds(t, floor, upper, k_max)
    p0, weak = _warm_starts(base, x, t, floor, lower, up)
    rng = np.random.default_rng(seed)
    idx_all = rng.integers(0, n_r, size=(n_boot, n_r))  # rater draws of every replicate
    bounds = {"floor": floor, "upper": upper, "k_max": k_max}
    reps = _refit_replicates(x, t, idx_all, cons_kw, bounds, p0, weak, chunk, progress)
    use = reps["converged"] & ~reps["flat"]
    for n in PARAMS:
        lo, hi = eti(np.where(use, reps[n], np.nan), ci, axis=0)
        table[f"{n}_ci_low"] = lo
        table[f"{n}_ci_high"] = hi
    table["n_boot_used"] = use.sum(axis=0)
    table["n_boot"] = n_boot
    replicates = xr.Dataset(
        {
            **{n: ((RESAMPLE, MODEL), arr) for n, arr in reps.items()},
            "rater_index": ((RESAMPLE, "rater_draw"), idx_all),
            "p0": ((MODEL, "param"), p0),
        },
        coords={MODEL: da[MODEL], "param": list(PARAMS)},
    )
    notes = _bootstrap_notes(rule, half_rule, {**bounds, "t50": (lower[2], up[2])}, ci, n_boot)
    if turn_at is not None:
        notes.append(
            f"status 'no_turn': the fitted plateau L stays below {turn_at:g} (the curve never "
            "reaches clinical framing; its t50 is not a turn)"
        )
    return BaselineResult(
        "tableD1_logistic",
        table,
        "Table D1: three-parameter logistic fits with rater-bootstrap CIs",
        notes,
        {"replicates": replicates},
    )
