"""Progress: plain lines in CI or without a terminal, a bar with counts and ETA on one; NO_COLOR respected."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from dmlconform.case_result import Status
from dmlconform.cli.common import make_console
from dmlconform.report.progress import BarProgress, LineProgress, duration_text, progress_for
from tests.results.helpers import result


def test_plain_lines_count_by_status_with_elapsed_and_eta() -> None:
    stream = io.StringIO()
    progress = LineProgress(4, "native shard 1/2", stream, interval_s=0.0)
    progress.skip_done([result("s/a", Status.PASS)])
    for status in (Status.FAIL, Status.PASS):
        progress.advance(result("s/x", status))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[-1].startswith("dmlconform native shard 1/2: 3/4 cases (75%): 2 PASS, 1 FAIL; ")
    assert "elapsed, about " in lines[-1] and lines[-1].endswith(" left")


def test_plain_lines_are_spaced_out() -> None:
    stream = io.StringIO()
    progress = LineProgress(100, "numpy", stream, interval_s=3600.0)
    for _ in range(50):
        progress.advance(result("s/x", Status.PASS))
    assert stream.getvalue() == ""


@pytest.mark.parametrize(("ci", "terminal", "plain"), [("true", True, True), ("", True, False), ("", False, True)])
def test_ci_or_no_terminal_gives_plain_lines(monkeypatch: pytest.MonkeyPatch, ci: str, terminal: bool,
                                            plain: bool) -> None:
    monkeypatch.setenv("CI", ci)
    console = Console(file=io.StringIO(), force_terminal=terminal)
    progress = progress_for(console, 3, "numpy")
    progress.close()
    assert isinstance(progress, LineProgress if plain else BarProgress)


def test_the_bar_shows_counts_by_status() -> None:
    output = io.StringIO()
    console = Console(file=output, force_terminal=True, width=150)
    progress = BarProgress(3, "numpy", console)
    progress.advance(result("s/a", Status.FAIL))
    progress.progress.refresh()
    progress.close()
    assert "1 FAIL" in output.getvalue() and "1/3" in output.getvalue()


def test_no_color_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    console = make_console()
    with console.capture() as captured:
        console.print("[bold red]FAILED[/]")
    assert console.is_terminal and "\x1b[31m" not in captured.get() and ";31m" not in captured.get()  # bold stays
    monkeypatch.delenv("NO_COLOR")
    colour = make_console()
    with colour.capture() as coloured:
        colour.print("[bold red]FAILED[/]")
    assert "31m" in coloured.get()


def test_durations_read_well() -> None:
    assert [duration_text(s) for s in (4.4, 75, 3725)] == ["4s", "1m15s", "1h02m05s"]
