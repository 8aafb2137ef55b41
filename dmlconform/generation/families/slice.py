"""Families of SliceGrad: scatter dY into zeros through a window of offsets, sizes and signed strides.

Every gradient element is distinct and non-zero, so a window walked from the wrong end, a stride applied
with the wrong sign or an element written one place off changes the output.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw, shape_for
from dmlconform.generation.families.common import Cell, Plan, cell_plans, generated, gradient_spec, tensor
from dmlconform.generation.families.common import cells as cells_of
from dmlconform.generation.families.pairs import pairwise_plans
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.generation.values import gradients
from dmlconform.interactions.slice_grad import axis_kinds
from dmlconform.suite.tiers import Tier

OP = "SLICE_GRAD"


def window(draw: Draw, extent: int, strides: list[int]) -> tuple[int, int, int, int]:
    """(offset, size, stride, dY count) for one dimension of the given extent."""
    size = draw.between(1, extent)
    offset = draw.between(0, extent - size)
    stride = draw.choice(strides)
    reach = 1 + (size - 1) // abs(stride)
    count = reach if draw.chance(2, 3) else draw.between(1, reach)
    return offset, size, stride, count


def slice_case(family: Family, case_id: str, dtype: DataType, dx: tuple[int, ...],
               axes: list[tuple[int, int, int, int]], dy: TensorSpec | None = None, draw: Draw | None = None,
               tags: tuple[str, ...] = ()) -> CaseSpec:
    offsets, sizes, strides, counts = (list(v) for v in zip(*axes, strict=True))
    params = {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    if dy is None:
        assert draw is not None
        dy = tensor(gradients(dtype, int(np.prod(counts)), draw).reshape(counts))
    return CaseSpec(case_id, OP, params, {"InputGradientTensor": dy}, TensorSpec(dtype, tuple(dx)),
                    tags=("generated", family.name, *tags))


def slice_cells(family: Family, tier: Tier) -> Iterator[Plan]:
    """Per (data type, rank) cell: a random window in every dimension."""
    elements = family.per_tier("elements", tier)
    strides = family.setting("strides", list)

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        dx = shape_for(draw, cell.rank, elements)
        axes = [window(draw, extent, strides) for extent in dx]
        return slice_case(family, case_id, cell.dtype, dx, axes, draw=draw)

    return cell_plans(family, tier, make)


def slice_strides(family: Family, tier: Tier) -> Iterator[Plan]:
    """Every stride with offset 0 or inside, a full or partial window and every or fewer elements, on the first axis
    of a 1- to 3-D case (the other axes random); data types in turn."""
    strides = family.setting("strides", list)
    grid = [(stride, inner_offset, partial, fewer) for stride in strides for inner_offset in (False, True)
            for partial in (False, True) for fewer in (False, True)]
    order = Draw(family.seed).shuffled(range(len(grid)))
    dtypes = sorted(family.op.support.all_dtypes, key=lambda d: d.value)
    for index in family.new_in(tier):
        if index >= len(grid):
            break
        stride, inner_offset, partial, fewer = grid[order[index]]
        dtype = dtypes[index % len(dtypes)]
        label = f"s{stride}-{'off' if inner_offset else 'at0'}-{'part' if partial else 'full'}-" \
                f"{'fewer' if fewer else 'all'}"
        case_id = f"{family.name}-{label}-{dtype.name.lower()}"

        def make(draw: Draw, stride=stride, inner_offset=inner_offset, partial=partial, fewer=fewer, dtype=dtype,
                 case_id=case_id) -> CaseSpec:
            size = abs(stride) * draw.between(2, 4) + draw.below(abs(stride))
            offset = draw.between(1, 3) if inner_offset else 0
            extent = offset + size + (draw.between(1, 3) if partial else 0)
            reach = 1 + (size - 1) // abs(stride)
            count = draw.between(1, reach - 1) if fewer else reach
            rank = 1 + draw.below(3)
            others = shape_for(draw, rank - 1, 24) if rank > 1 else ()
            axes = [(offset, size, stride, count)] + [window(draw, e, [-2, -1, 1, 2]) for e in others]
            return slice_case(family, case_id, dtype, (extent, *others), axes, draw=draw)

        yield Plan(case_id, (index,), make)


def slice_extremes(family: Family, tier: Tier) -> Iterator[Plan]:
    """Sizes at both ends: one element (every dimension 1) in every data type, then large windows whose gradient
    comes from a generate spec."""
    dtypes = sorted(family.op.support.all_dtypes, key=lambda d: d.value)
    for index in family.new_in(tier):
        if index < len(dtypes):
            dtype = dtypes[index]
            case_id = f"{family.name}-one-element-{dtype.name.lower()}"

            def make(draw: Draw, dtype=dtype, case_id=case_id) -> CaseSpec:
                rank = 1 + draw.below(8)
                return slice_case(family, case_id, dtype, (1,) * rank, [(0, 1, draw.choice([-1, 1]), 1)] * rank,
                                  draw=draw, tags=("one-element",))
        else:
            dtype = dtypes[(index * 5) % len(dtypes)]
            case_id = f"{family.name}-large-{dtype.name.lower()}-{index}"
            elements = family.per_tier("elements", tier)

            def make(draw: Draw, dtype=dtype, case_id=case_id, elements=elements) -> CaseSpec:
                rank = 2 + draw.below(3)
                dx = shape_for(draw, rank, elements)
                axes = [window(draw, extent, [-2, -1, 1, 2]) for extent in dx]
                counts = tuple(a[3] for a in axes)
                spec = gradient_spec(dtype, draw.below(2**31))
                return slice_case(family, case_id, dtype, dx, axes, dy=generated(dtype, counts, spec),
                                  tags=("large",))

        yield Plan(case_id, (index,), make)


KINDS = {"slice-cells": slice_cells, "slice-strides": slice_strides, "slice-extremes": slice_extremes}


def pairs_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """A small case whose every axis is of a kind drawn from the interaction model's (dmlconform/interactions/
    slice_grad.py): unit, whole or partial window, either direction, stride 1 or more, all or fewer gradients."""
    cells = sorted(cell for cell in cells_of(family.op))
    dtypes = sorted({cell.dtype_value for cell in cells})
    dtype = DataType(draw.choice(dtypes))
    ranks = [cell.rank for cell in cells if cell.dtype_value == dtype.value]
    # The highest rank half the time: a case covers a pair of neighbouring axes per axis.
    rank = max(ranks) if draw.chance(3, 4) else draw.choice(ranks)
    kinds = axis_kinds()
    dx, axes = [], []
    for _ in range(rank):
        window, direction, magnitude, gradient = draw.choice(kinds).split("/")
        step = (1 if magnitude == "s1" else draw.between(2, 3)) * (1 if direction == "forward" else -1)
        reach_needed = 2 if gradient == "fewer" else 1
        if window == "unit":
            extent, offset, size = 1, 0, 1
        else:
            size = max(1 + (reach_needed - 1) * abs(step), draw.between(1, 2))
            if window == "whole":
                extent, offset = size if size > 1 else 2, 0
                size = extent
            else:
                extent = size + draw.between(1, 2)
                offset = draw.between(0, extent - size)
                if offset == 0 and size == extent:
                    offset = 1
        reach = 1 + (size - 1) // abs(step)
        count = draw.between(1, reach - 1) if gradient == "fewer" else reach
        dx.append(extent)
        axes.append((offset, size, step, count))
    return slice_case(family, case_id, dtype, tuple(dx), axes, draw=draw, tags=("pairwise",))


KINDS["slice-pairs"] = pairwise_plans(pairs_candidate)
