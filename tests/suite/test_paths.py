"""The one expansion of a selection onto execution paths (`suite.select.on_paths`, contract §9)."""

from __future__ import annotations

from pathlib import Path

from dmlconform.cli.common import load_cases
from dmlconform.suite.select import on_paths
from dmlconform.surface.paths import ExecutionPath
from tests.paths_suite import write_suite

GRAPH, IN_PLACE, OPERATOR = ExecutionPath.GRAPH, ExecutionPath.IN_PLACE, ExecutionPath.OPERATOR


def test_each_case_runs_on_each_path_that_applies_path_by_path(tmp_path: Path):
    cases = load_cases((write_suite(tmp_path),), None)
    assert on_paths(cases, (OPERATOR,)) is cases  # today's runs: the cases themselves
    expanded = on_paths(cases, (IN_PLACE, GRAPH, OPERATOR))  # asked in any order, run operator, graph, in-place
    assert [c.full_id for c in expanded] == [
        "paths/relu", "paths/clip", "paths/clip-strided",
        "paths/relu@graph", "paths/clip@graph", "paths/clip-strided@graph",
        "paths/clip@in-place", "paths/clip-strided@in-place"]  # in place: ClipGrad1's page only
    assert [c.path for c in expanded] == [OPERATOR] * 3 + [GRAPH] * 3 + [IN_PLACE] * 2
    assert [c.full_id for c in on_paths(cases, (GRAPH,))] == ["paths/relu@graph", "paths/clip@graph",
                                                              "paths/clip-strided@graph"]


def test_load_cases_expands_after_selecting(tmp_path: Path):
    selected = load_cases((write_suite(tmp_path),), "clip and not strided", None, execution_paths=tuple(ExecutionPath))
    assert [c.full_id for c in selected] == ["paths/clip", "paths/clip@graph", "paths/clip@in-place"]
