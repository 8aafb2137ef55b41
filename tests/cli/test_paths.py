"""`dmlconform run --path` end to end (contract §9): every case on each path that applies, ids with suffixes, the
per-path summaries in the console, JSON and JUnit; a bad value is one line, exit 2."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import main
from tests.paths_suite import write_suite


@pytest.mark.slow  # ~1 s: worker processes
def test_run_path_all_runs_each_case_on_each_path_that_applies(tmp_path: Path):
    suite = write_suite(tmp_path)
    out = CliRunner().invoke(main, ["run", str(suite), "-k", "not strided", "--path", "all", "--json",
                                    str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")],
                             catch_exceptions=False)
    assert out.exit_code == 0, out.output
    document = json.loads((tmp_path / "r.json").read_text())
    assert [(c["id"], c["path"]) for c in document["cases"]] == [
        ("paths/relu", "operator"), ("paths/clip", "operator"), ("paths/relu@graph", "graph"),
        ("paths/clip@graph", "graph"), ("paths/clip@in-place", "in-place")]
    assert document["paths"] == ["operator", "graph", "in-place"]
    assert document["settings"]["paths"] == ["operator", "graph", "in-place"]
    assert {name: s["summary"] for name, s in document["path_summary"].items()} == {
        "operator": {"PASS": 2}, "graph": {"PASS": 2}, "in-place": {"PASS": 1}}
    assert "paths: operator 2 passed · graph 2 passed · in-place 1 passed" in out.output
    assert "per path: operator yes (2/2) · graph yes (2/2) · in-place yes (1/1)" in out.output
    names = {s.get("name"): s.get("tests") for s in ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")}
    assert names == {"ACTIVATION_RELU_GRAD": "1", "ELEMENT_WISE_CLIP_GRAD1": "1", "ACTIVATION_RELU_GRAD@graph": "1",
                     "ELEMENT_WISE_CLIP_GRAD1@graph": "1", "ELEMENT_WISE_CLIP_GRAD1@in-place": "1"}
    overview = CliRunner().invoke(main, ["show", str(tmp_path / "r.json")], catch_exceptions=False)
    assert overview.exit_code == 0 and "paths: operator, graph, in-place" in overview.output
    assert "per path: operator yes (2/2) · graph yes (2/2) · in-place yes (1/1)" in overview.output
    one = CliRunner().invoke(main, ["show", str(tmp_path / "r.json"), "paths/clip@in-place", "--suites", str(suite),
                                    "--no-rerun"], catch_exceptions=False)
    assert one.exit_code == 0 and "path: in-place (output bound over InputTensor)" in one.output


def test_the_default_path_is_the_operator_path_and_a_bad_path_is_one_line(tmp_path: Path):
    suite = write_suite(tmp_path)
    out = CliRunner().invoke(main, ["run", str(suite), "--json", str(tmp_path / "r.json")], catch_exceptions=False)
    document = json.loads((tmp_path / "r.json").read_text())
    assert out.exit_code == 0 and "paths" not in document["settings"] and document["paths"] == ["operator"]
    assert [c["id"] for c in document["cases"]] == ["paths/relu", "paths/clip", "paths/clip-strided"]
    assert "paths:" not in out.output
    bad = CliRunner().invoke(main, ["run", str(suite), "--path", "graph,sideways"])
    assert bad.exit_code == 2
    assert bad.output == "dmlconform: error: --path graph,sideways: 'sideways' is not a path (operator, graph, " \
                         "in-place, or all)\n"


def test_list_path_all_lists_each_case_on_each_path_that_applies(tmp_path: Path):
    suite = write_suite(tmp_path)
    out = CliRunner().invoke(main, ["list", str(suite), "--path", "all"], catch_exceptions=False, terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "paths/clip-strided@in-place" in out.output and "paths/relu@graph" in out.output
    assert "paths/relu@in-place" not in out.output  # ReluGrad's page allows no output over an input
    assert out.output.rstrip().endswith("8 cases (3 on operator, 3 on graph, 2 on in-place)")
    plain = CliRunner().invoke(main, ["list", str(suite)], catch_exceptions=False, terminal_width=200)
    assert plain.output.rstrip().endswith("\n3 cases") and "@graph" not in plain.output


def test_a_matrix_runs_each_release_on_the_paths_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    import dmlconform.cli.execution as execution
    import dmlconform.cli.matrix as matrix_command
    from dmlconform.cli.common import make_console
    from dmlconform.cli.execution import StopRequest
    from dmlconform.results.expectations import Expectations
    from dmlconform.surface.paths import ExecutionPath

    requests = []

    class Stop(Exception):
        pass

    def execute(request, stop, console):
        requests.append(request)
        raise Stop

    monkeypatch.setattr(execution, "execute", execute)
    paths = (ExecutionPath.OPERATOR, ExecutionPath.GRAPH)
    run_release = matrix_command.release_runner("smoke", None, None, 1, 60.0, Expectations(), tmp_path, False, False,
                                                StopRequest(), make_console(), paths)
    release = type("Release", (), {"package_version": "1.24.4", "directml_version": "1.15.4"})()
    with pytest.raises(Stop):
        run_release(release)
    assert requests[0].execution_paths == paths and requests[0].settings["paths"] == ["operator", "graph"]
