"""The results of real DirectML kept in examples/dml_harness/results/: what the README and the results page say
of them is what they hold."""

from __future__ import annotations

import importlib.util
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.known_issues import Mode, shipped
from dmlconform.results.document import from_document, read_document
from dmlconform.results.expectations import Expectations

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "examples" / "dml_harness" / "results"
STACKS = {"lavapipe (Mesa 25.0.7)": RESULTS / "directml-1.15.4-lavapipe-standard.json",
          "NVIDIA H100 (580.159.04)": RESULTS / "directml-1.15.4-h100-standard.json"}


@cache
def _bundled_cases() -> tuple[Case, ...]:
    """The bundled suites' cases (the standard tier), loaded once for the tests that compare the kept results with
    them."""
    from dmlconform.cli import bundled_suites
    from dmlconform.suite.loader import load_paths

    return tuple(load_paths([bundled_suites()]))


def _table_script():
    spec = importlib.util.spec_from_file_location("fingerprint_table", RESULTS / "fingerprint_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_fingerprint_table_is_derived_from_the_kept_results():
    table = _table_script().table(list(STACKS.items()))
    for page in (REPO / "docs" / "real-directml.md", RESULTS / "README.md"):
        assert table in page.read_text(), f"{page}: the fingerprint table is not fingerprint_table.py's output"
    assert "**preserved** | **flushed**" in table  # the stacks differ, and the table says where


def known_issues_of_1_15_4() -> Expectations:
    issues = shipped().for_release("1.15.4", "directml")
    return Expectations().with_known_issues(issues, Mode.ON)


def test_both_stacks_came_out_the_same_case_for_case_and_fail_only_directmls_known_issues():
    runs = {label: read_document(path) for label, path in STACKS.items()}
    statuses = [{r.id: r.status for r in run.results} for run in runs.values()]
    assert statuses[0] == statuses[1] and len(statuses[0]) == 3068
    failed = [r for r in next(iter(runs.values())).results if r.status is Status.FAIL]
    settled = [known_issues_of_1_15_4().settle([r]) for r in failed]
    # 26 before issue 41: issue 40's layout cases add one, slice_grad.standard/layouts-043-broadcast-int16-r4 (the
    # merged-axes bug); issue 41's operators 24 (zero strides and windows, NaN offsets, the INT64 comparison)
    assert len(failed) == 50 and "slice_grad.standard/layouts-043-broadcast-int16-r4" in {r.id for r in failed} and all(r.status is Status.EXPECTED_FAIL for r in settled)
    assert {r.known_issue.id for r in settled if r.known_issue} == {
        i.id for i in shipped().for_release("1.15.4", "directml").issues}  # every issue of the release is used
    devices = {run.backend.device for run in runs.values()}
    assert devices == {"llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 80GB HBM3"}
    assert {run.backend.extra.get("api") for run in runs.values()} == {"DirectML 1.15.4.0"}


@pytest.mark.slow
def test_the_full_tier_came_out_the_same_on_both_stacks_and_its_failures_are_directmls_known_issues():
    """The full tier's kept runs (results/DECISIONS.md §7), taken with the known issues of the time (EXPECTED_FAIL):
    what DirectML did is the same on both stacks, nothing failing but what DirectML 1.15.4's known issues explain, nine
    of them beyond the standard tier's. The H100's run came before the layout case the merged-axes bug catches joined
    the issue's list (slice_grad.standard/layouts-043-broadcast-int16-r4: FAIL there, EXPECTED_FAIL on lavapipe, taken
    with today's list), so the stacks are compared on what DirectML came to, and every failure of either is settled
    against today's list."""
    paths = [RESULTS / f"directml-1.15.4-{stack}-full.json.xz" for stack in ("lavapipe", "h100")]
    runs = [from_document(json.loads(lzma.decompress(path.read_bytes())), path) for path in paths]
    came_to = [{r.id: (r.outcome or Status.FAIL) if r.status is Status.EXPECTED_FAIL else r.status for r in run.results}
               for run in runs]
    assert came_to[0] == came_to[1] and len(came_to[0]) == 8656
    assert Status.FAIL not in {r.status for r in runs[0].results}  # lavapipe's, with today's list: all expected
    for run in runs:
        failed = [replace(r, status=Status.FAIL, outcome=None, expectation=None)
                  for r in run.results if r.status in (Status.FAIL, Status.EXPECTED_FAIL)]
        settled = [known_issues_of_1_15_4().settle([r]) for r in failed]
        assert len(failed) == 64 and len([r for r in failed if ".full/" in r.id]) == 14
        assert all(r.status is Status.EXPECTED_FAIL and r.known_issue for r in settled)


ORT_RESULTS = REPO / "examples" / "ort_dml_host" / "results"
KEPT_RESULTS = [*STACKS.values(), *sorted(ORT_RESULTS.glob("standard-*.json")), *sorted(ORT_RESULTS.glob("*/standard-*.json"))]


@pytest.mark.slow
def test_every_kept_result_was_taken_on_the_standard_tier_this_commit_ships():
    """Evidence from real drivers speaks for the suites it ran: when the standard tier changes, the results above go
    stale and must be taken again (examples/dml_harness/device/README.md, examples/ort_dml_host/README.md)."""
    from dmlconform.suite.fingerprint import selection_fingerprint

    shipped = selection_fingerprint(_bundled_cases())
    assert len(KEPT_RESULTS) == 6
    taken_on = {path: read_document(path).suite.fingerprint for path in KEPT_RESULTS}
    stale = [f"{path.relative_to(REPO)}: {fingerprint}" for path, fingerprint in taken_on.items() if fingerprint != shipped]
    assert not stale, f"taken on other suites than the standard tier's {shipped}:\n" + "\n".join(stale)


@pytest.mark.slow
@pytest.mark.parametrize("folder,ort,harness", [
    (ORT_RESULTS, "standard-dml-wine-lavapipe.json", "standard-directml-harness-wine-lavapipe.json"),
    (ORT_RESULTS / "h100", "standard-dml-h100.json", "standard-directml-harness-h100.json"),
])
def test_the_ort_dml_tables_are_derived_from_the_kept_results(tmp_path: Path, folder: Path, ort: str,
                                                              harness: str) -> None:
    """docs/onnxruntime-backend.md's per-operator tables are compare_with_harness.py's output over the kept results
    and their outputs (artifacts.tar.xz), and every valid case of the standard tier was taken whole and passed, but
    its layout cases (issue 40): ONNX Runtime's graphs cannot express a layout or path by design (docs/api-surface.md),
    so the EP never runs them: SKIPPED with the reason (NOT_SUPPORTED in a result taken before that, the H100's),
    exactly the cases whose description has layouts, and the tables leave them out."""
    for name in (ort, harness):
        shutil.copy(folder / name, tmp_path / name)
    with tarfile.open(folder / "artifacts.tar.xz") as archive:
        archive.extractall(tmp_path, filter="data")
    script = REPO / "examples" / "ort_dml_host" / "compare_with_harness.py"
    made = subprocess.run([sys.executable, str(script), str(tmp_path / ort), str(tmp_path / harness), "--notes"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert made.returncode == 0, made.stderr
    table = made.stdout.split("\n\n")[0].strip()
    assert table in (REPO / "docs" / "onnxruntime-backend.md").read_text()
    # 3 FAIL: DirectML's INT64 comparison shows through the graphs' Less/Greater (DML-EP-INT64-SIGNED-LOW-WORD)
    assert "| **all** | | | 2426 | 2426 | 0 | 0 | 2423 / 3 |" in table
    with_layouts = {case.full_id for case in _bundled_cases()
                    if any(not layout.is_default for layout in case.description.layouts.values())}
    results = read_document(tmp_path / ort).results
    assert {r.status for r in results if r.id not in with_layouts} == {Status.PASS, Status.INVALID_OK, Status.FAIL}
    int64 = shipped().for_release("1.15.4", "onnxruntime-dml").issues
    assert all(any(issue.covers(r) for issue in int64) for r in results if r.status is Status.FAIL)
    unexpressed = {r.id for r in results if r.status in (Status.SKIPPED, Status.NOT_SUPPORTED)
                   and "cannot express" in r.message and r.message.endswith("it runs packed tensors on one operator")}
    assert unexpressed == with_layouts and len(with_layouts) == 354
    assert "layout or path cases the EP's graphs cannot express, left out (not run by design): 354 " in made.stdout
