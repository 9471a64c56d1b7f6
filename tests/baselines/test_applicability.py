"""Analyses a study cannot support are skipped with their reason, never a failed stage (issue 33).

A user's own study often has recognition ratings only: no models.csv (so no vendor / cohort /
generation), no adjudication.csv, no intervention items, no texts. The paper's contrasts stay
the default; each one that names metadata the study lacks is skipped with one line saying why.
"""

from __future__ import annotations

import pytest
import xarray as xr

from delusion_bayes.baselines import (
    analyse_trajectory,
    applicable_contrasts,
    min_two_sided_p,
)
from delusion_bayes.config import compose

#: the baselines group as the default config composes it (conf/baselines/default.yaml)
BASELINES = compose([]).baselines
PAPER_CONTRASTS = list(BASELINES.contrasts)


def recognition_only(ds: xr.Dataset) -> xr.Dataset:
    """Recognition ratings alone, raters renamed, no model coords (no models.csv)."""
    rec = ds["recognition"].assign_coords(rater=["Alice", "Bob", "Chen"][: ds.sizes["rater"]])
    drop = [c for c in rec.coords if c not in ("rater", "model", "day")]
    return xr.Dataset({"recognition": rec.reset_coords(drop, drop=True)})


@pytest.fixture(scope="module")
def minimal(small_study):
    return recognition_only(small_study)


def _contrasts(**over):
    base = {
        "name": "c",
        "by": "cohort",
        "a": ["late-2025"],
        "b": ["earlier"],
        "alternative": "two-sided",
        "quantities": ["first_clinical", "first_level_b"],
    }
    return [{**base, **over}]


def test_paper_contrasts_are_the_default():
    """The fixture above reads the real default: the paper's three contrasts."""
    assert [c["by"] for c in PAPER_CONTRASTS] == ["cohort", "vendor", "generation"]


def test_contrast_on_absent_metadata_is_skipped_with_reason(minimal):
    usable, skipped = applicable_contrasts(minimal, _contrasts(), ["first_clinical"])
    assert usable == []
    assert len(skipped) == 1
    assert skipped[0].analysis == "contrast 'c'"
    assert "no 'cohort' coordinate" in skipped[0].reason
    assert "add a 'cohort' column to models.csv" in skipped[0].reason
    assert skipped[0].files == ("contrasts.csv",)


def test_group_value_absent_is_skipped(small_study):
    usable, skipped = applicable_contrasts(small_study, _contrasts(b=["2024"]), None)
    assert usable == []
    assert "no model has cohort=['2024'] (group b)" in skipped[0].reason
    assert "['earlier', 'late-2025']" in skipped[0].reason


def test_group_b_empty_is_skipped(small_study):
    every = sorted(set(small_study["vendor"].values.tolist()))
    usable, skipped = applicable_contrasts(
        small_study, _contrasts(by="vendor", a=every, b=None), None
    )
    assert usable == [] and "group b is empty" in skipped[0].reason


def test_quantity_without_adjudication_is_dropped(small_study):
    usable, skipped = applicable_contrasts(small_study, _contrasts(), ["first_clinical"])
    assert [c.quantities for c in usable] == [["first_clinical"]]
    assert skipped[0].analysis == "contrast 'c', quantity 'first_level_b'"
    assert "needs 'level_b' (adjudication.csv)" in skipped[0].reason


def test_config_errors_still_raise(small_study):
    """An overlap or a bad alternative is the config's error, not missing data."""
    with pytest.raises(ValueError, match="alternative"):
        applicable_contrasts(small_study, _contrasts(alternative="bigger"), None)
    usable, _ = applicable_contrasts(small_study, _contrasts(a=["earlier"]), None)
    from delusion_bayes.baselines import contrast_groups

    with pytest.raises(ValueError, match="overlap"):
        contrast_groups(small_study, usable[0])


def test_min_two_sided_p():
    """2 / C(n, n_a): 1 vs 4 -> 0.4 (one of 5 arrangements per tail); 3 vs 3 -> 0.1; 6 vs 9
    -> 2/5005."""
    assert min_two_sided_p(1, 4) == pytest.approx(0.4)
    assert min_two_sided_p(3, 3) == pytest.approx(0.1)
    assert min_two_sided_p(6, 9) == pytest.approx(2 / 5005)
    assert min_two_sided_p(1, 1) == 1.0


def test_recognition_only_study_gets_tables_1_c1_d1(minimal):
    """The minimal study: Tables 1 (first clinical / stable, days at stage 4), C1 (recognition)
    and D1 computed; contrasts, interventions and level-based milestones skipped, each once,
    with the input that would switch it on."""
    res = analyse_trajectory(minimal, {**BASELINES, "n_boot": 20, "alpha_boot": 0})
    assert set(res.milestones.data_vars) == {"first_clinical", "first_stable", "days_stage4"}
    assert res.reliability.summary.index.tolist() == ["recognition"]
    assert len(res.logistic.summary) == 5
    assert res.contrasts is None and res.interventions is None
    names = [s.analysis for s in res.skipped]
    assert names == [
        "Table 1: first_level_b, days_level_b",
        "Table 1: days_level_a",
        "contrast 'late-2025 vs earlier cohort'",
        "contrast 'anthropic vs other vendors'",
        "contrast 'Claude 4.5 generation vs rest'",
        "Table 2, Figure 2, section F (interventions)",
    ]
    assert "adjudication.csv" in res.skipped[0].reason
    assert "models.csv" in res.skipped[2].reason
    assert "ratings.csv" in res.skipped[-1].reason


def test_small_groups_get_a_power_note(small_study):
    """small: cohort late-2025 has 2 models, earlier 3: min p = 2 / C(5, 2) = 0.2 > 0.05."""
    res = analyse_trajectory(small_study, {**BASELINES, "n_boot": 20, "alpha_boot": 0})
    notes = [n for n in res.contrasts.notes if "smallest attainable" in n]
    assert any(
        "'late-2025 vs earlier cohort': with 2 vs 3 models" in n and "0.2" in n for n in notes
    )
