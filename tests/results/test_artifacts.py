"""Artifacts: a result's actual outputs written beside it and read back through the path it records."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlconform.case_result import Status
from dmlconform.results import ResultsError
from dmlconform.results.artifacts import artifact_folder, load_artifacts, save_artifacts
from tests.results.helpers import result


def test_outputs_are_saved_relative_to_the_result_file_and_read_back_bit_for_bit(tmp_path: Path) -> None:
    failing = result("relu_grad.edge/signed-zero-x", Status.FAIL)
    array = np.array([np.nan, -0.0, 1.5], dtype=np.float16)
    failing.actual_outputs = {"OutputGradientTensor": array}
    save_artifacts(failing, tmp_path / "art", tmp_path / "reports" / "run.json")
    assert failing.actual_outputs == {}
    assert failing.artifacts == {"OutputGradientTensor":
                                 "../art/relu_grad.edge/signed-zero-x/OutputGradientTensor.npy"}
    back = load_artifacts(failing, tmp_path / "reports" / "run.json")["OutputGradientTensor"]
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
        load_artifacts(failing, tmp_path / "run.json")


def test_a_case_id_that_would_leave_the_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        artifact_folder(tmp_path, "../x")
