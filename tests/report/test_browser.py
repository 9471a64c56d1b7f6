"""The supplement in a real browser: headless Chromium renders it, every image decodes, and the
console shows no error (skips, saying why, only where no Chromium is installed)."""

from __future__ import annotations

import pytest

from delusion_bayes.report.browser import find_browser

from ..resources import needs
from .render_check import check_html, screenshot

pytestmark = pytest.mark.slow

needs_browser = needs(
    find_browser() is None,
    "no Chromium installed (`apt-get install -y chromium`, done by `make browser` / "
    ".ci/run); the browser check of supplement.html cannot run here",
)


@needs_browser
def test_supplement_renders_in_headless_chromium(smoke_supplement, tmp_path):
    check = check_html(smoke_supplement.html)
    assert check.errors == [] and check.console == [], (check.errors, check.console)
    assert check.broken == []
    # every embedded figure decoded to a real bitmap
    assert check.images == smoke_supplement.headline["figures"] >= 6
    assert all(w > 100 for w in check.widths)
    assert check.tables == len(smoke_supplement.document.tables())
    assert check.title == "Supplementary materials"
    assert check.body_text > 5000
    png = screenshot(smoke_supplement.html, tmp_path / "shot.png", 1000, 1400)
    assert png.stat().st_size > 20_000  # a blank page compresses to a few kB


@needs_browser
def test_probe_reports_a_broken_image_and_an_outside_request(tmp_path):
    """The check is not vacuous: a missing file and a network URL are both reported."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        'img-src data: file:"><title>bad</title></head><body><p>x</p>'
        '<img alt="missing" src="nope.png"><img alt="net" src="http://example.invalid/a.png">'
        "</body></html>"
    )
    check = check_html(page)
    assert check.images == 2
    assert set(check.broken) == {"missing", "net"}
    assert not check.ok


@needs_browser
def test_tables_fit_a_1280_px_page(smoke_supplement):
    """At a 1,280 px wide window no table is wider than its wrapper, no wrapper sticks out of
    <main> and the page has no horizontal scrollbar (issue 20: Table 1 was cut off)."""
    check = check_html(smoke_supplement.html, width=1280)
    assert check.viewport_width == 1280
    assert len(check.table_fits) == check.tables == len(smoke_supplement.document.tables())
    assert check.wide_tables == [], check.wide_tables
    assert not check.overflows_page, (check.page_width, check.viewport_width)
    # narrower than the widest table: the table scrolls inside its wrapper, the page does not
    narrow = check_html(smoke_supplement.html, width=700)
    assert not narrow.overflows_page, (narrow.page_width, narrow.viewport_width)
    assert all(t["wrapRight"] <= t["mainRight"] + 1 for t in narrow.table_fits)


@needs_browser
def test_probe_reports_a_wide_table_and_page_overflow(tmp_path):
    """The width check is not vacuous: a table wider than its wrapper, and an element wider
    than the window, are both reported."""
    from delusion_bayes.report.document import CSS

    cells = "".join(f"<td>cell_{i}_unbreakable_content_here</td>" for i in range(30))
    page = tmp_path / "wide.html"
    page.write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>wide</title><style>{CSS}"
        "</style></head><body><main><p>x</p>"
        f'<div class="table-wrap"><table id="wide"><tbody><tr>{cells}</tr></tbody></table></div>'
        '<div style="width:3000px">too wide</div></main></body></html>'
    )
    check = check_html(page, width=1280)
    assert [t["id"] for t in check.wide_tables] == ["wide"]
    assert check.overflows_page and check.page_width >= 3000


@needs_browser
def test_tables_fit_the_printed_page(smoke_supplement, tmp_path):
    """Paper cannot scroll: with the page's print rules applied at the A4 text width Chromium
    prints at (210 mm minus its ~1 cm margins: 718 px) every table fits."""
    html = smoke_supplement.html.read_text()
    assert "@media print {" in html
    page = tmp_path / "print.html"
    page.write_text(html.replace("@media print {", "@media all {", 1))
    check = check_html(page, width=718)
    assert check.wide_tables == [], check.wide_tables
    assert not check.overflows_page
