"""The wire protocol: frames, tensors of every data type, parameters as DML field values, replies."""

from __future__ import annotations

import io
import json
import math
import struct

import numpy as np
import pytest

from dmlconform import harness_protocol as protocol
from dmlconform.case import Case
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.harness.server import HarnessServer
from dmlconform.harness_protocol import Frame, ProtocolError, StreamEnded
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, ParamKind, TensorDesc


def read_back(data: bytes) -> Frame:
    return protocol.read_frame(io.BytesIO(data).read)


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


# -- framing ---------------------------------------------------------------------------------------
def test_frame_round_trip_keeps_header_and_payload() -> None:
    payload = bytes(range(256)) * 3
    frame = read_back(protocol.encode_frame({"type": "x", "text": "ünïcode", "n": [1, 2]}, payload))
    assert frame.header == {"type": "x", "text": "ünïcode", "n": [1, 2]}
    assert frame.payload == payload


def test_frame_prefix_layout_is_magic_then_little_endian_lengths() -> None:
    data = protocol.encode_frame({"type": "bye"}, b"abc")
    magic, header_len, payload_len = struct.unpack("<4sIQ", data[:16])
    assert (magic, payload_len) == (b"DMLC", 3)
    assert json.loads(data[16:16 + header_len]) == {"type": "bye"}
    assert data[16:16 + header_len].isascii()  # a C parser never needs UTF-8


def test_headers_are_strict_json_without_nan_tokens() -> None:
    with pytest.raises(ValueError):
        protocol.encode_frame({"x": math.nan})


@pytest.mark.parametrize(("cut", "at_boundary"), [(0, True), (7, False), (20, False), (-1, False)])
def test_end_of_stream_is_reported_with_where_it_happened(cut: int, at_boundary: bool) -> None:
    data = protocol.encode_frame({"type": "result"}, b"0123456789")
    with pytest.raises(StreamEnded) as info:
        read_back(data[:cut] if cut else b"")
    assert info.value.at_boundary is at_boundary


@pytest.mark.parametrize(("data", "words"), [
    (b"hello world, not a frame", "magic"),
    (struct.pack("<4sIQ", b"DMLC", 0, 0), "header length"),
    (struct.pack("<4sIQ", b"DMLC", 2, 1 << 40) + b"{}", "payload length"),
    (struct.pack("<4sIQ", b"DMLC", 5, 0) + b"{bad}", "not UTF-8 JSON"),
    (struct.pack("<4sIQ", b"DMLC", 2, 0) + b"[]", "not an object"),
])
def test_malformed_frames_are_protocol_errors(data: bytes, words: str) -> None:
    with pytest.raises(ProtocolError, match=words) as info:
        read_back(data)
    assert info.value.fatal


# -- tensors ---------------------------------------------------------------------------------------
def _random_bits(dtype: DataType, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=count * dtype.numpy.itemsize, dtype=np.uint8)
    return raw.view(dtype.numpy)


@pytest.mark.parametrize("dtype", list(DataType), ids=lambda d: d.name)
def test_every_data_type_round_trips_bit_exactly(dtype: DataType) -> None:
    array = _random_bits(dtype, 60, dtype.value).reshape(3, 4, 5)
    entries, payload = protocol.pack_tensors([("T", array)])
    assert entries[0]["DataType"] == dtype.value and entries[0]["Sizes"] == [3, 4, 5]
    name, back = protocol.unpack_tensor(entries[0], payload, "t")
    assert name == "T" and back.dtype == dtype.numpy and back.shape == (3, 4, 5)
    assert np.array_equal(bits(back), bits(array))


def test_special_values_survive_nan_payloads_negative_zero_and_extremes() -> None:
    f32 = np.array([0x7FC00001, 0xFFBFFFFF, 0x7F800001, 0x80000000, 0x00000001, 0x7F800000], np.uint32)
    f16 = np.array([0x7E01, 0xFC01, 0x8000, 0x0001, 0x7C00, 0x3C00], np.uint16)
    f64 = np.array([0x7FF8000000000001, 0x8000000000000000, 0x000FFFFFFFFFFFFF], np.uint64)
    arrays = [("f32", f32.view(np.float32)), ("f16", f16.view(np.float16)), ("f64", f64.view(np.float64)),
              ("i64", np.array([-(2**63), 2**63 - 1, -1], np.int64)),
              ("u64", np.array([2**64 - 1, 2**63, 1], np.uint64))]
    entries, payload = protocol.pack_tensors(arrays)
    for entry, (name, array) in zip(entries, arrays, strict=True):
        assert entry["offset"] % protocol.TENSOR_ALIGNMENT == 0
        assert np.array_equal(bits(protocol.unpack_tensor(entry, payload, "t")[1]), bits(array)), name


