"""`.npy` files: a suite tensor's `file: x.npy`, and a run's artifact read back by `show` and `repro`.

The case declares what numpy's header parser makes of the bytes (when it is a DML tensor of reasonable size),
so that the reader gets past the header check. Contract: a one-line refusal, or the array that `np.load` reads
from the same bytes, bit for bit (numpy is the oracle); memory within the bound of the declared tensor.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator

import numpy as np

from dmlconform.case_result import CaseResult, Status
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST
from dmlconform.results import ResultsError
from dmlconform.results.artifacts import load_artifacts
from dmlconform.suite.tensors import Archives, TensorError, read_tensor
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch
from fuzz.oracle import declaration, numpy_reads


def _same(ours: np.ndarray, theirs: np.ndarray | None, what: str) -> None:
    if theirs is None:
        raise ContractBroken(f"{what} accepted bytes that np.load refuses")
    if ours.dtype != theirs.dtype or ours.shape != theirs.shape or ours.tobytes() != theirs.tobytes(order="C"):
        raise ContractBroken(f"{what} read {ours.dtype}{ours.shape}, np.load {theirs.dtype}{theirs.shape}, or "
                             "their bytes differ")


def one_input(data: bytes) -> None:
    folder = scratch() / "npy"
    folder.mkdir(exist_ok=True)
    path = folder / "x.npy"
    path.write_bytes(data)
    desc = declaration(data)
    spec = {"dtype": desc.dtype.name, "shape": list(desc.shape), "file": "x.npy"}
    result = CaseResult("s/a", "ACTIVATION_RELU_GRAD", desc.dtype.name, len(desc.shape), HIGHEST, Status.FAIL,
                        artifacts={"OutputGradientTensor": "x.npy"})
    with memory_bound(len(data)) as declared:
        declared.bytes = math.prod(desc.shape) * desc.dtype.numpy.itemsize
        try:
            tensor = read_tensor(spec, desc, folder / "suite.yaml", Archives(folder))
        except TensorError as exc:
            check_refusal(exc)
            tensor = None
        try:
            artifact = load_artifacts(result, folder / "run.json", {"OutputGradientTensor": desc})
        except ResultsError as exc:
            check_refusal(exc)
            artifact = None
    if tensor is not None:
        _same(tensor, numpy_reads(data), "the suite loader")
    if (tensor is None) != (artifact is None):
        raise ContractBroken("the suite loader and the artifact reader disagree on whether the file is readable")
    if artifact is not None:
        _same(artifact["OutputGradientTensor"], numpy_reads(data), "the artifact reader")


def npy_bytes(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def seeds() -> Iterator[bytes]:
    """Arrays of the bundled smoke tier (every data type and rank it has), in each .npy version and order."""
    yielded = 0
    for archive in sorted((bundled_suites() / "smoke" / "data").glob("*.npz")):
        with np.load(archive) as arrays:
            for key in arrays.files[:12]:
                array = arrays[key]
                yield npy_bytes(array)
                if yielded % 5 == 0:
                    yield npy_bytes(array, (2, 0))
                    yield npy_bytes(array, (3, 0))
                    yield npy_bytes(np.asfortranarray(array))
                yielded += 1
    yield npy_bytes(np.arange(6, dtype=">f4"))
    yield npy_bytes(np.zeros((0, 3), np.int8))
    yield npy_bytes(np.array(2.5, np.float64))
