"""RESAMPLE_GRAD1 (and RESAMPLE_GRAD v0) as standard ONNX: per resampled axis, Transpose(axis -> last) -> MatMul(W)
-> Transpose back.

Resampling is separable, so dX = dY x_a W_a^T over every axis a, where W_a[o, i] is the weight with which
forward input i feeds forward output o. The weight matrices are NOT computed by ONNX Runtime: they come
from the reference's `resample_grad1.axis_weights` (DML's coordinate formula in float32), so this graph
checks the reference's summation, not its coordinate rule. The tests cross-check the matrices against
ORT's own Resize on an identity matrix wherever Resize can express the mode (half-pixel and asymmetric
offsets, nearest floor/ceil and linear).

Sums run in float32 for FLOAT16 and FLOAT32 (dY cast once, W kept in float32, one rounding back) and in
float64 for FLOAT64. A dense product would turn 0 * Inf into NaN, so a dY holding NaN or Inf takes the
"sparse" path instead: per axis, Gather the dY rows with a non-zero weight for each dX element (a padded
table from the same W), Mul by the weights, Where(real entry, product, 0) and ReduceSum, so only real
contributions can carry a NaN or Inf.
"""

from __future__ import annotations

import numpy as np

from dmlconform.backends.onnx_graphs.common import Graph, GraphBuilder, GraphUnsupported
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description
from dmlconform.ops.resample_grad1 import ResampleGrad1

ACCUMULATE = {DataType.FLOAT16: DataType.FLOAT32, DataType.FLOAT32: DataType.FLOAT32,
              DataType.FLOAT64: DataType.FLOAT64}


def path_for(inputs: dict[str, np.ndarray]) -> str:
    """`dense` (MatMul) for finite dY, `sparse` (Gather, Where, ReduceSum) where dY holds NaN or Inf."""
    return "dense" if np.isfinite(inputs["InputGradientTensor"]).all() else "sparse"


def sparse_table(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per dX index i: the dY indices o with W[o, i] != 0, their weights and a mask, padded to one length."""
    columns = [np.flatnonzero(w[:, i]) for i in range(w.shape[1])]
    width = max(1, *(len(c) for c in columns))
    index = np.zeros((w.shape[1], width), dtype=np.int64)
    weight = np.zeros((w.shape[1], width), dtype=np.float64)
    real = np.zeros((w.shape[1], width), dtype=bool)
    for i, rows in enumerate(columns):
        index[i, : len(rows)], weight[i, : len(rows)], real[i, : len(rows)] = rows, w[rows, i], True
    return index, weight, real


def build(desc: Description, variant: str | None = None, path: str = "dense", sparse_matmul: bool = False) -> Graph:
    """`sparse_matmul`: the sparse path sums each dX element's real terms with a batched MatMul against its weights
    instead of Mul and ReduceSum (the `matmul-only` construction: onnxruntime-directml 1.24.4's DirectML EP refused
    a Mul of two float tensors on Wine's vkd3d and lavapipe, E_INVALIDARG at kernel creation, while it took MatMul).
    The padding entries are selected to 0 before the product and their weights are 0, so no NaN or Inf spreads."""
    dtype = desc.output.dtype
    if dtype not in ACCUMULATE:
        raise GraphUnsupported(f"the MatMul graph is float-only ({dtype.name})")
    acc = ACCUMULATE[dtype]
    dx_shape = desc.output.shape
    dy_shape = desc.tensors["InputGradientTensor"].shape
    rank = len(dx_shape)
    op = desc.op
    if not isinstance(op, ResampleGrad1):
        raise GraphUnsupported(f"{op.name} is not a resample gradient")
    weights = op.weights(desc, variant)  # ResampleGrad (v0) is a ResampleGrad1 with its own coordinate rules

    b = GraphBuilder(op.name.lower())
    dy = b.input("InputGradientTensor", dtype, dy_shape)
    value = dy if acc is dtype else b.cast(dy, acc)
    used = 0
    for axis, w in enumerate(weights):
        if w.shape[0] == w.shape[1] and np.array_equal(w, np.eye(w.shape[0])):
            continue  # an identity axis: nothing to sum
        used += 1
        perm = [a for a in range(rank) if a != axis] + [axis]
        inverse = [int(i) for i in np.argsort(perm)]
        moved = b.op("Transpose", [value], "moved", perm=perm) if axis != rank - 1 else value
        if path == "dense":
            summed = b.op("MatMul", [moved, b.const(w, acc.numpy, hint=f"w{axis}")], "summed")
        elif not sparse_matmul:
            index, weight, real = sparse_table(w)
            taken = b.op("Gather", [moved, b.const(index)], "taken", axis=rank - 1)
            terms = b.op("Mul", [taken, b.const(weight, acc.numpy, hint=f"w{axis}")], "terms")
            terms = b.op("Where", [b.const(real), terms, b.zero(acc)], "real_terms")
            summed = b.op("ReduceSum", [terms, b.ints([-1])], "summed", keepdims=0)
        else:
            index, weight, real = sparse_table(w)
            moved_shape = [dx_shape[a] if a < axis else dy_shape[a] for a in perm]  # the shape of `moved`
            lead = int(np.prod(moved_shape[:-1]))
            taken = b.op("Gather", [moved, b.const(index)], "taken", axis=rank - 1)  # [..., n, width]
            terms = b.op("Where", [b.const(real), taken, b.zero(acc)], "real_terms")
            terms = b.op("Reshape", [terms, b.ints([lead, index.shape[0], 1, index.shape[1]])], "rows")
            dots = b.op("MatMul", [terms, b.const(weight[:, :, None], acc.numpy, hint=f"w{axis}")], "dots")
            summed = b.op("Reshape", [dots, b.ints([*moved_shape[:-1], index.shape[0]])], "summed")
        value = b.op("Transpose", [summed], "back", perm=inverse) if axis != rank - 1 else summed
    if acc is not dtype:
        value = b.cast(value, dtype)
    out = b.op("Identity", [value], "dx")
    cast = "" if acc is dtype else f" in {acc.name}"
    step = "MatMul(axis_weights)" if path == "dense" else \
        "Gather -> Where -> MatMul(weights)" if sparse_matmul else "Gather -> Mul -> Where -> ReduceSum"
    return b.finish(out, dtype, dx_shape, f"{used} x (Transpose -> {step}{cast})")
