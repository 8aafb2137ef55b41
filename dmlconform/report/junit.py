"""JUnit XML: one testcase per case (classname the operator, name the case id), one testsuite per operator; on the
graph and in-place paths (contract §9) per operator and path (classname and testsuite `ReluGrad@graph`, the case id
ending in @graph), each testsuite with a `path` property, so that every path's counts stand apart.

Valid against the Jenkins xUnit / Maven Surefire schema (tests/report/junit-10.xsd) that GitLab, Jenkins
and Azure Pipelines read. Mapping:
* failure: FAIL (a changed failure too), UNEXPECTED_PASS, a required case NOT_SUPPORTED; its text names the rule,
  the max ULP, the worst index and the worst elements;
* error: ERROR, CRASH, TIMEOUT (the backend did not produce a judgeable answer);
* skipped: SKIPPED, NOT_REQUIRED, NOT_SUPPORTED when not required, NOT_RUN, and EXPECTED_FAIL (as pytest
  reports xfail: a known failure is neither a pass nor news) and WAIVED (certification: the message names the
  waiver and what the case came to);
* FLAKE: a passing testcase with a Surefire `flakyFailure` naming the runs (GitLab ignores the element).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from dmlconform.atomic_file import write_atomically
from dmlconform.case_result import CaseResult, Status
from dmlconform.run_result import RunResult
from dmlconform.verdicts import effective_status

_FAILURE = {Status.FAIL, Status.UNEXPECTED_PASS}
_ERROR = {Status.ERROR, Status.CRASH, Status.TIMEOUT}
_SKIP = {Status.NOT_SUPPORTED, Status.NOT_REQUIRED, Status.SKIPPED, Status.NOT_RUN, Status.EXPECTED_FAIL,
         Status.WAIVED}
# XML 1.0 cannot carry these at all, not even escaped; a harness's stderr quoted in a message may hold them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"  # the schema's SUREFIRE_TIME allows three decimals


def failure_text(result: CaseResult) -> str:
    lines = []
    if result.tolerance is not None:
        worst = list(result.worst_index) if result.worst_index is not None else "-"
        max_ulp = result.max_ulp if result.max_ulp is not None else "-"
        lines.append(f"rule {result.tolerance}, max ULP {max_ulp}, worst index {worst}")
    lines.append(result.message)
    for element in result.worst:
        ulp = "-" if element.ulp is None else element.ulp
        lines.append(f"{list(element.index)}: expected {element.expected}, actual {element.actual}, ULP {ulp}, "
                     f"allowed {element.allowed}")
    return _text("\n".join(lines))


def suite_name(result: CaseResult) -> str:
    """The testsuite (and classname) of a case: its operator, and on another path than `operator` the path too
    (ReluGrad@graph), so that each path's cases are counted apart."""
    return result.op if result.path == "operator" else f"{result.op}@{result.path}"


def _testcase(suite: ET.Element, result: CaseResult) -> None:
    case = ET.SubElement(suite, "testcase", classname=suite_name(result), name=result.id,
                         time=_seconds(result.duration_s))
    status = result.status
    detail = result.message
    if result.waiver is not None:
        detail = (f"{effective_status(result).value}, waiver {result.waiver.id} ({result.waiver.reason}; granted by "
                  f"{result.waiver.granted_by}, {result.waiver.date}): {detail}")
    message = _text(f"{status.value}: {detail}".splitlines()[0][:1000])
    if (status is Status.NOT_SUPPORTED and result.required) or status in _FAILURE:
        ET.SubElement(case, "failure", message=message, type=status.value).text = failure_text(result)
    elif status in _ERROR:
        ET.SubElement(case, "error", message=message, type=status.value).text = failure_text(result)
    elif status in _SKIP:
        ET.SubElement(case, "skipped", message=message, type=status.value)
    elif status is Status.FLAKE:
        flaky = ET.SubElement(case, "flakyFailure", message=message, type=effective_status(result).value)
        flaky.text = failure_text(result)


def junit_tree(run: RunResult) -> ET.ElementTree:
    root = ET.Element("testsuites", name=f"dmlconform {run.backend.name}")
    by_op: dict[str, ET.Element] = {}
    properties = {"backend": run.backend.name, "backend_version": run.backend.version,
                  "device": run.backend.device, "target_feature_level": run.target_level.label,
                  "suite_fingerprint": run.suite.fingerprint if run.suite else "",
                  "shard": str(run.shard) if run.shard else "", "interrupted": run.interrupted or ""}
    timestamp = run.started.replace(microsecond=0, tzinfo=None).isoformat()
    durations: dict[str, float] = {}
    for result in run.results:
        name = suite_name(result)
        suite = by_op.get(name)
        if suite is None:
            suite = by_op[name] = ET.SubElement(root, "testsuite", name=name, timestamp=timestamp)
            props = ET.SubElement(suite, "properties")
            for key, value in {**properties, "path": result.path}.items():
                if value:
                    ET.SubElement(props, "property", name=key, value=_text(value))
        _testcase(suite, result)
        durations[name] = durations.get(name, 0.0) + result.duration_s
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for op, suite in by_op.items():
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  "failures": sum(1 for c in cases if c.find("failure") is not None),
                  "errors": sum(1 for c in cases if c.find("error") is not None),
                  "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", _seconds(durations[op]))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(totals[key]))
    root.set("time", _seconds(run.duration_s))
    return ET.ElementTree(root)


def junit_bytes(run: RunResult) -> bytes:
    tree = junit_tree(run)
    ET.indent(tree, space=" ")
    return ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(run: RunResult, path: Path) -> None:
    write_atomically(path, junit_bytes(run))
