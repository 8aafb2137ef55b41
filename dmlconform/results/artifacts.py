"""Artifacts: what a backend returned for a case, kept as `.npy` files beside the result (`run --artifacts`).

Layout: `<DIR>/<suite>/<case id>/<output name>.npy` (suite names and case ids are made of letters, digits
and `. _ + -`, so they are safe folder names). The result records each file per case, relative to the
folder of the JSON result when there is one, so a result and its artifacts can be moved together.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dmlconform.atomic_file import write_atomically
from dmlconform.case_result import CaseResult
from dmlconform.npy_file import NpyError, NpyHeader, read_array
from dmlconform.ops.base import TensorDesc
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
    """A whole .npy file's array, its header read strictly (a plain array of numbers, no pickle); NpyError (a
    ValueError) if it is not one. The caller bounds `data` first."""
    return read_array(io.BytesIO(data).read, lambda header: None, len(data))


def load_artifacts(result: CaseResult, result_file: Path, outputs: Mapping[str, TensorDesc]) -> dict[str, np.ndarray]:
    """The outputs recorded for a case, read back; ResultsError naming the file, case and output if one is
    missing, unreadable, or not the case's output (checked from its .npy header, before its data is read)."""
    arrays = {}
    for name, recorded in result.artifacts.items():
        where, field = f"case {result.id}", f"artifacts.{name}"
        want = outputs.get(name)
        if want is None:
            raise ResultsError(result_file, f"is not an output of the case (it has {', '.join(outputs)})", where,
                               field)
        path = Path(recorded)
        if not path.is_absolute():
            path = Path(os.path.normpath(result_file.parent / path))

        def check(header: NpyHeader, want: TensorDesc = want) -> None:
            if header.dtype != want.dtype.numpy or header.shape != want.shape:
                raise NpyError(f"it holds {header.dtype}{list(header.shape)}, but the case's output is {want}")

        try:
            with path.open("rb") as stream:
                arrays[name] = read_array(stream.read, check, os.fstat(stream.fileno()).st_size)
        except (OSError, NpyError) as exc:
            raise ResultsError(result_file, f"cannot read {path} ({exc})", where, field) from None
    return arrays
