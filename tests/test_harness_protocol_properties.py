"""The native-harness protocol, property by property (hypothesis): requests and replies of any tensors decode to
what was encoded, bit for bit; a reply with any byte changed decodes to a ProtocolError or to outputs of exactly
the expected type and shape, never to another exception."""

from __future__ import annotations

import io

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dmlconform import harness_protocol as protocol
from dmlconform.dtypes import DataType
from dmlconform.harness_protocol import ProtocolError
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from tests.properties import PROPERTIES

RELU = find_operator("ACTIVATION_RELU_GRAD")
shapes = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4)


@st.composite
def relu_tensors(draw: st.DrawFn) -> dict[str, np.ndarray]:
    dtype = draw(st.sampled_from(list(DataType))).numpy
    shape = draw(shapes)
    return {name: draw(hnp.arrays(dtype, shape)) for name in (*RELU.inputs, *RELU.outputs)}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@PROPERTIES
@given(arrays=relu_tensors(), case_id=st.text(max_size=30))
def test_a_run_request_decodes_to_what_was_encoded(arrays, case_id) -> None:
    descs = {name: TensorDesc(DataType.from_numpy(a.dtype), a.shape) for name, a in arrays.items()}
    data = protocol.encode_run_request(case_id, Description(RELU, {}, descs), arrays)
    request = protocol.decode_run_request(protocol.read_frame(io.BytesIO(data).read))
    assert request.id == case_id and request.outputs == {"OutputGradientTensor": descs["OutputGradientTensor"]}
    assert all(same(request.inputs[name], arrays[name]) for name in RELU.inputs)


def reply(arrays: dict[str, np.ndarray]) -> tuple[bytes, dict[str, TensorDesc]]:
    output = arrays["OutputGradientTensor"]
    expected = {"OutputGradientTensor": TensorDesc(DataType.from_numpy(output.dtype), output.shape)}
    return protocol.encode_result("s/c", "ok", [("OutputGradientTensor", output)]), expected


@PROPERTIES
@given(arrays=relu_tensors())
def test_a_reply_decodes_to_what_was_encoded(arrays) -> None:
    data, expected = reply(arrays)
    decoded = protocol.decode_result(protocol.read_frame(io.BytesIO(data).read), "s/c", expected)
    assert decoded.status == "ok" and same(decoded.outputs["OutputGradientTensor"], arrays["OutputGradientTensor"])


@PROPERTIES
@given(arrays=relu_tensors(), changes=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1,
                                                max_size=4))
def test_a_changed_reply_is_a_protocol_error_or_the_expected_outputs(arrays, changes) -> None:
    data, expected = reply(arrays)
    changed = bytearray(data)
    for position, byte in changes:
        changed[position % len(changed)] = byte
    try:
        decoded = protocol.decode_result(protocol.read_frame(io.BytesIO(bytes(changed)).read), "s/c", expected)
    except ProtocolError as exc:
        assert "\n" not in str(exc)
        return
    for name, array in decoded.outputs.items():
        assert array.dtype == expected[name].dtype.numpy and array.shape == expected[name].shape
