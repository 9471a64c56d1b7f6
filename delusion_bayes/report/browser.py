"""Headless Chromium that prints the supplement to PDF.

Debian's ``chromium`` (``apt-get install -y chromium``) runs with networking off: in a network
namespace of its own where ``unshare`` allows it, and always with :data:`NO_NETWORK_FLAGS`. The
tests' render check (``tests/report/render_check.py``) drives the same browser.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

#: flags for a browser that touches no network and keeps no state
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-dev-shm-usage",
    "--hide-scrollbars",
)  # fmt: skip

#: no way out to a network (the page needs none, so any request would be a leak): every host name
#: fails to resolve, every connection (loopback too) goes to the closed port 9, no background calls
NO_NETWORK_FLAGS = (
    "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--dns-prefetch-disable", "--no-pings",
    "--disable-domain-reliability", "--disable-client-side-phishing-detection",
    "--disable-breakpad", "--metrics-recording-only",
    "--disable-features=MediaRouter,OptimizationHints,Translate,NetworkTimeServiceQuerying,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
)  # fmt: skip


@functools.cache
def _netns_prefix() -> tuple[str, ...]:
    """``unshare --net --map-root-user`` when it works here: the browser then runs in a network
    namespace of its own with no interface up, on top of :data:`NO_NETWORK_FLAGS`."""
    unshare = shutil.which("unshare")
    if unshare is None or os.environ.get("DELUSION_BAYES_BROWSER_NETNS", "1") == "0":
        return ()
    prefix = (unshare, "--net", "--map-root-user")
    try:
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return prefix if ok else ()


def browser_command(browser: str, profile: str, args: list[str]) -> list[str]:
    """The full command line: network namespace if available, no-network flags, no state."""
    return [
        *_netns_prefix(),
        browser,
        *FLAGS,
        *NO_NETWORK_FLAGS,
        f"--user-data-dir={profile}",
        *args,
    ]


def find_browser() -> str | None:
    """Path of a Chromium-family browser (env ``DELUSION_BAYES_BROWSER`` first), else None."""
    env = os.environ.get("DELUSION_BAYES_BROWSER")
    names = ([env] if env else []) + list(BROWSERS)
    return next((path for path in map(shutil.which, names) if path), None)


def run_browser(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    browser = find_browser()
    if browser is None:
        raise RuntimeError("no Chromium found: install it with `apt-get install -y chromium`")
    with tempfile.TemporaryDirectory(prefix="db-chromium-") as profile:
        return subprocess.run(
            browser_command(browser, profile, args),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def print_pdf(html: str | Path, pdf: str | Path) -> Path:
    """Print the page to ``pdf`` (A4, backgrounds on, no header/footer)."""
    pdf = Path(pdf).resolve()
    pdf.unlink(missing_ok=True)
    res = run_browser(
        [
            f"--print-to-pdf={pdf}",
            "--no-pdf-header-footer",
            "--virtual-time-budget=10000",
            Path(html).resolve().as_uri(),
        ]
    )
    if not pdf.is_file() or pdf.stat().st_size == 0:
        raise RuntimeError(f"printing to PDF failed: {res.stderr[-800:]}")
    return pdf
