"""The CSV/netCDF loader invents nothing and raises only its own errors (issue 18, items 2 and 3).

Each case is a study a user could really write; each test checks both the error class and that
the message names the file, the row and the bad value, so that none of them can pass by accident.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from delusion_bayes.data import (
    StudyFormatError,
    StudyValidationError,
    load_study,
    save_study,
    simulate_study,
)

HEADER = "rater,model,day,item,score\n"
#: two raters, one model, days 1-3: a complete little study
GOOD = "".join(
    f"{r},m1,{d},recognition,{s}\n" for r in ("A", "B") for d, s in ((1, 1), (2, 2), (3, 3))
)


def _study(tmp_path, ratings: str = GOOD, *, header: str = HEADER, **files: str):
    d = tmp_path / "study"
    d.mkdir()
    (d / "ratings.csv").write_text(header + ratings)
    for name, text in files.items():
        (d / name.replace("__", ".")).write_text(text)
    return d


def test_the_good_study_loads(tmp_path):
    ds = load_study(_study(tmp_path))
    assert ds.sizes["rater"] == 2 and ds.sizes["day"] == 3
    assert ds["day"].values.tolist() == [1, 2, 3]


# --- item 2: no invented data -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_rater", "needle"),
    [("A ", "'A ' has leading or trailing whitespace"), ("", "the rater name is empty")],
)
def test_padded_or_empty_rater_is_not_a_phantom_rater(tmp_path, bad_rater, needle):
    d = _study(tmp_path, GOOD + f"{bad_rater},m1,1,confidence,2\n")
    with pytest.raises(StudyFormatError) as err:
        load_study(d)
    msg = str(err.value)
    assert "ratings.csv, row 8, column 'rater'" in msg and needle in msg


def test_padded_model_in_answers_is_an_error(tmp_path):
    d = _study(tmp_path, answers__csv="model,day,text\nm1 ,1,hello\n")
    with pytest.raises(StudyFormatError, match=r"answers.csv, row 2, column 'model'.*'m1 '"):
        load_study(d)


def test_empty_model_in_models_csv_is_an_error(tmp_path):
    d = _study(tmp_path, models__csv="model,vendor\nm1,acme\n,other\n")
    with pytest.raises(StudyFormatError, match=r"models.csv, row 3, column 'model'.*empty"):
        load_study(d)


def test_ratings_starting_at_day_2_get_no_inserted_day(tmp_path):
    rows = "".join(f"A,m1,{d},recognition,1\n" for d in (2, 3))
    with pytest.raises(StudyFormatError) as err:
        load_study(_study(tmp_path, rows))
    msg = str(err.value)
    assert "ratings.csv" in msg and "day(s) [1]" in msg and "to day 3" in msg


def test_skipped_day_is_an_error_but_a_declared_empty_day_is_kept(tmp_path):
    rows = "".join(f"A,m1,{d},recognition,1\n" for d in (1, 2, 4))
    with pytest.raises(
        StudyFormatError, match=r"ratings.csv, column 'day': no row for day\(s\) \[3\]"
    ):
        load_study(_study(tmp_path, rows))
    # the same study declaring day 3 with an empty score loads, day 3 all missing
    (tmp_path / "study" / "ratings.csv").write_text(HEADER + rows + "A,m1,3,recognition,\n")
    ds = load_study(tmp_path / "study")
    assert ds["day"].values.tolist() == [1, 2, 3, 4]
    assert np.isnan(ds["recognition"].sel(day=3)).all()


@pytest.mark.parametrize(
    ("fname", "text", "row"),
    [
        ("prompts.csv", "day,text\n1,a\n2,b\n3,c\n4,d\n", 5),
        ("answers.csv", "model,day,text\nm1,4,late\n", 2),
        ("adjudication.csv", "model,day,level_a,level_b\nm1,1,0,0\nm1,4,1,0\n", 3),
    ],
)
def test_other_files_cannot_extend_the_day_range(tmp_path, fname, text, row):
    """A prompt for day 4 of a 3-day study would move every never-turner's censoring day."""
    d = _study(tmp_path, **{fname.replace(".", "__"): text})
    with pytest.raises(StudyFormatError) as err:
        load_study(d)
    msg = str(err.value)
    assert (
        f"{fname}, row {row}, column 'day': day 4 is outside the days of ratings.csv (1..3)" in msg
    )


@pytest.mark.parametrize("token", ["", "NA", "nan", "NaN", "na", " NA "])
def test_na_and_nan_mean_missing_like_empty(tmp_path, token):
    ds = load_study(_study(tmp_path, GOOD + f"A,m1,1,confidence,{token}\nB,m1,1,confidence,2\n"))
    assert np.isnan(ds["confidence"].sel(rater="A", day=1, model="m1").item())
    assert ds["confidence"].sel(rater="B", day=1, model="m1").item() == 2


