"""ELEMENT_WISE_CLIP_GRAD1 as standard ONNX, the literal DML formula:

dX = Where(Not(Or(LessOrEqual(X, Min), GreaterOrEqual(X, Max))), dY, 0)

so a NaN in X passes dY (neither comparison holds), as the documented pseudo-code does.
"""

from __future__ import annotations

import numpy as np

from dmlconform.backends.onnx_graphs.common import (
    GATHER_SELECT,
    WIDER_NO_INT64,
    Graph,
    GraphBuilder,
    select_gradient,
)
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description


def build(desc: Description) -> Graph:
    return _build(desc, no_int64_math=False)


def build_no_int64_math(desc: Description) -> Graph:
    """The same comparisons with UINT32 compared in UINT32 and UINT64 selected by GatherElements: no Cast to or from
    a 64-bit integer type and no 64-bit multiply (common.WIDER_NO_INT64 says why)."""
    return _build(desc, no_int64_math=True)


def _build(desc: Description, no_int64_math: bool) -> Graph:
    def inside(b: GraphBuilder, x: str, work: DataType) -> str:
        # Min and Max are numbers in the tensors' data type; every one of them is exact in `work`.
        dtype = desc.output.dtype
        low = b.const(np.array(desc.params["Min"]).astype(dtype.numpy).astype(work.numpy), hint="min")
        high = b.const(np.array(desc.params["Max"]).astype(dtype.numpy).astype(work.numpy), hint="max")
        clipped = b.op("Or", [b.op("LessOrEqual", [x, low], "at_or_below_min"),
                              b.op("GreaterOrEqual", [x, high], "at_or_above_max")], "clipped")
        return b.op("Not", [clipped], "inside")

    recipe = "Not(Or(LessOrEqual(X, Min), GreaterOrEqual(X, Max)))"
    if no_int64_math:
        return select_gradient("clip_grad1", desc, inside, recipe, WIDER_NO_INT64, GATHER_SELECT)
    return select_gradient("clip_grad1", desc, inside, recipe)
