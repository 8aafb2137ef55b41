"""ELEMENT_WISE_CLIP_GRAD1 as standard ONNX, the literal DML formula:

dX = Where(Not(Or(LessOrEqual(X, Min), GreaterOrEqual(X, Max))), dY, 0)

so a NaN in X passes dY (neither comparison holds), as the documented pseudo-code does.
"""

from __future__ import annotations

import numpy as np

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, select
from dmlconform.ops.base import Description


def build(desc: Description) -> Graph:
    dtype = desc.output.dtype
    shape = desc.output.shape
    b = GraphBuilder("clip_grad1")
    x = b.input("InputTensor", dtype, shape)
    dy = b.input("InputGradientTensor", dtype, shape)
    # Min and Max are numbers in the tensors' data type (DML's MinMaxDataType is the tensors' type).
    low = b.const(np.array(desc.params["Min"]).astype(dtype.numpy), hint="min")
    high = b.const(np.array(desc.params["Max"]).astype(dtype.numpy), hint="max")
    clipped = b.op("Or", [b.op("LessOrEqual", [x, low], "at_or_below_min"),
                          b.op("GreaterOrEqual", [x, high], "at_or_above_max")], "clipped")
    keep = b.op("Not", [clipped], "inside")
    out = select(b, keep, dy, dtype)
    return b.finish(out, dtype, shape, f"Not(Or(LessOrEqual(X, Min), GreaterOrEqual(X, Max))) -> "
                 f"{'Mul by mask' if 'masked' in out else 'Where'}")
