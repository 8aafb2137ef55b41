"""Layout families (contract §9): the operators' cases with their tensors laid out in memory as frameworks lay them.

`layout-pairs` draws the operator's own pairwise candidates (the `*-pairs` families' builders) and gives each one
a layout (dmlconform/interactions/layout.py), in turn:

* `permuted`: every tensor in one non-row-major order of its dimensions, NHWC (C fastest) half the time at rank 3
  and more, a shuffled order otherwise; the sizes stay in the logical (NCHW) order;
* `broadcast`: an input read with a stride of 0 on one or two dimensions, its data equal along them;
* `padded`: every tensor with a row stride larger than its row (gaps between rows), or every other element where
  it has one long dimension only, and mostly a TotalTensorSizeInBytes above the minimum;
* `offset`: every tensor bound at a byte offset (16, 48, 256 or 1024) into its buffer;
* `mixed`: each tensor its own kind of those, two kinds at least.

Then, like the pairwise families (families/pairs.py), it takes greedily the candidates that cover the most layout
combinations still missing: the smoke tier every layout, the standard tier every layout beside every value of every
other feature of the operator's model (the data type, the rank, the classes of X and of the gradient, the kinds of
axes and windows ...). The data stay the logical tensors and the goldens the reference's answers on them.

`layout-negative`: one case per DirectML layout rule, on the operator's small valid description
(families/negative.py): an output with a stride of 0 (per dimension), an output whose elements overlap, a
TotalTensorSizeInBytes below the minimum (per tensor); each checked to be refused for exactly that field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families import average_pooling, elementwise, pooling, resample, slice
from dmlconform.generation.families.common import Plan
from dmlconform.generation.families.negative import Variant, _spec, _start
from dmlconform.generation.families.pairs import Candidate, has_layout, pairwise_plans
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.interactions.layout import (
    BROADCAST,
    MIXED,
    OFFSET,
    PACKED,
    PADDED,
    PERMUTED,
    case_kind,
    tensor_kind,
)
from dmlconform.interactions.model import OperatorModel
from dmlconform.interactions.selection import Combination
from dmlconform.ops.base import Operator, TensorDesc
from dmlconform.suite.tiers import Tier
from dmlconform.surface.layout import TensorLayout, minimum_total_bytes, packed_strides

#: Each operator's pairwise candidate builder.
CANDIDATES: dict[str, Candidate] = {
    "ACTIVATION_RELU_GRAD": elementwise.pairs_candidate,
    "ELEMENT_WISE_CLIP_GRAD1": elementwise.pairs_candidate,
    "ELEMENT_WISE_CLIP_GRAD": elementwise.pairs_candidate,
    "SLICE_GRAD": slice.pairs_candidate,
    "MAX_POOLING_GRAD": pooling.pairs_candidate,
    "RESAMPLE_GRAD1": resample.pairs_candidate,
    "RESAMPLE_GRAD": resample.pairs_candidate,
    "AVERAGE_POOLING_GRAD": average_pooling.pairs_candidate,
}
#: The layouts candidates take in turn (candidate index modulo 5).
CYCLE = (PERMUTED, BROADCAST, PADDED, OFFSET, MIXED)
#: Binding offsets (bytes): multiples of DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT (16).
OFFSETS = (16, 48, 256, 1024)


def order_strides(shape: tuple[int, ...], order: list[int]) -> tuple[int, ...]:
    """Strides (elements) of a packed tensor whose dimensions lie in memory in `order`, slowest first."""
    strides = [0] * len(shape)
    step = 1
    for axis in reversed(order):
        strides[axis] = step
        step *= shape[axis]
    return tuple(strides)


def permutation(rank: int, draw: Draw) -> list[int]:
    """A memory order of the dimensions, slowest first: NHWC-style (the second dimension fastest) half the time at
    rank 3 and more, else a shuffle."""
    if rank >= 3 and draw.chance(1, 2):
        return [0, *range(2, rank), 1]
    return draw.shuffled(range(rank))


def permuted(desc: TensorSpec, order: list[int]) -> TensorLayout | None:
    layout = TensorLayout(order_strides(desc.shape, order))
    return layout if _kind(desc, layout) == PERMUTED else None


def padded(desc: TensorSpec, draw: Draw) -> TensorLayout:
    """A row stride larger than the row: the sizes of one dimension with an outer dimension of two or more elements
    padded by 1 to 3 elements (every other element where no dimension has one), and mostly extra total bytes."""
    shape = desc.shape
    used = [axis for axis, size in enumerate(shape) if size > 1]
    inner = [axis for axis in range(len(shape)) if used and axis > used[0]]
    if inner:
        axis = draw.choice(inner)
        grown = list(shape)
        grown[axis] += draw.between(1, 3)
        strides = packed_strides(tuple(grown))
    elif used:
        strides = tuple(2 * stride for stride in packed_strides(shape))
    else:
        strides = packed_strides(shape)
    minimum = minimum_total_bytes(TensorDesc(desc.dtype, shape), strides)
    extra = 4 * draw.between(1, 16) if draw.chance(2, 3) or not used else 0
    return TensorLayout(strides, minimum + extra if extra else None)


def offset(draw: Draw) -> TensorLayout:
    return TensorLayout(offset=draw.choice(OFFSETS))


def broadcast(array: np.ndarray, draw: Draw) -> tuple[np.ndarray, TensorLayout] | None:
    """The array made equal along one or two of its dimensions of two or more elements (the first slice repeated),
    read with a stride of 0 there."""
    used = [axis for axis, size in enumerate(array.shape) if size > 1]
    if not used:
        return None
    axes = sorted(draw.shuffled(used)[:1 + (len(used) > 1 and draw.chance(1, 3))])
    first = array
    for axis in axes:
        first = np.take(first, [0], axis=axis)
    data = np.ascontiguousarray(np.broadcast_to(first, array.shape))
    inner = tuple(1 if axis in axes else size for axis, size in enumerate(array.shape))
    strides = tuple(0 if axis in axes else stride for axis, stride in enumerate(packed_strides(inner)))
    return data, TensorLayout(strides)


def _kind(desc: TensorSpec, layout: TensorLayout) -> str:
    return tensor_kind(desc.shape, desc.dtype.numpy.itemsize, layout)


def with_layout(op: Operator, spec: CaseSpec, kind: str, draw: Draw) -> CaseSpec:
    """The case with its tensors laid out as `kind` says (module docstring); what cannot be laid out so stays packed
    (the choice measures what a case holds, not what it was meant to)."""
    output = op.outputs[0]
    tensors: dict[str, TensorSpec] = {**spec.inputs, output: spec.output}
    kinds: dict[str, str]
    if kind == MIXED:
        kinds = {}
        for name in draw.shuffled(list(tensors)):
            options = [PERMUTED, PADDED, OFFSET] + ([BROADCAST] if name in spec.inputs else [])
            fresh = [option for option in options if option not in kinds.values()]
            kinds[name] = draw.choice(fresh or options)
    elif kind == BROADCAST:
        kinds = {draw.choice(list(spec.inputs)): BROADCAST}
    else:
        kinds = {name: kind for name in tensors}
    order = permutation(len(spec.output.shape), draw)
    laid: dict[str, TensorSpec] = {}
    for name, tensor in tensors.items():
        chosen = kinds.get(name, PACKED)
        layout: TensorLayout | None = None
        if chosen == PERMUTED:
            layout = permuted(tensor, order) or permuted(tensor, permutation(len(tensor.shape), draw))
        elif chosen == PADDED:
            layout = padded(tensor, draw)
        elif chosen == OFFSET:
            layout = offset(draw)
        elif chosen == BROADCAST and tensor.array is not None:
            made = broadcast(tensor.array, draw)
            if made is not None:
                tensor = replace(tensor, array=made[0])
                layout = made[1]
        laid[name] = replace(tensor, layout=layout)
    return replace(spec, inputs={name: laid[name] for name in spec.inputs}, output=laid[output],
                   tags=(*spec.tags, "layout"))


def spec_kind(op: Operator, spec: CaseSpec) -> str:
    tensors = {**spec.inputs, op.outputs[0]: spec.output}
    return case_kind({name: t.shape for name, t in tensors.items()},
                     {name: t.dtype.numpy.itemsize for name, t in tensors.items()},
                     {name: t.layout for name, t in tensors.items() if t.layout is not None})


def layout_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """The operator's pairwise candidate `index`, laid out as the cycle's layout `index` says."""
    spec = CANDIDATES[family.op.name](family, draw, index, case_id)
    return with_layout(family.op, spec, CYCLE[index % len(CYCLE)], Draw(family.seed, index, len(CYCLE)))


def layout_goal(model: OperatorModel, combination: Combination) -> bool:
    """Every combination with a layout other than packed (the operator's families cover packed)."""
    return has_layout(model, combination) and combination[2][-1] != PACKED


def _label(spec: CaseSpec) -> str:
    from dmlconform.ops import find_operator

    op = find_operator(spec.op)
    return f"{spec_kind(op, spec)}-{spec.output.dtype.name.lower()}-r{len(spec.output.shape)}"


# -- negative cases ------------------------------------------------------------------------------------------------

def _laid(spec: CaseSpec, name: str, layout: TensorLayout) -> CaseSpec:
    if name in spec.inputs:
        return replace(spec, inputs={**spec.inputs, name: replace(spec.inputs[name], layout=layout)})
    return replace(spec, output=replace(spec.output, layout=layout))


def layout_variants(op: Operator) -> Iterator[tuple[str, str, str, TensorLayout]]:
    """(label, tensor, field refused, layout) for every layout rule DirectML's validation applies."""
    base = _start(op)
    output = op.outputs[0]
    shape = base.shapes[output]
    packed = packed_strides(shape)
    used = [axis for axis, size in enumerate(shape) if size > 1]
    for axis in used:
        strides = tuple(0 if a == axis else s for a, s in enumerate(packed))
        yield f"output-stride-zero-{axis}", output, f"{output}.Strides", TensorLayout(strides)
    # The outer used dimension's stride is the inner one's extent less one: its second row starts inside the first.
    outer, inner = used[0], used[-1]
    strides = tuple(shape[inner] - 1 if a == outer else s for a, s in enumerate(packed))
    yield "output-overlap", output, f"{output}.Strides", TensorLayout(strides)
    equal = tuple(1 if a in (outer, inner) else s for a, s in enumerate(packed))
    if equal != strides:
        yield "output-overlap-equal-strides", output, f"{output}.Strides", TensorLayout(equal)
    for name in op.tensors:
        desc = TensorDesc(base.dtypes[name], base.shapes[name])
        minimum = minimum_total_bytes(desc, packed_strides(desc.shape))
        yield (f"total-bytes-below-{name}", name, f"{name}.TotalTensorSizeInBytes",
               TensorLayout(total_bytes=minimum - 4))


def layout_negative(family: Family, tier: Tier) -> Iterator[Plan]:
    """Every layout rule, broken in each of its ways (one case per way), on the operator's small valid description."""
    if not family.new_in(tier):
        return
    for label, name, field, layout in layout_variants(family.op):
        case_id = f"{family.name}-{label.lower()}"
        variant: Variant = replace(_start(family.op), label=label, refuses=field)

        def make(draw: Draw, variant: Variant = variant, case_id: str = case_id, name: str = name,
                 layout: TensorLayout = layout) -> CaseSpec:
            spec = _spec(family.op, case_id, variant, ("generated", family.name, "layout", "invalid"))
            return _laid(spec, name, layout)

        yield Plan(case_id, (), make)


KINDS = {"layout-pairs": pairwise_plans(layout_candidate, layout_goal, _label), "layout-negative": layout_negative}
