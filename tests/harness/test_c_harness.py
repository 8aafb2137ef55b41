"""The example C harness (examples/c_harness) built with the system compiler and run over the bundled suites."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dmlconform.backends.native import NativeBackend
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.runner import run_cases
from dmlconform.suite.loader import load_paths

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "c_harness" / "dmlc_harness.c"
VECTORS = Path(__file__).resolve().parents[2] / "test_vectors"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def c_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) on PATH to build examples/c_harness")
    binary = tmp_path_factory.mktemp("c_harness") / "dmlc_harness"
    build = subprocess.run([compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-o", str(binary), str(SOURCE)],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    assert "warning" not in build.stderr, build.stderr
    return binary


def test_c_harness_passes_its_cases_and_declines_the_rest(c_harness: Path, bundled_cases: list[Case]) -> None:
    cases = bundled_cases
    backend = NativeBackend(str(c_harness), timeout_s=10)
    try:
        info = backend.info()
        result = run_cases(cases, backend)
    finally:
        backend.close()
    assert info.device.startswith("CPU (example C harness")
    implemented = 0
    for case, res in zip(cases, result.results, strict=True):
        status = res.outcome if res.status is Status.NOT_REQUIRED else res.status
        runs = case.op.name == "SLICE_GRAD" or (case.op.name == "ACTIVATION_RELU_GRAD" and case.dtype.name == "FLOAT32")
        if case.description.has_layouts:
            # Its hello offers no memory layouts (docs/native-harness.md section 10): never sent, valid or not.
            assert status is Status.NOT_SUPPORTED and "offers no memory layouts" in res.message, case.full_id
        elif case.expect_invalid and case.op.name in ("SLICE_GRAD", "ACTIVATION_RELU_GRAD"):
            assert status is Status.INVALID_OK, f"{case.full_id}: {res.status} {res.message}"
        elif runs and not case.expect_invalid:
            implemented += 1
            assert status is Status.PASS, f"{case.full_id}: {res.status} {res.message}"
        else:
            assert status is Status.NOT_SUPPORTED, f"{case.full_id}: {res.status} {res.message}"
    assert implemented >= 2  # at least the seed examples ran through C


def test_c_harness_answers_unsupported_for_operators_it_lacks(c_harness: Path) -> None:
    # Invalid cases are always sent, so an unimplemented operator reaches the harness and is declined there.
    cases = load_paths([VECTORS / "max_pooling_grad" / "edge.yaml"])[:1]
    cases[0].expect_invalid = True
    backend = NativeBackend(str(c_harness), timeout_s=10)
    try:
        outcome = backend.run(cases[0])
    finally:
        backend.close()
    assert outcome.kind.value == "not_supported" and "does not implement MAX_POOLING_GRAD" in outcome.message
