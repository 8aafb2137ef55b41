"""A known issue's execution paths (contract §9): `paths:` (default the operator path, where every issue was
measured) decides which of a case's ids it covers; the suite id comes from `split_case_id`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.known_issues import KnownIssueError, canonical_bytes, load_known_issues, parse_release_issues, shipped

LIST = """\
format: dmlconform-known-issues/v1
date: 2026-11-27
measured:
  directml: [1.15.4]
issues:
  - id: TEST-WINDOW-ZERO
    title: accepts a window of size 0
    releases: [1.15.4]
    backends: [directml]
    cases: ['slice_grad.invalid/window-size-zero', 'slice_grad.standard/zero-axis[0-9]+']
PATHS    evidence: [here]
    reference: a test
"""


def issue(tmp_path: Path, paths: str = ""):
    path = tmp_path / "mine.yaml"
    path.write_text(LIST.replace("PATHS", f"    paths: {paths}\n" if paths else ""))
    return load_known_issues(path).for_release("1.15.4", "directml")


def result(case_id: str) -> CaseResult:
    return CaseResult(case_id, "SLICE_GRAD", "FLOAT32", 2, HIGHEST, Status.FAIL)


def test_an_issue_without_paths_covers_the_operator_path_only(tmp_path: Path):
    issues = issue(tmp_path)
    assert issues.issue_for(result("slice_grad.invalid/window-size-zero"), Status.FAIL) is not None
    assert issues.issue_for(result("slice_grad.standard/zero-axis3"), Status.FAIL) is not None
    assert issues.issue_for(result("slice_grad.invalid/window-size-zero@graph"), Status.FAIL) is None
    assert issues.issue_for(result("slice_grad.standard/zero-axis3@in-place"), Status.FAIL) is None


def test_an_issue_with_paths_covers_the_suite_id_on_each_path_it_names(tmp_path: Path):
    issues = issue(tmp_path, "[graph, operator]")
    assert issues.issues[0].paths == ("operator", "graph")  # in the paths' own order
    for case_id in ("slice_grad.invalid/window-size-zero", "slice_grad.invalid/window-size-zero@graph",
                    "slice_grad.standard/zero-axis3@graph"):
        assert issues.issue_for(result(case_id), Status.FAIL) is not None, case_id
    assert issues.issue_for(result("slice_grad.invalid/window-size-zero@in-place"), Status.FAIL) is None
    assert issues.issue_for(result("slice_grad.invalid/window-size-zero@graphs"), Status.FAIL) is None
    only_graph = issue(tmp_path, "[graph]")
    assert only_graph.issue_for(result("slice_grad.invalid/window-size-zero"), Status.FAIL) is None


@pytest.mark.parametrize("paths,message", [
    ("[graphs]", "issue TEST-WINDOW-ZERO: field paths[0]: 'graphs' is not an execution path"),
    ("[]", "field paths: must be a non-empty list of execution paths"),
    ("operator", "field paths: must be a non-empty list"),
    ("[graph, graph]", "field paths: names a path twice"),
])
def test_a_malformed_paths_key_is_one_line(paths: str, message: str, tmp_path: Path):
    with pytest.raises(KnownIssueError) as caught:
        issue(tmp_path, paths)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_canonical_form_names_paths_only_where_not_the_default(tmp_path: Path):
    # An issue on the operator path alone writes no key (digests of lists from before the key stay as they were); the
    # shipped issues name the paths they were measured on (DECISIONS.md §10), so theirs do.
    assert b'"paths"' not in canonical_bytes(issue(tmp_path, "[operator]"))
    assert b'"paths"' in canonical_bytes(shipped().for_release("1.15.4", "directml"))
    issues = issue(tmp_path, "[operator, in-place]")
    raw = canonical_bytes(issues)
    assert b'"paths"' in raw and parse_release_issues(raw, "x") == issues
