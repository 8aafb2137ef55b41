"""DML_OPERATOR_SLICE_GRAD: scatter dY into a zero tensor of the forward input's sizes.

Per dimension the forward Slice1 reads `start + stride*c`, where `start = offset` for a positive
stride and `offset + size - 1` for a negative one (the window is walked backwards from its end).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

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

_NARROW = frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8})
SUPPORT = SupportTable((
    SupportRow(L.L3_0, 4, 5, _NARROW),
    SupportRow(L.L3_1, 1, 8, _NARROW),
    SupportRow(L.L4_1, 1, 8, _NARROW | {T.FLOAT64, T.INT64, T.UINT64}),
))


def window_indices(offsets: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...],
                   counts: tuple[int, ...]) -> list[np.ndarray]:
    """Per dimension, the forward-input coordinates that the `counts` slice elements came from."""
    axes = []
    for offset, size, stride, count in zip(offsets, sizes, strides, counts, strict=True):
        start = offset if stride > 0 else offset + size - 1
        axes.append(start + stride * np.arange(count, dtype=np.int64))
    return axes


class SliceGrad(Operator):
    name = "SLICE_GRAD"
    inputs = ("InputGradientTensor",)
    support = SUPPORT
    params = (Param("InputWindowOffsets", ParamKind.UINTS), Param("InputWindowSizes", ParamKind.UINTS),
              Param("InputWindowStrides", ParamKind.INTS))
    dimension_arrays = ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides")

    def check_rules(self, desc: Description) -> None:
        p = desc.params
        dy = desc.tensors["InputGradientTensor"].shape
        dx = desc.tensors["OutputGradientTensor"].shape
        for i, (offset, size, stride) in enumerate(zip(p["InputWindowOffsets"], p["InputWindowSizes"],
                                                       p["InputWindowStrides"], strict=True)):
            if stride == 0:
                raise DescriptionError(f"InputWindowStrides[{i}]", "must not be 0 (SliceGrad needs non-zero "
                                       "strides)")
            if size < 1:
                raise DescriptionError(f"InputWindowSizes[{i}]", f"{size} must be at least 1")
            if offset + size > dx[i]:
                raise DescriptionError(f"InputWindowOffsets[{i}]", f"offset {offset} + size {size} exceeds "
                                       f"OutputGradientTensor.Sizes[{i}] = {dx[i]}")
            reachable = 1 + (size - 1) // abs(stride)
            if not 1 <= dy[i] <= reachable:
                raise DescriptionError(f"InputGradientTensor.Sizes[{i}]", f"{dy[i]} must be between 1 and "
                                       f"{reachable} = 1 + (size {size} - 1) // |stride {stride}|")

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        dy = inputs["InputGradientTensor"]
        p = desc.params
        axes = window_indices(p["InputWindowOffsets"], p["InputWindowSizes"], p["InputWindowStrides"], dy.shape)
        dx = np.zeros(desc.output.shape, dtype=dy.dtype)
        dx[np.ix_(*axes)] = dy  # strides are non-zero, so no two elements land on the same place
        return Reference({"OutputGradientTensor": dx})


SLICE_GRAD = SliceGrad()
