"""SliceGrad's features: per axis, how its window is read, and the same for its outer neighbour.

An implementation's path is chosen per axis (a whole axis can be copied as a block, a stride of 1 walked as a
run, a backward stride reversed, a gradient smaller than the window clipped) and by how neighbouring axes combine
(two contiguous axes can be merged into one: DirectML 1.15.4 merges a whole, forward, stride-1 axis into a
forward, stride-1 outer neighbour even where the gradient is smaller than the window, examples/dml_harness/results/
DECISIONS.md §7). So a site is an axis: its kind and its outer neighbour's kind, each a combination of

* window: `unit` (an axis of one element), `whole` (offset 0, size the axis's), `partial`;
* direction: `forward` or `backward` (the stride's sign); stride: `s1` or `s2+` (its magnitude);
* gradient: `all` reachable elements of the window, or `fewer` (a Slice1 output chosen smaller).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import Feature, OperatorModel, Site

OP = "SLICE_GRAD"
NONE = "none"


def axis_kinds() -> tuple[str, ...]:
    kinds = [f"unit/{direction}/{stride}/all" for direction in ("forward", "backward") for stride in ("s1", "s2+")]
    kinds += [f"{window}/{direction}/{stride}/{gradient}" for window in ("whole", "partial")
              for direction in ("forward", "backward") for stride in ("s1", "s2+") for gradient in ("all", "fewer")]
    return tuple(kinds)


def axis_kind(extent: int, offset: int, size: int, stride: int, count: int) -> str:
    window = "unit" if extent == 1 else "whole" if offset == 0 and size == extent else "partial"
    direction = "forward" if stride > 0 else "backward"
    magnitude = "s1" if abs(stride) == 1 else "s2+"
    reach = 1 + (size - 1) // abs(stride)
    return f"{window}/{direction}/{magnitude}/{'all' if count == reach else 'fewer'}"


class SliceGradModel(OperatorModel):
    op = OP

    def __init__(self) -> None:
        kinds = axis_kinds()
        self.features = (
            dtype_feature(OP),
            rank_feature(OP),
            Feature("axis", kinds, "how the axis's window is read: window/direction/stride/gradient"),
            Feature("outer", (*kinds, NONE), "the same for the next axis out (none for the outermost)"),
        )

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        gradient = inputs["InputGradientTensor"]
        kinds = [axis_kind(extent, offset, size, stride, count) for extent, offset, size, stride, count in zip(
            output_shape, params["InputWindowOffsets"], params["InputWindowSizes"], params["InputWindowStrides"],
            gradient.shape, strict=True)]
        dtype, rank = DataType.from_numpy(gradient.dtype).name, str(len(output_shape))
        return {(dtype, rank, kind, kinds[axis - 1] if axis else NONE) for axis, kind in enumerate(kinds)}

    def possible_sites(self) -> Iterator[Site]:
        kinds = axis_kinds()
        for dtype, rank in support_cells(OP):
            for kind in kinds:
                yield dtype.name, str(rank), kind, NONE
                if rank > 1:
                    for outer in kinds:
                        yield dtype.name, str(rank), kind, outer