def test_na_in_extra_values_is_missing_too(tmp_path, small_study):
    d = save_study(small_study, tmp_path / "s")
    path = d / "extra" / "true_L.csv"
    lines = path.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ",NA"
    path.write_text("\n".join(lines) + "\n")
    ds = load_study(d)
    assert np.isnan(ds["true_L"].values[0]) and not np.isnan(ds["true_L"].values[1:]).any()


def test_netcdf_model_coordinate_with_nan_is_rejected(tmp_path, small_study):
    ds = small_study.copy()
    models = ds["model"].values.astype(object)
    models[2] = np.nan
    path = save_study(ds.assign_coords(model=models), tmp_path / "nan_model.nc")
    with pytest.raises(StudyValidationError) as err:
        load_study(path)
    msg = str(err.value)
    assert "nan_model.nc" in msg and "coordinate 'model' at position 2" in msg and "nan" in msg


def test_padded_name_in_memory_is_rejected(small_study):
    from delusion_bayes.data import validate

    raters = [str(r) for r in small_study["rater"].values]
    raters[0] += " "
    with pytest.raises(StudyValidationError, match=r"coordinate 'rater' at position 0.*'R1 '"):
        validate(small_study.assign_coords(rater=raters))


@pytest.mark.parametrize("target", ["../outside.csv", "/etc/passwd", "extra/../../outside.csv"])
def test_extra_may_not_point_outside_the_study(tmp_path, small_study, target):
    d = save_study(small_study, tmp_path / "s")
    (tmp_path / "outside.csv").write_text("model,value\n")
    manifest = json.loads((d / "study.json").read_text())
    manifest["extra"]["true_L"]["file"] = target
    (d / "study.json").write_text(json.dumps(manifest))
    with pytest.raises(StudyFormatError) as err:
        load_study(d)
    msg = str(err.value)
    assert "study.json" in msg and "extra.true_L.file" in msg and "outside the study folder" in msg


# --- item 3: only the package's own errors ------------------------------------------------------


