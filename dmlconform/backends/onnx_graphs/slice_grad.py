"""SLICE_GRAD as standard ONNX: ONNX Slice picks the window's flat indices from an iota, ScatterElements
writes dY there into zeros. No casts, so every data type goes through unchanged.

    iota = Reshape(Range(0, N, 1), dX.shape)            # int64, folded by ORT at session creation
    sel  = Slice(iota, starts, ends, axes, steps)       # the forward Slice1's window, by ONNX's own rules
    dX   = Reshape(ScatterElements(zeros[N], Reshape(sel, [-1]), Reshape(dY, [-1]), axis=0), dX.shape)

DML -> ONNX Slice per dim, for a dY extent n: stride > 0 reads offset, offset+stride, ...: starts = offset,
ends = offset + stride*(n-1) + 1; stride < 0 walks back from the window's end: starts = offset+size-1,
ends = starts + stride*(n-1) - 1, or INT64_MIN where that is below 0 (ONNX reads -1 as "the last element").
A strided window never hits one element twice, so no reduction is needed.

Two constructions, the same graph at two opsets: `scatter` (opset 21, where ScatterElements is the opset-18 revision)
and `scatter-opset17` (ScatterElements-16). Measured with onnxruntime-directml 1.24.4 under Wine: the DirectML
execution provider registers ScatterElements and ScatterND up to the opset-16 revision only, so at opset 21 the
scatter is placed on the CPU EP (and the session refused with CPU fallback disabled), while at opset 17 the EP takes
the whole graph. ONNX changed nothing for reduction "none" between the two revisions.
"""

from __future__ import annotations

import numpy as np

from dmlconform.backends.onnx_graphs.common import OPSET, Graph, GraphBuilder, flat, iota, scatter_into_zeros
from dmlconform.ops.base import Description

INT64_MIN = int(np.iinfo(np.int64).min)


def onnx_slice_bounds(offsets: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...],
                      counts: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """ONNX Slice starts and ends that read exactly `counts` elements of each DML window."""
    starts, ends = [], []
    for offset, size, stride, count in zip(offsets, sizes, strides, counts, strict=True):
        start = offset if stride > 0 else offset + size - 1
        end = start + stride * (count - 1) + (1 if stride > 0 else -1)
        starts.append(start)
        ends.append(end if end >= 0 else INT64_MIN)
    return starts, ends


#: The opset of `scatter-opset17`: the newest whose ScatterElements revision (16) the DirectML EP registers.
DML_SCATTER_OPSET = 17


def build(desc: Description, opset: int = OPSET) -> Graph:
    dtype = desc.output.dtype
    out_shape = desc.output.shape
    dy_shape = desc.tensors["InputGradientTensor"].shape
    p = desc.params
    starts, ends = onnx_slice_bounds(p["InputWindowOffsets"], p["InputWindowSizes"], p["InputWindowStrides"],
                                     dy_shape)
    b = GraphBuilder("slice_grad")
    dy = b.input("InputGradientTensor", dtype, dy_shape)
    window = b.op("Slice", [iota(b, out_shape), b.ints(starts), b.ints(ends), b.ints(range(len(out_shape))),
                            b.ints(p["InputWindowStrides"])], "window")
    scattered = scatter_into_zeros(b, int(np.prod(out_shape)), flat(b, window), flat(b, dy), dtype)
    out = b.op("Reshape", [scattered, b.ints(out_shape)], "dx")
    return b.finish(out, dtype, out_shape, f"Slice(iota) -> ScatterElements into zeros (no casts, opset {opset})",
                    opset=opset)


def build_opset17(desc: Description) -> Graph:
    return build(desc, DML_SCATTER_OPSET)
