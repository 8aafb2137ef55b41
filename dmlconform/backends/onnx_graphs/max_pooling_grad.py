"""MAX_POOLING_GRAD as standard ONNX: gather each window's taps, ArgMax picks the winner, scatter-add dY.

    values = Gather(Reshape(X, [-1]), G)                       # [windows, taps]
    tap    = ArgMax(values, axis=1, select_last_index=0)       # ONNX: ties -> the first tap
    target = GatherElements(G, tap)                            # flat index of the winner in X
    dX     = ScatterElements(zeros[X.size], target, Where(valid, dY, 0), reduction=add)

G is the window table: per window (N, C and output position, row-major) and per tap (row-major, so
increasing flat index), the flat index in X of `p = o*stride - startPad + k*dilation`. A tap outside the
input (padding, or past it when dY is larger than the pooled size) points at the window's first tap that
is inside; as ArgMax keeps the first of equal values, padding can never win and the winner is the same
element a strict `>` scan would pick. Windows with no tap inside (`valid` false) route nothing.

Why not ONNX MaxPool with Indices: ONNX leaves MaxPool's tie-break unspecified, and it differs between
execution providers. Measured on an H100 with onnxruntime-gpu 1.31.1, the CUDA provider's Indices broke
ties differently from the CPU provider's, so the same graph would have failed on CUDA for the graph's
sake, not the device's. ArgMax's tie rule is part of the ONNX spec (`select_last_index=0`), so this graph
means the same on every provider. The window geometry is DML's formula; tests check it against ONNX
Runtime's own MaxPool on tie-free data.

The sum runs in float32 for FLOAT16 (ORT's fp16 scatter-add fails at run time) and in the data type
otherwise; one Cast rounds back.

A second construction, `gather-sum`, routes the gradients without any scatter, for execution providers that do not
take a scatter-add (measured: onnxruntime-directml 1.24.4's DirectML EP registers ScatterElements and ScatterND up
to their opset-16 revision and refuses reduction "add" in every revision). The winners come out as above; then each
X element gathers the windows that contain it (a table C [X.size, K] of window numbers, padded with a window that
never wins) and sums the gradients of those whose winner it is:

    target = Concat(GatherElements(G, tap), [-1])              # winner per window; the padding window's never hits
    hit    = Equal(Gather(target, C), element index)            # [X.size, K]
    dX     = ReduceSum(Where(hit, Gather(Concat(dY, [0]), C), 0), axis=1)

Windows with no tap inside appear in no row of C, so they route nothing; a NaN or infinity in dY reaches only the
element its window's winner is (the select, not a multiply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, GraphUnsupported, flat, scatter_into_zeros
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description

#: Type the scatter-add runs in, per data type (a wider float, never a type that cannot hold the value).
ACCUMULATE = {DataType.FLOAT16: DataType.FLOAT32, DataType.FLOAT32: DataType.FLOAT32,
              DataType.FLOAT64: DataType.FLOAT64}


def window_table(x_shape: tuple[int, ...], out: tuple[int, ...], params: Mapping[str, Any]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """G [windows, taps] of flat indices into X (padding taps -> the window's first inside tap) and, per
    window, whether any tap is inside the input."""
    spatial = x_shape[2:]
    dims = len(spatial)
    window = tuple(params["WindowSize"])
    # Per dim: positions[o, k] = o*stride - startPad + k*dilation, broadcast to [out..., window...].
    places = np.cumprod((1, *spatial[::-1]))[:-1][::-1]
    index = np.zeros(out + window, dtype=np.int64)
    inside = np.ones(out + window, dtype=bool)
    for i in range(dims):
        o = np.arange(out[i], dtype=np.int64)[:, None]
        k = np.arange(window[i], dtype=np.int64)[None, :]
        position = o * params["Strides"][i] - params["StartPadding"][i] + k * params["Dilations"][i]
        shape = [1] * (2 * dims)
        shape[i], shape[dims + i] = out[i], window[i]
        position = position.reshape(shape)
        inside = inside & (position >= 0) & (position < spatial[i])
        index = index + np.clip(position, 0, spatial[i] - 1) * places[i]
    windows, taps = int(np.prod(out)), int(np.prod(window))
    index, inside = index.reshape(windows, taps), inside.reshape(windows, taps)
    valid = inside.any(axis=1)
    first = index[np.arange(windows), inside.argmax(axis=1)]
    index = np.where(inside, index, first[:, None])
    planes = np.arange(x_shape[0] * x_shape[1], dtype=np.int64)[:, None, None] * int(np.prod(spatial))
    table = (planes + index[None]).reshape(-1, taps)
    return table, np.tile(valid, x_shape[0] * x_shape[1])


def containing_windows(table: np.ndarray, valid: np.ndarray, size: int) -> np.ndarray:
    """C [size, K]: per X element, the windows (ascending) that have it among their taps, padded with the window
    number len(table), which stands for a window that never wins. Windows with no tap inside are left out."""
    count = table.shape[0]
    windows = np.repeat(np.arange(count, dtype=np.int64), table.shape[1])
    elements = table.reshape(-1)
    keep = np.repeat(valid, table.shape[1])
    # Each (element, window) pair as one number, element * windows + window, so that one 1-D sort orders them by
    # element, then window (np.unique over rows sorts byte strings: 20 times slower, most of a graph's build).
    pairs = np.unique(elements[keep] * count + windows[keep])
    element, window = pairs // count, pairs % count
    counts = np.bincount(element, minlength=size)
    width = max(1, int(counts.max()) if counts.size else 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    column = np.arange(len(pairs)) - np.repeat(starts, counts)
    result = np.full((size, width), count, dtype=np.int64)
    result[element, column] = window
    return result


def _winners(b: GraphBuilder, desc: Description, dtype: DataType) -> tuple[str, np.ndarray, np.ndarray, str]:
    """The graph's inputs and each window's winner (flat X index), with the window table, its valid mask and dY."""
    x_shape = desc.tensors["InputTensor"].shape
    dy_shape = desc.tensors["InputGradientTensor"].shape
    table, valid = window_table(x_shape, dy_shape[2:], desc.params)
    x = b.input("InputTensor", dtype, x_shape)
    dy = b.input("InputGradientTensor", dtype, dy_shape)
    g = b.const(table, hint="windows")
    values = b.op("Gather", [flat(b, x), g], "taps", axis=0)
    tap = b.op("ArgMax", [values], "winner_tap", axis=1, keepdims=1, select_last_index=0)
    target = flat(b, b.op("GatherElements", [g, tap], "winner", axis=1))
    return target, table, valid, dy


def build_gather_sum(desc: Description) -> Graph:
    dtype = desc.output.dtype
    if dtype not in ACCUMULATE:
        raise GraphUnsupported(f"the MaxPoolingGrad graph is float-only ({dtype.name})")
    x_shape = desc.tensors["InputTensor"].shape
    size = int(np.prod(x_shape))
    b = GraphBuilder("max_pooling_grad")
    target, table, valid, dy = _winners(b, desc, dtype)
    windows = b.const(containing_windows(table, valid, size), hint="containing")

    acc = ACCUMULATE[dtype]
    target = b.op("Concat", [target, b.ints([-1])], "targets", axis=0)
    hit = b.op("Equal", [b.op("Gather", [target, windows], "candidates", axis=0),
                         b.const(np.arange(size, dtype=np.int64)[:, None], hint="element")], "hit")
    grads = flat(b, dy if acc is dtype else b.cast(dy, acc))
    grads = b.op("Concat", [grads, b.const(np.zeros(1, dtype=acc.numpy), hint="none")], "grads", axis=0)
    terms = b.op("Where", [hit, b.op("Gather", [grads, windows], "terms", axis=0), b.zero(acc)], "routed")
    summed = b.op("ReduceSum", [terms, b.ints([1])], "summed", keepdims=0)
    if acc is not dtype:
        summed = b.cast(summed, dtype)
    dx = b.op("Reshape", [summed, b.ints(x_shape)], "dx")
    cast = "" if acc is dtype else f", dY cast to {acc.name} and one rounding back"
    return b.finish(dx, dtype, x_shape, "window table -> Gather -> ArgMax (first of ties) -> per element: Gather the "
                    f"containing windows' winners -> Equal -> Where(dY) -> ReduceSum{cast}")


def build(desc: Description) -> Graph:
    dtype = desc.output.dtype
    if dtype not in ACCUMULATE:
        raise GraphUnsupported(f"the MaxPoolingGrad graph is float-only ({dtype.name})")
    x_shape = desc.tensors["InputTensor"].shape
    b = GraphBuilder("max_pooling_grad")
    target, _, valid, dy = _winners(b, desc, dtype)

    acc = ACCUMULATE[dtype]
    grads = flat(b, dy if acc is dtype else b.cast(dy, acc))
    if not valid.all():
        # A select, so a NaN or infinity in dY of a window with no tap inside goes nowhere.
        grads = b.op("Where", [b.const(valid, hint="valid"), grads, b.zero(acc)], "routed")
    summed = scatter_into_zeros(b, int(np.prod(x_shape)), target, grads, acc, reduction="add")
    if acc is not dtype:
        summed = b.cast(summed, dtype)
    dx = b.op("Reshape", [summed, b.ints(x_shape)], "dx")
    cast = "" if acc is dtype else f", dY cast to {acc.name} and one rounding back"
    return b.finish(dx, dtype, x_shape, f"window table -> Gather -> ArgMax (first of ties) -> ScatterElements "
                    f"add{cast}")
