"""Artifacts: what a backend returned for a case, kept as `.npy` files beside the result (`run --artifacts`).

Layout: `<DIR>/<suite>/<case id>/<output name>.npy` (suite names and case ids are made of letters, digits
and `. _ + -`, so they are safe folder names). The result records each file per case, relative to the
folder of the JSON result when there is one, so a result and its artifacts can be moved together.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from dmlconform.atomic_file import write_atomically
from dmlconform.case_result import CaseResult
from dmlconform.results import ResultsError


def artifact_folder(directory: Path, case_id: str) -> Path:
    suite, _, name = case_id.partition("/")
    parts = [part for part in (suite, name) if part]
    if any(part in (".", "..") or os.sep in part for part in parts):
        raise ValueError(f"case id {case_id!r} cannot name a folder")
    return directory.joinpath(*parts)


def save_npy(path: Path, array: np.ndarray, durable: bool = True) -> None:
    """An array as a .npy file (C order, no pickle: what NumPy, DxDispatch and the suite loader all read).

    Durable: written atomically and flushed to disk, which costs a few milliseconds a file; a file in a folder of
    its own that a checksum list will pin (a certification package) need not be."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array, order="C"), allow_pickle=False)  # ascontiguousarray makes 0-d arrays 1-d
    if durable:
        write_atomically(path, buffer.getvalue())
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buffer.getvalue())


def save_artifacts(result: CaseResult, directory: Path, result_file: Path | None, durable: bool = True) -> None:
    """Write the outputs the result carries, record where, and drop the arrays from the result."""
    folder = artifact_folder(directory, result.id)
    for name, array in result.actual_outputs.items():
        path = folder / f"{name}.npy"
        save_npy(path, array, durable)
        recorded = os.path.relpath(path.resolve(), result_file.resolve().parent) if result_file else str(path.resolve())
        result.artifacts[name] = Path(recorded).as_posix()
    result.actual_outputs = {}


def npy_from_bytes(data: bytes) -> np.ndarray:
    """A whole .npy file's array: numpy's usual header parsed by a pattern (numpy's own parser costs a small array
    more than its data), anything else by numpy without pickle. ValueError (or EOFError) if it is not one."""
    from dmlconform.suite.tensors import small_npy

    array = small_npy(data)
    return array if array is not None else np.load(io.BytesIO(data), allow_pickle=False)


def load_artifacts(result: CaseResult, result_file: Path) -> dict[str, np.ndarray]:
    """The outputs recorded for a case, read back; ResultsError naming the file, case and output if one is
    missing or unreadable."""
    outputs = {}
    for name, recorded in result.artifacts.items():
        path = Path(recorded)
        if not path.is_absolute():
            path = Path(os.path.normpath(result_file.parent / path))
        try:
            outputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ResultsError(result_file, f"cannot read {path} ({exc})", f"case {result.id}",
                               f"artifacts.{name}") from None
    return outputs
