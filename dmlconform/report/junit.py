"""JUnit XML, one testcase per case, grouped by operator, for CI systems that render it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from dmlconform.case_result import Status
from dmlconform.run_result import RunResult

_FAILURE = {Status.FAIL, Status.UNEXPECTED_PASS}
_ERROR = {Status.ERROR, Status.CRASH, Status.TIMEOUT}
_SKIP = {Status.NOT_SUPPORTED, Status.NOT_REQUIRED, Status.SKIPPED}


def write_junit(run: RunResult, path: Path) -> None:
    root = ET.Element("testsuites", name=f"dmlconform {run.backend.name}")
    by_op: dict[str, ET.Element] = {}
    for result in run.results:
        suite = by_op.get(result.op)
        if suite is None:
            suite = by_op[result.op] = ET.SubElement(root, "testsuite", name=result.op)
        case = ET.SubElement(suite, "testcase", classname=result.op, name=result.id,
                             time=f"{result.duration_s:.6f}")
        text = f"{result.status.value}: {result.message}"
        if result.status is Status.NOT_SUPPORTED and result.required:
            ET.SubElement(case, "failure", message=text, type=result.status.value)
        elif result.status in _FAILURE:
            ET.SubElement(case, "failure", message=text, type=result.status.value).text = "\n".join(
                f"{list(e.index)}: expected {e.expected}, actual {e.actual}, allowed {e.allowed}"
                for e in result.worst)
        elif result.status in _ERROR:
            ET.SubElement(case, "error", message=text, type=result.status.value)
        elif result.status in _SKIP:
            ET.SubElement(case, "skipped", message=text)
    for suite in by_op.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
