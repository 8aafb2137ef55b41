"""Text from a result document (a backend's name, a case id, an operator, a message) reaches the console as it is:
rich must not read it as markup. Found by fuzz/fuzz_result_document.py: `"op": "[/]OLING_GRAD"` in a result made
`dmlconform report` raise MarkupError (a traceback instead of a report)."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from dmlconform.case_result import Status
from dmlconform.compare.comparator import Element
from dmlconform.report.console import render
from dmlconform.report.diff import render_diff
from dmlconform.results.diff import diff_runs
from tests.results.helpers import result, run

MARKUP = "[/]x[bold]"


def hostile_run():
    failing = replace(result(f"s{MARKUP}/a", Status.FAIL, message=MARKUP), op=MARKUP, dtype=MARKUP, file=MARKUP,
                      behaviour=MARKUP, matched=MARKUP, expectation=MARKUP,
                      worst=[Element((0,), MARKUP, MARKUP, 3, MARKUP)])
    flaky = replace(result(f"s/{MARKUP}", Status.FLAKE), expectation=MARKUP)
    hostile = run([failing, flaky])
    hostile.backend = replace(hostile.backend, name=MARKUP, version=MARKUP, device=MARKUP,
                              feature_level_source=MARKUP)
    hostile.shards = [{"file": MARKUP}]
    return hostile


def test_the_console_report_prints_markup_as_text() -> None:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render(hostile_run(), console)
    text = console.file.getvalue()
    assert text.count(MARKUP) >= 8  # the name, the ids, the operator, the message, the elements ... all verbatim


def test_the_diff_prints_markup_as_text() -> None:
    old, new = hostile_run(), hostile_run()
    new.results[0] = replace(new.results[0], status=Status.PASS, message="")
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_diff(diff_runs(old, new), console, MARKUP, MARKUP)
    assert MARKUP in console.file.getvalue()
