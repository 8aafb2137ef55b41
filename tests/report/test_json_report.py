"""The JSON result's text: the document json.dumps would write, the run's fields indented, one case per line."""

from __future__ import annotations

import json
import math

from dmlconform.report.json_report import dumps


def test_each_case_is_one_line_and_the_document_is_unchanged() -> None:
    document = {"format": "x", "suite": {"cases": 2, "files": ["a"]}, "cases": [
        {"id": "a", "status": "PASS", "worst": {"index": [0, 1], "ulp": 1.5}},
        {"id": "b", "status": "FAIL", "value": math.inf, "note": 'quote " and\nnewline'},
    ], "interrupted": False}
    text = dumps(document)
    assert json.loads(text) == json.loads(json.dumps(document))
    lines = text.splitlines()
    assert lines[lines.index(' "cases": [') + 1].startswith('  {"id": "a"')
    assert lines[lines.index(' "cases": [') + 2].startswith('  {"id": "b"')
    assert text.endswith("}\n") and list(json.loads(text)) == list(document)


def test_no_cases() -> None:
    document = {"format": "x", "cases": [], "after": 1}
    assert json.loads(dumps(document)) == document
