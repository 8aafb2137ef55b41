"""The bytes of each buffer a case binds, before and after the dispatch (contract §9, docs/api-surface.md).

Before: every byte of an input's buffer outside its elements, and every byte of an output's buffer (its elements
too), is a canary: a pattern no test datum takes (0xF9 to 0xFF: NaN or a huge negative number as floats, -1 to
-7 as integers), varying with the byte's position so that bytes copied to the wrong place show. After: the logical
tensor is read back from where its elements lie, and every other byte must be as it was; the first that is not is
named, with where it lies (before the binding, a gap between elements, the padding up to TotalTensorSizeInBytes,
after the binding).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from dmlconform.surface.layout import (
    MINIMUM_ALIGNMENT,
    Shaped,
    TensorLayout,
    element_offsets,
    minimum_total_bytes,
    strides_of,
    total_bytes_of,
)
from dmlconform.surface.paths import EDGES_SUFFIX

#: Bytes of canary after the binding's end, in every buffer.
TAIL_BYTES = 64
_CANARY_PERIOD = 7


def canary(count: int, start: int = 0) -> np.ndarray:
    return (0xFF - (np.arange(start, start + count, dtype=np.int64) % _CANARY_PERIOD)).astype(np.uint8)


def buffer_size(desc: Shaped, layout: TensorLayout) -> int:
    """The whole buffer: the bytes before the binding, the binding's TotalTensorSizeInBytes (or the elements' own
    span, where a negative case declares less), and a tail, rounded up to the alignment."""
    span = max(total_bytes_of(desc, layout), minimum_total_bytes(desc, strides_of(desc, layout)))
    size = layout.offset + span + TAIL_BYTES
    return size + (-size % MINIMUM_ALIGNMENT)


def _elements(desc: Shaped, layout: TensorLayout, buffer: np.ndarray) -> np.ndarray:
    """The buffer's bytes as the tensor's elements lie in it: a view (no copy) of shape Sizes + (element size,), each
    element's bytes where its layout puts them; broadcast elements (stride 0) view the same bytes. NumPy refuses a view
    that would reach past the buffer."""
    item = desc.dtype.numpy.itemsize
    strides = (*(stride * item for stride in strides_of(desc, layout)), 1)
    return np.ndarray((*desc.shape, item), dtype=buffer.dtype, buffer=buffer, offset=layout.offset, strides=strides)


def _bytes_of(desc: Shaped, array: np.ndarray) -> np.ndarray:
    """A logical tensor's elements as little-endian bytes, shape Sizes + (element size,)."""
    item = desc.dtype.numpy.itemsize
    data = np.ascontiguousarray(array, dtype=desc.dtype.numpy.newbyteorder("<"))
    return data.view(np.uint8).reshape((*desc.shape, item))


def input_image(desc: Shaped, layout: TensorLayout, array: np.ndarray) -> bytes:
    """An input's buffer: its elements where the layout puts them, canaries elsewhere. Broadcast elements (stride
    0) share bytes; the loader made sure their values agree."""
    image = canary(buffer_size(desc, layout))
    _elements(desc, layout, image)[...] = _bytes_of(desc, array)
    return image.tobytes()


def output_image(desc: Shaped, layout: TensorLayout) -> bytes:
    """An output's buffer before the dispatch: canaries only, so an element left unwritten shows too."""
    return canary(buffer_size(desc, layout)).tobytes()


def read_elements(desc: Shaped, layout: TensorLayout, image: bytes) -> np.ndarray:
    """The logical tensor from a buffer image (of `buffer_size` bytes)."""
    picked = np.ascontiguousarray(_elements(desc, layout, np.frombuffer(image, dtype=np.uint8)))
    little = desc.dtype.numpy.newbyteorder("<")
    return picked.view(little).astype(desc.dtype.numpy).reshape(desc.shape)


@dataclass(frozen=True)
class StrayWrite:
    """A byte outside a tensor's elements that changed during the dispatch."""

    tensor: str
    position: int
    written: int
    found: int
    where: str
    #: How many such bytes there were in this buffer.
    count: int

    def __str__(self) -> str:
        more = f" ({self.count} bytes outside its elements changed)" if self.count > 1 else ""
        return (f"{self.tensor}: byte {self.position} of its buffer ({self.where}) was 0x{self.written:02X} before "
                f"the dispatch and 0x{self.found:02X} after{more}")


def stray_write(name: str, desc: Shaped, layout: TensorLayout, before: bytes, after: bytes) -> StrayWrite | None:
    """The first byte outside the elements that differs between `before` and `after`, or None."""
    first, last = np.frombuffer(before, dtype=np.uint8), np.frombuffer(after, dtype=np.uint8)
    changed = first != last
    _elements(desc, layout, changed)[...] = False
    where = np.flatnonzero(changed)
    if not where.size:
        return None
    position = int(where[0])
    return StrayWrite(name, position, int(first[position]), int(last[position]), locate(desc, layout, position),
                      int(where.size))


def locate(desc: Shaped, layout: TensorLayout, position: int) -> str:
    """Where a buffer byte that is not an element's lies, in words."""
    start, total = layout.offset, total_bytes_of(desc, layout)
    if position < start:
        return f"{start - position} byte(s) before the binding at offset {start}"
    if position >= start + total:
        return f"{position - start - total + 1} byte(s) past the binding's {total} bytes (TotalTensorSizeInBytes)"
    item = desc.dtype.numpy.itemsize
    offsets = element_offsets(desc, layout)
    relative = position - start
    below = offsets[offsets + item <= relative]
    if not below.size:
        return f"byte {relative} of the binding, before its first element"
    last_before = int(below.max())
    if last_before == int(offsets.max()):
        return f"byte {relative} of the binding, in the padding after the last element, up to TotalTensorSizeInBytes"
    flat = int(np.flatnonzero(offsets == last_before)[0])
    index = [int(i) for i in np.unravel_index(flat, desc.shape)]
    return f"byte {relative} of the binding, in the gap after element {index}"


