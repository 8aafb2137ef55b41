"""The history page: self-contained, every section drawn from the synthetic CI history's known answers, text
escaped, and rendered by a real headless Chromium (as the run report is, tests/report/test_html.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dmlconform.history.database import open_database
from dmlconform.history.ingest import add_records, record_from_document
from dmlconform.history.queries import history_report
from dmlconform.report.history import NEVER_PASSED
from dmlconform.report.history_html import rate_chart, render_history_html, sparkline, strip
from tests.history import scenario, suite_change
from tests.report.test_html import CHROMIUM, HEADLESS

IDS = scenario.case_ids()
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = str(tmp_path_factory.mktemp("page") / "history.sqlite")
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, "ci", {**meta, "note": HOSTILE})
                               for document, meta in scenario.runs()])
        return render_history_html(history_report(database))


def test_the_page_is_one_file_with_nothing_to_fetch_and_no_script(page: str) -> None:
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)


def test_the_page_has_every_section_with_the_known_answers(page: str) -> None:
    assert "directml on GPU-A" in page and "directml on GPU-B" in page
    assert page.count('aria-label="pass rate per run"') == 2
    assert "Flaky cases (2)" in page and IDS["FLAKY"] in page and IDS["FLAKE_STATUS"] in page
    assert "First failures (3 failing now)" in page and IDS["REGRESSED"] in page and IDS["GAP"] in page
    assert "Closeness trends (1 rising)" in page and page.count('aria-label="closeness over runs"') == 1


def test_the_page_says_where_the_suites_changed(tmp_path: Path) -> None:
    url = str(tmp_path / "history.sqlite")
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, "ci", meta) for document, meta in suite_change.runs()])
        across = render_history_html(history_report(database))
    assert "First failures (4 failing now)" in across and "(suite changed)" in across
    assert "1 case(s) whose last verdict was a failure are no longer in their stack’s suite" in across
    assert 'title="not in this run"' in across and NEVER_PASSED in across


def test_text_from_the_history_is_escaped(page: str) -> None:
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_drawings() -> None:
    chart = rate_chart([("run", (1.0, 0.5, None, 0.75), "#000", 2)], ["a", "b", "c", "d"])
    assert chart.count("<polyline") == 1 and chart.count("<circle") == 1  # a gap splits the line; the last point alone
    assert "50.0%" in chart and "100.0%" in chart
    assert rate_chart([("run", (None, None), "#000", 2)], ["a", "b"]).startswith("<p")
    assert strip("PFpf-").count("<b ") == 5 and 'class="n"' in strip("-")
    assert strip("PP|F").count('class="cut"') == 1 and strip("PP|F").count("<b ") == 3
    line = sparkline((0.2, None, 0.9, 1.2))
    assert 'stroke-dasharray' in line and line.count(",") == 3  # the limit line, and three points
    assert sparkline((None, None)) == ""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_headless_chromium_renders_the_page(page: str, tmp_path: Path) -> None:
    path = tmp_path / "history.html"
    path.write_text(page)
    browser = [CHROMIUM, *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*browser, "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert f">{IDS['FLAKY']}<" in dom.stdout and "First failures (3 failing now)" in dom.stdout
    assert dom.stdout.count("<svg") >= 3
    shot = tmp_path / "history.png"
    taken = subprocess.run([*browser, f"--screenshot={shot}", "--window-size=1300,2400", path.as_uri()],
                           capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1300
    assert len(png) > 50_000  # charts and tables, not a blank page
