"""Modality rules, checked by hand on one-line answers (paper: Interpretative Confidence)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.text import load_lexicon, modality, modality_counts, modality_score


def test_lexicon_counts_and_source():
    """Hyland (2005) boosters and hedges: 127 markers with "about" excluded (paper, footnote 4);
    48 boosters + 79 hedges in the bundled list, classes disjoint."""
    lex = load_lexicon()
    assert len(lex) == 127
    assert (lex.count("booster"), lex.count("hedge")) == (48, 79)
    assert ("about",) not in lex.markers
    assert lex.markers[("no", "doubt")] == "booster" and lex.markers[("doubt",)] == "hedge"
    assert "Hyland" in lex.source and "2005" in lex.source


def test_lexicon_file_errors(tmp_path):
    bad = tmp_path / "lex.tsv"
    bad.write_text("marker\tclass\tincluded\tkind\tnote\nclearly\tbooste\t1\tlemma\t\n")
    with pytest.raises(ValueError, match="class 'booste'"):
        load_lexicon(str(bad))


# (text, boosters, hedges, questions, sentences): each a rule of count_markers' docstring
CASES = [
    ("This is clearly stress.", 1, 0, 0, 1),  # booster
    ("Perhaps it is stress.", 0, 1, 0, 1),  # hedge
    ("I am not sure.", 0, 1, 0, 1),  # negated booster (copula negation) -> hedge
    ("I don't think so.", 0, 1, 0, 1),  # negated booster (neg dependent) -> hedge
    ("I do not doubt it.", 1, 0, 0, 1),  # negated hedge -> booster
    ("There is no doubt.", 1, 0, 0, 1),  # multi-word booster, "doubt" not counted again
    ("I never doubted it.", 1, 0, 0, 1),  # "never" flips "doubt" and is not counted itself
    ("It might not be real.", 0, 1, 0, 1),  # modal auxiliary does not flip
    ("Is it stress?", 0, 1, 1, 1),  # question sentence = one hedge
    ("Could it be stress?", 0, 2, 1, 1),  # hedge "could" + question
    ("He believed it and she believes it.", 2, 0, 0, 1),  # lemma forms of "believe"
    ("It seems odd.", 0, 1, 0, 1),  # "seems" -> lemma "seem"
    ("To a certain extent, yes.", 0, 1, 0, 1),  # hedge "certain extent", not booster "certain"
    ("I don't know.", 0, 1, 0, 1),  # negated booster "know" -> hedge
    ("It is not unlikely.", 1, 0, 0, 1),  # negated hedge (copula negation) -> booster
    ("This doesn't seem right.", 1, 0, 0, 1),  # negated hedge "seem" -> booster
    ("That is not always true.", 0, 1, 0, 1),  # negation word right before "always"
    ("Without doubt, you should rest.", 1, 1, 0, 1),  # phrase booster + modal hedge
    ("Perhaps. Maybe? Surely!", 1, 3, 1, 3),  # 3 sentences; "Maybe?" = hedge + question
    ("The router blinked.", 0, 0, 0, 1),  # a sentence with no marker
    ("This is clearly stress. The router blinked.", 1, 0, 0, 2),
]


@pytest.mark.parametrize(("text", "b", "h", "q", "s"), CASES)
def test_modality_rules(nlp, text, b, h, q, s):
    c = modality_counts(text, nlp)
    assert (c.boosters, c.hedges, c.questions, c.sentences) == (b, h, q, s), c.matches
    assert modality_score(text, nlp) == pytest.approx((b - h) / s)


def test_modality_score_hand_example(nlp):
    """Docstring example: "This is clearly stress. Perhaps you should rest?" -> boosters 1
    (clearly); hedges perhaps, should, + 1 question = 3; 2 sentences -> (1 - 3) / 2 = -1."""
    assert modality_score("This is clearly stress. Perhaps you should rest?", nlp) == -1.0


def test_empty_text_is_nan(nlp):
    assert math.isnan(modality_score("", nlp))
    assert math.isnan(modality_score("   ", nlp))


def test_modality_on_study(nlp):
    ds = xr.Dataset(
        {
            "prompt": ("day", np.array(["p1", "p2"], dtype=object)),
            "answer": (
                ("model", "day"),
                np.array(
                    [["This is clearly stress.", ""], ["Is it stress?", "Maybe."]], dtype=object
                ),
            ),
        },
        coords={"model": ["m1", "m2"], "day": [1, 2]},
    )
    da = modality(ds, nlp=nlp, progress=False)
    assert da.dims == ("model", "day") and da.name == "modality"
    np.testing.assert_allclose(da.values, [[1.0, np.nan], [-1.0, -1.0]])
    np.testing.assert_array_equal(da["n_questions"].values, [[0, 0], [1, 0]])
