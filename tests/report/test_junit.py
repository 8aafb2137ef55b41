"""JUnit output validates against the Jenkins/Surefire schema (junit-10.xsd) and maps each status sensibly."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dmlconform.case_result import AppliedWaiver, Status
from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.report.junit import junit_bytes, write_junit
from tests.results.helpers import result, run

xmlschema = pytest.importorskip("xmlschema")
SCHEMA = Path(__file__).with_name("junit-10.xsd")


def every_status_run():
    results = [result(f"s/{s.value.lower()}", s, index=i) for i, s in enumerate(Status)]
    failing = results[1]
    assert failing.status is Status.FAIL
    failing.tolerance, failing.max_ulp, failing.worst_index = Tolerance.parse("bound"), 12, (0, 3)
    failing.worst = [Element((0, 3), "0.5 (0x3f000000)", "0.5000007 (0x3f00000c)", 12, "≤ 3 ULP")]
    failing.message = "1 of 8 elements outside bound; worst at [0, 3] \x1b[31mcolour\x07 from a harness"
    for r in results:
        if r.status in (Status.EXPECTED_FAIL, Status.FLAKE, Status.UNEXPECTED_PASS, Status.NOT_REQUIRED, Status.WAIVED):
            r.outcome = Status.PASS if r.status is Status.UNEXPECTED_PASS else Status.FAIL
        if r.status is Status.WAIVED:
            r.waiver = AppliedWaiver("W-1", "fp16 sums rounded their own way", "certification board", "2025-06-01")
    results[4].required = False  # NOT_REQUIRED
    return run(results)


def test_every_status_validates_against_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    write_junit(every_status_run(), path)
    xmlschema.XMLSchema(SCHEMA).validate(path)


def test_a_document_the_schema_rejects_is_rejected() -> None:
    broken = junit_bytes(every_status_run()).replace(b'<testsuite name="ACTIVATION_RELU_GRAD"', b"<testsuite")
    assert not xmlschema.XMLSchema(SCHEMA).is_valid(broken.decode())


def test_one_testcase_per_case_with_the_operator_as_classname_and_a_useful_failure() -> None:
    made = every_status_run()
    root = ET.fromstring(junit_bytes(made))
    cases = root.findall(".//testcase")
    assert len(cases) == len(made.results) and {c.get("classname") for c in cases} == {"ACTIVATION_RELU_GRAD"}
    kinds = {c.get("name"): next((child.tag for child in c if child.tag != "system-out"), "passed") for c in cases}
    assert kinds == {
        "s/pass": "passed", "s/invalid_ok": "passed", "s/fail": "failure", "s/unexpected_pass": "failure",
        "s/not_supported": "failure", "s/error": "error", "s/crash": "error", "s/timeout": "error",
        "s/not_required": "skipped", "s/skipped": "skipped", "s/not_run": "skipped", "s/expected_fail": "skipped",
        "s/flake": "flakyFailure", "s/waived": "skipped"}
    failure = root.find(".//testcase[@name='s/fail']/failure")
    assert failure is not None and failure.get("type") == "FAIL"
    assert "rule bound, max ULP 12, worst index [0, 3]" in failure.text
    assert "[0, 3]: expected 0.5 (0x3f000000), actual 0.5000007 (0x3f00000c), ULP 12" in failure.text
    assert "\x1b" not in failure.text and "\x07" not in failure.text  # not representable in XML 1.0
    waived = root.find(".//testcase[@name='s/waived']/skipped")
    assert waived is not None and waived.get("type") == "WAIVED"
    assert waived.get("message", "").startswith("WAIVED: FAIL, waiver W-1 (fp16 sums rounded their own way; granted "
                                                "by certification board, 2025-06-01)")
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors"),
                                  suite.get("skipped")) == ("14", "3", "3", "5")
