"""AVERAGE_POOLING_GRAD as standard ONNX: divisors counted by a Conv of a 0/1 mask, the gradient spread by a
ConvTranspose of ones.

Along each spatial axis the windows cover positions [o*stride - StartPadding, ... + WindowSize). The graph works on
a canvas whose first element is position -StartPadding, long enough for every window and the padded input:

    mask     = [1 where a canvas position counts for the divisor, 0 elsewhere]   # a constant, from the description
    divisor  = Slice(Conv(mask, ones[1, 1, *window], strides))        # per window: the positions that count
    scaled   = Where(divisor > 0, dY / Max(divisor, 1), 0)            # a window that counts nothing reaches nothing
    spread   = ConvTranspose(Reshape(scaled, [N*C, 1, *out]), ones[1, 1, *window], strides)
    dX       = Slice(Pad(spread), StartPadding .. StartPadding + In)   # back to the input's positions

The region is the input ([0, In), IncludePadding FALSE) or, with IncludePadding TRUE, the padded input
([-StartPadding, In + EndPadding), `clipped-to-padding`), or [-StartPadding, In + StartPadding)
(`end-padding-as-start`); `full-window` divides by the window's size, and `in-bounds-overhang` by the input count
where the padded count falls short of the window's size (the window runs past the padded input). Everything comes
from the description (sizes, strides, paddings, the flag) and dY; nothing the reference computed enters the graph.

FLOAT16 is computed in float32 (one Cast in, one rounding back). The divisor counts are small integers, exact in
float32; the Div rounds once; ConvTranspose adds each quotient to the positions its window covers with a weight of
exactly 1, so an infinity or NaN reaches only those (a window of padding only lands outside the crop).

A second construction, `gather-sum`, for the DirectML EP. The one above divides [N, C, *out] by [1, 1, *out]: where
N*C = 1 both operands of that Div have one shape, and DirectML 1.13 and later (1.15.4 here) compiles a float32
two-operand arithmetic node (Add, Sub, Mul, Div, Max, Min) whose operands share one shape of a multiple of 4
elements with a shader that its DXBC container holds only as DXIL (shader model 6); vkd3d 1.6, Wine 8.0's Direct3D
12, takes shader model 5.1 bytecode only ("Skipping DXIL shader model 6+ code chunk", then CreateComputePipelineState
E_INVALIDARG), so the session fails (CompileGraph: E_INVALIDARG, DmlGraphFusionHelper.cpp(588)) on any Vulkan driver
(measured on lavapipe: examples/ort_dml_host/same_shape_arithmetic.py; the same cases failed on an NVIDIA H200). A
divisor that broadcasts along an axis of 2 takes another shader. Its tables come from the description, counted
here: per window its divisor (the readings above), per element of a plane the windows that cover it (padded with a
window that holds 0):

    quotients = Div(Reshape(dY, [N*C, windows, 1]), divisor[windows, 2])       # each quotient twice: dY broadcasts
    scaled    = Concat(Reshape(Where(divisor > 0, quotients, 0), [N*C, 2*windows]), 0)  # window w at 2w
    dX        = Reshape(ReduceSum(Gather(scaled, 2*covering, axis=1), axis=2), dX's shape)
"""

from __future__ import annotations

import itertools

import numpy as np

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, GraphUnsupported, tensor_value
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description

CLIPPED, FULL, IN_BOUNDS, END_AS_START = ("clipped-to-padding", "full-window", "in-bounds-overhang",
                                          "end-padding-as-start")


def _counts(b: GraphBuilder, spans: list[tuple[int, int]], canvas: list[int], window: list[int], strides: list[int],
            out: list[int]) -> str:
    """Per window [1, 1, *out] (float32): how many of its positions lie in the region (per axis [lo, hi) of canvas
    indexes), by a Conv of the region's 0/1 mask with a kernel of ones."""
    if any(hi <= lo for lo, hi in spans):
        return b.const(np.zeros([1, 1, *out], dtype=np.float32), hint="no_count")
    mask = np.zeros([1, 1, *canvas], dtype=np.float32)
    mask[(0, 0, *(slice(lo, hi) for lo, hi in spans))] = 1
    mask = b.const(mask, hint="mask")
    kernel = b.const(np.ones([1, 1, *window], dtype=np.float32), hint="window")
    counted = b.op("Conv", [mask, kernel], "counted", strides=strides)
    dims = len(out)
    return b.op("Slice", [counted, b.ints([0] * dims), b.ints(out), b.ints(list(range(2, 2 + dims)))], "counts")


