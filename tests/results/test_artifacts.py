"""Artifacts: a result's actual outputs written beside it and read back through the path it records."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.results import ResultsError
from dmlconform.results.artifacts import artifact_folder, load_artifacts, save_artifacts
from tests.hostile_files import npy_header
from tests.results.helpers import result

OUTPUT = {"OutputGradientTensor": TensorDesc(DataType.FLOAT16, (3,))}


def test_outputs_are_saved_relative_to_the_result_file_and_read_back_bit_for_bit(tmp_path: Path) -> None:
    failing = result("relu_grad.edge/signed-zero-x", Status.FAIL)
    array = np.array([np.nan, -0.0, 1.5], dtype=np.float16)
    failing.actual_outputs = {"OutputGradientTensor": array}
    save_artifacts(failing, tmp_path / "art", tmp_path / "reports" / "run.json")
    assert failing.actual_outputs == {}
    assert failing.artifacts == {"OutputGradientTensor":
                                 "../art/relu_grad.edge/signed-zero-x/OutputGradientTensor.npy"}
    back = load_artifacts(failing, tmp_path / "reports" / "run.json", OUTPUT)["OutputGradientTensor"]
    assert back.dtype == array.dtype and back.tobytes() == array.tobytes()


def test_without_a_result_file_the_path_is_absolute(tmp_path: Path) -> None:
    failing = result("s/a", Status.FAIL)
    failing.actual_outputs = {"OutputGradientTensor": np.zeros(2, dtype=np.int64)}
    save_artifacts(failing, tmp_path / "art", None)
    assert Path(failing.artifacts["OutputGradientTensor"]).is_absolute()


def test_a_missing_artifact_is_named_with_the_case_and_output(tmp_path: Path) -> None:
    failing = result("s/a", Status.FAIL)
    failing.artifacts = {"OutputGradientTensor": "art/s/a/OutputGradientTensor.npy"}
    with pytest.raises(ResultsError, match=r"run\.json: case s/a: field artifacts\.OutputGradientTensor: cannot read"):
        load_artifacts(failing, tmp_path / "run.json", OUTPUT)


def test_a_case_id_that_would_leave_the_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        artifact_folder(tmp_path, "../x")


@pytest.mark.parametrize("saved,words", [
    (np.zeros(3, np.float32), "it holds float32[3], but the case's output is FLOAT16[3]"),
    (np.zeros((3, 1), np.float16), "it holds float16[3, 1], but the case's output is FLOAT16[3]"),
])
def test_an_artifact_that_is_not_the_cases_output_is_refused_by_its_header(tmp_path: Path, saved, words) -> None:
    failing = result("s/a", Status.FAIL)
    np.save(tmp_path / "out.npy", saved)
    failing.artifacts = {"OutputGradientTensor": "out.npy"}
    with pytest.raises(ResultsError, match=r"field artifacts\.OutputGradientTensor: cannot read .*out\.npy \(" + re.escape(words)):
        load_artifacts(failing, tmp_path / "run.json", OUTPUT)


def test_an_artifact_declaring_a_huge_array_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 100-byte .npy whose header declares 2^40 elements: numpy's np.load would try to allocate them."""
    header = npy_header("<f2", (1 << 40,))
    (tmp_path / "out.npy").write_bytes(header + bytes(6))
    failing = result("s/a", Status.FAIL)
    failing.artifacts = {"OutputGradientTensor": "out.npy"}
    with pytest.raises(ResultsError, match=r"float16\[1099511627776\], but the case's output is FLOAT16\[3\]"):
        load_artifacts(failing, tmp_path / "run.json", OUTPUT)
