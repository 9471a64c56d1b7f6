"""Getting the texts out of a trajectory study, and splitting them into sentences."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL


def is_missing(text: object) -> bool:
    """A missing answer: ``None``, NaN, or an empty / whitespace-only string."""
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return True
    return not str(text).strip()


def model_coords(obj: xr.Dataset | xr.DataArray) -> dict[str, xr.DataArray]:
    """The model metadata coords (vendor, generation, ...) of ``obj``, for group-wise tables."""
    return {k: v for k, v in obj[MODEL].coords.items() if k != MODEL and v.dims == (MODEL,)}


def has_texts(ds: xr.Dataset) -> bool:
    """Whether the study carries ``prompt (day)`` and ``answer (model, day)`` with any answer."""
    if "prompt" not in ds or "answer" not in ds:
        return False
    return any(not is_missing(a) for a in np.asarray(ds["answer"].values, dtype=object).ravel())


def study_texts(ds: xr.Dataset) -> tuple[list[str], np.ndarray]:
    """The prompts (list over days) and answers (object array ``(model, day)``, ``''`` = missing).

    ValueError when ``prompt``/``answer`` are absent or not over ``(day,)``/``(model, day)``.
    """
    for name, dims in (("prompt", (DAY,)), ("answer", (MODEL, DAY))):
        if name not in ds:
            raise ValueError(
                f"the study has no {name!r} variable: text metrics need `prompt ({DAY})` and "
                f"`answer ({MODEL}, {DAY})` (simulate with texts=True or load a study with texts)"
            )
        if set(ds[name].dims) != set(dims):
            raise ValueError(f"variable {name!r} has dims {ds[name].dims}; expected {dims}")
    prompts = [("" if is_missing(p) else str(p)) for p in ds["prompt"].values]
    ans = ds["answer"].transpose(MODEL, DAY).values
    answers = np.array([("" if is_missing(a) else str(a)) for a in ans.ravel()], dtype=object)
    return prompts, answers.reshape(ans.shape)


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(texts: Sequence[str]) -> list[list[str]]:
    """Split each text into sentences with spaCy's rule-based ``sentencizer`` (fast, deterministic;
    entrainment configurations 1 and 2). Each distinct text is split once per process."""
    texts = [str(t) for t in texts]
    todo = [t for t in dict.fromkeys(texts) if t not in _SPLIT]
    if todo:
        if len(_SPLIT) + len(todo) > _SPLIT_MAX:
            _SPLIT.clear()
        for t, doc in zip(todo, _sentencizer().pipe(todo), strict=True):
            sents = [s.text.strip() for s in doc.sents]
            _SPLIT[t] = tuple(s for s in sents if any(c.isalnum() for c in s))
    return [list(_SPLIT[t]) for t in texts]


#: per-process memo of split texts (entrainment configurations 1 and 2 split the same texts)
_SPLIT: dict[str, tuple[str, ...]] = {}
_SPLIT_MAX = 200_000
