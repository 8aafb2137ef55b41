"""Graph builders: each DML gradient operator realised as a graph of standard ONNX operators.

One module per operator; `common` holds what they share. An operator may have several constructions, graphs of
different ONNX operators that compute the same gradient: the first is the default, and an execution provider that
does not take it whole gets another (PREFERRED). `build_graph` picks the builder and raises GraphUnsupported where a
construction cannot express a valid case. Every construction is checked against the reference on the CPU EP
(tests/backends/test_onnxruntime_backend.py). Importing this package imports `onnx` (not onnxruntime); the backend
imports it lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmlconform.backends.onnx_graphs import (
    average_pooling_grad,
    clip_grad,
    clip_grad1,
    max_pooling_grad,
    relu_grad,
    resample_grad,
    resample_grad1,
    slice_grad,
)
from dmlconform.backends.onnx_graphs.common import IR_VERSION, OPSET, Graph, GraphUnsupported
from dmlconform.ops.base import Description


@dataclass(frozen=True)
class Construction:
    """One way of building an operator's graph."""

    name: str
    #: (description, reference variant or None, data path) -> Graph
    build: Callable[[Description, str | None, str], Graph]
    summary: str


def _plain(build: Callable[[Description], Graph]) -> Callable[[Description, str | None, str], Graph]:
    """A builder whose graph depends on neither a variant nor a data path."""
    return lambda desc, variant, path: build(desc)


def _resample(desc: Description, variant: str | None, path: str) -> Graph:
    return resample_grad1.build(desc, variant if variant in desc.op.variants else None, path or "dense")


def _average_pooling(desc: Description, variant: str | None, path: str) -> Graph:
    return average_pooling_grad.build(desc, variant if variant in desc.op.variants else None)


def _average_pooling_gather_sum(desc: Description, variant: str | None, path: str) -> Graph:
    return average_pooling_grad.build_gather_sum(desc, variant if variant in desc.op.variants else None)


def _resample_matmul_only(desc: Description, variant: str | None, path: str) -> Graph:
    return resample_grad1.build(desc, variant if variant in desc.op.variants else None, path or "dense",
                                sparse_matmul=True)


CONSTRUCTIONS: dict[str, tuple[Construction, ...]] = {
    "ACTIVATION_RELU_GRAD": (Construction("select", _plain(relu_grad.build), "Where(Greater(X, 0), dY, 0)"),),
    "ELEMENT_WISE_CLIP_GRAD1": (
        Construction("select", _plain(clip_grad1.build), "Where(Not(Or(X <= Min, X >= Max)), dY, 0)"),
        Construction("select-no-int64-math", _plain(clip_grad1.build_no_int64_math),
                     "the same select with UINT32 kept in UINT32 and UINT64 selected by GatherElements (no Cast to "
                     "or from 64-bit integers, no 64-bit Mul)")),
    "ELEMENT_WISE_CLIP_GRAD": (
        Construction("select", _plain(clip_grad.build), "Where(And(X > Min, X < Max), dY, 0), the FLOAT bounds as the "
                                                        "type holds them (DirectML's reading)"),
        Construction("select-no-int64-math", _plain(clip_grad.build_no_int64_math),
                     "the same select with UINT32 kept in UINT32 and UINT64 selected by GatherElements")),
    "SLICE_GRAD": (
        Construction("scatter", _plain(slice_grad.build), "Slice(iota) -> ScatterElements into zeros, opset 21"),
        Construction("scatter-opset17", _plain(slice_grad.build_opset17),
                     "the same graph at opset 17 (ScatterElements-16, which the DirectML EP registers)")),
    "MAX_POOLING_GRAD": (
        Construction("scatter-add", _plain(max_pooling_grad.build),
                     "window table -> Gather -> ArgMax -> GatherElements -> ScatterElements(add)"),
        Construction("gather-sum", _plain(max_pooling_grad.build_gather_sum),
                     "window table -> Gather -> ArgMax; per element Gather(containing windows) -> Equal -> Where -> "
                     "ReduceSum (no scatter)")),
    "RESAMPLE_GRAD1": (
        Construction("matmul", _resample, "per axis Transpose -> MatMul(W) (Gather -> Mul -> Where -> ReduceSum "
                                          "where dY holds NaN or Inf)"),
        Construction("matmul-only", _resample_matmul_only, "the same, with Gather -> Where -> MatMul(weights) where "
                                                           "dY holds NaN or Inf (no element-wise Mul)")),
    "AVERAGE_POOLING_GRAD": (
        Construction("conv-transpose", _average_pooling,
                     "divisors by Conv(0/1 mask of what counts, ones) -> Where(dY / divisor) -> ConvTranspose(ones) -> "
                     "Slice (onnx_graphs/average_pooling_grad.py)"),
        Construction("gather-sum", _average_pooling_gather_sum,
                     "dY / divisor table (broadcast: no float32 Div of two operands of one shape) -> per element "
                     "Gather(the windows covering it) -> ReduceSum (no Conv)")),
    "RESAMPLE_GRAD": (
        Construction("matmul", _resample, "ResampleGrad1's graph with v0's weights (onnx_graphs/resample_grad.py)"),
        Construction("matmul-only", _resample_matmul_only, "the same, no element-wise Mul where dY holds NaN or Inf")),
}

