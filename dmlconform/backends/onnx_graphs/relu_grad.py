"""ACTIVATION_RELU_GRAD as standard ONNX: dX = Where(Greater(X, 0), dY, 0) (strict, so ±0 gives 0)."""

from __future__ import annotations

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, select_gradient
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description


def build(desc: Description) -> Graph:
    def positive(b: GraphBuilder, x: str, work: DataType) -> str:
        return b.op("Greater", [x, b.zero(work)], "positive")

    return select_gradient("relu_grad", desc, positive, "Greater(X, 0)")
