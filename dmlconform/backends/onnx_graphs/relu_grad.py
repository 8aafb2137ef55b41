"""ACTIVATION_RELU_GRAD as standard ONNX: dX = Where(Greater(X, 0), dY, 0) (strict, so ±0 gives 0)."""

from __future__ import annotations

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, select
from dmlconform.ops.base import Description


def build(desc: Description) -> Graph:
    dtype = desc.output.dtype
    shape = desc.output.shape
    b = GraphBuilder("relu_grad")
    x = b.input("InputTensor", dtype, shape)
    dy = b.input("InputGradientTensor", dtype, shape)
    keep = b.op("Greater", [x, b.zero(dtype)], "positive")
    out = select(b, keep, dy, dtype)
    return b.finish(out, dtype, shape, f"Greater(X, 0) -> {'Mul by mask' if 'masked' in out else 'Where'}")
