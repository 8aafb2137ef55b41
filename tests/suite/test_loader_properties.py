"""Suite files, property by property (hypothesis): tensors given as data (bit patterns), .npy files or .npz members
load back bit for bit; a mutated suite is refused with one line naming file, case and field, or loads into cases
that run on the reference without an ERROR."""

from __future__ import annotations

import copy

import numpy as np
import yaml
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths
from tests.properties import PROPERTIES

TYPES = list(DataType)
RELU_TYPES = {DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.INT16, DataType.INT8}
ODD = [None, "", "x", -1, 0, 2**64, 1.5, float("nan"), [], [1], [[1]], {}, {"a": 1}, True, "0x7fff", "inf",
       [2**40], "FLOAT32", "../x.npy", "a.npz:missing", {"dist": "normal", "seed": 1}, "[/]"]


@st.composite
def tensors(draw: st.DrawFn) -> tuple[DataType, np.ndarray]:
    dtype = draw(st.sampled_from(TYPES))
    return dtype, draw(hnp.arrays(dtype.numpy, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)))


def as_data(dtype: DataType, array: np.ndarray) -> list:
    """Elements as the suite format writes them exactly: floats by their bit pattern."""
    if dtype.is_float:
        width = array.dtype.itemsize * 2
        return [f"0x{int(bits):0{width}x}" for bits in array.reshape(-1).view(dtype.bits_dtype)]
    return [int(v) for v in array.reshape(-1)]


def relu_suite(dtype: DataType, x: np.ndarray, source: str, folder) -> dict:
    spec = {"dtype": dtype.name, "shape": list(x.shape)}
    if source == "data":
        given_x = {**spec, "data": as_data(dtype, x)}
    elif source == "npy":
        np.save(folder / "x.npy", x)
        given_x = {**spec, "file": "x.npy"}
    else:
        np.savez_compressed(folder / "a.npz", x=x)
        given_x = {**spec, "file": "a.npz:x"}
    zeros = {**spec, "generate": {"dist": "constant", "value": 0}}
    case = {"id": "c", "op": "ACTIVATION_RELU_GRAD", "inputs": {"InputTensor": given_x, "InputGradientTensor": zeros},
            "outputs": {"OutputGradientTensor": zeros}}
    if dtype not in RELU_TYPES or not 1 <= x.ndim <= 8 or 0 in x.shape:
        case["expect"] = "invalid"  # its inputs load all the same
    return {"format": "dmlconform/v1", "suite": "prop", "cases": [case]}


@PROPERTIES
@given(tensor=tensors(), source=st.sampled_from(["data", "npy", "npz"]))
def test_tensors_load_back_bit_for_bit(tmp_path_factory, tensor, source) -> None:
    dtype, x = tensor
    folder = tmp_path_factory.mktemp("s")
    (folder / "s.yaml").write_text(yaml.safe_dump(relu_suite(dtype, x, source, folder)))
    [case] = load_paths([folder / "s.yaml"])
    loaded = case.inputs["InputTensor"]
    assert loaded.dtype == x.dtype and loaded.shape == x.shape and loaded.tobytes() == x.tobytes()


def _places(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node[:3]):
            yield from _places(value, (*path, position))


@PROPERTIES
@given(tensor=tensors(), source=st.sampled_from(["data", "npy", "npz"]), data=st.data())
def test_a_mutated_suite_is_refused_in_one_line_or_runs(tmp_path_factory, tensor, source, data) -> None:
    folder = tmp_path_factory.mktemp("s")
    document = relu_suite(*tensor, source, folder)
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(list(_places(document))[1:]))
        parent = document
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            del parent[place[-1]]
        else:
            parent[place[-1]] = copy.deepcopy(data.draw(st.sampled_from(ODD)))
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(document))
    try:
        cases = load_paths([path])
    except SuiteError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    for case in cases:
        result = judge_outcome(case, NumpyBackend().run(case), HIGHEST)
        assert result.status is not Status.ERROR, result.message
