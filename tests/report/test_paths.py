"""Every report names each case's execution path (contract §9): the JSON result (per case `path` and `stray_writes`,
the paths asked, a summary and verdicts per path), the console (a line per path, the verdict per path) and JUnit (a
testsuite and classname per operator and path); a write outside a tensor is a FAIL naming the byte."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from dmlconform.backends.base import Outcome
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.cli.common import load_cases
from dmlconform.feature_levels import HIGHEST
from dmlconform.report.console import path_lines, render
from dmlconform.report.junit import junit_bytes
from dmlconform.results.document import from_document, to_document
from dmlconform.run_result import RunResult
from dmlconform.runner import run_cases
from dmlconform.surface.paths import ExecutionPath
from tests.paths_suite import write_suite

STRAY_CASE = "clip-strided@in-place"


class StrayBackend(NumpyBackend):
    """The reference, but on one case it also changes a byte between two strided elements of the output's buffer."""

    def run(self, case: Case) -> Outcome:
        outcome = super().run(case)
        if case.id == STRAY_CASE:
            assert outcome.images is not None
            image = bytearray(outcome.images["InputTensor"])  # in place: the output lies in InputTensor's buffer
            image[4] ^= 0xFF  # element 0 is bytes 0-3 (strides [2]: element 1 starts at byte 8)
            outcome.images["InputTensor"] = bytes(image)
        return outcome


@pytest.fixture
def run(tmp_path: Path) -> RunResult:
    cases = load_cases((write_suite(tmp_path),), None, execution_paths=tuple(ExecutionPath))
    result = run_cases(cases, StrayBackend(), HIGHEST)
    result.settings = {"paths": [path.value for path in ExecutionPath]}
    return result


def test_a_stray_write_fails_the_case_naming_the_byte(run: RunResult):
    by_id = {r.id: r for r in run.results}
    stray = by_id[f"paths/{STRAY_CASE}"]
    assert stray.status is Status.FAIL and stray.path == "in-place"
    assert len(stray.stray_writes) == 1 and "InputTensor" in stray.stray_writes[0]
    assert stray.message.startswith("wrote outside its tensors:") and "its values match" in stray.message
    others = [r for r in run.results if r is not stray]
    assert all(r.status is Status.PASS and not r.stray_writes for r in others)


def test_the_json_result_names_paths_and_stray_writes_and_reads_back(run: RunResult):
    document = json.loads(json.dumps(to_document(run)))
    cases = {c["id"]: c for c in document["cases"]}
    assert cases["paths/clip@graph"]["path"] == "graph" and cases["paths/relu"]["path"] == "operator"
    assert cases[f"paths/{STRAY_CASE}"]["stray_writes"] == list(run.results[-1].stray_writes) != []
    assert document["paths"] == ["operator", "graph", "in-place"]
    summary = document["path_summary"]
    assert list(summary) == ["operator", "graph", "in-place"]
    assert summary["operator"]["summary"] == {"PASS": 3} and summary["graph"]["summary"] == {"PASS": 3}
    assert summary["in-place"]["summary"] == {"PASS": 1, "FAIL": 1}
    assert summary["in-place"]["feature_levels"][HIGHEST.label]["conformant"] is False
    assert summary["graph"]["feature_levels"][HIGHEST.label]["conformant"] is True
    again = from_document(document, "x.json")
    assert [(r.path, r.stray_writes) for r in again.results] == [(r.path, r.stray_writes) for r in run.results]
    assert again.paths == ("operator", "graph", "in-place")


def test_a_document_written_before_paths_reads_each_path_from_the_id(run: RunResult):
    document = to_document(run)
    for case in document["cases"]:
        del case["path"], case["stray_writes"]
    for key in ("paths", "path_summary"):
        del document[key]
    again = from_document(document, "old.json")
    assert [r.path for r in again.results] == [r.path for r in run.results]
    assert all(r.stray_writes == () for r in again.results)
    with pytest.raises(Exception, match="field path: is 'sideways'"):
        from_document({**document, "cases": [{**document["cases"][0], "path": "sideways"}]}, "bad.json")


