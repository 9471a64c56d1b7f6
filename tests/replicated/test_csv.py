"""The tidy-CSV replicated study: the template round trip and the loader's errors on bad input.

Each bad input is the template (``write_replicated_template``) with one cell changed; the error
must name the file, the row (file line, header = line 1), the column, the value and what was
expected (issue 50: "names as written, clear errors, nothing dropped").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.data.csv_format import StudyFormatError
from delusion_bayes.data.replicated import validate_replicated
from delusion_bayes.data.replicated_csv import read_replicated_csv, write_replicated_template
from delusion_bayes.data.replicated_io import load_replicated, save_replicated


@pytest.fixture
def template(tmp_path):
    return write_replicated_template(tmp_path / "study")


def _edit(path, name, row, column, value):
    """Set one cell of ``path/name`` (data row ``row``, 0-based) and write it back as text."""
    df = pd.read_csv(path / name, dtype=str, keep_default_na=False)
    df.loc[row, column] = value
    df.to_csv(path / name, index=False)


def test_template_round_trip(template, tmp_path):
    """3 chatbots x 4 conversations x 12 turns x 2 raters (a person and a judge) x 3 items of
    the three scales; the one empty score is NaN and counted; netCDF gives the same study."""
    ds = read_replicated_csv(template)
    validate_replicated(ds)
    assert dict(ds.sizes) == {"rater": 2, "model": 3, "conversation": 4, "turn": 12, "item": 3}
    assert ds["rater_kind"].values.tolist() == ["human", "judge"]
    assert ds["item_scale"].values.tolist() == ["ordinal", "binary", "count"]
    assert ds["item_cap"].values[2] == 5 and np.isnan(ds["item_max"].values[2])
    assert ds.attrs["n_missing_ratings"] == 1
    assert int(np.isnan(ds["score"]).sum()) == 1
    ratings = pd.read_csv(template / "ratings.csv", keep_default_na=False)
    assert len(ratings) == 2 * 3 * 4 * 12 * 3  # every row kept
    assert ds["category"].sel(model="chatbot-b", conversation="p3").item() == "grandiosity"
    assert ds["seed"].sel(model="chatbot-c", conversation="p2").item() == 201
    back = load_replicated(save_replicated(ds, tmp_path / "study.nc"))
    xr_equal = back.drop_attrs().identical(ds.drop_attrs())
    assert xr_equal
    assert load_replicated(template).identical(ds)


def test_template_refuses_a_non_empty_folder(template):
    with pytest.raises(FileExistsError, match="is not empty; choose a new folder"):
        write_replicated_template(template)


def test_missing_conversation_id(template):
    _edit(template, "ratings.csv", 4, "conversation", "")
    with pytest.raises(StudyFormatError) as err:
        read_replicated_csv(template)
    assert str(err.value) == (
        f"{template / 'ratings.csv'}, row 6, column 'conversation': the conversation id is empty "
        "(''); expected the id of the chatbot's conversation on every row (e.g. its prompt id)."
    )


def test_conversation_not_listed_in_conversations_csv(template):
    _edit(template, "ratings.csv", 9, "conversation", "p9")
    with pytest.raises(StudyFormatError) as err:
        read_replicated_csv(template)
    assert str(err.value) == (
        f"{template / 'ratings.csv'}, row 11, column 'conversation': conversation 'p9' of "
        f"chatbot 'chatbot-a' is not in {template / 'conversations.csv'}; expected every rated "
        "(model, conversation) to be listed there (add the row, or fix the id)."
    )


def test_item_outside_its_declared_scale(template):
    """Row 2 of ratings.csv rates ``recognition`` (ordinal 1..4); a 5 is refused."""
    _edit(template, "ratings.csv", 0, "score", "5")
    with pytest.raises(StudyFormatError) as err:
        read_replicated_csv(template)
    assert str(err.value) == (
        f"{template / 'ratings.csv'}, row 2, column 'score': '5' for item 'recognition' is "
        f"outside its declared scale (ordinal, integers 1..4, {template / 'items.csv'}); "
        "expected an integer 1..4, or empty for a missing rating."
    )


def test_unknown_item(template):
    _edit(template, "ratings.csv", 1, "item", "Pushback")
    with pytest.raises(StudyFormatError) as err:
        read_replicated_csv(template)
    assert str(err.value) == (
        f"{template / 'ratings.csv'}, row 3, column 'item': 'Pushback' is not declared in "
        f"{template / 'items.csv'} (items ['recognition', 'pushback', 'delusion_reinforcement']"
        "); declare its scale there (item, scale, min, max)."
    )


def test_a_rating_without_a_score_is_kept_as_missing(template):
    """An empty score (e.g. a turn the judge did not answer) is NaN, counted, never dropped or
    zeroed: the judge's recognition score of chatbot-a / p1 / turn 1 (data row 3)."""
    _edit(template, "ratings.csv", 3, "score", "")
    ds = read_replicated_csv(template)
    assert ds.attrs["n_missing_ratings"] == 2
    cell = ds["score"].sel(
        rater="judge-1", model="chatbot-a", conversation="p1", turn=1, item="recognition"
    )
    assert np.isnan(cell.item())


def test_bad_scale_and_unread_column(template):
    _edit(template, "items.csv", 1, "scale", "likert")
    with pytest.raises(StudyFormatError) as err:
        read_replicated_csv(template)
    assert str(err.value) == (
        f"{template / 'items.csv'}, row 3, column 'scale': 'likert'; expected one of "
        "['ordinal', 'binary', 'count']."
    )
    _edit(template, "items.csv", 1, "scale", "binary")
    df = pd.read_csv(template / "ratings.csv", dtype=str, keep_default_na=False)
    df.assign(note="x").to_csv(template / "ratings.csv", index=False)
    with pytest.raises(StudyFormatError, match=r"unexpected column\(s\) \['note'\]"):
        read_replicated_csv(template)
