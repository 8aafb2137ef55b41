"""MAX_POOLING_GRAD as standard ONNX, "path A": ORT's own MaxPool picks each window's winner.

    (_, I)  = MaxPool(X, kernel=WindowSize, strides, dilations, pads=StartPadding + end)   # flat argmax
    valid   = Greater(MaxPool(ones(X.shape)), 0)     # windows with at least one tap inside the input
    dX      = ScatterElements(zeros[N], Where(valid, I, 0), Where(valid, dY, 0), reduction=add)

The window logic (tap positions, dilation, padding never winning, ties to the lowest flat index, NaN)
is ORT's, not the reference's, so this is an independent check. The end padding is the smallest that
gives dY's spatial extent (a larger EndPadding only adds windows past dY); extra pooled windows are
sliced off. A window with no tap inside the input gets a meaningless index from ORT, hence the mask.

ORT's MaxPool refuses a pad as large as the window ("Pad should be smaller than kernel"), which DML
allows (with dilation it is common). Then the padding is explicit instead: X goes to float64 with -Inf
moved to -DBL_MAX, is padded with -Inf (below every real value, so padding never beats a real tap) and
pooled without pads; the winner's index in the padded tensor maps back through a padded iota (padding
-> -1, which also marks windows with no real tap). One case stays out: NaN in X, because ORT's scan
lets a leading pad element keep the place a leading NaN would take; such data is NOT_SUPPORTED.

The sum runs in float32 for FLOAT16 (ORT's fp16 scatter-add fails at run time) and in the data type
otherwise; one Cast rounds back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dmlconform.backends.onnx_graphs.common import (
    Graph,
    GraphBuilder,
    GraphUnsupported,
    flat,
    iota,
    scatter_into_zeros,
    tensor_value,
)
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description

#: Type the scatter-add runs in, per data type (a wider float, never a type that cannot hold the value).
ACCUMULATE = {DataType.FLOAT16: DataType.FLOAT32, DataType.FLOAT32: DataType.FLOAT32,
              DataType.FLOAT64: DataType.FLOAT64}
#: Types whose every value, -Inf aside, lies above -DBL_MAX, as the explicit-padding path needs.
EXPLICIT_PAD_TYPES = frozenset({DataType.FLOAT16, DataType.FLOAT32})


def pads_for(spatial: tuple[int, ...], out: tuple[int, ...], params: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """Per spatial dim, DML's StartPadding and the least end padding that yields `out` windows."""
    starts, ends = [], []
    for i, (n, o) in enumerate(zip(spatial, out, strict=True)):
        k, s, d, a = (params[name][i] for name in ("WindowSize", "Strides", "Dilations", "StartPadding"))
        starts.append(a)
        ends.append(max(0, (o - 1) * s + (k - 1) * d + 1 - n - a))
    return starts, ends


def no_nan_in_x(inputs: dict[str, np.ndarray]) -> str | None:
    if np.isnan(inputs["InputTensor"]).any():
        return ("InputTensor holds NaN and a pad reaches the window size: ORT MaxPool needs pads below the "
                "window, and explicit padding cannot keep a NaN's place")
    return None


def build(desc: Description) -> Graph:
    dtype = desc.output.dtype
    if dtype not in ACCUMULATE:
        raise GraphUnsupported(f"the MaxPool graph is float-only ({dtype.name})")
    x_shape = desc.tensors["InputTensor"].shape
    dy_shape = desc.tensors["InputGradientTensor"].shape
    spatial, out = x_shape[2:], dy_shape[2:]
    if not 1 <= len(spatial) <= 3:
        raise GraphUnsupported(f"ORT MaxPool takes 1 to 3 spatial dims, not {len(spatial)}")
    p = desc.params
    starts, ends = pads_for(spatial, out, p)
    native = all(pad < k for pad, k in zip(starts + ends, list(p["WindowSize"]) * 2, strict=True))
    if not native and dtype not in EXPLICIT_PAD_TYPES:
        raise GraphUnsupported(f"ORT MaxPool needs pads below the window size, and {dtype.name} has no room "
                               "for an explicit padding value")
    pool = {"kernel_shape": list(p["WindowSize"]), "strides": list(p["Strides"]),
            "dilations": list(p["Dilations"]), "ceil_mode": 0}
    axes = list(range(2, len(x_shape)))

    b = GraphBuilder("max_pooling_grad")
    x = b.input("InputTensor", dtype, x_shape)
    dy = b.input("InputGradientTensor", dtype, dy_shape)

    def pooled(value: str, **extra: Any) -> list[str]:
        outputs = b.op_multi("MaxPool", [value], 2, "pool", **pool, **extra)
        return [b.op("Slice", [v, b.ints([0] * len(axes)), b.ints(out), b.ints(axes)], "window") for v in outputs]

    if native:
        _, winner = pooled(x, pads=starts + ends)
        ones = b.op("ConstantOfShape", [b.ints(x_shape)], "ones", value=tensor_value(np.ones(1, np.float32)))
        reach, _ = pooled(ones, pads=starts + ends)
        valid = flat(b, b.op("Greater", [reach, b.const(np.float32(0))], "valid"))
        index = b.op("Where", [valid, flat(b, winner), b.const(np.int64(0))], "index")
        recipe, check = "MaxPool(pads) Indices", None
    else:
        pads = b.ints([0, 0, *starts, 0, 0, *ends])
        wide = b.cast(x, DataType.FLOAT64)
        lowest = b.const(np.float64(np.finfo(np.float64).min))
        wide = b.op("Where", [b.op("IsInf", [wide], "minus_inf", detect_positive=0), lowest, wide], "no_minus_inf")
        padded = b.op("Pad", [wide, pads, b.const(np.float64(-np.inf))], "padded", mode="constant")
        _, winner = pooled(padded)
        places = b.op("Pad", [iota(b, x_shape), pads, b.const(np.int64(-1))], "places", mode="constant")
        source = b.op("Gather", [flat(b, places), flat(b, winner)], "source", axis=0)
        valid = b.op("GreaterOrEqual", [source, b.const(np.int64(0))], "valid")
        index = b.op("Where", [valid, source, b.const(np.int64(0))], "index")
        recipe, check = "explicit -Inf Pad (float64) -> MaxPool Indices -> padded iota", no_nan_in_x

    acc = ACCUMULATE[dtype]
    grads = flat(b, dy if acc is dtype else b.cast(dy, acc))
    grads = b.op("Where", [valid, grads, b.zero(acc)], "routed")  # a select: NaN/Inf in dY go only where routed
    summed = scatter_into_zeros(b, int(np.prod(x_shape)), index, grads, acc, reduction="add")
    if acc is not dtype:
        summed = b.cast(summed, dtype)
    dx = b.op("Reshape", [summed, b.ints(x_shape)], "dx")
    cast = "" if acc is dtype else f", dY cast to {acc.name} and one rounding back"
    return b.finish(dx, dtype, x_shape, f"{recipe} -> ScatterElements add{cast}", check_inputs=check)