def test_the_console_has_a_line_per_path_and_a_verdict_per_path(run: RunResult):
    assert path_lines(run) == [
        "paths: operator 3 passed · graph 3 passed · in-place 1 passed, 1 failed",
        f"conformant at {HIGHEST} per path: operator yes (3/3) · graph yes (3/3) · in-place no (1/2, 1 not)"]
    out = io.StringIO()
    render(run, Console(file=out, width=200), failures_shown=5)
    text = out.getvalue()
    assert "paths: operator 3 passed" in text and "wrote outside its tensors" in text
    operator_only = RunResult(run.backend, run.target_level, run.started, 0.0,
                              [r for r in run.results if r.path == "operator"])
    assert path_lines(operator_only) == []  # one path: the report is what it was


def test_junit_counts_each_operator_on_each_path_apart(run: RunResult):
    root = ET.fromstring(junit_bytes(run))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "ACTIVATION_RELU_GRAD@graph",
                           "ELEMENT_WISE_CLIP_GRAD1@graph", "ELEMENT_WISE_CLIP_GRAD1@in-place"}
    in_place = suites["ELEMENT_WISE_CLIP_GRAD1@in-place"]
    assert (in_place.get("tests"), in_place.get("failures")) == ("2", "1")
    assert {p.get("name"): p.get("value") for p in in_place.iter("property")}["path"] == "in-place"
    assert {c.get("classname") for c in in_place.iter("testcase")} == {"ELEMENT_WISE_CLIP_GRAD1@in-place"}


def test_show_lists_a_cases_path_and_every_stray_write_and_the_run_its_paths(run: RunResult):
    from dmlconform.report.show import render_run, stray_write_lines

    stray = next(r for r in run.results if r.stray_writes)
    two = replace(stray, stray_writes=(*stray.stray_writes, "OutputGradientTensor: byte 99"))
    lines = stray_write_lines(two)
    assert lines[0] == "wrote outside its tensors (2):" and lines[1:] == [f"  {w}" for w in two.stray_writes]
    assert stray_write_lines(run.results[0]) == []
    out = io.StringIO()
    render_run(run, Console(file=out, width=200), "run.json")
    text = out.getvalue()
    assert "paths: operator, graph, in-place" in text
    assert "paths: operator 3 passed · graph 3 passed · in-place 1 passed, 1 failed" in text
    assert "per path: operator yes (3/3)" in text
    row = next(line for line in text.splitlines() if f"paths/{STRAY_CASE}" in line)
    assert "FAIL" in row and "in-place" in row and " 1 " in row


def test_show_of_one_case_names_its_path_and_its_recorded_stray_writes(run: RunResult, tmp_path: Path):
    from dmlconform.report.show import render_inspection
    from dmlconform.triage.inspection import inspect_case
    from dmlconform.triage.locate import locate

    stray = next(r for r in run.results if r.stray_writes)
    case = locate(stray.id, [tmp_path / "paths.yaml"]).case
    out = io.StringIO()
    render_inspection(inspect_case(case, None, HIGHEST), Console(file=out, width=200), stray, run)
    text = out.getvalue()
    assert "path: in-place (output bound over InputTensor)" in text
    assert "wrote outside its tensors (1):" in text and stray.stray_writes[0] in text


def test_the_html_report_has_a_section_per_path_and_the_path_and_stray_writes_of_each_failure(run: RunResult):
    from dmlconform.report.html import render_html

    html = render_html(run)
    section = html.split('<section id="paths">')[1].split("</section>")[0]
    rows = {row.split("</td>")[0].rsplit(">", 1)[-1]: row for row in section.split("<tr>")[2:]}
    assert list(rows) == ["operator", "graph", "in-place"]
    assert "3 passed" in rows["graph"] and ">conformant<" in rows["graph"]
    assert "1 passed, 1 failed" in rows["in-place"] and "not conformant" in rows["in-place"]
    assert '<a href="#paths">' in html
    failure = html.split('<section id="failures">')[1].split("</section>")[0]
    stray = next(r for r in run.results if r.stray_writes)
    assert "path in-place" in failure and "wrote outside its tensors (1)" in failure
    assert stray.stray_writes[0].replace("<", "&lt;") in failure
    operator_only = RunResult(run.backend, run.target_level, run.started, 0.0,
                              [r for r in run.results if r.path == "operator"])
    assert 'id="paths"' not in render_html(operator_only)  # one path: no section
