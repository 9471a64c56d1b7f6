"""The supplement as a browser sees it: a probe script injected into a copy of the page records
console errors, failed resources, CSP violations, undecoded images and table widths, read back
from the DOM that ``--dump-dom`` prints (no websocket client needed). Test tooling: the package
itself only prints the PDF (:mod:`delusion_bayes.report.browser`)."""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from delusion_bayes.report.browser import run_browser


def screenshot(html: str | Path, png: str | Path, width: int = 1280, height: int = 2400) -> Path:
    """A PNG screenshot of the top ``width x height`` pixels of the page."""
    png = Path(png).resolve()
    res = run_browser(
        [
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=10000",
            Path(html).resolve().as_uri(),
        ]
    )
    if not png.is_file():
        raise RuntimeError(f"screenshot failed: {res.stderr[-800:]}")
    return png


_PROBE = """<script>
(function () {
  var errs = [];
  window.__dbErrors = errs;
  var orig = console.error;
  console.error = function () { errs.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return orig.apply(console, arguments); };
  window.addEventListener('error', function (e) {
    var t = e.target || {};
    errs.push(t.tagName ? ('resource failed: ' + t.tagName + ' ' + (t.src || t.href || '')).slice(0, 200)
                        : ('script error: ' + e.message));
  }, true);
  document.addEventListener('securitypolicyviolation', function (e) {
    errs.push('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI);
  });
  window.addEventListener('load', function () {
    var imgs = Array.prototype.slice.call(document.images);
    var out = {
      images: imgs.length,
      broken: imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                  .map(function (i) { return i.alt || i.src.slice(0, 60); }),
      widths: imgs.map(function (i) { return i.naturalWidth; }),
      tables: document.querySelectorAll('table').length,
      sections: document.querySelectorAll('section').length,
      title: document.title,
      bodyText: document.body.innerText.length,
      scrollHeight: document.body.scrollHeight,
      // horizontal fit: the page against the viewport, every table against its wrapper and
      // every wrapper against <main>'s content box
      viewportWidth: document.documentElement.clientWidth,
      pageWidth: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
      tableFits: Array.prototype.slice.call(document.querySelectorAll('table')).map(function (t) {
        var wrap = t.closest('.table-wrap') || t.parentElement;
        var main = t.closest('main') || document.body;
        var ms = getComputedStyle(main);
        var mr = main.getBoundingClientRect(), wr = wrap.getBoundingClientRect();
        return {id: t.id || (t.caption ? t.caption.textContent.slice(0, 40) : ''),
                table: Math.ceil(t.getBoundingClientRect().width),
                wrap: Math.floor(wrap.clientWidth), wrapScroll: wrap.scrollWidth,
                wrapLeft: Math.floor(wr.left), wrapRight: Math.ceil(wr.right),
                mainLeft: Math.floor(mr.left + parseFloat(ms.paddingLeft)),
                mainRight: Math.ceil(mr.right - parseFloat(ms.paddingRight))};
      }),
      errors: errs
    };
    var pre = document.createElement('pre');
    pre.id = '__db_probe__';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();
</script>"""  # noqa: E501 (the probe script is injected verbatim)


@dataclass
class RenderCheck:
    """What the browser saw when it loaded the page."""

    images: int
    broken: list[str]
    widths: list[int]
    tables: int
    sections: int
    title: str
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)  # error lines from the browser's log
    body_text: int = 0
    #: layout width of the viewport and of the whole page (``scrollWidth``), CSS px
    viewport_width: int = 0
    page_width: int = 0
    #: per table: its width, its ``.table-wrap``'s width/scrollWidth/edges and ``<main>``'s
    #: content edges (CSS px)
    table_fits: list[dict] = field(default_factory=list)

    @property
    def overflows_page(self) -> bool:
        """The page is wider than the viewport (a horizontal scrollbar on the whole page)."""
        return self.page_width > self.viewport_width

    @property
    def wide_tables(self) -> list[dict]:
        """Tables wider than their container, or containers sticking out of ``<main>``."""
        return [
            t
            for t in self.table_fits
            if t["table"] > t["wrap"] + 1
            or t["wrapScroll"] > t["wrap"] + 1
            or t["wrapLeft"] < t["mainLeft"] - 1
            or t["wrapRight"] > t["mainRight"] + 1
        ]

    @property
    def ok(self) -> bool:
        return self.images > 0 and not self.broken and not self.errors and not self.console


def check_html(
    html: str | Path, timeout: float = 120, width: int = 1280, height: int = 2000
) -> RenderCheck:
    """Load ``html`` in headless Chromium at a ``width`` x ``height`` viewport and report
    images, tables (and whether each fits its container and the page its viewport) and errors.

    The probe script is injected into a temporary copy (beside the original so relative links
    resolve); the page's Content-Security-Policy is kept, with only the probe's inline script
    allowed, so any outside resource still fails and is reported.

    Raises
    ------
    RuntimeError
        No browser installed, or the browser printed no DOM (with its stderr).
    """
    html = Path(html).resolve()
    text = html.read_text()
    text = text.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';", 1)
    text = re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + _PROBE, text, count=1)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".html", dir=html.parent, delete=False, prefix=".probe-"
    ) as f:
        f.write(text)
        probe_path = Path(f.name)
    try:
        args = ["--dump-dom", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]
        res = run_browser(
            [*args, f"--window-size={width},{height}", probe_path.as_uri()], timeout=timeout
        )
    finally:
        probe_path.unlink(missing_ok=True)
    m = re.search(r'<pre id="__db_probe__">(.*?)</pre>', res.stdout, re.S)
    if m is None:
        raise RuntimeError(
            f"the browser printed no probe result (exit {res.returncode}); "
            f"stderr:\n{res.stderr[-1500:]}"
        )
    import html as _html

    data = json.loads(_html.unescape(m.group(1)))
    # the probe's camelCase keys as the fields of RenderCheck (``bodyText`` -> ``body_text``)
    fields = {re.sub("([A-Z])", r"_\1", k).lower(): v for k, v in data.items()}
    fields = {k: v for k, v in fields.items() if k in RenderCheck.__dataclass_fields__}
    console = [
        line
        for line in res.stderr.splitlines()
        if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)
    ]
    return RenderCheck(**fields, console=console)
