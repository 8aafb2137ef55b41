"""The DirectML harness's requests with buffers (docs/native-harness.md, section 10): memory layouts (strides,
broadcast, padding, binding offsets), the three paths (operator, graph, in-place), and strict decoding of the new
fields, on the real DirectML.dll under Wine (lavapipe), with frames built here directly (not through the runner).

The buffer images come from dmlconform.surface.buffers, and their reading back (the outputs through their layouts,
every other byte compared with what it was) from its `read_back`, as the judge reads them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pytest

from dmlconform import harness_protocol as protocol
from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.surface.buffers import Binding, images_before, read_back
from dmlconform.surface.layout import TensorLayout, total_bytes_of
from tests.harness.wine_tools import (
    Raw,
    built_programs,
    directml_dll,
    missing_for_the_harness,
    program_command,
)

#: What wine_ready (conftest.py) skips the module for.
_missing = missing_for_the_harness

pytestmark = pytest.mark.slow

F32 = DataType.FLOAT32


class Harness(Raw):
    """One harness process for the module, past its hello."""

    def __init__(self, command: str) -> None:
        super().__init__(command, stderr=subprocess.DEVNULL)
        self.hello = Raw.hello(self, "test_dml_harness_surface")  # type: ignore[assignment, method-assign]

    def run(self, header: dict, payload: bytes = b"") -> protocol.Frame:  # type: ignore[override]
        reply = self.exchange(header, payload)
        assert reply.header["id"] == header["id"], reply.header
        return reply

    def stop(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
            return -9


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, wine_ready: None) -> Iterator[Harness]:
    programs = built_programs(tmp_path_factory.mktemp("programs"))
    dll = directml_dll()
    assert dll is not None
    client = Harness(program_command(programs / "dml_harness.exe", {"--dml": dll}, virtual_heaps=True))
    yield client
    if client.process.poll() is None:
        client.stop()


# -- a case with layouts, as the runner's side would send it ---------------------------------------------------------
@dataclass
class SurfaceCase:
    """Tensors with layouts: the `Layouts` that dmlconform.surface.buffers reads."""

    tensors: dict[str, TensorDesc]
    layouts: dict[str, TensorLayout]

    def layout(self, name: str) -> TensorLayout:
        return self.layouts.get(name, TensorLayout())


def request(case_id: str, op: str, params: dict, case: SurfaceCase, inputs: Mapping[str, np.ndarray],
            output: str, path: str, alias: str | None = None) -> tuple[dict, bytes, Binding, dict[str, bytes]]:
    """The run request with buffers, its payload, the binding and the images before the dispatch."""
    binding = Binding(tuple(inputs), (output,), {output: alias} if alias else {}, edges=path == "graph")
    before = images_before(case, binding, inputs)
    payload = bytearray()
    at: dict[str, tuple[int, int]] = {}
    for name, image in before.items():
        payload += bytes(-len(payload) % 16)
        at[name] = (len(payload), len(image))
        payload += image

    def entry(name: str, own_image: bool) -> dict:
        desc, layout = case.tensors[name], case.layout(name)
        e: dict = {"name": name, "DataType": desc.dtype.value, "Sizes": list(desc.shape)}
        if own_image:
            e["offset"], e["nbytes"] = at[name]
        if layout.strides is not None:
            e["Strides"] = list(layout.strides)
        e["TotalTensorSizeInBytes"] = total_bytes_of(desc, layout)
        e["BindingOffset"] = layout.offset
        return e

    out = entry(output, alias is None)
    if alias:
        out["alias"] = alias
    header = {"id": case_id, "op": op, "params": params, "buffers": True, "path": path,
              "inputs": [entry(name, True) for name in inputs], "outputs": [out]}
    if path == "graph":
        name = output + "@edges"
        header["edges"] = [{"name": name, "offset": at[name][0], "nbytes": at[name][1]}]
    return header, bytes(payload), binding, before


def images_of(reply: protocol.Frame) -> dict[str, bytes]:
    assert reply.header["status"] == "ok", reply.header
    images = {}
    for e in reply.header["images"]:
        assert e["offset"] % 16 == 0 and e["offset"] + e["nbytes"] <= len(reply.payload), e
        images[e["name"]] = reply.payload[e["offset"]:e["offset"] + e["nbytes"]]
    return images


def run_and_check(harness: Harness, case: SurfaceCase, header: dict, payload: bytes, binding: Binding,
                  before: dict[str, bytes], expected: np.ndarray) -> None:
    reply = harness.run(header, payload)
    after = images_of(reply)
    assert set(after) == set(binding.buffers()), (sorted(after), binding.buffers())
    for name in binding.buffers():
        assert len(after[name]) == len(before[name]), name
    back = read_back(case, binding, before, after)
    assert back.problem == "", back.problem
    assert not back.stray, "\n".join(map(str, back.stray))  # every canary byte as it was
    for name, value in back.outputs.items():
        np.testing.assert_array_equal(value, expected, err_msg=f"{header['id']}: {name}")


# ClipGrad1 / ReluGrad, FLOAT32 on [2, 3]: X column-major (permuted strides) at a binding offset, dY one row
# broadcast over both (stride 0), the output row-padded (row stride 5 > width 3, TotalTensorSizeInBytes above the
# footprint) at a binding offset.
X = np.array([[-1.5, 0.25, 3.0], [0.5, -0.75, 1.75]], np.float32)
DY = np.array([[10.0, 20.0, 30.0]], np.float32).repeat(2, axis=0)
LAYOUTS = {"InputTensor": TensorLayout(strides=(1, 2), offset=32),
           "InputGradientTensor": TensorLayout(strides=(0, 1), offset=16),
           "OutputGradientTensor": TensorLayout(strides=(5, 1), total_bytes=64, offset=48)}
CLIP = {"MinMaxDataType": 1, "Min": "0x00000000bf000000", "Max": "0x0000000040000000"}  # -0.5, 2.0 as float32
#: The same bounds for ELEMENT_WISE_CLIP_GRAD (v0), whose Min and Max are FLOATs.
CLIP_V0 = {"Min": -0.5, "Max": 2.0}
CLIP_PARAMS = {"ELEMENT_WISE_CLIP_GRAD1": CLIP, "ELEMENT_WISE_CLIP_GRAD": CLIP_V0}


def clip_case(layouts: dict[str, TensorLayout]) -> SurfaceCase:
    desc = TensorDesc(F32, (2, 3))
    return SurfaceCase({name: desc for name in ("InputTensor", "InputGradientTensor", "OutputGradientTensor")},
                       layouts)


def test_the_hello_announces_layouts_and_the_three_paths(harness: Harness) -> None:
    assert harness.hello["type"] == "hello"
    assert harness.hello["surface"] == {"layouts": True, "paths": ["operator", "graph", "in-place"]}


@pytest.mark.parametrize("op", ["ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "ELEMENT_WISE_CLIP_GRAD"])
@pytest.mark.parametrize("path", ["operator", "graph"])
def test_strided_broadcast_padded_and_offset_tensors(harness: Harness, op: str, path: str) -> None:
    case = clip_case(LAYOUTS)
    inputs = {"InputTensor": X, "InputGradientTensor": DY}
    if op == "ACTIVATION_RELU_GRAD":
        params, expected = {}, np.where(X > 0, DY, 0).astype(np.float32)
    else:
        params, expected = CLIP_PARAMS[op], np.where((X > -0.5) & (X < 2.0), DY, 0).astype(np.float32)
    header, payload, binding, before = request(f"surface/{op}@{path}", op, params, case, inputs,
                                               "OutputGradientTensor", path)
    run_and_check(harness, case, header, payload, binding, before, expected)


@pytest.mark.parametrize("op", ["ELEMENT_WISE_CLIP_GRAD1", "ELEMENT_WISE_CLIP_GRAD"])
def test_clip_grad_in_place_over_its_strided_input(harness: Harness, op: str) -> None:
    """The output bound over InputTensor's buffer (both ClipGrad pages let it alias InputTensor), column-major at an
    offset; dY broadcast."""
    layouts = dict(LAYOUTS, OutputGradientTensor=LAYOUTS["InputTensor"])
    case = clip_case(layouts)
    header, payload, binding, before = request(f"surface/{op}@in-place", op, CLIP_PARAMS[op], case,
                                               {"InputTensor": X, "InputGradientTensor": DY}, "OutputGradientTensor",
                                               "in-place", alias="InputTensor")
    expected = np.where((X > -0.5) & (X < 2.0), DY, 0).astype(np.float32)
    run_and_check(harness, case, header, payload, binding, before, expected)


def test_slice_grad_on_the_graph_path(harness: Harness) -> None:
    """SliceGrad between identity nodes: its output zero outside the window, every element written through both
    copies (the output's, and the edges copy through ELEMENT_WISE_IDENTITY)."""
    dy = np.arange(1, 5, dtype=np.float32).reshape(2, 2)
    case = SurfaceCase({"InputGradientTensor": TensorDesc(F32, (2, 2)), "OutputGradientTensor": TensorDesc(F32, (3, 5))},
                       {"InputGradientTensor": TensorLayout(strides=(1, 2)),
                        "OutputGradientTensor": TensorLayout(strides=(6, 1), total_bytes=72, offset=16)})
    params = {"DimensionCount": 2, "InputWindowOffsets": [1, 0], "InputWindowSizes": [2, 4],
              "InputWindowStrides": [1, 2]}
    expected = np.zeros((3, 5), np.float32)
    expected[1:3, 0:4:2] = dy
    header, payload, binding, before = request("surface/slice@graph", "SLICE_GRAD", params, case,
                                               {"InputGradientTensor": dy}, "OutputGradientTensor", "graph")
    run_and_check(harness, case, header, payload, binding, before, expected)


def test_malformed_fields_get_error_replies_naming_them(harness: Harness) -> None:
    case = clip_case(LAYOUTS)
    inputs = {"InputTensor": X, "InputGradientTensor": DY}

    def reply_to(change, path: str = "operator", alias: str | None = None) -> dict:
        layouts = dict(LAYOUTS, OutputGradientTensor=LAYOUTS["InputTensor"]) if alias else LAYOUTS
        header, payload, _, _ = request("surface/bad", "ELEMENT_WISE_CLIP_GRAD1", CLIP, clip_case(layouts), inputs,
                                        "OutputGradientTensor", path, alias)
        change(header)
        return harness.run(header, payload).header

    def field(index: int, key: str, value: object, list_name: str = "inputs"):
        return lambda h: h[list_name][index].__setitem__(key, value)

    cases = [
        (field(0, "BindingOffset", 40), "InputTensor.BindingOffset 40 is not a multiple of 16"),
        (field(0, "Strides", [1, 2, 3]), "InputTensor.Strides has 3 entries"),
        (field(1, "nbytes", 16), "InputGradientTensor.nbytes 16 is below BindingOffset + TotalTensorSizeInBytes"),
        (field(1, "offset", 1 << 20), "outside the"),
        (field(0, "TotalTensorSizeInBytes", "24"), "InputTensor.TotalTensorSizeInBytes must be"),
        (lambda h: h.__setitem__("path", "fused"), "path must be operator, graph or in-place"),
        (lambda h: h.__setitem__("edges", []), "edges: only the graph path"),
        (lambda h: h["edges"][0].__setitem__("name", "x@edges"), "edges[0].name"),
    ]
    for i, (change, message) in enumerate(cases):
        reply = reply_to(change, "graph" if i == 7 else "operator")
        assert reply["status"] == "error" and message in reply["message"], (message, reply)
    reply = reply_to(field(0, "alias", "dY", "outputs"), "in-place", alias="InputTensor")
    assert reply["status"] == "error" and "alias names dY, which is no input" in reply["message"], reply
    # A layout DirectML itself refuses (TotalTensorSizeInBytes below the footprint) is a refusal, not an error.
    reply = reply_to(field(0, "TotalTensorSizeInBytes", 8))
    assert reply["status"] == "refused" and "E_INVALIDARG" in reply["message"], reply
    # ... and the harness goes on.
    header, payload, binding, before = request("surface/after", "ELEMENT_WISE_CLIP_GRAD1", CLIP, case, inputs,
                                               "OutputGradientTensor", "operator")
    run_and_check(harness, case, header, payload, binding, before,
                  np.where((X > -0.5) & (X < 2.0), DY, 0).astype(np.float32))
    assert harness.stop() == 0
