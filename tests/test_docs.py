"""The user's documents (issue 52, items 4-5): a README that is a guide (at most 120 lines, the
two set-up commands, a licence), a reading order in ``docs/index.md``, links that resolve, and
none of the stale statements a reader found (each was true once and is false now)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))

#: statements that were found stale (issue 52, item 9), with where they were
STALE = {
    "the onset model does not pass yet": "development.md: the onset model passes on null_effect",
    "takes 5.5 min": "development.md: the main job takes ~2.5 min cold",
    "as fast as brms (1.0×)": "development.md: 2.9x (rater) and 9.3x (onset) cold",
    "`data.source=delusioneval` as its own source needs": "real_data.md: it is a source now",
    "1,000 draws after 1,000 tuning steps, nutpie": "models.md: fit tunes 500 steps",
    'package README, "Study format"': "template README: the section is in docs/reference.md",
    "(development notes)": "real_data.md is the user's how-to for real data",
    "the onset model\ndoes not yet": "reference.md repeated the first",
}


def test_readme_is_a_guide():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 120
    assert "make run" in text and "make test" in text  # the two set-up commands
    assert "db.analyse" in text and 'pip install -e ".[all]"' in text
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert (ROOT / "docs" / "index.md").is_file()
    # developer notes under docs/dev/, the user pages beside index.md (issue 52, item 5)
    assert all((ROOT / "docs" / "dev" / f).is_file() for f in ("models.md", "development.md"))


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    """Every relative Markdown link (``[text](path)``, anchors aside) names a file that exists."""
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.relative_to(ROOT)} links {target}, which does not exist"


def test_stale_statements_are_gone():
    pages = [ROOT / "README.md", *DOCS, ROOT / "delusion_bayes" / "data" / "template" / "README.md"]
    for page in pages:
        text = page.read_text()
        for stale, why in STALE.items():
            assert stale not in text, f"{page.relative_to(ROOT)} still says {stale!r} ({why})"
