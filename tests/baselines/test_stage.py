"""The ``baselines`` pipeline stage: files, index.json, same seed -> identical tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from omegaconf import OmegaConf

from delusion_bayes.baselines import t50_for_ranking
from delusion_bayes.baselines.config import BaselinesConfig
from delusion_bayes.stages import baselines as stage

CONF = Path(__file__).resolve().parents[2] / "conf" / "baselines" / "default.yaml"
TABLES = [
    "table1_milestones.csv",
    "table2_interventions.csv",
    "tableC1_reliability.csv",
    "tableD1_logistic.csv",
    "contrasts.csv",
    "figure2_intensity_by_stage.csv",
    "sectionF_naive_profiles.csv",
]


def _cfg(**over):
    base = OmegaConf.merge(OmegaConf.structured(BaselinesConfig), OmegaConf.load(CONF))
    base = OmegaConf.merge(base, {"n_boot": 30, "alpha_boot": 50, **over})
    return OmegaConf.create({"baselines": base})


def test_default_yaml_matches_schema():
    """Every key of conf/baselines/default.yaml exists in BaselinesConfig (typos fail)."""
    cfg = OmegaConf.merge(OmegaConf.structured(BaselinesConfig), OmegaConf.load(CONF))
    assert cfg.consensus == "median" and cfg.stable_run == 3 and cfg.n_boot == 1000
    assert [c.by for c in cfg.contrasts] == ["cohort", "vendor", "generation"]
    assert cfg.contrasts[2].a == ["4.5"]


@pytest.fixture(scope="module")
def study_with_recoding(traj):
    """traj plus a second coder's re-coding of a 20% subsample of days (level_*_recoded),
    stricter than the adjudicator on two Level-B days."""
    ds = traj.copy()
    sub = np.zeros(traj.level_b.shape, bool)
    sub[:, ::5] = True
    for v in ("level_a", "level_b"):
        ds[f"{v}_recoded"] = traj[v].where(xr.DataArray(sub, dims=traj[v].dims))
    lb = ds.level_b_recoded.values.copy()
    for m, d in np.argwhere(lb == 1)[:2]:
        lb[m, d] = 0
    ds["level_b_recoded"] = (traj.level_b.dims, lb)
    return ds


@pytest.fixture(scope="module")
def runs(study_with_recoding, tmp_path_factory):
    out = []
    for name in ("a", "b"):
        d = tmp_path_factory.mktemp(name)
        out.append((d, stage.run(study_with_recoding, _cfg(), d)))
    return out


def test_stage_writes_tables_and_index(runs, traj):
    run_dir, headline = runs[0]
    out = run_dir / "baselines"
    for f in [*TABLES, "consensus.nc", "index.json", "figure2_intensity_by_stage.png"]:
        assert (out / f).is_file(), f
    index = json.loads((out / "index.json").read_text())
    assert set(TABLES) <= set(index["files"])
    assert index["headline"] == headline
    assert headline["n_models"] == 15 and headline["n_never_clinical"] == 4
    t1 = pd.read_csv(out / "table1_milestones.csv", index_col="model")
    assert {"vendor", "cohort", "first_clinical", "first_stable", "first_level_b"} <= set(
        t1.columns
    )
    c1 = pd.read_csv(out / "tableC1_reliability.csv", index_col="variable")
    assert c1.loc["level_b (re-coded subsample)", "pct_agreement"] < 100
    assert c1.loc["level_a (re-coded subsample)", "kappa_q_mean"] == pytest.approx(1.0)
    d1 = pd.read_csv(out / "tableD1_logistic.csv", index_col="model")
    assert {"t50_ci_low", "t50_ci_high", "status", "converged"} <= set(d1.columns)
    # the four never-turners are flagged, the eleven turning models fitted
    never = t1.index[t1.first_clinical == 31]
    assert (d1.loc[never, "status"] == "no_turn").all() and len(never) == 4
    assert (d1.drop(never).status == "ok").all()
    con = pd.read_csv(out / "contrasts.csv")
    assert con.exact.all() and set(con.contrast) == {
        "late-2025 vs earlier cohort", "anthropic vs other vendors", "Claude 4.5 generation vs rest"
    }  # fmt: skip
    with xr.open_dataset(out / "consensus.nc", engine="h5netcdf") as cons:
        assert set(cons.data_vars) == {"recognition", "confidence", "intervention", "disengagement"}
        assert "rater" not in cons.dims and "vendor" in cons.coords


def test_same_seed_identical_tables(runs):
    (a, _), (b, _) = runs
    for f in TABLES:
        assert (a / "baselines" / f).read_bytes() == (b / "baselines" / f).read_bytes(), f


def test_stage_declares_contract():
    assert stage.NEEDS == ("baselines",) and stage.KIND == ("trajectory",)


def test_t50_for_ranking_never_turned_ranks_last():
    """Never-clinical models rank last (+inf) even with an 'ok' fit of a bump (paper_like's
    Gemini 2.5 Flash/Pro: k on its bound, a 0.2-point step inside the naive range)."""
    table = pd.DataFrame(
        {"t50": [3.0, 5.3, np.nan, -20.0, np.nan],
         "status": ["ok", "ok", "flat", "unidentified", "unidentified"]}
    )  # fmt: skip
    first_clinical = np.array([3, 31, 31, 31, 12])
    out = t50_for_ranking(table, first_clinical, 31)
    np.testing.assert_array_equal(out, [3.0, np.inf, np.inf, np.inf, -np.inf])
