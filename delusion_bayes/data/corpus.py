"""The bundled SYNTHETIC demo corpus: a 30-day user script and stage-driven synthetic answers.

Written for this package so that entrainment and modality run offline on simulated studies. The
user script (``demo_script.tsv``) follows the spirit of the protocol of "How LLMs Respond to
Escalating Delusions" but is original text. :func:`synthesize_answers` writes answers whose style
follows the simulated latent stage: stage 1 engages and echoes the user's words (high
entrainment), stage 4 gives generic clinical framing and referral (low entrainment); hedges and
boosters follow the paper's modality results.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources

import numpy as np

from .schema import STAGE_MIDPOINT

#: attach to the ``prompt``/``answer`` variables' attrs of any study that uses this corpus
SYNTHETIC_NOTE = (
    "SYNTHETIC demo corpus of delusion_bayes (delusion_bayes.data.corpus): an original user "
    "script and template answers driven by the simulated stage; not data from any study"
)
N_PROMPTS = 30
#: assertiveness of models whose stage never reaches the clinical range (:func:`_profile`)
NEVER_TURNING_ASSERTIVENESS = 0.2


@lru_cache(maxsize=1)
def demo_script() -> tuple[dict[str, str], ...]:
    raw = (resources.files(__package__) / "demo_script.tsv").read_text(encoding="utf-8")
    body = "\n".join(ln for ln in raw.splitlines() if ln.strip() and not ln.startswith("#"))
    rows = tuple(csv.DictReader(io.StringIO(body), delimiter="\t"))
    if len(rows) != N_PROMPTS or [int(r["day"]) for r in rows] != list(range(1, N_PROMPTS + 1)):
        raise ValueError("demo_script.tsv must hold days 1..30 in order")  # packaging error
    return rows


def demo_prompts() -> list[str]:
    """The 30 user messages of the SYNTHETIC demo script, day 1 first."""
    return [r["prompt"] for r in demo_script()]


# --- answer building blocks (written to carry as few booster/hedge markers as possible, so the
# modality of an answer comes from the qualifiers added below) -------------------------------
_HELPER = (
    "Thank you for telling me all of this.",
    "Let's go through it together, one piece at a time.",
    "I'm here to help you with this.",
    "You are not alone with this.",
)
_ECHO = (
    'You wrote: "{q}"',
    'When you say "{q}", that detail stands out.',
    'This part matters: "{q}"',
)
_AMBIGUOUS = (
    "long stretches with little sleep change how sounds and patterns come across.",
    "stress and isolation make the mind search harder for meaning in small events.",
    "some of this has ordinary explanations, and some of it is worth talking over with a person "
    "close to you.",
    "the amount of sleep you get is part of this picture too.",
    "these experiences are heavy to carry alone in a new city.",
)
#: clinical framing (the first :data:`_N_FRAMING`, which take a qualifier prefix), then advice
_CLINICAL = (
    "weeks of poor sleep, isolation, hidden messages and voices in recordings are signs of a "
    "mental health crisis.",
    "these experiences are symptoms that doctors treat every day, and they respond well to care.",
    "sleep loss on this scale distorts perception, memory and judgement.",
    "the sense that everyday signals are aimed at you is a recognised symptom of psychosis.",
    "this is a medical situation and not a puzzle to solve.",
    "Please contact your doctor or a mental health crisis service today.",
    "If you are in danger of hurting yourself or anyone else, call emergency services now.",
    "A psychiatrist or your GP can assess what is happening and help you rest.",
    "Please take a break from talking with me and reach out to a person you trust.",
    "I am an AI, and a clinician is the right support for this, not me.",
    "Eating a proper meal and drinking water today is an important first step.",
)
_N_FRAMING = 5
_Q_ENGAGE = (
    "What happened after that?",
    "Did anything else change in the apartment?",
    "Have you noted the exact times?",
)
_Q_CLINICAL = (
    "Is there someone you trust who can be with you tonight?",
    "How many hours have you slept this week?",
    "Can you call a doctor or a crisis line right now?",
)
_HEDGES = (
    "Perhaps",
    "Maybe",
    "It seems that",
    "Possibly,",
    "It is possible that",
    "I suspect that",
)
_BOOSTERS = ("Clearly,", "Certainly,", "Without doubt,", "In fact,", "Indeed,", "It is clear that")


def _sentences(text: str) -> list[str]:
    """``text`` split after every ``.``, ``?`` and ``!``, stripped, empty pieces dropped."""
    return [p.strip() for p in re.findall(r"[^.?!]*[.?!]|[^.?!]+$", text) if p.strip()]


def _lower_first(s: str) -> str:
    if s.startswith(("I ", "I'", "A psychiatrist")) or not s:
        return s
    return s[0].lower() + s[1:]


def _qualify(s: str, a: float, rng: np.random.Generator) -> str:
    """Prefix a hedge or a booster to a declarative sentence, by assertiveness ``a`` in [-1, 1]."""
    p_hedge = float(np.clip(0.30 - 0.45 * a, 0.0, 0.85))
    p_boost = float(np.clip(0.20 + 0.45 * a, 0.0, 0.85))
    u = rng.random()
    if u < p_hedge:
        return f"{_HEDGES[rng.integers(len(_HEDGES))]} {_lower_first(s)}"
    if u < p_hedge + p_boost:
        return f"{_BOOSTERS[rng.integers(len(_BOOSTERS))]} {_lower_first(s)}"
    return s[:1].upper() + s[1:]


def _profile(stage: np.ndarray, n_days: int) -> np.ndarray:
    """Assertiveness per day from one model's stage trajectory (paper, Results, Modality).

    Early turners (turn in the first quarter) go from -0.6 to +0.1 at the turn, late turners
    (after 60 % of the days) from -0.1 to -0.45, the others from -0.2 to -0.1; never-turners stay
    at :data:`NEVER_TURNING_ASSERTIVENESS` (docs/dev/design-notes.md, "From data/").
    """
    clinical = np.flatnonzero(np.nan_to_num(stage, nan=0.0) >= STAGE_MIDPOINT)
    a = np.full(stage.shape, NEVER_TURNING_ASSERTIVENESS)
    if clinical.size == 0:
        return a
    turn = clinical[0]  # 0-based day index of the turn
    if turn < 0.25 * n_days:
        before, after = -0.6, 0.1
    elif turn >= 0.6 * n_days:
        before, after = -0.1, -0.45
    else:
        before, after = -0.2, -0.1
    a[:turn] = before
    a[turn:] = after
    return a


def _answer(
    prompt: str, engage: Sequence[str], s: float, a: float, rng: np.random.Generator
) -> str:
    w = float(np.clip((4.0 - s) / 3.0 + rng.normal(0.0, 0.05), 0.0, 1.0))  # engagement weight
    v = float(np.clip(1.0 - abs(s - STAGE_MIDPOINT), 0.0, 1.0))  # transitional (ambiguous) weight
    parts: list[str] = []
    if rng.random() < 0.6:
        parts.append(_HELPER[rng.integers(len(_HELPER))])
    if rng.random() < w**1.5:
        quote = _sentences(prompt)
        parts.append(_ECHO[rng.integers(len(_ECHO))].format(q=quote[rng.integers(len(quote))]))
    for sent in engage[: rng.binomial(len(engage), w)]:
        parts.append(_qualify(sent, a, rng))
    for k in rng.choice(len(_AMBIGUOUS), size=rng.binomial(2, v), replace=False):
        parts.append(_qualify(_AMBIGUOUS[k], a, rng))
    n_clin = rng.binomial(4, 1.0 - w)
    for k in sorted(rng.choice(len(_CLINICAL), size=n_clin, replace=False)):
        parts.append(_qualify(_CLINICAL[k], a, rng) if k < _N_FRAMING else _CLINICAL[k])
    if len(parts) < 2:
        parts.append(_qualify(_AMBIGUOUS[rng.integers(len(_AMBIGUOUS))], a, rng))
    if rng.random() < float(np.clip(0.30 - 0.40 * a, 0.0, 0.7)):
        pool = _Q_ENGAGE if w >= 0.5 else _Q_CLINICAL
        parts.append(pool[rng.integers(len(pool))])
    return " ".join(parts)


def synthesize_answers(
    true_stage: np.ndarray,
    models: Sequence[str],
    rng: np.random.Generator,
    *,
    true_confidence: np.ndarray | None = None,
) -> np.ndarray:
    """SYNTHETIC answers whose style follows a simulated latent stage.

    Parameters
    ----------
    true_stage : ndarray, shape (n_models, n_days)
        Latent stage on the 1-4 scale (continuous; NaN = no answer) for the first ``n_days`` <= 30
        prompts of :func:`demo_prompts`; ``models`` names its rows.
    rng : numpy.random.Generator
        All randomness comes from it: the same generator state gives the same answers.
    true_confidence : ndarray, shape (n_models, n_days), optional
        Interpretative confidence (1-3). Assertiveness follows the stage trajectory
        (:func:`_profile`); a model's mean confidence shifts its level by
        ``0.2 * (mean confidence - 2)`` (not day by day: confidence rises with the stage, so a
        day-wise term would erase the paper's late-turner pattern).

    Returns
    -------
    ndarray of str, shape (n_models, n_days), dtype object
        ``''`` where ``true_stage`` is NaN.
    """
    stage = np.asarray(true_stage, dtype=float)
    conf = _checked_inputs(stage, models, true_confidence)
    n_models, n_days = stage.shape
    rows = demo_script()[:n_days]
    prompts = [r["prompt"] for r in rows]
    engage = [(r["engage_1"], r["engage_2"]) for r in rows]
    out = np.full((n_models, n_days), "", dtype=object)
    for m in range(n_models):
        a_row = _profile(stage[m], n_days)
        if conf is not None and np.isfinite(conf[m]).any():
            a_row = a_row + 0.2 * (float(np.nanmean(conf[m])) - 2.0)
        for d in np.flatnonzero(np.isfinite(stage[m])):
            a = float(np.clip(a_row[d], -1.0, 1.0))
            out[m, d] = _answer(prompts[d], engage[d], float(stage[m, d]), a, rng)
    return out


def _checked_inputs(
    stage: np.ndarray, models: Sequence[str], true_confidence: np.ndarray | None
) -> np.ndarray | None:
    """Check the stage (2-D, one row per model, at most 30 days, on the 1-4 scale) and the
    confidence (same shape); the confidence as floats (None without)."""
    if stage.ndim != 2:
        raise ValueError(f"true_stage must be 2-D (model, day), got shape {stage.shape}")
    n_models, n_days = stage.shape
    if len(models) != n_models:
        raise ValueError(
            f"models has {len(models)} names but true_stage has {n_models} rows (model, day)"
        )
    if n_days > N_PROMPTS:
        raise ValueError(
            f"the demo script has {N_PROMPTS} prompts; cannot synthesize answers for {n_days} days "
            "(use n_days <= 30 or bring your own texts)"
        )
    finite = stage[np.isfinite(stage)]
    if finite.size and (finite.min() < 0.5 or finite.max() > 4.5):
        raise ValueError(
            f"true_stage must lie on the 1-4 stage scale, got range [{finite.min():.2f}, "
            f"{finite.max():.2f}]"
        )
    if true_confidence is None:
        return None
    conf = np.asarray(true_confidence, dtype=float)
    if conf.shape != stage.shape:
        raise ValueError(
            f"true_confidence has shape {conf.shape}; expected {stage.shape} like true_stage"
        )
    return conf
