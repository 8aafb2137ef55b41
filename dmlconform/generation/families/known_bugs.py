"""Cases built for the bugs real DirectML releases have been seen to have, so that the tiers people run catch them
(examples/dml_harness/results/DECISIONS.md §7: both found by the full tier, on every stack measured).

* `slice-merged-axes`: DirectML 1.15.4 merges an axis read whole, forwards, one by one (offset 0, size the axis's,
  stride 1) into an outer neighbour read forwards one by one, as if the gradient were contiguous across both; a
  gradient smaller than the window on the merged axis (a valid Slice1 output) then lands on the wrong elements.
* `pool-lowest-windows`: DirectML 1.15.4's running maximum starts at −FLT_MAX on a window's first tap and moves on a
  strict `>`, so a window holding only −∞ and −FLT_MAX, −∞ first, sends its gradient to the first tap instead of
  the maximum. With a NaN among them no NaN reading the pages leave open picks that first −∞ either (nan-sticks and
  nan-ignored pick −FLT_MAX, nan-wins the NaN), so the NaN form is the same bug, not another reading.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Plan, tensor
from dmlconform.generation.families.slice import slice_case
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.generation.values import gradients
from dmlconform.suite.tiers import Tier

#: (data type, the output's sizes, the gradient's size on the whole axis, whether the outer neighbour's window is
#: partial), outermost axis first; the whole axis is the last, its outer neighbour read forwards one by one (whole,
#: or from offset 1 to its end: at least two of its elements, or merging would not move anything).
MERGED_AXES = (
    (DataType.FLOAT32, (3, 5), 2, False),
    (DataType.INT32, (2, 3, 4), 3, True),
    (DataType.FLOAT16, (4, 6), 1, True),
    (DataType.UINT8, (2, 2, 3, 5), 4, False),
    (DataType.INT16, (5, 4), 2, True),
    (DataType.FLOAT32, (2, 3, 4, 4), 2, True),
)


def slice_merged_axes(family: Family, tier: Tier) -> Iterator[Plan]:
    """An axis read whole, forwards, stride 1, with fewer gradients than the window, inside an axis read forwards
    stride 1 (the outer axes random)."""
    for index in family.new_in(tier):
        if index >= len(MERGED_AXES):
            break
        dtype, dx, count, outer_partial = MERGED_AXES[index]
        case_id = f"{family.name}-{dtype.name.lower()}-r{len(dx)}-{index}"

        def make(draw: Draw, dtype=dtype, dx=dx, count=count, outer_partial=outer_partial,
                 case_id=case_id) -> CaseSpec:
            axes = [(0, extent, draw.choice([-1, 1]), extent) for extent in dx[:-2]]
            outer = dx[-2]
            offset = 1 if outer_partial else 0
            axes.append((offset, outer - offset, 1, outer - offset))
            axes.append((0, dx[-1], 1, count))
            return slice_case(family, case_id, dtype, dx, axes, draw=draw, tags=("known-bug",))

        yield Plan(case_id, (index,), make)


#: Windows of three taps along W (stride 3: apart): each of −∞ and −FLT_MAX only with −∞ first, or a NaN among them,
#: beside ordinary windows.
LOWEST_WINDOWS = (
    ("-inf", "-max", "-inf"),
    ("-inf", "-inf", "-max"),
    ("-inf", "-max", "-max"),
)
LOWEST_WITH_NAN = (
    ("-inf", "nan", "-max"),
    ("-inf", "-max", "nan"),
)


def pool_lowest_windows(family: Family, tier: Tier) -> Iterator[Plan]:
    """Windows holding only −∞ and the type's lowest finite value, −∞ first, among ordinary windows: float32 and
    float16, 4-D and 5-D, and the NaN form (a candidate case for the NaN readings)."""
    layouts = [(DataType.FLOAT32, 4, False), (DataType.FLOAT32, 5, True), (DataType.FLOAT16, 4, True),
               (DataType.FLOAT32, 4, True)]
    for index in family.new_in(tier):
        if index >= len(layouts):
            break
        dtype, rank, with_nan = layouts[index]
        case_id = f"{family.name}-{dtype.name.lower()}-r{rank}{'-nan' if with_nan else ''}-{index}"

        def make(draw: Draw, dtype=dtype, rank=rank, with_nan=with_nan, case_id=case_id) -> CaseSpec:
            t = dtype.numpy.type
            lowest = {"-inf": t(-np.inf), "-max": t(-np.finfo(dtype.numpy).max), "nan": t(np.nan)}
            windows = [*LOWEST_WINDOWS, *(LOWEST_WITH_NAN if with_nan else ())]
            ordinary = 3
            width = 3 * (len(windows) + ordinary)
            x = -np.abs(gradients(dtype, width, draw, with_specials=False)) * t(3)
            order = draw.shuffled(range(len(windows) + ordinary))
            for slot, window in zip(order, windows, strict=False):
                x[3 * slot: 3 * slot + 3] = [lowest[name] for name in window]
            spatial_ones = (1,) * (rank - 3)
            x_shape = (1, 1, *spatial_ones, width)
            dy_shape = (1, 1, *spatial_ones, width // 3)
            dy = gradients(dtype, width // 3, draw, with_specials=False).reshape(dy_shape)
            dims = rank - 2
            params = {"Strides": [1] * (dims - 1) + [3], "WindowSize": [1] * (dims - 1) + [3],
                      "StartPadding": [0] * dims, "EndPadding": [0] * dims, "Dilations": [1] * dims}
            candidates = {variant: variant for variant in family.op.variants} if with_nan else {}
            return CaseSpec(case_id, family.op.name, params, {"InputTensor": tensor(x.reshape(x_shape)),
                                                              "InputGradientTensor": tensor(dy)},
                            TensorSpec(dtype, x_shape),
                            tags=("generated", family.name, "known-bug", *(("nan", "candidates") if with_nan else ())),
                            candidates=candidates, behaviour="maxpool-nan-input" if with_nan else None)

        yield Plan(case_id, (index,), make)


KINDS = {"slice-merged-axes": slice_merged_axes, "pool-lowest-windows": pool_lowest_windows}
