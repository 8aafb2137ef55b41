"""The results of real DirectML kept in examples/dml_harness/results/: what the README and the results page say
of them is what they hold."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dmlconform.case_result import Status
from dmlconform.results.document import read_document
from dmlconform.results.expectations import load_expectations

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "examples" / "dml_harness" / "results"
STACKS = {"lavapipe (Mesa 25.0.7)": RESULTS / "directml-1.15.4-lavapipe-standard.json",
          "NVIDIA H100 (580.159.04)": RESULTS / "directml-1.15.4-h100-standard.json"}


def _table_script():
    spec = importlib.util.spec_from_file_location("fingerprint_table", RESULTS / "fingerprint_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_fingerprint_table_is_derived_from_the_kept_results():
    table = _table_script().table(list(STACKS.items()))
    for page in (REPO / "README.md", RESULTS / "README.md"):
        assert table in page.read_text(), f"{page}: the fingerprint table is not fingerprint_table.py's output"
    assert "**preserved** | **flushed**" in table  # the stacks differ, and the table says where


def test_both_stacks_came_out_the_same_case_for_case_and_fail_only_the_baselined_cases():
    runs = {label: read_document(path) for label, path in STACKS.items()}
    statuses = [{r.id: r.status for r in run.results} for run in runs.values()]
    assert statuses[0] == statuses[1] and len(statuses[0]) == 1772
    failed = sorted(case_id for case_id, status in statuses[0].items() if status is Status.FAIL)
    expectations = load_expectations(REPO / "examples" / "dml_harness" / "baseline-directml-1.15.4.csv", [], [])
    assert len(failed) == 12 and all(expectations.expected_failure(case_id) for case_id in failed)
    assert len(expectations.baseline) == 4  # every entry is used by some failing case
    assert all(any(entry is expectations.expected_failure(c) for c in failed) for entry in expectations.baseline)
    devices = {run.backend.device for run in runs.values()}
    assert devices == {"llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 80GB HBM3"}
    assert {run.backend.extra.get("api") for run in runs.values()} == {"DirectML 1.15.4.0"}
