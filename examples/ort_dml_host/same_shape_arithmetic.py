"""Which one-node ONNX graphs the DirectML EP fails to compile under Wine, and why: a float32 two-operand arithmetic
node whose operands share one shape of a multiple of 4 elements.

    python examples/ort_dml_host/same_shape_arithmetic.py [--adapter lavapipe|nvidia|N] [--directml-version V]

Sends one-node models (two at most) to the ONNX model host that `dmlconform run --backend onnxruntime --ep dml` uses
(the ONNX Runtime host this package carries, under Wine off Windows) and prints a markdown table: the graph, whether
the session was made and the output matched NumPy, ONNX Runtime's message otherwise, and what vkd3d said while the
session was made (the host runs with VKD3D_DEBUG=warn and VKD3D_SHADER_DEBUG=fixme here; only its shader and pipeline
lines are kept).

What it showed (onnxruntime-directml 1.24.4, DirectML 1.15.4, Wine 8.0 + vkd3d 1.6, lavapipe; 2026-11-28):
* Add, Sub, Mul, Div, Max and Min of two float32 tensors of one shape (after ONNX broadcasting, so [1, 4] and
  [4] count as one shape) fail at session creation where the element count is a multiple of 4 (4, 8, 12, [2, 2],
  [1, 1, 1, 4], 1024) and run where it is not (1, 2, 3, 5, 6, 7, 45, 50); an operand that is an initializer fails
  the same. Pow of the same operands runs.
* The same nodes run where an operand broadcasts along an axis longer than 1 ([2, 4] / [4], [4, 3] / [4, 1],
  [1, 4, 1] / [4, 2]) or is a scalar, in float16, and in int32; Neg, Where and comparisons of one shape run too.
* vkd3d says why: DirectML hands CreateComputePipelineState a shader whose DXBC container holds only a DXIL (shader
  model 6) chunk ("Skipping DXIL shader model 6+ code chunk", "Failed to create Vulkan compute pipeline, hr
  0x80070057"); vkd3d 1.6 compiles shader model 5.1 bytecode only, which is all the device reports
  (D3D12_FEATURE_SHADER_MODEL: 5_1). ONNX Runtime then reports E_INVALIDARG from DmlGraphFusionHelper.cpp(588) (or,
  with `--session-config ep.dml.disable_graph_fusion=1`, MLOperatorAuthorImpl.cpp(2412)).
* With the DirectML.dll of earlier onnxruntime-directml releases beside the same onnxruntime.dll 1.24.4
  (`--directml-version`): DirectML 1.8.0, 1.9.0, 1.10.1, 1.12.0 and 1.12.1 run every such node; 1.13.1, 1.14.1 and
  1.15.4 fail them. So DirectML 1.13 brought that DXIL-only shader; a Windows driver (shader model 6) compiles it.
This is a limit of the stack (vkd3d 1.6 has no DXIL), not of the DirectML EP or of the graphs' ONNX: no issue of
microsoft/onnxruntime or microsoft/DirectML was found for it. The onnxruntime backend's graphs for the DirectML EP
avoid such nodes (AveragePoolingGrad's `gather-sum` divides dY by a table that it broadcasts over; the test
`test_the_directml_constructions_avoid_float32_arithmetic_on_operands_of_one_shape` checks every construction).
"""

from __future__ import annotations

import argparse
import os
import re
from collections import deque
from collections.abc import Callable

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from dmlconform import harness_protocol as protocol
from dmlconform.backends.base import BackendOptions
from dmlconform.backends.ort_host import HostRunner
from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc

ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
              np.dtype(np.int32): TensorProto.INT32}
NUMPY_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum, "Min": np.minimum,
    "Pow": np.power}
VKD3D_KEPT = ("shdr_handler", "shader_extract_from_dxbc", "d3d12_pipeline_state_init_compute")


