"""The HTML report: self-contained, and rendered by a real headless Chromium with the failing case visible."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dmlconform.report.html import render_html
from dmlconform.results.diff import diff_runs
from dmlconform.results.document import read_document
from tests.triage.runs import REGRESSED, DriverUpdate, driver_update, invoke

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Chromium's own switches for a sandbox-less container with no network: nothing may be fetched.
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.slow  # every test reads one module fixture: two real runs of a simulated driver


@pytest.fixture(scope="module")
def update(tmp_path_factory) -> DriverUpdate:
    return driver_update(tmp_path_factory.mktemp("html"))


def test_the_report_is_one_file_with_nothing_to_fetch_and_no_script(update: DriverUpdate) -> None:
    html = render_html(read_document(update.new), diff_runs(read_document(update.old), read_document(update.new)))
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert html.count("<svg") >= 2 and REGRESSED in html and "Changes since the older run" in html
    assert "Verdict per feature level" in html and "Behaviour fingerprint" in html


def test_case_text_is_escaped(update: DriverUpdate) -> None:
    run = read_document(update.new)
    run.results[0].message = "<img src=x onerror=alert(1)> & more"
    html = render_html(run)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt; &amp; more" in html


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_headless_chromium_renders_the_report_with_the_failing_case_visible(update: DriverUpdate,
                                                                           tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert invoke("report", str(update.new), str(update.old), "--html", str(page)).exit_code == 0
    profile = tmp_path / "profile"
    browser = [CHROMIUM, *HEADLESS, f"--user-data-dir={profile}"]
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f">{REGRESSED}<" in dom.stdout  # the failing case's id, as the browser parsed it
    assert "Failing cases (1)" in dom.stdout and "Changes since the older run" in dom.stdout
    shot = tmp_path / "report.png"
    taken = subprocess.run([*browser, f"--screenshot={shot}", "--window-size=1400,2000", page.as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1400
    assert len(png) > 50_000  # a page of text and charts, not a blank canvas