def test_tensor_bytes_are_little_endian_row_major() -> None:
    _entries, payload = protocol.pack_tensors([("T", np.array([[1, 2], [3, 256]], np.uint16))])
    assert payload == b"\x01\x00\x02\x00\x03\x00\x00\x01"


@pytest.mark.parametrize(("change", "words"), [
    ({"nbytes": 12}, "nbytes 12 does not match"),
    ({"offset": 8}, "outside the"),
    ({"DataType": 12}, "DataType 12"),
    ({"Sizes": [2, -1]}, "Sizes must be"),
    ({"offset": "0"}, "offset and nbytes"),
])
def test_bad_tensor_entries_are_named(change: dict[str, object], words: str) -> None:
    entries, payload = protocol.pack_tensors([("T", np.zeros((2, 2), np.float32))])
    with pytest.raises(ProtocolError, match=words) as info:
        protocol.unpack_tensor({**entries[0], **change}, payload, "outputs")
    assert not info.value.fatal  # the frame itself was well delimited


# -- parameters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "dtype", "expected"), [
    (1.0, DataType.FLOAT16, "0x0000000000003c00"),  # FLOAT16 goes in the UInt16 member as half bits
    (-0.0, DataType.FLOAT32, "0x0000000080000000"),
    (math.inf, DataType.FLOAT64, "0x7ff0000000000000"),
    (-1, DataType.INT8, "0x00000000000000ff"),
    (2**64 - 1, DataType.UINT64, "0xffffffffffffffff"),
    (-(2**63), DataType.INT64, "0x8000000000000000"),
    (np.array([0x7FC00001], np.uint32).view(np.float32)[0], DataType.FLOAT32, "0x000000007fc00001"),
])
def test_scalars_travel_as_dml_scalar_union_bytes(value: object, dtype: DataType, expected: str) -> None:
    text = protocol.scalar_union_hex(value, dtype)
    assert text == expected
    back = protocol.union_hex_value(text, dtype)
    assert np.array(back).view(dtype.bits_dtype) == np.array(value).astype(dtype.numpy).view(dtype.bits_dtype)


def test_params_use_dml_field_values_in_struct_order() -> None:
    op = find_operator("RESAMPLE_GRAD1")
    params = op.parse_params({"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING",
                              "Scales": [2.0, 0.1], "InputPixelOffsets": [0.5, 0.5],
                              "OutputPixelOffsets": [-0.5, -0.5]}, DataType.FLOAT32)
    tensors = {"InputGradientTensor": TensorDesc(DataType.FLOAT32, (4, 1)),
               "OutputGradientTensor": TensorDesc(DataType.FLOAT32, (2, 10))}
    wire = protocol.params_to_wire(Description(op, params, tensors))
    assert list(wire) == ["InterpolationMode", "RoundingDirection", "DimensionCount", "Scales", "InputPixelOffsets",
                          "OutputPixelOffsets"]
    assert wire["InterpolationMode"] == 1 and wire["RoundingDirection"] == 1 and wire["DimensionCount"] == 2
    assert np.float32(wire["Scales"][1]) == np.float32(0.1)  # float32 values, exactly representable in JSON

    clip = find_operator("ELEMENT_WISE_CLIP_GRAD1")
    clip_params = clip.parse_params({"Min": "-inf", "Max": 2.5}, DataType.FLOAT16)
    desc = TensorDesc(DataType.FLOAT16, (3,))
    wire = protocol.params_to_wire(Description(clip, clip_params, dict.fromkeys(clip.tensors, desc)))
    assert wire == {"MinMaxDataType": 2, "Min": "0x000000000000fc00", "Max": "0x0000000000004100"}


