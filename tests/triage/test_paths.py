"""`show` and `repro` on execution paths (contract §9): a case id ending in `@graph` or `@in-place` is the suite's
case on that path, its repro bundle keeps the layouts and replays with `--path`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dmlconform.cli.repro import run_options
from dmlconform.feature_levels import HIGHEST
from dmlconform.suite.loader import load_paths
from dmlconform.surface.paths import ExecutionPath
from dmlconform.triage import TriageError
from dmlconform.triage.bundle import SUITE, write_bundle
from dmlconform.triage.inspection import inspect_case
from dmlconform.triage.locate import locate
from tests.paths_suite import write_suite


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write_suite(tmp_path)


def test_a_case_id_with_a_path_is_the_case_on_that_path(suite: Path) -> None:
    graph = locate("paths/relu@graph", [suite]).case
    assert graph.path is ExecutionPath.GRAPH and graph.full_id == "paths/relu@graph"
    in_place = locate("paths/clip-strided@in-place", [suite]).case
    assert in_place.path is ExecutionPath.IN_PLACE and in_place.aliased_input == "InputTensor"
    assert locate("paths/relu", [suite]).case.path is ExecutionPath.OPERATOR
    with pytest.raises(TriageError, match="the in-place path does not apply to paths/relu"):
        locate("paths/relu@in-place", [suite])  # ReluGrad's page allows no output over an input


def test_the_replay_command_names_the_path_only_off_the_operator_path() -> None:
    assert run_options(None, HIGHEST, "graph")[-4:] == ["--path", "graph", "--feature-level", HIGHEST.label]
    assert "--path" not in run_options(None, HIGHEST)


def test_a_bundle_of_a_case_on_a_path_holds_the_suites_case_with_its_layout(suite: Path, tmp_path: Path) -> None:
    case = locate("paths/clip-strided@in-place", [suite]).case
    out = tmp_path / "bundle"
    options = run_options(None, HIGHEST, case.path.value)
    check = write_bundle(out, case, None, inspect_case(case, None, HIGHEST), options, None, None, "none", HIGHEST)
    assert check.ok and not check.problems
    entry = yaml.safe_load((out / SUITE).read_text())["cases"][0]
    assert entry["id"] == "clip-strided"  # the suite's id: `--path in-place` puts it on the path
    assert entry["inputs"]["InputTensor"]["strides"] == [2]
    assert "strides" not in entry["outputs"]["OutputGradientTensor"]  # in place, derived from the input's again
    again = load_paths([out / SUITE])[0].on_path(ExecutionPath.IN_PLACE)
    assert again is not None and again.description.layouts == case.description.layouts
    assert "--path in-place" in (out / "reproduce.sh").read_text()