def wire_size_ok(images: Mapping[str, bytes], sizes: Mapping[str, int]) -> str:
    """'' if every expected image came back whole; else what is wrong, in one line."""
    for name, size in sizes.items():
        if name not in images:
            return f"{name}: the backend returned no buffer image"
        if len(images[name]) != size:
            return f"{name}: the backend returned a buffer image of {len(images[name])} bytes, expected {size}"
    return ""


class Layouts(Protocol):
    """A description as far as its buffers need it (ops.base.Description is one)."""

    @property
    def tensors(self) -> Mapping[str, Shaped]: ...

    def layout(self, name: str) -> TensorLayout: ...


@dataclass(frozen=True)
class Binding:
    """Which buffers a case binds: its inputs and outputs by name, an output bound over an input in place, and on
    the graph path each output's second copy (`name@edges`, the operator between identity nodes)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    #: output -> the input whose buffer it shares.
    aliases: Mapping[str, str]
    edges: bool = False

    def output_buffers(self) -> dict[str, str]:
        """Each output image name -> the buffer it is read from."""
        names = {name: self.aliases.get(name, name) for name in self.outputs}
        if self.edges:
            names |= {name + EDGES_SUFFIX: name + EDGES_SUFFIX for name in self.outputs}
        return names

    def buffers(self) -> tuple[str, ...]:
        """Every buffer, inputs first: what a backend returns after the dispatch."""
        own = [name for name in self.outputs if name not in self.aliases]
        return (*self.inputs, *own, *([name + EDGES_SUFFIX for name in self.outputs] if self.edges else []))


def _base(name: str) -> str:
    return name.removesuffix(EDGES_SUFFIX)


def images_before(desc: Layouts, binding: Binding, inputs: Mapping[str, np.ndarray]) -> dict[str, bytes]:
    """Every buffer as written before the dispatch."""
    images = {name: input_image(desc.tensors[name], desc.layout(name), inputs[name]) for name in binding.inputs}
    for name in binding.buffers():
        if name not in images:
            images[name] = output_image(desc.tensors[_base(name)], desc.layout(_base(name)))
    return images


@dataclass
class ReadBack:
    """What a dispatch left in the buffers: the outputs (and their graph copies) as logical tensors, and every
    buffer that changed outside the elements it may write."""

    outputs: dict[str, np.ndarray]
    stray: list[StrayWrite]
    problem: str = ""


def read_back(desc: Layouts, binding: Binding, before: Mapping[str, bytes], after: Mapping[str, bytes]) -> ReadBack:
    sizes = {name: len(before[name]) for name in binding.buffers()}
    problem = wire_size_ok(after, sizes)
    if problem:
        return ReadBack({}, [], problem)
    outputs = {}
    for image, buffer in binding.output_buffers().items():
        # In place, the output lies in its input's buffer as that input does.
        outputs[image] = read_elements(desc.tensors[_base(image)], desc.layout(_base(buffer)), after[buffer])
    stray: list[StrayWrite] = []
    aliased = set(binding.aliases.values())
    for name in binding.buffers():
        tensor, layout = desc.tensors[_base(name)], desc.layout(_base(name))
        if name in binding.inputs and name not in aliased:
            # An input is read, never written: every byte of its buffer, elements included.
            if before[name] != after[name]:
                first = np.flatnonzero(np.frombuffer(before[name], np.uint8) != np.frombuffer(after[name], np.uint8))
                position = int(first[0])
                stray.append(StrayWrite(name, position, before[name][position], after[name][position],
                                        "an input's buffer, which the operator only reads", int(first.size)))
            continue
        found = stray_write(name, tensor, layout, before[name], after[name])
        if found is not None:
            stray.append(found)
    return ReadBack(outputs, stray)


def write_elements(desc: Shaped, layout: TensorLayout, image: bytearray, array: np.ndarray) -> None:
    """Store a logical tensor's elements where the layout puts them, touching no other byte."""
    _elements(desc, layout, np.frombuffer(image, dtype=np.uint8))[...] = _bytes_of(desc, array)


def read_inputs(desc: Layouts, binding: Binding, images: Mapping[str, bytes]) -> dict[str, np.ndarray]:
    """The logical inputs from their buffers, read through their layouts (before anything is written)."""
    return {name: read_elements(desc.tensors[name], desc.layout(name), images[name]) for name in binding.inputs}


def images_after(desc: Layouts, binding: Binding, before: Mapping[str, bytes],
                 outputs: Mapping[str, np.ndarray]) -> dict[str, bytes]:
    """What a correct dispatch leaves: `before` with each output's elements written (over the input it aliases in
    place, and into its graph copy), every other byte as it was."""
    after = {name: bytearray(image) for name, image in before.items() if name in binding.buffers()}
    for image, buffer in binding.output_buffers().items():
        base = image.removesuffix(EDGES_SUFFIX)
        write_elements(desc.tensors[base], desc.layout(_base(buffer)), after[buffer], outputs[base])
    return {name: bytes(image) for name, image in after.items()}
