"""The history's answers in a terminal (rich tables) and in a CI log (aligned plain text, no box characters), from
the synthetic CI history's known answers."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from rich.console import Console

from dmlconform.history.database import open_database
from dmlconform.history.ingest import add_records, record_from_document
from dmlconform.history.queries import compare, drift, first_failures, flaky, prune, recent_runs, timeline
from dmlconform.report.history import (
    NEVER_PASSED,
    render_compare,
    render_drift,
    render_first_failures,
    render_flaky,
    render_pruned,
    render_runs,
    render_timeline,
    run_words,
)
from tests.history import scenario, suite_change

IDS = scenario.case_ids()


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[Console], None]]:
    url = str(tmp_path_factory.mktemp("console") / "history.sqlite")
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, "ci", meta) for document, meta in scenario.runs()])
        found = {"runs": recent_runs(database), "timeline": timeline(database, IDS["FLAKY"]),
                 "first": first_failures(database), "one": first_failures(database, case_text=IDS["FLAKY"]),
                 "flaky": flaky(database), "drift": drift(database), "compare": compare(database, "driver_version"),
                 "prune": prune(database, 5, dry_run=True)}
    return {
        "runs": lambda c: render_runs(found["runs"], c),
        "timeline": lambda c: render_timeline(found["timeline"], c),
        "first-failure": lambda c: render_first_failures(found["first"], c, False),
        "first-failure one": lambda c: render_first_failures(found["one"], c, True),
        "flaky": lambda c: render_flaky(found["flaky"], c, 50),
        "drift": lambda c: render_drift(found["drift"], c, 50),
        "compare": lambda c: render_compare(found["compare"], c, 50),
        "prune": lambda c: render_pruned(found["prune"], c),
    }


EXPECTED = {
    "runs": ["GPU-A", "build=10 commit=c010"], "timeline": ["directml on GPU-A", "FAIL"],
    "first-failure": [IDS["REGRESSED"], "3 case(s) failing now on 2 stack(s)"],
    "first-failure one": ["passing in its latest run", "0 case(s) failing now"],
    "flaky": [IDS["FLAKY"], "PPPfP|PPPPP"], "drift": [IDS["DRIFTING"], "+0.450"],
    "compare": ["by driver_version", "1.0: PASS → 2.0: FAIL"], "prune": ["would remove 10 run(s) and 80 case row(s)"],
}


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "ci-log"])
@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_answer_reads_in_a_terminal_and_in_a_log(answers, name: str, terminal: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = io.StringIO()
    answers[name](Console(file=out, force_terminal=terminal, width=400, color_system=None))
    text = out.getvalue()
    assert all(expected in text for expected in EXPECTED[name]), text
    assert ("┃" in text or "│" in text) == (terminal and name not in ("first-failure one",))


def test_a_run_in_one_cell() -> None:
    from dmlconform.history.queries import RunInfo

    run = RunInfo(7, "d", "s", "c", "2026-11-01T05:30:00+00:00", 0, "x", 1, 1, 0,
                  {"build": "12", "device": "GPU", "directml_version": "1.15.4.0", "driver_version": "2.0"}, {}, {})
    assert run_words(run) == "#7 2026-11-01 05:30 build=12 directml 1.15.4.0 driver 2.0"
    assert run_words(None) == "-"


@pytest.fixture(scope="module")
def across_suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[Console], None]]:
    """The answers of tests/history/suite_change.py's history, which spans a change of suites."""
    url = str(tmp_path_factory.mktemp("suites") / "history.sqlite")
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, "ci", meta) for document, meta in suite_change.runs()])
        found = {"first": first_failures(database), "one": first_failures(database, case_text=SUITE_IDS["RETIRED"]),
                 "flaky": flaky(database), "compare": compare(database, "suite_fingerprint"),
                 "timeline": timeline(database, SUITE_IDS["CHANGED"])}
    return {
        "first-failure": lambda c: render_first_failures(found["first"], c, False),
        "first-failure one": lambda c: render_first_failures(found["one"], c, True),
        "flaky": lambda c: render_flaky(found["flaky"], c, 50),
        "compare": lambda c: render_compare(found["compare"], c, 50),
        "timeline": lambda c: render_timeline(found["timeline"], c),
    }


SUITE_IDS = suite_change.case_ids()
ACROSS_SUITES = {
    "first-failure": [NEVER_PASSED, "changed", "4 case(s) failing now on 1 stack(s)",
                      "1 case(s) whose last verdict was a failure are no longer in their stack's suite",
                      "for 1 the suite changed between the last pass and the first failure"],
    "first-failure one": [f"{SUITE_IDS['RETIRED']} on directml on GPU-S: left the stack's suite in run #5",
                          "it failed in its last run there #4"],
    "flaky": ["PP|.|PP|PF|.|PF", ". not in the run"],
    "compare": ["(suites differ)", "directml on GPU-S: the runs compared come from 3 suite(s); 1 case(s) in every "
                "one of them, 4 in some (compared between those), 3 in one only (not compared)"],
    "timeline": [suite_change.OLD[:8], suite_change.NEW[:8]],
}


@pytest.mark.parametrize("name", list(ACROSS_SUITES))
def test_answers_across_a_change_of_suites_say_so(across_suites, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    out = io.StringIO()
    across_suites[name](Console(file=out, force_terminal=False, width=400, color_system=None))
    text = out.getvalue()
    assert all(expected in text for expected in ACROSS_SUITES[name]), text