def build(desc: Description, variant: str | None = None) -> Graph:
    dtype = desc.output.dtype
    if dtype not in (DataType.FLOAT16, DataType.FLOAT32):
        raise GraphUnsupported(f"the AveragePoolingGrad graph is float-only ({dtype.name})")
    reading = variant or CLIPPED
    p = desc.params
    dx_shape = list(desc.tensors["OutputGradientTensor"].shape)
    dy_shape = list(desc.tensors["InputGradientTensor"].shape)
    extent, out = dx_shape[2:], dy_shape[2:]
    window, strides = list(p["WindowSize"]), list(p["Strides"])
    start, end = list(p["StartPadding"]), list(p["EndPadding"])
    include = bool(p["IncludePadding"])
    dims = len(extent)
    # Canvas index c is position c - start; long enough for every window, the padded input and its mirror.
    canvas = [max((o - 1) * s + k, a + n + max(e, a)) for o, s, k, a, n, e in
              zip(out, strides, window, start, extent, end, strict=True)]

    b = GraphBuilder("average_pooling_grad")
    dy = b.input("InputGradientTensor", dtype, dy_shape)
    work = dy if dtype is DataType.FLOAT32 else b.cast(dy, DataType.FLOAT32)

    def counts(region: str) -> str:
        spans = {"input": [(a, a + n) for a, n in zip(start, extent, strict=True)],
                 "padded": [(0, a + n + e) for a, n, e in zip(start, extent, end, strict=True)],
                 "mirrored": [(0, 2 * a + n) for a, n in zip(start, extent, strict=True)]}[region]
        return _counts(b, spans, canvas, window, strides, out)

    full = b.const(np.float32(np.prod(window)), hint="window_size")
    if not include:
        divisor, how = counts("input"), "positions in the input"
    elif reading == FULL:
        divisor, how = full, "the window's size"
    elif reading == END_AS_START:
        divisor, how = counts("mirrored"), "positions in [-StartPadding, In + StartPadding)"
    elif reading == IN_BOUNDS:
        short = b.op("Less", [counts("padded"), full], "overhangs")
        divisor = b.op("Where", [short, counts("input"), full], "divisor")
        how = "the window's size, or its positions in the input where it runs past the padded input"
    else:
        divisor, how = counts("padded"), "positions in the padded input"

    zero = b.const(np.float32(0), hint="zero")
    quotient = b.op("Div", [work, b.op("Max", [divisor, b.const(np.float32(1), hint="one")], "safe")], "quotient")
    scaled = b.op("Where", [b.op("Greater", [divisor, zero], "counts"), quotient, zero], "scaled")
    planes = b.op("Reshape", [scaled, b.ints([-1, 1, *out])], "planes")
    kernel = b.const(np.ones([1, 1, *window], dtype=np.float32), hint="spread")
    spread = b.op("ConvTranspose", [planes, kernel], "spread", strides=strides)
    length = [(o - 1) * s + k for o, s, k in zip(out, strides, window, strict=True)]
    short_by = [max(0, a + n - span) for a, n, span in zip(start, extent, length, strict=True)]
    if any(short_by):
        spread = b.op("Pad", [spread, b.ints([0] * (dims + 2) + [0, 0, *short_by])], "extended", mode="constant")
    cropped = b.op("Slice", [spread, b.ints(start), b.ints([a + n for a, n in zip(start, extent, strict=True)]),
                             b.ints(list(range(2, 2 + dims)))], "cropped")
    dx = b.op("Reshape", [cropped, b.ints(dx_shape)], "dx")
    if dtype is not DataType.FLOAT32:
        dx = b.cast(dx, dtype)
    cast = "" if dtype is DataType.FLOAT32 else ", in float32 with one rounding back"
    return b.finish(dx, dtype, dx_shape, f"divisor = Conv(0/1 mask, ones) ({how}) -> Where(Div) -> "
                    f"ConvTranspose(ones) -> Slice{cast}")


def _axis_counts(extent: int, out: int, window: int, stride: int, low: int, high: int) -> np.ndarray:
    """Per window along one axis, how many of its positions o*stride - StartPadding + k lie in [low, high) (given as
    positions relative to -StartPadding, i.e. canvas indexes)."""
    first = np.arange(out) * stride
    return np.clip(np.minimum(first + window, high) - np.maximum(first, low), 0, None)


