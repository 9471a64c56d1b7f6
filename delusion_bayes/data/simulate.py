"""Simulated trajectory studies with known truth (the generative model behind every recovery test).

The paper's design (``papers/escalating-delusions-trajectories.txt``, Protocol and Results): one
scripted ``n_days``-day conversation per chatbot model, ``n_raters`` raters per model-day. Latent
stage ``m = 1 + (L - 1) sigmoid(k (t - t50)) + N(0, s^2)`` (``true_stage``; ``t50`` past the last
day: never turns); rater scores ``1 + sum_c [m + severity_r + e > c]``, cutpoints
``schema.STAGE_CUTPOINTS`` (1.5, 2.5, 3.5), ``e ~ Logistic(0, 1 / discrimination_r)``;
confidence, interventions (:func:`_interventions`), Level A / B (:func:`_adjudication`) and
optional synthetic texts (:mod:`.corpus`) follow it.

Presets: ``paper_like`` (the paper's 15 models in four regimes, 4 raters, 30 days, Claude Opus
4.1's day-30 answer missing), ``null`` (same models, exchangeable truth: no group differences)
and ``small`` (5 models, 3 raters, 12 days; tests). ``n_models`` scales a roster: full copies plus
a prefix of :func:`stratified_order` (copy ``c >= 2`` is ``"<name> #c"``, same truth;
docs/design.md, "More or fewer chatbots").
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np
import xarray as xr
from scipy.special import expit

from .schema import (
    DAY,
    INTERVENTION_TYPE,
    INTERVENTION_TYPES,
    MODEL,
    RATER,
    STAGE_CUTPOINTS,
    STAGE_MIDPOINT,
)

THRESHOLD = "threshold"
NEVER = -np.inf


@dataclass(frozen=True)
class _ModelTruth:
    name: str
    vendor: str
    generation: str
    cohort: str
    regime: str
    L: float
    k: float
    t50: float
    day_noise: float
    a0: float  # Level A propensity (logit at stage STAGE_MIDPOINT = 2.5)
    b0: float  # Level B | A propensity (logit at stage 3); -inf = never
    posture: float  # companion posture: extra support/psychoeducation on clinical days


# name, vendor, generation, cohort, regime,
#     then the truth: L, k, t50, day-noise sd, a0, b0, posture
_PAPER_MODELS: tuple[_ModelTruth, ...] = tuple(
    _ModelTruth(*row)
    for row in (
        ("Claude Haiku 4.5", "anthropic", "4.5", "late-2025", "early_alarmist",
            4.0,  3.0,   2.5, 0.15,  2.5,   3.5, -0.3),
        ("Claude Sonnet 4.5", "anthropic", "4.5", "late-2025", "early",
            4.0,  1.2,   4.9, 0.15,  1.5,   2.5, -0.3),
        ("Claude Opus 4.5", "anthropic", "4.5", "late-2025", "early",
            4.0,  1.5,   3.8, 0.15,  1.5,   2.5,  1.3),
        ("GPT-5.1 Instant", "openai", "5.1", "late-2025", "gradual",
            4.0,  0.35, 10.0, 0.2,   0.5, NEVER,  1.4),
        ("GPT-5.1 Thinking", "openai", "5.1", "late-2025", "gradual",
            4.0,  0.3,  14.0, 0.2,   0.5, NEVER,  1.2),
        ("Claude Opus 4.1", "anthropic", "4.1", "earlier", "late",
            4.0, 10.0,  21.0, 0.15, -0.8,  -2.0,  0.0),
        ("Claude Opus 4", "anthropic", "4", "earlier", "late",
            4.0,  2.0,  22.0, 0.15, -0.8,  -2.0,  0.0),
        ("Claude Haiku 3.5", "anthropic", "3.5", "earlier", "late",
            4.0,  1.5,  23.0, 0.15, -0.8,  -4.5,  0.0),
        ("GPT-4o", "openai", "4o", "earlier", "late",
            4.0,  1.2,  24.0, 0.15, -0.8,  -4.5,  0.3),
        ("Claude Opus 3", "anthropic", "3", "earlier", "oscillating",
            3.3,  0.8,  24.0, 0.7,  -0.8,  -4.5,  0.0),
        ("Gemini 3.1 Pro", "google", "3.1", "late-2025", "late",
            4.0,  1.5,  22.5, 0.15, -0.8,  -4.5,  0.0),
        ("Claude Sonnet 4", "anthropic", "4", "earlier", "never",
            4.0,  0.5,  48.0, 0.12, -2.0,  -6.0,  0.0),
        ("DeepSeek-V3", "deepseek", "V3", "earlier", "never",
            4.0,  0.5,  52.0, 0.12, -2.0,  -6.0,  0.0),
        ("Gemini 2.5 Flash", "google", "2.5", "earlier", "never",
            4.0,  0.5,  55.0, 0.12, -2.0,  -6.0,  0.0),
        ("Gemini 2.5 Pro", "google", "2.5", "earlier", "never",
            4.0,  0.5,  50.0, 0.12, -2.0,  -6.0,  0.0),
    )
)  # fmt: skip

_SMALL_MODELS: tuple[_ModelTruth, ...] = tuple(
    _ModelTruth(*row)
    for row in (
        ("Early", "anthropic", "4.5", "late-2025", "early",
            4.0,  1.5,   3.0, 0.15,  1.5,   2.0,  0.0),
        ("Middle", "anthropic", "4", "earlier", "gradual",
            4.0,  0.8,   6.0, 0.15,  0.5,  -1.0,  0.8),
        ("Late", "openai", "4.5", "late-2025", "late",
            4.0,  2.5,   9.0, 0.15,  0.0,  -2.0,  0.0),
        ("Never", "openai", "4", "earlier", "never",
            4.0,  0.5,  25.0, 0.12, -2.0,  -6.0,  0.0),
        ("Oscillating", "google", "3", "earlier", "oscillating",
            3.3,  0.8,   8.0, 0.6,   0.0,  -4.0,  0.0),
    )
)  # fmt: skip

PRESETS = ("paper_like", "null", "small")
_FIELDS = tuple(_ModelTruth.__dataclass_fields__)

#: overrides ``simulate_study`` accepts, with their meaning
OVERRIDES = {
    "n_raters": "number of raters (default 4; small: 3)",
    "n_days": "number of days (default 30; small: 12)",
    "texts": "add prompt/answer texts from the synthetic demo corpus (default: paper_like only)",
    "missing_rate": "probability that any single rating is missing (default 0)",
    "missing": "list of [model, day] whose answer is missing (whole model-day; default per preset)",
    "severity_sd": "sd of rater severities (default 0.3)",
    "discrimination_mean": "typical rater discrimination (default 3.5: recognition alpha near the "
    "paper's .76)",
    "n_models": "number of chatbot models: the preset's roster repeated or subsampled in its "
    "stratified order, keeping the contrast groups' and regimes' shares (module docstring)",
    "group_shift": "null preset only: a known population group effect, {by: cohort|vendor|"
    "generation, level: <value>, t50: <days>, log_k: <shift>} added to the exchangeable truth "
    "of that group's models (_null_models); t50_mean (default 16), t50_sd (that group's t50 SD, "
    "default 8) and t50_sd_rest (the others', default 8) set the populations' t50",
}

#: model attributes whose shares a scaled roster keeps (the contrasts' groups and the regimes)
_STRATA = ("cohort", "vendor", "regime", "generation_4.5")


def _stratum(m: _ModelTruth, attr: str) -> Any:
    return m.generation == "4.5" if attr == "generation_4.5" else getattr(m, attr)


def stratified_order(models: tuple[_ModelTruth, ...] | None = None) -> list[int]:
    """Indices of ``models`` (default the paper's 15) in the order a scaled roster takes them.

    Greedy: the next model is the one after which the counts of every :data:`_STRATA` level are
    closest (least squares) to their roster share times the number chosen; ties: roster order.
    """
    models = _PAPER_MODELS if models is None else tuple(models)
    n = len(models)
    shares = {a: {} for a in _STRATA}
    for m in models:
        for a in _STRATA:
            shares[a][_stratum(m, a)] = shares[a].get(_stratum(m, a), 0.0) + 1.0 / n
    counts: dict[str, Counter] = {a: Counter() for a in _STRATA}
    order: list[int] = []
    while len(order) < n:
        size = len(order) + 1
        best: tuple[float, int] | None = None
        for i, m in enumerate(models):
            if i in order:
                continue
            loss = 0.0
            for a in _STRATA:
                c = counts[a] + Counter([_stratum(m, a)])
                loss += sum((c[level] - size * p) ** 2 for level, p in shares[a].items())
            if best is None or loss < best[0] - 1e-12:
                best = (loss, i)
        assert best is not None
        order.append(best[1])
        for a in _STRATA:
            counts[a][_stratum(models[best[1]], a)] += 1
    return order


def scale_roster(models: tuple[_ModelTruth, ...], n_models: int) -> tuple[_ModelTruth, ...]:
    """``n_models`` models from ``models``: full copies plus a stratified prefix."""
    n_models = int(n_models)
    if n_models < 2:
        raise ValueError(f"n_models = {n_models}; expected at least 2 models.")
    size = len(models)
    if n_models == size:
        return tuple(models)
    copies, rest = divmod(n_models, size)
    extra = sorted(stratified_order(models)[:rest])
    out: list[_ModelTruth] = []
    for c in range(copies + (1 if rest else 0)):
        for i, m in enumerate(models):
            if c < copies or i in extra:
                name = m.name if c == 0 else f"{m.name} #{c + 1}"
                out.append(replace(m, name=name))
    return tuple(out)


def _null_models(
    rng: np.random.Generator,
    roster: tuple[_ModelTruth, ...] = _PAPER_MODELS,
    group_shift: dict[str, Any] | None = None,
) -> tuple[_ModelTruth, ...]:
    """The roster's models and coords with exchangeable truth (no group differences): ``t50 ~
    N(16, 8)``, ``log k ~ N(0, 0.6)``. ``group_shift`` (:data:`OVERRIDES`) adds ``t50`` days and
    ``log_k`` to the models whose ``by`` attribute is ``level``: the population means of that
    group then differ from the others' by exactly those shifts (same draws otherwise)."""
    by, level, d_t50, d_log_k = _group_shift(group_shift, roster)
    spread = dict(group_shift or {})
    mean = float(spread.get("t50_mean", 16.0))
    sd = {True: float(spread.get("t50_sd", 8.0)), False: float(spread.get("t50_sd_rest", 8.0))}
    out = []
    for m in roster:
        hit = by is not None and str(getattr(m, by)) == level
        t50 = float(rng.normal(mean, sd[hit])) + (d_t50 if hit else 0.0)
        k = float(np.exp(rng.normal(np.log(1.0), 0.6) + (d_log_k if hit else 0.0)))
        a0 = float(rng.normal(0.0, 0.7))
        b0 = float(rng.normal(-1.5, 1.0))
        posture = float(rng.normal(0.3, 0.4))
        meta = (m.name, m.vendor, m.generation, m.cohort, "exchangeable")
        out.append(_ModelTruth(*meta, 4.0, k, t50, 0.15, a0, b0, posture))
    return tuple(out)


def _group_shift(shift: dict[str, Any] | None, roster: tuple[_ModelTruth, ...]):
    """``(by, level, t50, log_k)`` of a ``group_shift`` override, checked (``by`` None: none)."""
    if not shift:
        return None, "", 0.0, 0.0
    shift = dict(shift)
    bad = sorted(set(shift) - {"by", "level", "t50", "log_k", "t50_mean", "t50_sd", "t50_sd_rest"})
    by = shift.get("by")
    if bad or by not in ("cohort", "vendor", "generation") or "level" not in shift:
        raise ValueError(
            f"group_shift = {shift!r}; expected {{by: cohort|vendor|generation, level: <value>, "
            "t50: <days>, log_k: <shift>}" + (f" (unknown keys {bad})" if bad else "")
        )
    level = str(shift["level"])
    levels = sorted({str(getattr(m, by)) for m in roster})
    if level not in levels:
        raise ValueError(f"group_shift level {level!r} is not a {by} of the roster: {levels}")
    return by, level, float(shift.get("t50", 0.0)), float(shift.get("log_k", 0.0))


def _ordinal(latent: np.ndarray, cuts, scale: np.ndarray, low: int, rng) -> np.ndarray:
    """``low + sum_c [latent + e > c]`` with ``e ~ Logistic(0, scale)`` (cumulative logit)."""
    shape = np.broadcast_shapes(latent.shape, scale.shape)
    noisy = latent + rng.logistic(0.0, 1.0, size=shape) * scale
    return low + (noisy[..., None] > np.asarray(cuts, dtype=float)).sum(axis=-1).astype(float)


class _Streams(NamedTuple):
    """Independent random streams, one per part of the study, so that e.g. adding texts does
    not change the ratings (the order of the fields is the order they are spawned in)."""

    truth: np.random.Generator
    raters: np.random.Generator
    recognition: np.random.Generator
    confidence: np.random.Generator
    intervention: np.random.Generator
    adjudication: np.random.Generator
    missing: np.random.Generator
    text: np.random.Generator


def simulate_study(preset: str = "paper_like", seed: int = 0, **overrides: Any) -> xr.Dataset:
    """Simulate a trajectory study with known truth.

    ``preset`` is ``"paper_like"``, ``"null"`` or ``"small"`` (module docstring); the same
    ``seed`` gives an identical dataset; ``overrides`` are those of :data:`OVERRIDES`. Returns a
    study following the data model (``prompt``/``answer`` with texts) with its truth as
    ``true_*`` variables (``true_L``, ``true_k``, ``true_t50``, ``true_stage``, ``true_severity``,
    ``true_discrimination``, ``true_cutpoints``, ``true_p_level_a``, ``true_p_level_b``,
    ``true_intervention``, ``true_confidence``, ``true_regime``, ...).
    ``preset="replicated"`` or ``"spiral_like"``: a replicated study (chatbot -> conversation
    -> turn) from :func:`~delusion_bayes.data.replicated_simulate.simulate_replicated`.
    """
    if preset in ("replicated", "spiral_like"):
        from .replicated_simulate import simulate_replicated

        return simulate_replicated(preset, seed, **overrides)
    _check_request(preset, overrides)
    seeds = np.random.SeedSequence([int(seed), PRESETS.index(preset)]).spawn(len(_Streams._fields))
    rng = _Streams(*(np.random.default_rng(s) for s in seeds))
    models, n_raters, n_days, missing = _design(preset, rng.truth, overrides)
    texts = bool(overrides.get("texts", preset == "paper_like"))
    missing_rate = float(overrides.get("missing_rate", 0.0))
    _check_sizes(missing_rate, n_raters, n_days)

    col = {f: np.array([getattr(m, f) for m in models]) for f in _FIELDS}
    days = np.arange(1, n_days + 1)
    stage = _latent_stage(col, days, rng.truth)
    raters = _draw_raters(n_raters, overrides, rng.raters)
    rated = _rate(stage, col, raters, rng)
    day_missing = _missing_days(missing, [m.name for m in models], n_days)
    _blank_missing(rated, day_missing, missing_rate, rng.missing)

    ds = _study_dataset(rated, stage, raters, col, days, preset, seed)
    if overrides.get("group_shift"):
        # the known population effect, for anyone scoring a population contrast (sweep.coverage)
        ds.attrs["group_shift"] = json.dumps(dict(overrides["group_shift"]), sort_keys=True)
    if texts:
        s = np.clip(stage, 1.0, 4.0)
        _add_texts(ds, s, rated["true_confidence"], day_missing, rng.text)
    return ds


def _check_request(preset: str, overrides: dict[str, Any]) -> None:
    """A known preset and known override names (:data:`OVERRIDES`)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}.")
    unknown = sorted(set(overrides) - set(OVERRIDES))
    if unknown:
        raise ValueError(
            f"unknown simulate_study override(s) {unknown}; allowed: "
            + "; ".join(f"{k} ({v})" for k, v in OVERRIDES.items())
        )


def _check_sizes(missing_rate: float, n_raters: int, n_days: int) -> None:
    if not 0.0 <= missing_rate < 1.0:
        raise ValueError(f"missing_rate = {missing_rate!r}; expected a probability in [0, 1).")
    if n_raters < 2 or n_days < 3:
        raise ValueError(
            f"n_raters = {n_raters}, n_days = {n_days}; expected at least 2 raters and 3 days."
        )


def _latent_stage(col: dict[str, np.ndarray], days: np.ndarray, rng) -> np.ndarray:
    """``m = 1 + (L - 1) sigmoid(k (t - t50)) + N(0, day_noise^2)`` per (model, day)."""
    n_models, n_days = len(col["L"]), len(days)
    eps = rng.normal(0.0, 1.0, size=(n_models, n_days)) * col["day_noise"][:, None]
    smooth = 1.0 + (col["L"][:, None] - 1.0) * expit(
        col["k"][:, None] * (days[None, :] - col["t50"][:, None])
    )
    return smooth + eps


class _Raters(NamedTuple):
    severity: np.ndarray  # additive shift of the latent score, mean 0
    discrimination: np.ndarray

    @property
    def scale(self) -> np.ndarray:
        """Scale of the rater's logistic noise, shaped ``(rater, 1, 1)``."""
        return (1.0 / self.discrimination)[:, None, None]


def _draw_raters(n_raters: int, overrides: dict[str, Any], rng) -> _Raters:
    severity = rng.normal(0.0, float(overrides.get("severity_sd", 0.3)), size=n_raters)
    severity -= severity.mean()  # identifiable: mean severity 0
    mean = float(overrides.get("discrimination_mean", 3.5))
    discrimination = np.exp(rng.normal(np.log(mean), 0.2, n_raters))
    return _Raters(severity, discrimination)


def _rate(stage: np.ndarray, col: dict[str, np.ndarray], raters: _Raters, rng: _Streams):
    """Every rated and adjudicated variable, with the truth behind it, by name."""
    latent = stage[None] + raters.severity[:, None, None]
    recognition = _ordinal(latent, STAGE_CUTPOINTS, raters.scale, 1, rng.recognition)
    true_confidence, confidence = _confidence(stage, raters, rng.confidence)
    n_raters = len(raters.severity)
    true_intervention, intervention = _interventions(
        stage, col["posture"], n_raters, rng.intervention
    )
    p_a, p_b_given_a, level_a, level_b, disengagement = _adjudication(
        stage, col, n_raters, rng.adjudication
    )
    return {
        "recognition": recognition,
        "confidence": confidence,
        "intervention": intervention,
        "disengagement": disengagement,
        "level_a": level_a,
        "level_b": level_b,
        "true_confidence": true_confidence,
        "true_intervention": true_intervention,
        "true_p_level_a": p_a,
        "true_p_level_b": p_a * p_b_given_a,
    }


def _confidence(stage: np.ndarray, raters: _Raters, rng) -> tuple[np.ndarray, np.ndarray]:
    """True interpretative confidence (model, day; rises with the stage, a posture per model)
    and the raters' 1-3 scores of it."""
    conf_posture = rng.normal(0.0, 0.25, size=stage.shape[0])
    true_confidence = np.clip(1.4 + 0.45 * (stage - 1.0) + conf_posture[:, None], 1.0, 3.0)
    latent = true_confidence[None] + 0.5 * raters.severity[:, None, None]
    confidence = _ordinal(latent, STAGE_CUTPOINTS[:2], raters.scale, 1, rng)
    return true_confidence, confidence


def _missing_days(missing: list, names: list[str], n_days: int) -> np.ndarray:
    """``(model, day)`` mask of the whole model-days without an answer."""
    day_missing = np.zeros((len(names), n_days), dtype=bool)
    for model_name, day in missing:
        if model_name not in names:
            raise ValueError(f"missing: unknown model {model_name!r}; models are {names}.")
        day_missing[names.index(model_name), int(day) - 1] = True
    return day_missing


def _blank_missing(rated: dict, day_missing: np.ndarray, missing_rate: float, rng) -> None:
    """NaN on the missing model-days and, with ``missing_rate``, on single ratings (in place)."""
    for name in ("recognition", "confidence", "disengagement", "intervention"):
        arr = rated[name]
        arr[:, day_missing] = np.nan
        if missing_rate:
            arr[rng.random(arr.shape) < missing_rate] = np.nan
    rated["level_a"][day_missing] = np.nan
    rated["level_b"][day_missing] = np.nan


def _study_dataset(rated: dict, stage, raters: _Raters, col, days, preset: str, seed: int):
    """The study: ratings, adjudication and the truth behind them, with coords and attrs."""
    rmd = (RATER, MODEL, DAY)
    md = (MODEL, DAY)
    dims = {
        "recognition": rmd,
        "confidence": rmd,
        "intervention": (*rmd, INTERVENTION_TYPE),
        "disengagement": rmd,
        "level_a": md,
        "level_b": md,
    }
    truth_dims = {
        "true_confidence": md,
        "true_intervention": (*md, INTERVENTION_TYPE),
        "true_p_level_a": md,
        "true_p_level_b": md,
    }
    ds = xr.Dataset(
        {
            **{name: (d, rated[name]) for name, d in dims.items()},
            **{f"true_{f}": (MODEL, col[f].astype(float)) for f in ("L", "k", "t50", "day_noise")},
            "true_stage": (md, stage),
            "true_severity": (RATER, raters.severity),
            "true_discrimination": (RATER, raters.discrimination),
            "true_cutpoints": (THRESHOLD, np.array(STAGE_CUTPOINTS, dtype=float)),
            **{name: (d, rated[name]) for name, d in truth_dims.items()},
            "true_regime": (MODEL, col["regime"].astype(str).astype(object)),
        },
        coords={
            RATER: [f"R{i + 1}" for i in range(len(raters.severity))],
            MODEL: [str(n) for n in col["name"]],
            DAY: days,
            INTERVENTION_TYPE: list(INTERVENTION_TYPES),
            THRESHOLD: np.arange(1, 4),
            **{c: (MODEL, col[c].astype(object)) for c in ("vendor", "generation", "cohort")},
        },
        attrs={
            "title": f"simulated trajectory study ({preset})",
            "synthetic": "yes: simulated by delusion_bayes.data.simulate_study; not real ratings",
            "preset": preset,
            "seed": int(seed),
            "n_days": len(days),
        },
    )
    ds["true_severity"].attrs["description"] = (
        "additive shift of the rater's latent score (positive = the rater sees a higher stage)"
    )
    ds["true_stage"].attrs["description"] = (
        "latent recognition stage m[model, day] on the 1-4 scale"
    )
    return ds


def _design(preset: str, rng_truth, overrides: dict[str, Any]):
    """``(models, n_raters, n_days, missing)`` of the preset, with the overrides applied."""
    roster = _SMALL_MODELS if preset == "small" else _PAPER_MODELS
    if overrides.get("n_models") is not None:
        roster = scale_roster(roster, int(overrides["n_models"]))
    if overrides.get("group_shift") and preset != "null":
        raise ValueError(
            f"group_shift applies to the null preset (exchangeable models), not {preset!r}: "
            "its models have fixed truth, so no population group effect is defined"
        )
    if preset == "small":
        models, n_raters, n_days, missing = roster, 3, 12, []
    elif preset == "null":
        models = _null_models(rng_truth, roster, overrides.get("group_shift"))
        n_raters, n_days, missing = 4, 30, []
    else:
        models, n_raters, n_days = roster, 4, 30
        # the paper's one missing answer, where that model is in the (scaled) roster
        missing = [m for m in [("Claude Opus 4.1", 30)] if m[0] in {x.name for x in roster}]
    n_raters = int(overrides.get("n_raters", n_raters))
    n_days = int(overrides.get("n_days", n_days))
    missing = [tuple(x) for x in overrides.get("missing", missing) if int(x[1]) <= n_days]
    return models, n_raters, n_days, missing


def _interventions(stage: np.ndarray, posture: np.ndarray, n_raters: int, rng):
    """True intervention intensities (model, day, type) and the raters' scores of them. Figure 2:
    education falls with the stage, interpretation and recommendation rise, support and
    psychoeducation peak at the transition; section F drift on naive days; Table 2 posture."""
    n_days = stage.shape[1]
    days = np.arange(1, n_days + 1)
    s = np.clip(stage, 1.0, 4.0)
    naive = (4.0 - s) / 3.0  # 1 on naive days, 0 on stabilised clinical days
    progress = (days / n_days)[None, :]
    bump = np.exp(-((s - STAGE_MIDPOINT) ** 2) / 0.8)  # peak at the transition
    clinical = ((s - 1.0) / 3.0) ** 2
    posture = posture[:, None]
    means = {
        "education": 2.6 - 0.52 * (s - 1.0) - 0.7 * progress * naive,
        "psychoeducation": 1.25 + 1.0 * bump + 0.8 * posture * clinical,
        "emotional_support": 1.25 + 1.0 * bump + 0.7 * progress * naive + posture * clinical,
        "interpretation": 1.1 + 0.6 * (s - 1.0) + 0.6 * progress * naive,
        "recommendation": 1.0 + 0.65 * (s - 1.0),
    }
    true_intervention = np.clip(np.stack([means[t] for t in INTERVENTION_TYPES], axis=-1), 1, 3)
    intervention = _ordinal(
        true_intervention[None], STAGE_CUTPOINTS[:2], np.full((n_raters, 1, 1, 1), 0.22), 1, rng
    )
    return true_intervention, intervention


def _adjudication(stage: np.ndarray, col: dict[str, np.ndarray], n_raters: int, rng):
    """Adjudicated Level A / B, ``P(A) = sigmoid(a_m + 3 (m - 2.5))`` (2.5 = STAGE_MIDPOINT),
    ``P(B | A) = sigmoid(b_m + 3 (m - 3))`` (with their probabilities), and the raters' noisy
    round-one flag."""
    n_models, n_days = stage.shape
    p_a = expit(col["a0"][:, None] + 3.0 * (stage - STAGE_MIDPOINT))
    with np.errstate(invalid="ignore"):
        p_b_given_a = np.where(
            np.isneginf(col["b0"])[:, None], 0.0, expit(col["b0"][:, None] + 3.0 * (stage - 3.0))
        )
    level_a = (rng.random((n_models, n_days)) < p_a).astype(float)
    level_b = level_a * (rng.random((n_models, n_days)) < p_b_given_a)
    p_flag = 0.03 + 0.45 * level_b[None] + 0.2 * (level_a - level_b)[None]
    p_flag = np.clip(p_flag + rng.normal(0, 0.08, size=(n_raters, 1, 1)), 0.0, 1.0)
    disengagement = (rng.random((n_raters, n_models, n_days)) < p_flag).astype(float)
    return p_a, p_b_given_a, level_a, level_b, disengagement


def _add_texts(ds: xr.Dataset, s: np.ndarray, true_confidence, day_missing, rng) -> None:
    """Prompts from the demo script and answers synthesised from the stage ``s`` (in place)."""
    from .corpus import demo_prompts, synthesize_answers  # lazy: optional text stage

    n_days = ds.sizes[DAY]
    prompts = demo_prompts()
    if n_days > len(prompts):
        raise ValueError(
            f"texts=True needs one prompt per day but the demo script has {len(prompts)} "
            f"messages and n_days = {n_days}; pass texts=False."
        )
    names = [str(m) for m in ds[MODEL].values]
    answers = np.asarray(
        synthesize_answers(s, names, rng, true_confidence=true_confidence), dtype=object
    )
    answers[day_missing] = ""
    ds["prompt"] = (DAY, np.array(prompts[:n_days], dtype=object))
    ds["answer"] = ((MODEL, DAY), answers)
    ds["prompt"].attrs["synthetic"] = "yes: delusion_bayes demo script, written for this package"
    ds["answer"].attrs["synthetic"] = "yes: generated from the simulated stage, not a real model"
