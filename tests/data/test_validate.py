"""validate(ds): every rejected case names the variable, the coordinates/values and what is
allowed."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from delusion_bayes.data import StudyValidationError, simulate_study, validate


@pytest.fixture()
def ds(small_study):
    return small_study.copy(deep=True)


def test_valid_studies_pass(paper_like, small_study):
    assert validate(paper_like) is paper_like
    assert validate(small_study) is small_study
    assert validate(simulate_study(preset="null", seed=3))


def test_out_of_range_recognition_named_with_allowed_values(ds):
    ds["recognition"].loc[{"rater": "R2", "model": "Late", "day": 4}] = 5
    with pytest.raises(StudyValidationError) as err:
        validate(ds)
    msg = str(err.value)
    assert "'recognition'" in msg and "out-of-range" in msg
    assert "rater='R2'" in msg and "model='Late'" in msg and "day=4" in msg and "5.0" in msg
    assert "{1, 2, 3, 4}" in msg
    assert isinstance(err.value, ValueError)


def test_non_integer_score(ds):
    ds["confidence"][0, 1, 2] = 2.5
    with pytest.raises(
        ValueError, match=r"'confidence' has non-integer scores .*2\.5.*\{1, 2, 3\}"
    ):
        validate(ds)


def test_intervention_out_of_range_names_type(ds):
    ds["intervention"].loc[{"intervention_type": "education"}] = 0
    with pytest.raises(
        ValueError, match=r"'intervention'.*intervention_type='education'.* and \d+ more"
    ):
        validate(ds)


def test_disengagement_must_be_binary(ds):
    ds["disengagement"][0, 0, 0] = 2
    with pytest.raises(ValueError, match=r"'disengagement'.*\{0, 1\}"):
        validate(ds)


def test_missing_values_are_allowed(ds):
    ds["recognition"][:, 0, 0] = np.nan
    assert validate(ds)


def test_wrong_dims(ds):
    ds["level_a"] = ds["level_a"].rename(day="days")
    with pytest.raises(
        ValueError, match=r"'level_a' has dims \('model', 'days'\).*missing dims \['day'\]"
    ):
        validate(ds)


def test_missing_required_variable(ds):
    with pytest.raises(ValueError, match=r"required variable 'recognition' is missing"):
        validate(ds.drop_vars("recognition"))


def test_duplicate_model_names(ds):
    models = list(ds.model.values)
    models[1] = models[0]
    with pytest.raises(ValueError, match=r"coordinate 'model' has duplicate names \['Early'\]"):
        validate(ds.assign_coords(model=models))


def test_duplicate_rater_names(ds):
    with pytest.raises(ValueError, match=r"coordinate 'rater' has duplicate names \['R1'\]"):
        validate(ds.assign_coords(rater=["R1", "R1", "R3"]))


def test_replay_and_trajectory_studies_check_names_alike(ds):
    """One name check (``data.validate.check_coord_names``) for raters, models and codes: a
    replay study's bad name reads like a trajectory study's, with its own error class."""
    from delusion_bayes.data.replay import ReplayValidationError, simulate_replay, validate_replay

    small_replay = simulate_replay(seed=0, truth_participants=0)
    models = list(small_replay.model.values)
    for bad, why in ((models[0], "has duplicate names"), ("gpt\t4o", "control character")):
        renamed = [models[0], bad, *models[2:]]
        with pytest.raises(ReplayValidationError) as replay_err:
            validate_replay(small_replay.assign_coords(model=renamed))
        with pytest.raises(StudyValidationError) as study_err:
            names = [*renamed, *ds.model.values[len(renamed) :]]
            validate(ds.assign_coords(model=names))
        assert why in str(replay_err.value)
        assert str(replay_err.value) == "replay " + str(study_err.value)


@pytest.mark.parametrize(
    "days, shown",
    [(np.arange(0, 12), "0"), (np.r_[1:12, 13], "13"), (np.arange(12, 0, -1), "12")],
)
def test_days_must_be_1_to_n(ds, days, shown):
    with pytest.raises(
        ValueError, match=rf"coordinate 'day' is \[.*{shown}.*expected the consecutive days 1..12"
    ):
        validate(ds.assign_coords(day=days))


def test_level_b_without_level_a(ds):
    ds["level_a"].loc[{"model": "Early", "day": 5}] = 0
    ds["level_b"].loc[{"model": "Early", "day": 5}] = 1
    with pytest.raises(
        ValueError, match=r"'level_b' is 1 where 'level_a' is not 1.*model='Early', day=5"
    ):
        validate(ds)


def test_text_variable_wrong_shape(paper_like):
    ds = paper_like.copy()
    ds["answer"] = ("day", ds["prompt"].values)  # answers must be (model, day)
    with pytest.raises(
        ValueError, match=r"'answer' has dims \('day',\); expected \('model', 'day'\)"
    ):
        validate(ds)


def test_text_variable_wrong_type(paper_like):
    ds = paper_like.copy()
    ds["prompt"] = ("day", np.arange(30.0))
    with pytest.raises(ValueError, match=r"text variable 'prompt' must hold strings"):
        validate(ds)


def test_unknown_intervention_type(ds):
    types = list(ds.intervention_type.values)
    types[0] = "hugging"
    with pytest.raises(ValueError, match=r"unknown types \['hugging'\]"):
        validate(ds.assign_coords(intervention_type=types))


def test_not_a_dataset():
    with pytest.raises(ValueError, match="expected an xarray.Dataset"):
        validate(xr.DataArray([1, 2]))
