"""Chromium prints the supplement with networking disabled (issue 18, item 8).

A page that references a server on this machine is printed to PDF; the server must see no
request. Before the fix it saw two (the image and the stylesheet). Each of the two layers (the
network namespace and the no-network flags) is checked on its own.
"""

from __future__ import annotations

import http.server
import threading

import pytest

from delusion_bayes.report import browser

from ..resources import needs

needs_browser = needs(
    browser.find_browser() is None,
    "no Chromium installed (`apt-get install -y chromium`); cannot print a PDF here",
)


@pytest.fixture()
def probe_server():
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1], hits
    srv.shutdown()


def _page(tmp_path, port: int):
    page = tmp_path / "page.html"
    page.write_text(
        f'<html><body><p>probe</p><img src="http://127.0.0.1:{port}/probe.png">'
        f'<link rel="stylesheet" href="http://localhost:{port}/s.css">'
        '<img src="http://example.com/x.png"></body></html>'
    )
    return page


@needs_browser
@pytest.mark.parametrize("netns", ["1", "0"], ids=["namespace+flags", "flags-only"])
def test_print_pdf_makes_no_network_request(tmp_path, probe_server, monkeypatch, netns):
    port, hits = probe_server
    monkeypatch.setenv("DELUSION_BAYES_BROWSER_NETNS", netns)
    browser._netns_prefix.cache_clear()
    try:
        pdf = browser.print_pdf(_page(tmp_path, port), tmp_path / "page.pdf")
    finally:
        browser._netns_prefix.cache_clear()
    assert pdf.stat().st_size > 1000  # it printed
    assert hits == []


def test_browser_command_has_the_no_network_flags():
    cmd = browser.browser_command("/usr/bin/chromium", "/tmp/profile", ["--print-to-pdf=x.pdf"])
    assert "--host-resolver-rules=MAP * ~NOTFOUND" in cmd
    assert "--proxy-server=http://127.0.0.1:9" in cmd and "--proxy-bypass-list=<-loopback>" in cmd
    assert cmd.index("/usr/bin/chromium") < cmd.index("--print-to-pdf=x.pdf")
