"""diff_runs and its report on execution paths (contract §9): a case is compared with itself on the same path, each
change names its path, the changes are counted per path, and a run on other paths than the other's says so."""

from __future__ import annotations

import io

from rich.console import Console

from dmlconform.case_result import CaseResult, Status
from dmlconform.report.diff import diff_document, path_lines, render_diff
from dmlconform.results.diff import Change, diff_runs
from dmlconform.run_result import RunResult
from dmlconform.surface.paths import split_case_id
from tests.results.helpers import result, run

S = Status


def _on_path(case_id: str, status: Status) -> CaseResult:
    made = result(case_id, status)
    made.path = split_case_id(case_id)[1].value
    return made


def _paths_run(results: list[CaseResult], paths: list[str] | None) -> RunResult:
    made = run(results)
    if paths is not None:
        made.settings["paths"] = paths
    return made


def test_the_same_case_on_another_path_is_another_case_and_changes_are_counted_per_path() -> None:
    old = _paths_run([_on_path("s/a", S.PASS), _on_path("s/a@graph", S.PASS), _on_path("s/b@graph", S.FAIL)],
                     ["operator", "graph"])
    new = _paths_run([_on_path("s/a", S.PASS), _on_path("s/a@graph", S.FAIL), _on_path("s/b@graph", S.PASS)],
                     ["operator", "graph"])
    diff = diff_runs(old, new)
    assert [(c.id, c.path, c.change) for c in diff.changes] == [
        ("s/a@graph", "graph", Change.REGRESSION), ("s/b@graph", "graph", Change.FIX)]
    assert diff.paths == ("operator", "graph") and not diff.paths_differ
    assert diff.path_changes() == {"operator": {}, "graph": {"regression": 1, "fix": 1}}
    assert path_lines(diff) == ["per path: operator no changes · graph 1 regression, 1 fix"]
    document = diff_document(diff, "old.json", "new.json")
    assert document["paths"] == {"old": ["operator", "graph"], "new": ["operator", "graph"]}
    assert [c["path"] for c in document["changes"]] == ["graph", "graph"]
    assert document["path_changes"]["graph"] == {"regression": 1, "fix": 1}


def test_a_run_on_other_paths_says_so_and_its_cases_there_are_new_not_regressions() -> None:
    old = _paths_run([_on_path("s/a", S.PASS)], None)
    new = _paths_run([_on_path("s/a", S.PASS), _on_path("s/a@graph", S.FAIL), _on_path("s/a@in-place", S.PASS)],
                     ["operator", "graph", "in-place"])
    diff = diff_runs(old, new)
    assert not diff.regressed and diff.paths_differ
    assert {(c.id, c.change) for c in diff.changes} == {("s/a@graph", Change.NEW), ("s/a@in-place", Change.NEW)}
    assert all(c.name != "setting paths" for c in diff.run_changes)  # said by the paths' own line
    lines = path_lines(diff)
    assert lines[0] == ("paths differ: the old run ran operator; the new run ran operator, graph, in-place; cases on "
                        "graph, in-place are in the new run only (new, not compared)")
    assert lines[1] == "per path: operator no changes · graph 1 new · in-place 1 new"
    back = path_lines(diff_runs(new, old))[0]
    assert back.endswith("cases on graph, in-place are in the old run only (vanished, not compared)")
    out = io.StringIO()
    render_diff(diff, Console(file=out, width=200), "old.json", "new.json")
    text = out.getvalue()
    assert "paths differ" in text and "new: in the new run only; vanished: in the old run only" in text
    assert "in-place" in text.split("s/a@in-place")[0].rsplit("\n", 1)[-1]  # the path column of its row


def test_one_path_in_both_runs_adds_no_path_line() -> None:
    old = run([result("s/a", S.PASS)])
    new = run([result("s/a", S.FAIL)])
    diff = diff_runs(old, new)
    assert path_lines(diff) == [] and diff.changes[0].path == "operator"
    out = io.StringIO()
    render_diff(diff, Console(file=out, width=200), "old.json", "new.json")
    assert "path" not in out.getvalue()