def test_non_finite_float_params_are_strings_that_strtod_reads() -> None:
    assert [protocol._float_to_wire(v) for v in (math.nan, math.inf, -math.inf, 0.5)] == ["nan", "inf", "-inf", 0.5]


def _same_param(a: object, b: object, kind: ParamKind, dtype: DataType) -> bool:
    if kind is ParamKind.SCALAR:
        return protocol.scalar_union_hex(a, dtype) == protocol.scalar_union_hex(b, dtype)
    if kind is ParamKind.FLOATS:
        return np.array_equal(np.array(a), np.array(b), equal_nan=True)
    if kind is ParamKind.FLOAT:  # a NaN bound (ClipGrad v0) equals NaN; -0.0 is not +0.0
        pair = np.array([a, b], np.float32)
        return bool(np.isnan(pair).all()) or pair.view(np.uint32)[0] == pair.view(np.uint32)[1]
    return a == b


@pytest.mark.slow
def test_every_bundled_case_is_rebuilt_exactly_from_its_request(bundled_cases: list[Case]) -> None:
    for case in bundled_cases:
        frame = read_back(protocol.encode_run_request(case.full_id, case.description, case.inputs))
        assert "expect" not in json.dumps(frame.header)  # the harness must judge validity itself
        rebuilt = HarnessServer.rebuild(protocol.decode_run_request(frame))
        assert rebuilt.full_id == case.full_id
        assert dict(rebuilt.description.tensors) == dict(case.description.tensors), case.full_id
        for param in case.op.params:
            assert _same_param(rebuilt.description.params[param.name], case.description.params[param.name],
                               param.kind, case.dtype), f"{case.full_id}: {param.name}"
        for name, array in case.inputs.items():
            assert np.array_equal(bits(rebuilt.inputs[name]), bits(array)), f"{case.full_id}: {name}"


# -- replies and handshake -------------------------------------------------------------------------
EXPECTED = {"OutputGradientTensor": TensorDesc(DataType.FLOAT32, (2, 2))}


def _reply(status: str = "ok", case_id: str = "s/c", array: np.ndarray | None = None, **extra: object) -> Frame:
    outputs = [("OutputGradientTensor", np.ones((2, 2), np.float32) if array is None else array)]
    return read_back(protocol.encode_result(case_id, status, outputs if status == "ok" else (), "why", extra))


def test_ok_reply_decodes_outputs() -> None:
    reply = protocol.decode_result(_reply(), "s/c", EXPECTED)
    assert reply.status == "ok" and np.array_equal(reply.outputs["OutputGradientTensor"], np.ones((2, 2)))


@pytest.mark.parametrize("status", ["unsupported", "refused", "error", "device_removed"])
def test_other_statuses_carry_a_message(status: str) -> None:
    reply = protocol.decode_result(_reply(status), "s/c", EXPECTED)
    assert (reply.status, reply.message) == (status, "why")


@pytest.mark.parametrize(("frame", "words", "fatal"), [
    (_reply(case_id="s/other"), "not 's/c'", True),
    (_reply("maybe"), "unknown reply status", True),
    (read_back(protocol.encode_frame({"type": "hello"})), "expected a 'result'", True),
    (_reply(array=np.ones((2, 2), np.float64)), "DataType FLOAT64", False),
    (_reply(array=np.ones(4, np.float32)), r"Sizes \[4\]", False),
    (read_back(protocol.encode_frame({"type": "result", "id": "s/c", "status": "ok", "outputs": []})), "missing",
     False),
])
def test_bad_replies_are_protocol_errors(frame: Frame, words: str, fatal: bool) -> None:
    with pytest.raises(ProtocolError, match=words) as info:
        protocol.decode_result(frame, "s/c", EXPECTED)
    assert info.value.fatal is fatal


def test_hello_accepts_level_names_and_values() -> None:
    for level in ("5_1", "DML_FEATURE_LEVEL_5_1", 0x5100):
        frame = read_back(protocol.encode_frame({"type": "hello", "protocol": 1, "feature_level": level,
                                                 "operators": {"DML_OPERATOR_SLICE_GRAD": ["FLOAT32", 2]}}))
        hello = protocol.decode_hello(frame)
        assert hello.feature_level is FeatureLevel.L5_1
        assert hello.operators == {"SLICE_GRAD": frozenset({DataType.FLOAT32, DataType.FLOAT16})}