#: Execution provider (the backend's --ep key) -> operator -> construction, where the default is not what that
#: provider takes whole (measured with onnxruntime-directml 1.24.4 under Wine: docs/onnxruntime-backend.md).
PREFERRED: dict[str, dict[str, str]] = {
    "dml": {"SLICE_GRAD": "scatter-opset17", "MAX_POOLING_GRAD": "gather-sum",
            "ELEMENT_WISE_CLIP_GRAD1": "select-no-int64-math", "ELEMENT_WISE_CLIP_GRAD": "select-no-int64-math",
            "RESAMPLE_GRAD1": "matmul-only",
            "RESAMPLE_GRAD": "matmul-only", "AVERAGE_POOLING_GRAD": "gather-sum"},
}

#: Operators whose graph depends on the data (a path, chosen per case by DATA_PATHS).
DATA_PATHS: dict[str, Callable[[dict[str, np.ndarray]], str]] = {
    "RESAMPLE_GRAD1": resample_grad1.path_for,
    "RESAMPLE_GRAD": resample_grad.path_for,
}

IMPLEMENTED = frozenset(CONSTRUCTIONS)

__all__ = ["CONSTRUCTIONS", "IMPLEMENTED", "IR_VERSION", "OPSET", "PREFERRED", "Construction", "Graph",
           "GraphUnsupported", "build_graph", "construction_for", "data_path"]


def data_path(desc: Description, inputs: dict[str, np.ndarray]) -> str:
    """Which realisation the case's data needs ('' where the operator has one only); part of the cache key."""
    chooser = DATA_PATHS.get(desc.op.name)
    return chooser(inputs) if chooser is not None else ""


def construction_for(op_name: str, ep: str = "cpu", name: str | None = None) -> Construction:
    """The construction named `name`, else the one `ep` prefers, else the operator's default."""
    constructions = CONSTRUCTIONS.get(op_name)
    if not constructions:
        raise GraphUnsupported(f"no ONNX graph for {op_name}")
    wanted = name or PREFERRED.get(ep, {}).get(op_name, constructions[0].name)
    for construction in constructions:
        if construction.name == wanted:
            return construction
    known = ", ".join(c.name for c in constructions)
    raise GraphUnsupported(f"{op_name} has no construction {wanted!r} (known: {known})")


def build_graph(desc: Description, variant: str | None = None, path: str = "", construction: str | None = None,
                ep: str = "cpu") -> Graph:
    return construction_for(desc.op.name, ep, construction).build(desc, variant, path)
