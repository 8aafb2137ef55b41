"""DirectML's buffer-tensor rules (dml-semantics.md §7.3): what a layout must be, and where its elements lie."""

from __future__ import annotations

import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.surface.layout import (
    LayoutError,
    LayoutRuleError,
    TensorLayout,
    check_layout,
    element_offsets,
    minimum_total_bytes,
    packed_strides,
    read_layout,
)

F32 = TensorDesc(DataType.FLOAT32, (2, 3))
F16 = TensorDesc(DataType.FLOAT16, (3,))


def test_packed_strides_and_the_minimum_size_follow_dmlcalcbuffertensorsize() -> None:
    assert packed_strides((2, 3, 4)) == (12, 4, 1)
    assert minimum_total_bytes(F32, (3, 1)) == 24
    assert minimum_total_bytes(F16, (1,)) == 8  # 6 bytes, rounded up to a multiple of 4
    assert minimum_total_bytes(F32, (1, 2)) == 4 * (1 + 2 * 2 + 1)  # NHWC-like: the last element is at 5


def test_element_offsets_follow_the_strides_in_row_major_order() -> None:
    assert element_offsets(F32, TensorLayout((1, 2))).tolist() == [0, 8, 16, 4, 12, 20]
    assert element_offsets(F32, TensorLayout((0, 1))).tolist() == [0, 4, 8, 0, 4, 8]


@pytest.mark.parametrize(("layout", "field"), [
    (TensorLayout((0, 1)), "Strides"),  # an output that broadcasts
    (TensorLayout((1, 1)), "Strides"),  # overlapping elements
    (TensorLayout(None, 20), "TotalTensorSizeInBytes"),  # below the 24 bytes needed
])
def test_an_output_layout_directml_refuses_is_refused(layout: TensorLayout, field: str) -> None:
    with pytest.raises(LayoutRuleError) as raised:
        check_layout("OutputGradientTensor", F32, layout, output=True)
    assert raised.value.field == f"OutputGradientTensor.{field}"


@pytest.mark.parametrize("layout", [
    TensorLayout((1, 2)), TensorLayout((8, 1), 64, 48), TensorLayout(None, 24, 16), TensorLayout((3, 1), 28),
])
def test_valid_layouts_pass_for_outputs_and_a_broadcast_passes_for_inputs(layout: TensorLayout) -> None:
    check_layout("OutputGradientTensor", F32, layout, output=True)
    check_layout("InputTensor", F32, TensorLayout((0, 1)), output=False)


@pytest.mark.parametrize(("spec", "field"), [
    ({"strides": [1]}, "strides"), ({"strides": [1, -1]}, "strides"), ({"strides": "1,2"}, "strides"),
    ({"offset": 8}, "offset"), ({"offset": True}, "offset"), ({"total_bytes": 0}, "total_bytes"),
    ({"strides": [2**31, 2**31]}, "strides"),  # a footprint past the 1 GiB bound, refused before any allocation
])
def test_the_suite_format_refuses_a_malformed_layout_naming_the_key(spec: dict[str, object], field: str) -> None:
    with pytest.raises(LayoutError) as raised:
        read_layout(spec, F32)
    assert raised.value.field == field


def test_absent_keys_read_as_directml_s_default_layout() -> None:
    assert read_layout({"dtype": "FLOAT32"}, F32).is_default
    assert read_layout({"strides": [3, 1], "offset": 32}, F32) == TensorLayout((3, 1), None, 32)


def test_an_overlapping_output_of_many_elements_is_refused_without_listing_them() -> None:
    """2^28 elements on a span of 2^15 positions share some: refused from the sizes and strides alone (listing every
    element's offset would take 2 GiB)."""
    import tracemalloc

    huge = TensorDesc(DataType.FLOAT32, (2**14, 2**14))
    tracemalloc.start()
    try:
        with pytest.raises(LayoutRuleError, match="share memory"):
            check_layout("OutputGradientTensor", huge, TensorLayout((1, 1)), output=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