def divisor_table(desc: Description, reading: str) -> np.ndarray:
    """Per window (the gradient's spatial grid, row-major) its divisor, counted from the description."""
    p = desc.params
    extent = desc.tensors["OutputGradientTensor"].shape[2:]
    out = desc.tensors["InputGradientTensor"].shape[2:]
    axes = list(zip(extent, out, p["WindowSize"], p["Strides"], p["StartPadding"], p["EndPadding"], strict=True))

    def product(region: str) -> np.ndarray:
        grid = np.ones((), dtype=np.int64)
        for n, o, k, s, a, e in axes:
            low, high = {"input": (a, a + n), "padded": (0, a + n + e), "mirrored": (0, 2 * a + n)}[region]
            grid = np.multiply.outer(grid, _axis_counts(n, o, k, s, low, high))
        return grid

    full = np.full(tuple(out), int(np.prod(p["WindowSize"])), dtype=np.int64)
    if not p["IncludePadding"]:
        return product("input")
    if reading == FULL:
        return full
    if reading == END_AS_START:
        return product("mirrored")
    if reading == IN_BOUNDS:
        return np.where(product("padded") < full, product("input"), full)
    return product("padded")


def covering_windows(desc: Description, divisors: np.ndarray) -> np.ndarray:
    """[plane elements, K]: per element of a dX plane (row-major) the windows (row-major) with a nonzero divisor that
    cover it, padded with the window number `windows` (a column of zeros)."""
    p = desc.params
    extent = desc.tensors["OutputGradientTensor"].shape[2:]
    out = desc.tensors["InputGradientTensor"].shape[2:]
    lists: list[list[int]] = [[] for _ in range(int(np.prod(extent)))]
    for number, o in enumerate(np.ndindex(*out)):
        if divisors[o] == 0:
            continue
        ranges = [range(max(0, i * s - a), min(n, i * s - a + k)) for i, s, a, k, n in
                  zip(o, p["Strides"], p["StartPadding"], p["WindowSize"], extent, strict=True)]
        for place in itertools.product(*ranges):
            lists[int(np.ravel_multi_index(place, extent))].append(number)
    width = max(1, max(len(found) for found in lists))
    table = np.full((len(lists), width), int(np.prod(out)), dtype=np.int64)
    for element, found in enumerate(lists):
        table[element, :len(found)] = found
    return table


def build_gather_sum(desc: Description, variant: str | None = None) -> Graph:
    dtype = desc.output.dtype
    if dtype not in (DataType.FLOAT16, DataType.FLOAT32):
        raise GraphUnsupported(f"the AveragePoolingGrad graph is float-only ({dtype.name})")
    dx_shape = list(desc.tensors["OutputGradientTensor"].shape)
    dy_shape = list(desc.tensors["InputGradientTensor"].shape)
    divisors = divisor_table(desc, variant or CLIPPED)
    windows = int(divisors.size)
    table = divisors.reshape(-1)
    b = GraphBuilder("average_pooling_grad")
    dy = b.input("InputGradientTensor", dtype, dy_shape)
    work = dy if dtype is DataType.FLOAT32 else b.cast(dy, DataType.FLOAT32)
    # dY as a column against a divisor table of two equal columns: the Div broadcasts dY, so its operands never
    # share one shape (see the module docstring: such a float32 Div fails the DirectML EP under Wine).
    column = b.op("Reshape", [work, b.ints([-1, windows, 1])], "column")
    pairs = np.repeat(np.maximum(table, 1).astype(np.float32)[:, None], 2, axis=1)
    scaled = b.op("Div", [column, b.const(pairs, hint="divisors")], "quotients")
    if not np.all(table > 0):
        scaled = b.op("Where", [b.const((table > 0)[:, None], hint="counted"), scaled,
                                b.const(np.float32(0), hint="zero")], "scaled")
    rows = b.op("Reshape", [scaled, b.ints([-1, 2 * windows])], "rows")
    none = b.op("ConstantOfShape", [b.op("Concat", [b.op("Slice", [b.op("Shape", [rows], "shape"), b.ints([0]),
                                                                     b.ints([1])], "planes"), b.ints([1])], "one",
                                         axis=0)], "none", value=tensor_value(np.zeros(1, np.float32)))
    padded = b.op("Concat", [rows, none], "padded", axis=1)
    # Window w's quotient sits at 2w; the padding window number `windows` lands on the zero column, 2*windows.
    covering = 2 * covering_windows(desc, divisors)
    gathered = b.op("Gather", [padded, b.const(covering, hint="covering")], "terms", axis=1)
    summed = b.op("ReduceSum", [gathered, b.ints([2])], "summed", keepdims=0)
    dx = b.op("Reshape", [summed, b.ints(dx_shape)], "dx")
    if dtype is not DataType.FLOAT32:
        dx = b.cast(dx, dtype)
    cast = "" if dtype is DataType.FLOAT32 else ", in float32 with one rounding back"
    return b.finish(dx, dtype, dx_shape, f"dY / divisor table (broadcast) -> Gather(covering windows) -> "
                    f"ReduceSum{cast}")