def _corrupt(tmp_path, small_study, case: str):
    """A saved small study with one file broken as named by ``case``; returns (path, file)."""
    d = save_study(small_study, tmp_path / "s")
    manifest = json.loads((d / "study.json").read_text())
    if case == "empty ratings":
        (d / "ratings.csv").write_bytes(b"")
        return d, "ratings.csv"
    if case == "empty models":
        (d / "models.csv").write_bytes(b"")
        return d, "models.csv"
    if case == "empty adjudication":
        (d / "adjudication.csv").write_bytes(b"")
        return d, "adjudication.csv"
    if case == "header-only ratings":
        (d / "ratings.csv").write_text(HEADER)
        return d, "ratings.csv"
    if case == "all scores empty":
        lines = (d / "ratings.csv").read_text().splitlines()
        rows = [ln.rsplit(",", 1)[0] + "," for ln in lines[1:]]
        (d / "ratings.csv").write_text(lines[0] + "\n" + "\n".join(rows) + "\n")
        return d, "ratings.csv"
    if case == "latin-1 ratings":
        (d / "ratings.csv").write_bytes(
            HEADER.encode() + "Ré,m1,1,recognition,1\n".encode("latin-1")
        )
        return d, "ratings.csv"
    if case == "short row":
        with (d / "ratings.csv").open("a") as f:
            f.write("R1,Early,1,recognition\n")
        return d, "ratings.csv"
    if case == "long row":
        with (d / "ratings.csv").open("a") as f:
            f.write("R1,Early,1,recognition,1,extra\n")
        return d, "ratings.csv"
    if case == "unclosed quote":
        (d / "prompts.csv").write_text('day,text\n1,"never closed\n')
        return d, "prompts.csv"
    if case == "extra dims disagree":
        manifest["extra"]["true_L"]["dims"] = ["model", "day"]
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "extra unknown dim":
        manifest["extra"]["true_L"]["dims"] = ["vendor_dim"]
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "extra fewer dims than file":
        manifest["extra"]["true_stage"]["dims"] = ["model"]
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "true_stage.csv"
    if case == "extra file missing":
        (d / "extra" / "true_L.csv").unlink()
        return d, "study.json"
    if case == "extra bad dtype":
        manifest["extra"]["true_L"]["dtype"] = "float77"
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "manifest not an object":
        (d / "study.json").write_text("[1, 2]")
        return d, "study.json"
    if case == "manifest truncated":
        (d / "study.json").write_text((d / "study.json").read_text()[:50])
        return d, "study.json"
    if case == "manifest coords not a list":
        manifest["coords"]["model"] = "Early"
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "manifest days disagree":
        manifest["coords"]["day"] = manifest["coords"]["day"][:-1]
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "variable_dims disagree":
        manifest["variable_dims"]["level_a"] = ["model", "rater"]
        (d / "study.json").write_text(json.dumps(manifest))
        return d, "study.json"
    if case == "truncated netcdf":
        nc = save_study(small_study, tmp_path / "s.nc")
        nc.write_bytes(nc.read_bytes()[: nc.stat().st_size // 2])
        return nc, "s.nc"
    if case == "empty netcdf":
        nc = tmp_path / "empty.nc"
        nc.write_bytes(b"")
        return nc, "empty.nc"
    raise AssertionError(case)


CORRUPT = [
    "empty ratings",
    "empty models",
    "empty adjudication",
    "header-only ratings",
    "all scores empty",
    "latin-1 ratings",
    "short row",
    "long row",
    "unclosed quote",
    "extra dims disagree",
    "extra unknown dim",
    "extra fewer dims than file",
    "extra file missing",
    "extra bad dtype",
    "manifest not an object",
    "manifest truncated",
    "manifest coords not a list",
    "manifest days disagree",
    "variable_dims disagree",
    "truncated netcdf",
    "empty netcdf",
]


@pytest.mark.parametrize("case", CORRUPT)
def test_corrupt_files_raise_our_error_naming_the_file(tmp_path, small_study, case):
    path, fname = _corrupt(tmp_path, small_study, case)
    with pytest.raises((StudyFormatError, StudyValidationError)) as err:
        load_study(path)
    assert type(err.value) in (StudyFormatError, StudyValidationError)  # not a subclass surprise
    assert fname in str(err.value), str(err.value)
    # the message says what was expected, not only what went wrong
    assert "expected" in str(err.value), str(err.value)


def test_header_only_and_all_empty_ratings_blame_ratings_not_adjudication(tmp_path):
    d = _study(tmp_path, "", adjudication__csv="model,day,level_a,level_b\nm1,1,0,0\n")
    with pytest.raises(StudyFormatError, match=r"ratings.csv: the header is there but no rows"):
        load_study(d)
    (d / "ratings.csv").write_text(HEADER + "A,m1,1,recognition,\nA,m1,1,confidence,\n")
    with pytest.raises(StudyFormatError, match=r"ratings.csv: all 1 recognition scores are empty"):
        load_study(d)


def test_short_row_names_its_line(tmp_path):
    d = _study(tmp_path, GOOD + "A,m1,3\n")
    with pytest.raises(StudyFormatError, match=r"ratings.csv, row 8: 3 field\(s\).*expected 5"):
        load_study(d)


def test_latin1_names_the_line_and_byte(tmp_path):
    d = tmp_path / "study"
    d.mkdir()
    (d / "ratings.csv").write_bytes((HEADER + GOOD + "Ré,m1,1,recognition,1\n").encode("latin-1"))
    with pytest.raises(StudyFormatError, match=r"ratings.csv, line 8: byte b'\\xe9' is not UTF-8"):
        load_study(d)


def test_round_trip_still_exact_on_a_simulated_study(tmp_path):
    ds = simulate_study(preset="small", seed=4, missing_rate=0.1)
    back = load_study(save_study(ds, tmp_path / "d"))
    assert back.sizes == ds.sizes
    np.testing.assert_array_equal(back["recognition"].values, ds["recognition"].values)


def test_declared_rater_without_rows_is_not_a_phantom(tmp_path):
    d = _study(tmp_path, raters__csv="rater\nA\nB\nC\n")
    with pytest.raises(StudyFormatError) as err:
        load_study(d)
    msg = str(err.value)
    assert "raters.csv, row 4" in msg and "['C'] have no row in ratings.csv" in msg


def test_model_declared_in_study_json_without_rows(tmp_path, small_study):
    d = save_study(small_study, tmp_path / "s")
    manifest = json.loads((d / "study.json").read_text())
    manifest["coords"]["model"].append("Ghost")
    (d / "study.json").write_text(json.dumps(manifest))
    (d / "models.csv").unlink()
    with pytest.raises(StudyFormatError, match=r"study.json \(coords.model\).*\['Ghost'\]"):
        load_study(d)


def test_na_and_nan_are_missing_in_the_replay_loader_too(tmp_path):
    """The replay judge-score loader reads NA and nan as missing, as the trajectory loader does."""
    from delusion_bayes.data import load_judge_scores

    path = tmp_path / "judge_scores.csv"
    path.write_text("sample_id,model,code,score\ns1,m1,A,NA\ns2,m1,A,nan\ns3,m1,A,\ns4,m1,A,7\n")
    scores = load_judge_scores(path)["score"].tolist()
    assert np.isnan(scores[:3]).all() and scores[3] == 7
