"""A tensor's memory layout (DML_BUFFER_TENSOR_DESC's Strides and TotalTensorSizeInBytes, and the buffer binding's
Offset) and DirectML's rules for it (docs/api-surface.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dmlconform.dtypes import DataType


class Shaped(Protocol):
    """A tensor's description as far as its layout needs it (ops.base.TensorDesc is one)."""

    @property
    def dtype(self) -> DataType: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def rank(self) -> int: ...


class LayoutRuleError(Exception):
    """A layout DirectML refuses (ops.base turns it into a DescriptionError: a negative case)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

#: DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT: a buffer binding's offset is a multiple of it.
MINIMUM_ALIGNMENT = 16
#: The most bytes one tensor's buffer may span (offset + total_bytes): 1 GiB, as a tensor's elements (suite/tensors.py).
MAX_BUFFER_BYTES = 1 << 30


@dataclass(frozen=True)
class TensorLayout:
    """Where a tensor's elements lie. The default is DirectML's default: packed row-major (no Strides),
    TotalTensorSizeInBytes as DMLCalcBufferTensorSize gives it, bound at offset 0 of its own buffer."""

    #: Elements (not bytes) between neighbours of each dimension; None: packed row-major.
    strides: tuple[int, ...] | None = None
    #: TotalTensorSizeInBytes; None: the minimum DirectML computes (`minimum_total_bytes`).
    total_bytes: int | None = None
    #: The binding's byte offset into its buffer (DML_BUFFER_BINDING::Offset).
    offset: int = 0

    @property
    def is_default(self) -> bool:
        return self.strides is None and self.total_bytes is None and self.offset == 0

    def to_dict(self) -> dict[str, object]:
        """The suite and result documents' keys, only those that are set."""
        out: dict[str, object] = {}
        if self.strides is not None:
            out["strides"] = list(self.strides)
        if self.total_bytes is not None:
            out["total_bytes"] = self.total_bytes
        if self.offset:
            out["offset"] = self.offset
        return out


DEFAULT = TensorLayout()


def packed_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def strides_of(desc: Shaped, layout: TensorLayout) -> tuple[int, ...]:
    return layout.strides if layout.strides is not None else packed_strides(desc.shape)


def footprint_bytes(desc: Shaped, strides: tuple[int, ...]) -> int:
    """Bytes from the first element to the end of the last one: (Σ (Sizes_k - 1)·Strides_k + 1) · element size."""
    last = sum((size - 1) * stride for size, stride in zip(desc.shape, strides, strict=True))
    return (last + 1) * desc.dtype.numpy.itemsize


def minimum_total_bytes(desc: Shaped, strides: tuple[int, ...]) -> int:
    """DMLCalcBufferTensorSize (DirectMLX): the footprint rounded up to a multiple of 4 bytes."""
    return (footprint_bytes(desc, strides) + 3) & ~3


def total_bytes_of(desc: Shaped, layout: TensorLayout) -> int:
    if layout.total_bytes is not None:
        return layout.total_bytes
    return minimum_total_bytes(desc, strides_of(desc, layout))


def element_offsets(desc: Shaped, layout: TensorLayout) -> np.ndarray:
    """The byte offset, from the binding, of every logical element in row-major order (int64)."""
    strides = strides_of(desc, layout)
    offsets = np.zeros(desc.shape, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(desc.shape, strides, strict=True)):
        shape = [1] * len(desc.shape)
        shape[axis] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offsets.reshape(-1) * desc.dtype.numpy.itemsize


def check_layout(name: str, desc: Shaped, layout: TensorLayout, output: bool) -> None:
    """DirectML's rules for a buffer tensor's layout; LayoutRuleError (DirectML refuses the description) naming the
    field. What the suite format itself refuses (a stride list of the wrong length, a misaligned offset) is checked
    where the suite is read (`read_layout`)."""
    if layout.is_default:
        return
    strides = strides_of(desc, layout)
    if output and layout.strides is not None:
        if any(stride == 0 for size, stride in zip(desc.shape, strides, strict=True) if size > 1):
            raise LayoutRuleError(f"{name}.Strides", f"{list(strides)}: an output cannot broadcast (a stride of 0 "
                                   "makes elements share memory)")
        if _overlaps(desc, layout):
            raise LayoutRuleError(f"{name}.Strides", f"{list(strides)} with Sizes {list(desc.shape)}: two of "
                                   "the output's elements share memory")
    minimum = minimum_total_bytes(desc, strides)
    if layout.total_bytes is not None and layout.total_bytes < minimum:
        raise LayoutRuleError(f"{name}.TotalTensorSizeInBytes", f"{layout.total_bytes} is below the {minimum} "
                               f"bytes Sizes {list(desc.shape)} and Strides {list(strides)} need "
                               "(DMLCalcBufferTensorSize)")


def _overlaps(desc: Shaped, layout: TensorLayout) -> bool:
    strides = strides_of(desc, layout)
    span = sum((size - 1) * stride for size, stride in zip(desc.shape, strides, strict=True)) + 1
    if math.prod(desc.shape) > span:
        return True  # more elements than positions: some share one (and nothing as large as Sizes is allocated)
    offsets = element_offsets(desc, layout)
    return int(np.unique(offsets).size) != offsets.size


class LayoutError(ValueError):
    """A layout the suite format refuses; `field` is the key (strides, total_bytes or offset)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


KEYS = ("strides", "total_bytes", "offset")


def read_layout(spec: object, desc: Shaped) -> TensorLayout:
    """The layout keys of a suite's tensor mapping (absent: the default layout)."""
    if not isinstance(spec, dict) or not any(key in spec for key in KEYS):
        return DEFAULT
    strides = spec.get("strides")
    if strides is not None:
        if not isinstance(strides, list) or any(isinstance(s, bool) or not isinstance(s, int) for s in strides):
            raise LayoutError("strides", f"{strides!r} must be a list of non-negative integers (elements)")
        if len(strides) != desc.rank:
            raise LayoutError("strides", f"{strides!r} has {len(strides)} entries; the tensor has {desc.rank} "
                              "dimensions")
        if any(not 0 <= s <= 2**32 - 1 for s in strides):
            raise LayoutError("strides", f"{strides!r}: DML strides are UINT, from 0 to 4294967295")
        strides = tuple(strides)
    total = spec.get("total_bytes")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int)
                              or not 1 <= total <= MAX_BUFFER_BYTES):
        raise LayoutError("total_bytes", f"{total!r} must be a whole number of bytes from 1 to "
                          f"{MAX_BUFFER_BYTES}")
    offset = spec.get("offset", 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_BUFFER_BYTES:
        raise LayoutError("offset", f"{offset!r} must be a whole number of bytes from 0 to {MAX_BUFFER_BYTES}")
    if offset % MINIMUM_ALIGNMENT:
        raise LayoutError("offset", f"{offset} is not a multiple of {MINIMUM_ALIGNMENT} "
                          "(DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT): a buffer binding cannot start there")
    layout = TensorLayout(strides, total, offset)
    footprint = footprint_bytes(desc, strides_of(desc, layout)) if math.prod(desc.shape) else 0
    if offset + max(footprint, total or 0) > MAX_BUFFER_BYTES:
        raise LayoutError("strides" if strides is not None else "total_bytes",
                          f"the tensor's buffer would span {offset + max(footprint, total or 0)} bytes; at most "
                          f"{MAX_BUFFER_BYTES}")
    return layout
