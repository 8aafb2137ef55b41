"""ELEMENT_WISE_CLIP_GRAD (v0) as standard ONNX, DirectML's reading of its FLOAT bounds:

dX = Where(And(Greater(X, Min'), Less(X, Max')), dY, 0)

where Min' and Max' are the FLOAT bounds as the tensors' type holds them, worked out here from the description alone:
clamped to the type's range and converted to it (an integer type toward zero, NaN to what x64's conversion makes of
it; FLOAT16 to nearest after a clamp to ±65504; FLOAT32 unconverted). `Min' < X < Max'` is DirectML's form, which
zeroes NaN in X and everything beside a NaN float bound (docs/reference/operators.md). The conversions are written
here a second time, from the measurements (examples/dml_harness/investigate/clip_grad_bounds.py), not taken from
the reference: only the description's numbers enter the graph.
"""

from __future__ import annotations

import math

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

#: What x64's float-to-integer conversion makes of NaN, by the register it converts through (32 bits for INT32, 64
#: for UINT32 and the 64-bit types, 32 for the narrower ones), cut to the type: the sign bit alone, or nothing.
_NAN_BITS = {DataType.INT32: 1 << 31, DataType.INT64: 1 << 63, DataType.UINT64: 1 << 63}


def bound_in_type(bound: float, dtype: DataType) -> np.generic:
    """A FLOAT bound as DirectML holds it in the tensors' type."""
    t = dtype.numpy.type
    if dtype is DataType.FLOAT32:
        return t(bound)
    if dtype is DataType.FLOAT16:
        return t(bound if math.isnan(bound) else min(max(bound, -65504.0), 65504.0))
    info = np.iinfo(dtype.numpy)
    if math.isnan(bound):
        return np.array([_NAN_BITS.get(dtype, 0)], dtype=dtype.bits_dtype).view(dtype.numpy)[0]
    if math.isinf(bound):
        return t(info.max if bound > 0 else info.min)
    whole = int(bound)  # toward zero
    return t(min(max(whole, int(info.min)), int(info.max)))


def build(desc: Description) -> Graph:
    return _build(desc, no_int64_math=False)


def build_no_int64_math(desc: Description) -> Graph:
    """The same comparisons with UINT32 compared in UINT32 and UINT64 selected by GatherElements: no Cast to or from
    a 64-bit integer type and no 64-bit multiply (common.WIDER_NO_INT64 says why)."""
    return _build(desc, no_int64_math=True)


def _build(desc: Description, no_int64_math: bool) -> Graph:
    dtype = desc.output.dtype
    low, high = (bound_in_type(float(desc.params[name]), dtype) for name in ("Min", "Max"))

    def inside(b: GraphBuilder, x: str, work: DataType) -> str:
        # Every value of the type is exact in `work` (the widened type), so are Min' and Max'.
        lo = b.const(np.array(low).astype(work.numpy), hint="min")
        hi = b.const(np.array(high).astype(work.numpy), hint="max")
        return b.op("And", [b.op("Greater", [x, lo], "above_min"), b.op("Less", [x, hi], "below_max")], "inside")

    recipe = "And(Greater(X, Min in the type), Less(X, Max in the type))"
    if no_int64_math:
        return select_gradient("clip_grad", desc, inside, recipe, WIDER_NO_INT64, GATHER_SELECT)
    return select_gradient("clip_grad", desc, inside, recipe)
