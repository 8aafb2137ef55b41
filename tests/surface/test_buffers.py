"""Buffer images: elements where the layout puts them, canaries elsewhere, and a named byte for any stray write."""

from __future__ import annotations

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.surface.buffers import (
    Binding,
    buffer_size,
    images_after,
    images_before,
    input_image,
    output_image,
    read_back,
    read_elements,
    stray_write,
)
from dmlconform.surface.layout import TensorLayout

DESC = TensorDesc(DataType.FLOAT32, (2, 3))
PADDED = TensorLayout((4, 1), 40, 32)  # rows of 4, 40 bytes bound at 32


class _Description:
    def __init__(self, layouts: dict[str, TensorLayout]) -> None:
        self.tensors = {name: DESC for name in ("X", "Y")}
        self._layouts = layouts

    def layout(self, name: str) -> TensorLayout:
        return self._layouts.get(name, TensorLayout())


def test_an_input_reads_back_through_its_layout_and_canaries_fill_the_rest() -> None:
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    image = input_image(DESC, PADDED, data)
    assert len(image) == buffer_size(DESC, PADDED) == 32 + 40 + 64 + 8
    assert np.array_equal(read_elements(DESC, PADDED, image), data)
    assert image[:32] == output_image(DESC, PADDED)[:32]  # before the binding: canary


def test_untouched_canaries_pass_and_each_kind_of_stray_byte_is_named() -> None:
    before = output_image(DESC, PADDED)
    assert stray_write("Y", DESC, PADDED, before, before) is None
    elements = bytearray(before)
    elements[32:36] = b"\0\0\0\0"  # element [0, 0]: allowed
    assert stray_write("Y", DESC, PADDED, before, bytes(elements)) is None
    for position, words in ((31, "before the binding"), (32 + 12, "gap after element [0, 2]"),
                            (32 + 28, "padding after the last element"), (32 + 40, "past the binding")):
        after = bytearray(before)
        after[position] ^= 0xFF
        found = stray_write("Y", DESC, PADDED, before, bytes(after))
        assert found is not None and found.position == position and words in found.where, (position, found)
        assert f"byte {position} of its buffer" in str(found)


def test_read_back_checks_inputs_whole_and_reads_an_in_place_output_from_its_input() -> None:
    description = _Description({"X": PADDED})
    data = {"X": np.full((2, 3), 2.0, np.float32)}
    binding = Binding(("X",), ("Y",), {"Y": "X"})
    before = images_before(description, binding, data)
    assert set(before) == {"X"}
    result = np.full((2, 3), 7.0, np.float32)
    after = images_after(description, binding, before, {"Y": result})
    read = read_back(description, binding, before, after)
    assert not read.stray and np.array_equal(read.outputs["Y"], result)
    # The same write on the operator path is an input changed: named, though the output is right.
    plain = Binding(("X",), ("Y",), {})
    before = images_before(description, plain, data)
    after = dict(images_after(description, plain, before, {"Y": result}))
    after["X"] = images_after(description, binding, {"X": before["X"]}, {"Y": result})["X"]
    read = read_back(description, plain, before, after)
    assert read.stray and read.stray[0].tensor == "X" and "only reads" in read.stray[0].where


def test_the_graph_path_returns_a_second_copy_of_each_output() -> None:
    description = _Description({"Y": PADDED})
    binding = Binding(("X",), ("Y",), {}, edges=True)
    before = images_before(description, binding, {"X": np.ones((2, 3), np.float32)})
    assert set(before) == {"X", "Y", "Y@edges"}
    after = images_after(description, binding, before, {"Y": np.zeros((2, 3), np.float32)})
    read = read_back(description, binding, before, after)
    assert set(read.outputs) == {"Y", "Y@edges"} and not read.stray
    short = {**after, "Y@edges": after["Y@edges"][:-16]}
    assert "expected" in read_back(description, binding, before, short).problem
