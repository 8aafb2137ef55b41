"""The `layout` feature every operator's model shares: how a case's tensors lie in memory (contract §9).

An implementation reads and writes through each tensor's strides, TotalTensorSizeInBytes and binding offset, and
each departure from a packed row-major tensor takes its own path: a permuted order (NHWC) walks memory out of
order, a broadcast input (a stride of 0) reads one element many times, a padded tensor (a row stride larger than
the row, or TotalTensorSizeInBytes above the minimum) has gaps that must not be written, an offset binding starts
inside a larger buffer. A case's layout is one of

* `packed`: every tensor packed row-major at offset 0 (DirectML's default);
* `permuted`, `broadcast`, `padded`, `offset`: the tensors that are not packed are all of that kind;
* `mixed`: tensors of two or more of those kinds in one case (each tensor its own layout).

A tensor's kind: `broadcast` when a dimension of two or more elements has a stride of 0, else `padded` when its
elements leave gaps or TotalTensorSizeInBytes exceeds the minimum, else `permuted` when its strides are not
row-major, else `offset` when its binding's offset is not 0 (dimensions of one element do not count).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from dmlconform.surface.layout import DEFAULT, TensorLayout, packed_strides

PACKED, PERMUTED, BROADCAST, PADDED, OFFSET, MIXED = "packed", "permuted", "broadcast", "padded", "offset", "mixed"
LAYOUTS = (PACKED, PERMUTED, BROADCAST, PADDED, OFFSET, MIXED)
#: The kinds a single tensor can have (`mixed` is a case's).
TENSOR_KINDS = LAYOUTS[:-1]
ABOUT = ("how the case's tensors lie in memory: packed, permuted, broadcast, padded, offset, or mixed (tensors "
         "of different kinds)")


def tensor_kind(shape: tuple[int, ...], itemsize: int, layout: TensorLayout) -> str:
    """One tensor's layout kind (module docstring)."""
    if layout.is_default:
        return PACKED
    shape = tuple(int(size) for size in shape)
    strides = layout.strides if layout.strides is not None else packed_strides(shape)
    used = [axis for axis, size in enumerate(shape) if size > 1]
    if any(strides[axis] == 0 for axis in used):
        return BROADCAST
    count = math.prod(shape)
    footprint = (sum((size - 1) * stride for size, stride in zip(shape, strides, strict=True)) + 1) * itemsize
    gaps = count > 0 and footprint > count * itemsize
    # DMLCalcBufferTensorSize: the footprint rounded up to 4 bytes (dmlconform.surface.layout.minimum_total_bytes).
    extra = layout.total_bytes is not None and count > 0 and layout.total_bytes > (footprint + 3) & ~3
    if gaps or extra:
        return PADDED
    packed = packed_strides(shape)
    if any(strides[axis] != packed[axis] for axis in used):
        return PERMUTED
    if layout.offset:
        return OFFSET
    return PACKED


def case_kind(shapes: Mapping[str, tuple[int, ...]], itemsizes: Mapping[str, int],
              layouts: Mapping[str, TensorLayout] | None) -> str:
    """A case's layout (module docstring) from its tensors' sizes, element sizes and layouts (absent: packed)."""
    kinds = {tensor_kind(shapes[name], itemsizes[name], layout) for name, layout in (layouts or {}).items()
             if layout != DEFAULT} - {PACKED}
    if not kinds:
        return PACKED
    return kinds.pop() if len(kinds) == 1 else MIXED


def possible(rank: str) -> tuple[str, ...]:
    """The layouts a case of that rank can have: a single dimension cannot be permuted."""
    return tuple(kind for kind in LAYOUTS if not (kind == PERMUTED and rank == "1"))