class Probe:
    """One ONNX model host; each `binary` or `model` call makes one session on it and runs it once."""

    def __init__(self, options: BackendOptions) -> None:
        self.runner = HostRunner.start_packaged(options)
        self.requests = 0

    def model(self, nodes: list, inputs: dict[str, np.ndarray], initializers: dict[str, np.ndarray],
              expected: np.ndarray) -> tuple[str, str]:
        """(what happened, vkd3d's lines) for a graph of `nodes` with output Y."""
        values = [helper.make_tensor_value_info(name, ONNX_TYPES[a.dtype], list(a.shape)) for name, a in
                  inputs.items()]
        output = helper.make_tensor_value_info("Y", ONNX_TYPES[expected.dtype], list(expected.shape))
        graph = helper.make_graph(nodes, "probe", values, [output],
                                  [numpy_helper.from_array(a, name) for name, a in initializers.items()])
        model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
        self.requests += 1
        name = f"probe-{self.requests}"
        wanted = {"Y": TensorDesc(DataType.from_numpy(expected.dtype), tuple(expected.shape))}
        log = self._host_log()
        log.clear()
        reply = self.runner.client.exchange(name, protocol.encode_model_request(
            name, model.SerializeToString(), list(inputs.items()), wanted), wanted)
        said = list(dict.fromkeys(line.split(":", 2)[2].strip() for line in log if any(k in line for k in VKD3D_KEPT)))
        if isinstance(reply, protocol.Reply) and reply.status == "ok":
            got = reply.outputs["Y"]
            same = np.allclose(got.astype(np.float64), expected.astype(np.float64), rtol=1e-3, equal_nan=True)
            return ("ran, matches NumPy" if same else "ran, DIFFERS from NumPy"), "; ".join(said)
        message = " ".join(str(getattr(reply, "message", reply)).split())
        source = re.search(r"\\(\w+\.cpp\(\d+\))", message)
        code = re.search(r"\b(8007[0-9A-Fa-f]{4}) ([^.\]]*)", message)
        if source and code:
            return f"session failed: {source.group(1)} {code.group(1)} {code.group(2)}", "; ".join(said)
        return f"failed: {message[:160]}", "; ".join(said)

    def binary(self, op: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: type = np.float32,
               b_initializer: bool = False) -> tuple[str, str]:
        rng = np.random.default_rng(len(a_shape) * 100 + len(b_shape))
        a = (rng.random(a_shape) + 0.5).astype(dtype)
        b = (rng.random(b_shape) + 0.5).astype(dtype) if dtype is not np.int32 else rng.integers(1, 9, b_shape,
                                                                                                  dtype=np.int32)
        if dtype is np.int32:
            a = rng.integers(1, 9, a_shape, dtype=np.int32)
        expected = NUMPY_OPS[op](a.astype(np.float64), b.astype(np.float64)).astype(dtype)
        inputs = {"A": a} if b_initializer else {"A": a, "B": b}
        return self.model([helper.make_node(op, ["A", "B"], ["Y"])], inputs, {"B": b} if b_initializer else {},
                          expected)

    def _host_log(self) -> deque[str]:
        # The client keeps the host's last stderr lines (HarnessProcess.stderr_tail); there is no public accessor.
        return self.runner.client._process.stderr_tail  # type: ignore[union-attr]

    def close(self) -> None:
        self.runner.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", default="lavapipe", metavar="N|DRIVER",
                        help="the device, as `dmlconform run --adapter` takes it (default: lavapipe)")
    parser.add_argument("--directml-version", metavar="V", help="a fetched onnxruntime-directml release's DLLs")
    parser.add_argument("--session-config", action="append", default=[], metavar="KEY=VALUE",
                        help="an ONNX Runtime session config entry for every session (repeatable)")
    parser.add_argument("--quick", action="store_true", help="only the rows that tell the rule apart")
    args = parser.parse_args()
    os.environ.setdefault("VKD3D_DEBUG", "warn")  # the packaged start passes these on to the host (wine.py)
    os.environ.setdefault("VKD3D_SHADER_DEBUG", "fixme")
    probe = Probe(BackendOptions(ep="dml", adapter=args.adapter, timeout_s=300.0,
                                 directml_version=args.directml_version, session_config=tuple(args.session_config)))
    hello = probe.runner.hello
    print(f"onnxruntime {hello.runtime_version}, DirectML {hello.directml or '?'}, {hello.adapter}, "
          f"shader model {hello.extra.get('d3d_shader_model', '?')}\n")
    print("| graph | float type | on the DirectML EP | vkd3d |")
    print("|---|---|---|---|")

    def row(label: str, kind: str, outcome: tuple[str, str]) -> None:
        print(f"| {label} | {kind} | {outcome[0]} | {outcome[1]} |", flush=True)

    try:
        ops = ["Div"] if args.quick else list(NUMPY_OPS)
        for op in ops:
            for n in (5, 8) if op != "Div" else (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 45, 48, 50, 1024):
                row(f"{op}([{n}], [{n}])", "float32", probe.binary(op, (n,), (n,)))
        for a_shape, b_shape in (((2, 2), (2, 2)), ((3, 4), (3, 4)), ((1, 1, 1, 4), (1, 1, 1, 4)), ((1, 4), (4,)),
                                 ((2, 4), (4,)), ((4, 3), (4, 1)), ((1, 4, 1), (4, 2)), ((1, 16, 1), (16, 2)),
                                 ((8,), ())):
            row(f"Div({list(a_shape)}, {list(b_shape)})", "float32", probe.binary("Div", a_shape, b_shape))
        # AveragePoolingGrad's first gather-sum graph where N*C = 1: Reshape(dY, [1, windows]) / divisors[windows].
        row("Div([1, 16], initializer [16])", "float32", probe.binary("Div", (1, 16), (16,), b_initializer=True))
        row("Div([2, 16], initializer [16])", "float32", probe.binary("Div", (2, 16), (16,), b_initializer=True))
        row("Div([1, 16, 1], initializer [16, 2])", "float32",
            probe.binary("Div", (1, 16, 1), (16, 2), b_initializer=True))
        row("Div([8], [8])", "float16", probe.binary("Div", (8,), (8,), np.float16))
        row("Add([8], [8])", "int32", probe.binary("Add", (8,), (8,), np.int32))
        a = np.linspace(-2, 2, 8, dtype=np.float32)
        b = a[::-1].copy()
        zero = np.zeros((), np.float32)
        one = np.ones((), np.float32)
        row("Neg([8])", "float32", probe.model([helper.make_node("Neg", ["A"], ["Y"])], {"A": a}, {}, -a))
        row("Where(Greater([8], 0), [8], [8])", "float32", probe.model(
            [helper.make_node("Greater", ["A", "Z"], ["C"]), helper.make_node("Where", ["C", "A", "B"], ["Y"])],
            {"A": a, "B": b}, {"Z": zero}, np.where(a > 0, a, b)))
        row("Where(Greater([8], [8]), 1, 0)", "float32", probe.model(
            [helper.make_node("Greater", ["A", "B"], ["C"]), helper.make_node("Where", ["C", "O", "Z"], ["Y"])],
            {"A": a, "B": b}, {"Z": zero, "O": one}, (a > b).astype(np.float32)))
    finally:
        probe.close()


if __name__ == "__main__":
    main()
