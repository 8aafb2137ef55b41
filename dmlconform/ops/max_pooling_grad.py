"""DML_OPERATOR_MAX_POOLING_GRAD: route each dY element to the argmax of its window in X.

Tap position per spatial dim: `p = o*stride - startPad + k*dilation`. Taps outside the input
(padding, or past the padded input when dY is larger than the pooled size) never win. Taps are
scanned in row-major order with a strict `>`, so ties go to the lowest flat index. Overlapping
windows add; untouched elements are 0.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from dmlconform.compare.accumulation import Accumulation
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops.base import (
    Description,
    DescriptionError,
    Operator,
    Param,
    ParamKind,
    Reference,
)

SUPPORT = SupportTable((
    SupportRow(L.L3_0, 4, 4, frozenset({T.FLOAT32, T.FLOAT16})),
    SupportRow(L.L4_0, 4, 5, frozenset({T.FLOAT32, T.FLOAT16})),
))

_GEOMETRY = ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations")


def pooled_size(extent: int, window: int, stride: int, start: int, end: int, dilation: int) -> int:
    """The usual dY extent: (in + startPad + endPad - dilated window) // stride + 1."""
    return (extent + start + end - ((window - 1) * dilation + 1)) // stride + 1


def argmax_indices(x: np.ndarray, out_spatial: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
                   nan_rule: str = "nan-sticks") -> np.ndarray:
    """Flat index into x of each window's winner, shape [N, C, *out_spatial]; -1 where no tap is inside.

    nan_rule: `nan-sticks` (strict `>` scan: a NaN wins only as the first valid tap), `nan-wins`
    (the first NaN of a window wins), `nan-wins-last` (the last NaN wins: `v > best || isnan(v)`, as
    PyTorch scans) or `nan-ignored` (NaN wins only if every valid tap is NaN).
    """
    spatial = x.shape[2:]
    dims = len(spatial)
    strides, dilations, start = params["Strides"], params["Dilations"], params["StartPadding"]
    # Pad X so that every tap is a strided slice (a view); `inside` says which padded places are real.
    last_tap = [(o - 1) * s - a + (k - 1) * d for o, s, a, k, d in
                zip(out_spatial, strides, start, params["WindowSize"], dilations, strict=True)]
    before = [max(0, a) for a in start]
    after = [max(0, t - (n - 1)) for t, n in zip(last_tap, spatial, strict=True)]
    region = tuple(slice(b, b + n) for b, n in zip(before, spatial, strict=True))
    padded = np.zeros(x.shape[:2] + tuple(b + n + e for b, n, e in zip(before, spatial, after, strict=True)),
                      dtype=x.dtype)
    padded[(slice(None), slice(None), *region)] = x
    inside = np.zeros(padded.shape[2:], dtype=bool)
    inside[region] = True

    taps = list(itertools.product(*(range(w) for w in params["WindowSize"])))
    best_value = np.zeros(x.shape[:2] + out_spatial, dtype=x.dtype)
    best_tap = np.full(x.shape[:2] + out_spatial, -1, dtype=np.int16 if len(taps) < 2**15 else np.int32)
    for number, tap in enumerate(taps):
        window = tuple(slice(b - a + k * d, b - a + k * d + (o - 1) * s + 1, s) for b, a, k, d, o, s in
                       zip(before, start, tap, dilations, out_spatial, strides, strict=True))
        values = padded[(slice(None), slice(None), *window)]
        take = values > best_value
        if nan_rule == "nan-wins":
            take |= np.isnan(values) & ~np.isnan(best_value)
        elif nan_rule == "nan-wins-last":
            take |= np.isnan(values)
        elif nan_rule == "nan-ignored":
            take |= np.isnan(best_value) & ~np.isnan(values)
        take &= inside[window]
        take |= (best_tap < 0) & inside[window]
        np.copyto(best_value, values, where=take)
        best_tap[take] = number

    # Winner's flat index = plane offset + sum over dims of (o*stride - startPad + k*dilation) * place.
    tap_table = np.array(taps, dtype=np.int64).reshape(len(taps), dims)
    plane_strides = np.cumprod((1, *spatial[::-1]))[:-1][::-1]
    index = np.zeros(best_tap.shape, dtype=np.int64)
    chosen = np.maximum(best_tap, 0)
    for i in range(dims):
        shape = [1] * (dims + 2)
        shape[2 + i] = out_spatial[i]
        origin = (np.arange(out_spatial[i], dtype=np.int64) * strides[i] - start[i]).reshape(shape)
        index += (origin + tap_table[chosen, i] * dilations[i]) * plane_strides[i]
    plane = int(np.prod(spatial))
    index += np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * dims) * plane
    return np.where(best_tap >= 0, index, -1)


class MaxPoolingGrad(Operator):
    name = "MAX_POOLING_GRAD"
    inputs = ("InputTensor", "InputGradientTensor")
    support = SUPPORT
    params = tuple(Param(name, ParamKind.UINTS) for name in _GEOMETRY)
    dimension_arrays = _GEOMETRY
    same_sizes = ("InputTensor", "OutputGradientTensor")
    variants = ("nan-sticks", "nan-wins", "nan-wins-last", "nan-ignored")
    dimension_count_rule = "the spatial dimension count (InputTensor's DimensionCount - 2)"

    def expected_dimension_count(self, desc: Description) -> int:
        return desc.tensors["InputTensor"].rank - 2

    def check_rules(self, desc: Description) -> None:
        for name in ("Strides", "WindowSize", "Dilations"):
            for i, value in enumerate(desc.params[name]):
                if value < 1:
                    raise DescriptionError(f"{name}[{i}]", f"{value} must be at least 1")
        x, dy = desc.tensors["InputTensor"].shape, desc.tensors["InputGradientTensor"].shape
        for i, label in enumerate(("BatchCount", "ChannelCount")):
            if dy[i] != x[i]:
                raise DescriptionError(f"InputGradientTensor.Sizes[{i}]", f"{label} {dy[i]} differs from "
                                       f"InputTensor's {x[i]}")

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        with np.errstate(invalid="ignore"):
            winners = argmax_indices(x, dy.shape[2:], desc.params, variant or self.variants[0]).ravel()
        routed = winners >= 0
        target, grads = winners[routed], dy.ravel()[routed].astype(np.float64)
        value = np.bincount(target, weights=grads, minlength=x.size).reshape(x.shape)
        abs_sum = np.bincount(target, weights=np.abs(grads), minlength=x.size).reshape(x.shape)
        count = np.bincount(target, minlength=x.size).reshape(x.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            out = value.astype(dy.dtype)
        return Reference({"OutputGradientTensor": out},
                         {"OutputGradientTensor": Accumulation(value, abs_sum, count)})

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        counts = ref.accumulation["OutputGradientTensor"].count
        return Tolerance.bound() if counts.size and counts.max() > 1 else Tolerance.exact()


MAX_POOLING_GRAD = MaxPoolingGrad()
