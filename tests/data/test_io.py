"""load_study/save_study: both formats round-trip exactly; malformed CSVs name file, row, column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.data import StudyFormatError, load_study, save_study, simulate_study
from delusion_bayes.data.io import canonical


def _assert_exact(a: xr.Dataset, b: xr.Dataset) -> None:
    xr.testing.assert_identical(a, b)
    assert list(a.data_vars) == list(b.data_vars)
    for name in a.variables:
        assert a[name].dtype == b[name].dtype, name
        assert a[name].dims == b[name].dims, name


@pytest.fixture(scope="module")
def messy():
    """paper_like with texts, random missing ratings, a missing answer and an 'NA' answer text."""
    ds = simulate_study(preset="paper_like", seed=1, missing_rate=0.05)
    ds["answer"].loc[{"model": "GPT-4o", "day": 2}] = "NA"  # literal text, not a missing value
    return canonical(ds)


@pytest.mark.parametrize("fmt", ["study.nc", "study_dir"])
def test_round_trip_exact(messy, tmp_path, fmt):
    path = save_study(messy, tmp_path / fmt)
    back = load_study(path)
    _assert_exact(back, messy)
    # nothing dropped: the missing model-day stays missing, the missing answer stays ''
    assert np.isnan(back["recognition"].sel(model="Claude Opus 4.1", day=30)).all()
    assert back["answer"].sel(model="Claude Opus 4.1", day=30).item() == ""
    assert back["answer"].sel(model="GPT-4o", day=2).item() == "NA"
    assert int(back["recognition"].isnull().sum()) == int(messy["recognition"].isnull().sum()) > 0


def test_round_trip_small_without_texts(small_study, tmp_path):
    for name in ("s.nc", "s"):
        _assert_exact(load_study(save_study(small_study, tmp_path / name)), canonical(small_study))


def test_csv_writes_every_cell(small_study, tmp_path):
    save_study(small_study, tmp_path / "d")
    ratings = pd.read_csv(tmp_path / "d" / "ratings.csv")
    assert list(ratings.columns) == ["rater", "model", "day", "item", "score"]
    # 3 raters x 5 models x 12 days x (recognition, confidence, disengagement + 5 types)
    assert len(ratings) == 3 * 5 * 12 * 8


def _hand_made(tmp_path, rows: str, **files: str):
    d = tmp_path / "hand"
    d.mkdir()
    (d / "ratings.csv").write_text("rater,model,day,item,score\n" + rows)
    for name, text in files.items():
        (d / f"{name}.csv").write_text(text)
    return d


def test_hand_made_csv_directory(tmp_path):
    d = _hand_made(
        tmp_path,
        "A,m1,1,recognition,1\nA,m1,2,recognition,3\nB,m1,1,recognition,2\nB,m1,2,recognition,\n"
        "A,m1,1,education,3\n",
        models="model,vendor\nm1,acme\n",
        adjudication="model,day,level_a,level_b\nm1,1,0,0\nm1,2,1,1\n",
    )
    ds = load_study(d)
    assert ds.sizes == {"rater": 2, "model": 1, "day": 2, "intervention_type": 1}
    np.testing.assert_array_equal(ds["recognition"].sel(model="m1").values, [[1, 3], [2, np.nan]])
    assert ds["vendor"].values.tolist() == ["acme"]
    assert ds["level_b"].values.tolist() == [[0.0, 1.0]]
    assert np.isnan(ds["intervention"].sel(rater="B").values).all()


def test_unknown_item_names_file_row_column(tmp_path):
    d = _hand_made(tmp_path, "A,m1,1,recognition,1\nA,m1,2,recogniton,3\n")
    with pytest.raises(
        StudyFormatError, match=r"ratings.csv, row 3, column 'item': unknown item 'recogniton'"
    ):
        load_study(d)


def test_unparsable_score(tmp_path):
    d = _hand_made(tmp_path, "A,m1,1,recognition,1\nA,m1,2,recognition,three\n")
    with pytest.raises(
        StudyFormatError, match=r"ratings.csv, row 3, column 'score': cannot parse 'three'"
    ):
        load_study(d)


def test_unparsable_day(tmp_path):
    d = _hand_made(tmp_path, "A,m1,1.5,recognition,1\n")
    with pytest.raises(StudyFormatError, match=r"row 2, column 'day': '1.5' is not an integer"):
        load_study(d)


def test_missing_column(tmp_path):
    d = tmp_path / "bad"
    d.mkdir()
    (d / "ratings.csv").write_text("rater,model,day,score\nA,m1,1,2\n")
    with pytest.raises(StudyFormatError, match=r"ratings.csv: missing column\(s\) \['item'\]"):
        load_study(d)


def test_duplicate_rows_are_an_error(tmp_path):
    d = _hand_made(tmp_path, "A,m1,1,recognition,1\nA,m1,1,recognition,2\n")
    with pytest.raises(StudyFormatError, match=r"rows \[2, 3\] repeat the same"):
        load_study(d)


def test_out_of_range_score_in_csv_is_a_validation_error(tmp_path):
    d = _hand_made(tmp_path, "A,m1,1,recognition,5\nB,m1,1,recognition,1\n")
    with pytest.raises(ValueError, match=r"'recognition' has out-of-range scores.*\{1, 2, 3, 4\}"):
        load_study(d)


def test_model_not_in_models_csv(tmp_path):
    d = _hand_made(tmp_path, "A,m2,1,recognition,1\n", models="model,vendor\nm1,acme\n")
    with pytest.raises(
        StudyFormatError, match=r"row 2, column 'model': 'm2' is not among the models"
    ):
        load_study(d)


def test_missing_path():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_study("/nonexistent/study.nc")
