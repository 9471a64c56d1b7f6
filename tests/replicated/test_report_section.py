"""The replicated study's supplement section (``report/replicated.py``), built from real run
folders: a SIMULATED study run through the pipeline (``experiment=replicated
data=replicated``) and the two shared Spiral-Bench files through the stage. Every number shown
must be the stage's CSV value, formatted (the report never recomputes)."""

from __future__ import annotations

import pandas as pd
import pytest

from delusion_bayes.config import compose
from delusion_bayes.data.replicated_io import save_replicated
from delusion_bayes.pipeline import run
from delusion_bayes.report.builder import Builder
from delusion_bayes.report.config import ReportConfig
from delusion_bayes.report.document import (
    Document,
    FigureBlock,
    Note,
    Paragraph,
    TableBlock,
    to_html,
    to_markdown,
)
from delusion_bayes.report.provenance import diagnostics
from delusion_bayes.report.replicated import Q_MEANS, section_replicated
from delusion_bayes.report.sources import RunDir
from delusion_bayes.report.table import fmt_interval
from delusion_bayes.stages import replicated as stage

from .conftest import needs_spiral


def build(run_dir):
    rd = RunDir(run_dir)
    b = Builder(rd, ReportConfig(pdf="never"), diagnostics(rd))
    return b, section_replicated(b)


def tables(section) -> dict[str, TableBlock]:
    return {blk.table.name: blk for blk in section.blocks if isinstance(blk, TableBlock)}


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("replicated_run")
    cfg = compose(
        ["experiment=replicated", "data=replicated", "replicated.n_boot=200",
         "+data.overrides.n_models=3", "+data.overrides.n_conversations=8",
         "+data.overrides.n_truth=100", "replicated.bayes=false"]
    )  # fmt: skip
    record = run(cfg, out)
    assert record["stages"]["replicated"]["status"] == "ok"
    return out


def test_simulated_run_section(simulated_run):
    b, s = build(simulated_run)
    assert not b.errors
    first = s.blocks[0]
    assert isinstance(first, Paragraph) and first.text.startswith("SIMULATED replicated study")
    shown = tables(s)
    assert set(shown) == {
        "replicated_item_means", "replicated_judge_failed", "replicated_first_occurrence",
        "replicated_contrasts", "replicated_reliability", "replicated_milestones",
    }  # fmt: skip
    means = pd.read_csv(simulated_run / "replicated" / "item_means.csv")
    row = means[(means["model"] == "chatbot-2") & (means["item"] == "pushback")].iloc[0]
    disp = shown["replicated_item_means"].table.display.set_index("Chatbot")
    assert disp.loc["chatbot-2", "Pushback"] == fmt_interval(
        row["mean"], row["ci_low"], row["ci_high"], 3
    )
    assert shown["replicated_item_means"].table.notes[0] == Q_MEANS
    assert Q_MEANS.startswith("Questions: about these chatbots over conversations like these")
    rel = pd.read_csv(simulated_run / "replicated" / "reliability.csv")
    cell = shown["replicated_reliability"].table.display["Krippendorff's α [95% CI]"].iloc[0]
    assert cell == fmt_interval(rel["alpha"][0], rel["ci_low"][0], rel["ci_high"][0], 3)
    assert len(shown["replicated_milestones"].table.display) == 3 * 2
    notes = [blk.text for blk in s.blocks if isinstance(blk, Note)]
    assert any("published-versus-recomputed check: not computed" in n and "no published" in n
               for n in notes)  # fmt: skip
    figures = [blk.rel_png for blk in s.blocks if isinstance(blk, FigureBlock)]
    # the rankings (3 chatbots) follow the contrasts they summarise
    assert figures == [
        "replicated/item_means.png",
        "replicated/first_occurrence.png",
        "replicated/ranks.png",
    ]
    md = to_markdown(Document("t", "", [s]))
    assert "SIMULATED" in md and "(censored)" in md
    assert "replicated/item_means.png" in to_html(Document("t", "", [s]))


@needs_spiral
def test_spiral_bench_section(spiral, tmp_path):
    stage.run(spiral, {"replicated": {"n_boot": 100, "n_mc": 2000, "bayes": False}}, tmp_path)
    save_replicated(spiral, tmp_path / "study.nc")
    b, s = build(tmp_path)
    assert not b.errors
    assert s.blocks[0].text.startswith("Replicated study (source: spiral_bench)")
    assert "Every chatbot is on one scoring rule: `v2_cap5`" in s.blocks[0].text
    shown = tables(s)
    check = shown["replicated_published_check"].table.display
    assert len(check) == 2 * 12 and (check["Reproduced"] == "yes").all()
    rules = next(p.text for p in s.blocks if isinstance(p, Paragraph) and "rule per" in p.text)
    assert "`claude-3.5-sonnet`: rule `v2_cap5`" in rules
    assert "`llama-4-maverick`: rule `v1_len_norm_cap8`" in rules
    failed = shown["replicated_judge_failed"].table.display.set_index("Chatbot")
    assert failed["Failed judge replies"].to_dict() == {
        "claude-3.5-sonnet": 3, "llama-4-maverick": 6
    }  # fmt: skip
    notes = " ".join(blk.text for blk in s.blocks if isinstance(blk, Note))
    assert "Reliability: not computed for this study" in notes and "1 rater(s)" in notes
    assert "no 'recognition' item" in notes