def test_hello_pipeline_says_how_many_requests_may_be_outstanding() -> None:
    base = {"type": "hello", "protocol": 1, "feature_level": "5_1"}
    assert protocol.decode_hello(read_back(protocol.encode_frame(base))).pipeline == 1  # absent: one at a time
    hello = protocol.decode_hello(read_back(protocol.encode_frame({**base, "pipeline": 16})))
    assert hello.pipeline == 16
    assert protocol.decode_hello(read_back(protocol.encode_hello_reply(hello))).pipeline == 16  # round trip


@pytest.mark.parametrize(("header", "words"), [
    ({"type": "hello", "protocol": 1, "feature_level": "5_1", "pipeline": 0}, "pipeline must be"),
    ({"type": "hello", "protocol": 1, "feature_level": "5_1", "pipeline": True}, "pipeline must be"),
    ({"type": "hello", "protocol": 1, "feature_level": "5_1", "pipeline": "4"}, "pipeline must be"),
    ({"type": "hello", "protocol": 1, "feature_level": "5_1", "pipeline": 10**6}, "from 1 to 64"),
    ({"type": "hello", "protocol": 2, "feature_level": "5_1"}, "protocol 2"),
    ({"type": "hello", "protocol": 1, "feature_level": "9_9"}, "feature_level"),
    ({"type": "error", "message": "no adapter"}, "no adapter"),
    ({"type": "hello", "protocol": 1, "feature_level": "5_1", "operators": {"SLICE_GRAD": ["BOOL"]}}, "BOOL"),
])
def test_bad_hellos_explain_themselves(header: dict[str, object], words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        protocol.decode_hello(read_back(protocol.encode_frame(header)))


# -- hostile streams (issue 25) ------------------------------------------------------------------------------------
def test_a_payload_longer_than_the_reader_allows_is_refused_before_it_is_read() -> None:
    """The runner knows how many bytes a case's outputs take: a reply claiming 64 GiB is refused from its prefix."""
    from dmlconform.harness_protocol import MAGIC, PREFIX, read_frame

    stream = io.BytesIO(PREFIX.pack(MAGIC, 2, 1 << 36) + b"{}" + bytes(64))
    with pytest.raises(ProtocolError, match=r"payload length 68719476736 above 1024"):
        read_frame(stream.read, max_payload=1024)
    assert stream.tell() == PREFIX.size  # not a byte of the header or payload read


@pytest.mark.parametrize("header,words", [
    (b"[" * 100_000, "not UTF-8 JSON"),  # RecursionError in json.loads before
    (b'{"type": ' + b"9" * 5000 + b"}", "not UTF-8 JSON"),  # ValueError (Python's int digit limit) before
])
def test_a_header_json_cannot_parse_is_a_protocol_error(header: bytes, words: str) -> None:
    from dmlconform.harness_protocol import MAGIC, PREFIX, read_frame

    with pytest.raises(ProtocolError, match=words) as caught:
        read_frame(io.BytesIO(PREFIX.pack(MAGIC, len(header), 0) + header).read)
    assert "\n" not in str(caught.value)


def test_sizes_past_the_element_limit_are_refused() -> None:
    from dmlconform.harness_protocol import MAX_ELEMENTS, read_tensor_desc

    with pytest.raises(ProtocolError, match=f"more than {MAX_ELEMENTS} elements") as caught:
        read_tensor_desc({"name": "OutputGradientTensor", "DataType": 1, "Sizes": [65536, 65536]}, "outputs")
    assert not caught.value.fatal
    assert read_tensor_desc({"name": "x", "DataType": 1, "Sizes": [MAX_ELEMENTS]}, "outputs")[1].shape == (MAX_ELEMENTS,)


def test_a_name_with_a_line_break_gives_a_one_line_error() -> None:
    """Found by fuzz/fuzz_harness_replies.py: a reply's tensor name "OutputGradientT\\nsor" went raw into the
    ProtocolError, which becomes the case's message (two lines in reports)."""
    from dmlconform.harness_protocol import decode_result

    frame = Frame({"type": "result", "id": "s/c", "status": "ok", "outputs": [
        {"name": "OutputGradientT\nsor", "DataType": 1, "Sizes": [1], "offset": 0, "nbytes": 4}]}, b"\0" * 4)
    with pytest.raises(ProtocolError, match=r"outputs\.OutputGradientT\\nsor: not an output") as caught:
        decode_result(frame, "s/c", {"OutputGradientTensor": TensorDesc(DataType.FLOAT32, (1,))})
    assert "\n" not in str(caught.value)


# -- requests with buffers (docs/native-harness.md: layouts, graphs, in place) ---------------------------------------
def _clip_case(path: str) -> Case:
    from dmlconform.surface.layout import TensorLayout
    from dmlconform.surface.paths import ExecutionPath

    op = find_operator("ELEMENT_WISE_CLIP_GRAD1")
    desc = TensorDesc(DataType.FLOAT32, (2, 3))
    description = Description(op, {"Min": np.float32(-1), "Max": np.float32(1)},
                              dict.fromkeys(op.tensors, desc), {"InputTensor": TensorLayout((1, 2), None, 16)})
    inputs = {"InputTensor": np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3),
              "InputGradientTensor": np.arange(6, dtype=np.float32).reshape(2, 3)}
    expected = op.reference(description, inputs).outputs
    case = Case("s", "c", __import__("pathlib").Path("s.yaml"), description, inputs, expected=expected)
    on_path = case.on_path(ExecutionPath(path))
    assert on_path is not None
    return on_path


