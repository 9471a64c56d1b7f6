"""The results contract (delusion_bayes/results.py): declarations, write/read, missing files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from delusion_bayes import results
from delusion_bayes.stages import STAGES

KEY = "models/{fit}/t50_posterior.csv"


def _t50(n: int = 3) -> pd.DataFrame:
    spec = results.spec(KEY)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({c: rng.normal(size=n) for c, t in spec.columns if t == "float"})
    df["model"], df["ci_kind"] = [f"m{i}" for i in range(n)], "eti"
    return df


def test_write_then_read_gives_the_same_values(tmp_path):
    """Property: a table written through the contract reads back bit-identical."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)

    @settings(max_examples=25, deadline=None)
    @given(st.lists(finite, min_size=1, max_size=6))
    def check(values):
        df = _t50(len(values))
        df["t50_median"] = values
        results.write(tmp_path, KEY, df, fit="joint")
        back = results.read(tmp_path, KEY, fit="joint")
        assert back["t50_median"].tolist() == list(values)
        assert back["model"].tolist() == df["model"].tolist()

    check()


def test_missing_file_reads_as_not_run(tmp_path):
    assert results.read(tmp_path, "baselines/table1_milestones.csv") is None
    assert results.read(tmp_path, KEY, fit="onset") is None
    assert results.fits(tmp_path) == []


def test_a_table_that_breaks_its_declaration_is_refused(tmp_path):
    df = _t50().drop(columns=["t50_median"])
    with pytest.raises(results.ResultFileError, match=r"missing columns \['t50_median'\]"):
        results.write(tmp_path, KEY, df, fit="joint")
    with pytest.raises(results.ResultFileError, match=r"undeclared columns \['surprise'\]"):
        results.write(tmp_path, KEY, _t50().assign(surprise=1.0), fit="joint")
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "contrasts.csv").write_text("x;y\n1;2\n")
    with pytest.raises(results.ResultFileError, match="contrasts.csv"):
        results.read(tmp_path, "baselines/contrasts.csv")


def test_declarations_are_complete():
    with pytest.raises(KeyError, match="not a declared results file"):
        results.spec("baselines/nope.csv")
    with pytest.raises(ValueError, match="pass fit="):
        results.spec(KEY).path("run")
    for f in results.FILES.values():
        assert f.meaning and f.stage in STAGES  # every file belongs to a pipeline stage
        if f.kind == "csv":
            assert f.columns, f.key
    table = results.contract_table()
    assert table.count("\n") == len(results.FILES) + 1


def test_architecture_shows_the_contract_as_declared():
    """docs/dev/contract.md's table of the files between stages is ``results.contract_table()``."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "dev" / "contract.md").read_text()
    assert results.contract_table() in text