@pytest.mark.parametrize("path", ["operator", "graph", "in-place"])
def test_a_buffers_request_round_trips_layouts_images_and_aliases(path: str) -> None:
    from dmlconform.surface.buffers import images_before

    case = _clip_case(path)
    before = images_before(case.description, case.binding, case.inputs)
    frame = read_back(protocol.encode_buffers_request(case.full_id, case.description, path, case.binding, before))
    request = protocol.decode_run_request(frame)
    assert request.buffers and request.path == path and request.images == before
    assert request.layouts["InputTensor"].strides == (1, 2) and request.layouts["InputTensor"].offset == 16
    assert request.aliases == ({"OutputGradientTensor": "InputTensor"} if path == "in-place" else {})
    reply = read_back(protocol.encode_result(case.full_id, "ok", images=before))
    sizes = {name: len(image) for name, image in before.items()}
    assert protocol.decode_result(reply, case.full_id, {}, sizes).images == before


@pytest.mark.parametrize(("change", "words"), [
    (lambda h: h["inputs"][0].update(BindingOffset=8), "BindingOffset must be a non-negative multiple of 16"),
    (lambda h: h["inputs"][0].update(Strides=[1]), "Strides must be 2 UINTs"),
    (lambda h: h["inputs"][0].update(nbytes=10**9), "outside the"),
    (lambda h: h.update(path="sideways"), "'path' 'sideways'"),
    (lambda h: h.pop("edges"), "'edges' comes with the graph path"),
])
def test_a_malformed_buffers_request_is_refused_naming_the_field(change: object, words: str) -> None:
    from dmlconform.surface.buffers import images_before

    case = _clip_case("graph")
    before = images_before(case.description, case.binding, case.inputs)
    frame = read_back(protocol.encode_buffers_request(case.full_id, case.description, "graph", case.binding, before))
    change(frame.header)  # type: ignore[operator]
    with pytest.raises(ProtocolError, match=words.replace("(", r"\(")):
        protocol.decode_run_request(frame)


def test_a_reply_with_a_short_or_missing_buffer_is_refused() -> None:
    reply = read_back(protocol.encode_result("s/c", "ok", images={"InputTensor": b"\0" * 32}))
    with pytest.raises(ProtocolError, match="32 bytes, but the buffer sent had 48"):
        protocol.decode_result(reply, "s/c", {}, {"InputTensor": 48})
    with pytest.raises(ProtocolError, match="OutputGradientTensor missing"):
        protocol.decode_result(reply, "s/c", {}, {"InputTensor": 32, "OutputGradientTensor": 32})
