"""The native-harness wire protocol (docs/native-harness.md): framing, tensors, requests and replies.

This is the one implementation of the protocol in Python: the runner side (backends/native.py) and
the harness side (harness/server.py) both encode and decode through it, so they cannot drift apart.

A frame is a 16-byte prefix (magic b"DMLC", uint32 header length, uint64 payload length, all
little-endian), a UTF-8 JSON object, then raw payload bytes that the header's tensors point into.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import Description, Operator, ParamKind, TensorDesc
from dmlconform.surface.buffers import Binding
from dmlconform.surface.layout import MINIMUM_ALIGNMENT, TensorLayout, total_bytes_of
from dmlconform.surface.paths import EDGES_SUFFIX, PATH_NAMES

PROTOCOL_VERSION = 1
MAGIC = b"DMLC"
PREFIX = struct.Struct("<4sIQ")
#: Limits that keep a garbled length from making a reader wait for, or allocate, absurd amounts.
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_PAYLOAD_BYTES = 1 << 36
#: Elements one tensor may hold, as in suites (suite/tensors.py): a request or reply declaring more is refused.
MAX_ELEMENTS = 2**28
#: Tensors start on DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT boundaries so a harness can upload in place.
TENSOR_ALIGNMENT = 16

#: DML enum values of the enum-typed parameters, keyed by the enumerator prefix the Param declares.
ENUM_VALUES: dict[str, dict[str, int]] = {
    "DML_INTERPOLATION_MODE_": {"NEAREST_NEIGHBOR": 0, "LINEAR": 1},
    "DML_AXIS_DIRECTION_": {"INCREASING": 0, "DECREASING": 1},
}

#: Reply statuses a harness may send for a case, and what each one means to the runner.
REPLY_STATUSES = ("ok", "unsupported", "refused", "error", "device_removed")
#: The most requests a harness may ask to have in flight (its hello's `pipeline`): a garbled number must not make
#: the runner hold an absurd amount of requests.
MAX_PIPELINE = 64


class ProtocolError(Exception):
    """A message breaks the protocol. `fatal`: the byte stream can no longer be trusted (resynchronise)."""

    def __init__(self, message: str, fatal: bool = True) -> None:
        # One line, as a case's message: line breaks from the stream (a tensor name, a value) shown escaped.
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))
        self.fatal = fatal


class StreamEnded(ProtocolError):
    """The stream ended: cleanly between frames (received == 0) or in the middle of one."""

    def __init__(self, received: int, expected: int, where: str) -> None:
        text = "end of stream" if received == 0 and where == "frame prefix" else \
            f"end of stream in the {where} after {received} of {expected} bytes"
        super().__init__(text)
        self.received, self.expected, self.where = received, expected, where

    @property
    def at_boundary(self) -> bool:
        return self.received == 0 and self.where == "frame prefix"


@dataclass
class Frame:
    header: dict[str, Any]
    payload: bytes = b""

    @property
    def type(self) -> str:
        kind = self.header.get("type")
        return kind if isinstance(kind, str) else ""


# -- framing ---------------------------------------------------------------------------------------
def encode_frame(header: Mapping[str, Any], payload: bytes = b"") -> bytes:
    # ASCII-only, standard JSON (no NaN tokens), so a minimal C parser handles every header we write.
    text = json.dumps(header, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    return PREFIX.pack(MAGIC, len(text), len(payload)) + text + payload


def read_frame(read: Callable[[int], bytes], max_header: int = MAX_HEADER_BYTES,
               max_payload: int = MAX_PAYLOAD_BYTES) -> Frame:
    """Read one frame. `read(n)` returns up to n bytes and b'' only at end of stream; it may raise. A header or
    payload longer than the reader allows (the runner knows how many bytes a case's outputs take) is refused
    from the prefix, before it is read."""
    prefix = _read_exactly(read, PREFIX.size, "frame prefix")
    magic, header_len, payload_len = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ProtocolError(f"bad frame: expected magic {MAGIC!r}, got {magic!r} (is the harness printing "
                            f"text to stdout? stdout carries only frames: {prefix[:16]!r})")
    if header_len == 0 or header_len > max_header:
        raise ProtocolError(f"bad frame: header length {header_len} outside 1..{max_header}")
    if payload_len > max_payload:
        raise ProtocolError(f"bad frame: payload length {payload_len} above {max_payload}, what this message "
                            "may carry")
    raw_header = _read_exactly(read, header_len, "frame header")
    payload = _read_exactly(read, payload_len, "frame payload") if payload_len else b""
    try:
        header = json.loads(raw_header.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a number past the digit limit, too deep
        raise ProtocolError(f"bad frame: header is not UTF-8 JSON ({str(exc).splitlines()[0]}): "
                            f"{raw_header[:80]!r}") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"bad frame: header is a JSON {type(header).__name__}, not an object")
    return Frame(header, payload)


def _read_exactly(read: Callable[[int], bytes], count: int, where: str) -> bytes:
    chunks: list[bytes] = []
    received = 0
    while received < count:
        chunk = read(count - received)
        if not chunk:
            raise StreamEnded(received, count, where)
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)


# -- tensors ---------------------------------------------------------------------------------------
def pack_bytes(blobs: Sequence[tuple[str, bytes]]) -> tuple[dict[str, dict[str, int]], bytes]:
    """The payload of these byte strings, in order, each 16-byte aligned, and where each lies in it (`offset`,
    `nbytes`, by name)."""
    placed: dict[str, dict[str, int]] = {}
    parts: list[bytes] = []
    offset = 0
    for name, data in blobs:
        padding = -offset % TENSOR_ALIGNMENT
        parts.append(b"\0" * padding)
        offset += padding
        placed[name] = {"offset": offset, "nbytes": len(data)}
        parts.append(data)
        offset += len(data)
    return placed, b"".join(parts)


def pack_tensors(tensors: Sequence[tuple[str, np.ndarray]]) -> tuple[list[dict[str, Any]], bytes]:
    """Header entries and the payload: packed row-major little-endian bytes, each tensor 16-byte aligned."""
    placed, payload = pack_bytes(
        [(name, np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
         for name, array in tensors])
    entries = [{"name": name, "DataType": DataType.from_numpy(array.dtype).value, "Sizes": list(array.shape),
                **placed[name]} for name, array in tensors]
    return entries, payload


def tensor_desc_entry(name: str, desc: TensorDesc) -> dict[str, Any]:
    return {"name": name, "DataType": desc.dtype.value, "Sizes": list(desc.shape)}


def read_tensor_desc(entry: object, where: str) -> tuple[str, TensorDesc]:
    """(name, desc) of a header tensor entry; ProtocolError (not fatal) naming what is wrong."""
    if not isinstance(entry, Mapping):
        raise ProtocolError(f"{where}: a tensor entry must be an object, got {entry!r}", fatal=False)
    name = entry.get("name")
    if not isinstance(name, str):
        raise ProtocolError(f"{where}: tensor 'name' must be a string, got {name!r}", fatal=False)
    raw_type = entry.get("DataType")
    try:
        dtype = _data_type(raw_type)
    except ValueError:
        raise ProtocolError(f"{where}.{name}: DataType {raw_type!r} is not a DML_TENSOR_DATA_TYPE value in "
                            f"scope (1..11)", fatal=False) from None
    sizes = entry.get("Sizes")
    if not isinstance(sizes, list) or not all(_is_int(s) and s >= 0 for s in sizes):
        raise ProtocolError(f"{where}.{name}: Sizes must be a list of non-negative integers, got {str(sizes)[:80]}",
                            fatal=False)
    if math.prod(sizes) > MAX_ELEMENTS:
        raise ProtocolError(f"{where}.{name}: Sizes {str(sizes)[:80]} hold more than {MAX_ELEMENTS} elements, the "
                            "most a tensor may", fatal=False)
    return name, TensorDesc(dtype, tuple(sizes))


def unpack_tensor(entry: Mapping[str, Any], payload: bytes, where: str) -> tuple[str, np.ndarray]:
    """Decode one tensor, checking its byte count against DataType x Sizes and the payload bounds."""
    name, desc = read_tensor_desc(entry, where)
    offset, nbytes = entry.get("offset"), entry.get("nbytes")
    if not (_is_int(offset) and _is_int(nbytes) and offset >= 0 and nbytes >= 0):
        raise ProtocolError(f"{where}.{name}: offset and nbytes must be non-negative integers, got "
                            f"{offset!r} and {nbytes!r}", fatal=False)
    count = math.prod(desc.shape)
    expected = count * desc.dtype.numpy.itemsize
    if nbytes != expected:
        raise ProtocolError(f"{where}.{name}: nbytes {nbytes} does not match {desc} ({count} elements x "
                            f"{desc.dtype.numpy.itemsize} bytes = {expected})", fatal=False)
    if offset + nbytes > len(payload):
        raise ProtocolError(f"{where}.{name}: bytes {offset}..{offset + nbytes} lie outside the "
                            f"{len(payload)}-byte payload", fatal=False)
    little = desc.dtype.numpy.newbyteorder("<")
    array = np.frombuffer(payload, dtype=little, count=count, offset=offset).reshape(desc.shape)
    return name, array.astype(desc.dtype.numpy, copy=True)


def _data_type(raw: object) -> DataType:
    if _is_int(raw):
        return DataType(raw)
    return DataType.parse(raw)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- parameters ------------------------------------------------------------------------------------
def params_to_wire(desc: Description) -> dict[str, Any]:
    """Parameters as the values a harness stores in the DML_*_OPERATOR_DESC fields, in struct order."""
    op = desc.op
    wire: dict[str, Any] = {}
    dtype = desc.output.dtype
    for param in op.params:
        if param.name in op.dimension_arrays and "DimensionCount" not in wire:
            explicit = desc.params.get("DimensionCount")
            wire["DimensionCount"] = explicit if explicit is not None else len(desc.params[op.dimension_arrays[0]])
        if param.kind is ParamKind.SCALAR and "MinMaxDataType" not in wire:
            wire["MinMaxDataType"] = (desc.params.get("MinMaxDataType") or dtype).value
        value = desc.params[param.name]
        if param.kind is ParamKind.ENUM:
            wire[param.name] = ENUM_VALUES[param.enum_prefix][value]
        elif param.kind is ParamKind.SCALAR:
            wire[param.name] = scalar_union_hex(value, dtype)
        elif param.kind is ParamKind.FLOATS:
            wire[param.name] = [_float_to_wire(v) for v in value]
        elif param.kind is ParamKind.FLOAT:
            wire[param.name] = _float_to_wire(value)
        elif param.kind is ParamKind.BOOL:
            wire[param.name] = int(value)  # a DML BOOL
        else:
            wire[param.name] = [int(v) for v in value]
    return wire


def params_from_wire(op: Operator, wire: Mapping[str, Any], dtype: DataType) -> dict[str, Any]:
    """Turn wire values back into what Operator.parse_params reads (names for enums, hex for scalars)."""
    raw: dict[str, Any] = {}
    kinds = {p.name: p for p in op.params}
    for name, value in wire.items():
        param = kinds.get(name)
        if name == "MinMaxDataType":
            try:
                raw[name] = _data_type(value).name
            except ValueError:
                raw[name] = value  # parse_params reports it with the field name
        elif param is None:
            raw[name] = value
        elif param.kind is ParamKind.ENUM:
            names = {v: k for k, v in ENUM_VALUES[param.enum_prefix].items()}
            raw[name] = names.get(value, value) if _is_int(value) else value
        elif param.kind is ParamKind.SCALAR:
            raw[name] = _scalar_from_union_hex(value, dtype) if isinstance(value, str) else value
        elif param.kind is ParamKind.FLOATS and isinstance(value, list):
            raw[name] = [_float_from_wire(v) for v in value]
        elif param.kind is ParamKind.FLOAT:
            raw[name] = _float_from_wire(value)
        elif param.kind is ParamKind.BOOL:
            raw[name] = bool(value) if value in (0, 1) and not isinstance(value, float) else value
        else:
            raw[name] = value
    return raw


def scalar_union_hex(value: object, dtype: DataType) -> str:
    """The 8 bytes of a DML_SCALAR_UNION holding `value` in dtype's member, as a little-endian uint64.

    FLOAT16 has no union member: its IEEE half bits go in UInt16 (as DxDispatch does). Upper bytes are 0.
    """
    if isinstance(value, np.generic):
        array = np.asarray(value)
        array = array if array.dtype == dtype.numpy else array.astype(dtype.numpy)
    elif dtype.is_float:
        with np.errstate(over="ignore"):
            array = np.array(value, dtype=np.float64).astype(dtype.numpy)  # as the reference converts it
    else:
        array = np.array(value, dtype=dtype.numpy)
    bits = int(array.reshape(1).view(dtype.bits_dtype)[0])
    return f"0x{bits:016x}"


def _scalar_from_union_hex(text: str, dtype: DataType) -> str:
    try:
        bits = int(text, 16)
    except ValueError:
        return text  # parse_params names the field
    width = dtype.bits // 4
    return f"0x{bits & ((1 << dtype.bits) - 1):0{width}x}"


def union_hex_value(text: str, dtype: DataType) -> np.generic:
    """Decode a DML_SCALAR_UNION hex string to a scalar of dtype (for tests and tools)."""
    bits = int(text, 16) & ((1 << dtype.bits) - 1)
    return np.array([bits], dtype=dtype.bits_dtype).view(dtype.numpy)[0]


def _float_to_wire(value: float) -> float | str:
    # JSON has no NaN or infinity; strtod() reads these spellings, so C harnesses need nothing special.
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)


def _float_from_wire(value: object) -> object:
    if isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "+inf"):
        return float(value)
    return value


# -- messages --------------------------------------------------------------------------------------
def encode_hello_request(client: str) -> bytes:
    return encode_frame({"type": "hello", "protocol": PROTOCOL_VERSION, "client": client})


def encode_bye() -> bytes:
    return encode_frame({"type": "bye"})


def encode_run_request(case_id: str, desc: Description, inputs: Mapping[str, np.ndarray]) -> bytes:
    op = desc.op
    entries, payload = pack_tensors([(name, inputs[name]) for name in op.inputs])
    header = {"type": "run", "id": case_id, "op": op.name, "params": params_to_wire(desc), "inputs": entries,
              "outputs": [tensor_desc_entry(name, desc.tensors[name]) for name in op.outputs]}
    return encode_frame(header, payload)


def _layout_entry(desc: TensorDesc, layout: TensorLayout) -> dict[str, Any]:
    entry: dict[str, Any] = {"TotalTensorSizeInBytes": total_bytes_of(desc, layout), "BindingOffset": layout.offset}
    if layout.strides is not None:
        entry["Strides"] = list(layout.strides)
    return entry


def encode_buffers_request(case_id: str, desc: Description, path: str, binding: Binding,
                           images: Mapping[str, bytes]) -> bytes:
    """A run request with whole buffers (docs/native-harness.md, "Buffers: layouts, graphs, in place"): every tensor's
    layout, and the image of every buffer as it must be before the dispatch (`images`, by Binding.buffers names)."""
    placed, payload = pack_bytes([(name, images[name]) for name in binding.buffers()])

    def tensor(name: str) -> dict[str, Any]:
        return {**tensor_desc_entry(name, desc.tensors[name]), **_layout_entry(desc.tensors[name], desc.layout(name))}

    inputs = [{**tensor(name), **placed[name]} for name in binding.inputs]
    outputs = []
    for name in binding.outputs:
        alias = binding.aliases.get(name)
        outputs.append({**tensor(name), "alias": alias} if alias else {**tensor(name), **placed[name]})
    header: dict[str, Any] = {"type": "run", "id": case_id, "op": desc.op.name, "params": params_to_wire(desc),
                              "buffers": True, "path": path, "inputs": inputs, "outputs": outputs}
    if binding.edges:
        header["edges"] = [{"name": name + EDGES_SUFFIX, **placed[name + EDGES_SUFFIX]} for name in binding.outputs]
    return encode_frame(header, payload)


@dataclass
class RunRequest:
    id: str
    op: str
    params: dict[str, Any]
    inputs: dict[str, np.ndarray]
    input_descs: dict[str, TensorDesc]
    outputs: dict[str, TensorDesc]
    #: A request with buffers: its path, each tensor's layout, every buffer's image before the dispatch (by
    #: Binding.buffers names) and the outputs bound over an input.
    buffers: bool = False
    path: str = "operator"
    layouts: dict[str, TensorLayout] = field(default_factory=dict)
    images: dict[str, bytes] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)


def decode_run_request(frame: Frame) -> RunRequest:
    header = frame.header
    case_id, op = header.get("id"), header.get("op")
    if not isinstance(case_id, str) or not isinstance(op, str):
        raise ProtocolError(f"run request needs string 'id' and 'op', got {case_id!r} and {op!r}")
    params = header.get("params", {})
    if not isinstance(params, dict):
        raise ProtocolError(f"run request 'params' must be an object, got {params!r}")
    if header.get("buffers", False) is not False:
        return _decode_buffers_request(frame, case_id, op, params)
    inputs: dict[str, np.ndarray] = {}
    input_descs: dict[str, TensorDesc] = {}
    for entry in _entry_list(header, "inputs"):
        name, array = unpack_tensor(entry, frame.payload, "inputs")
        inputs[name] = array
        input_descs[name] = read_tensor_desc(entry, "inputs")[1]
    outputs = dict(read_tensor_desc(entry, "outputs") for entry in _entry_list(header, "outputs"))
    return RunRequest(case_id, op, params, inputs, input_descs, outputs)


def _read_layout(entry: Mapping[str, Any], desc: TensorDesc, where: str) -> TensorLayout:
    strides, total, offset = entry.get("Strides"), entry.get("TotalTensorSizeInBytes"), entry.get("BindingOffset")
    if strides is not None and (not isinstance(strides, list) or len(strides) != desc.rank
                                or not all(_is_int(s) and 0 <= s <= 2**32 - 1 for s in strides)):
        raise ProtocolError(f"{where}: Strides must be {desc.rank} UINTs, got {str(strides)[:80]}", fatal=False)
    if not _is_int(total) or total < 1:
        raise ProtocolError(f"{where}: TotalTensorSizeInBytes must be a positive integer, got {total!r}", fatal=False)
    if not _is_int(offset) or offset < 0 or offset % MINIMUM_ALIGNMENT:
        raise ProtocolError(f"{where}: BindingOffset must be a non-negative multiple of {MINIMUM_ALIGNMENT}, got "
                            f"{offset!r}", fatal=False)
    return TensorLayout(tuple(strides) if strides is not None else None, total, offset)


def _read_image(entry: Mapping[str, Any], payload: bytes, layout: TensorLayout | None, where: str) -> bytes:
    offset, nbytes = entry.get("offset"), entry.get("nbytes")
    if not (_is_int(offset) and _is_int(nbytes) and offset >= 0 and nbytes >= 0):
        raise ProtocolError(f"{where}: offset and nbytes must be non-negative integers, got {offset!r} and "
                            f"{nbytes!r}", fatal=False)
    if offset + nbytes > len(payload):
        raise ProtocolError(f"{where}: bytes {offset}..{offset + nbytes} lie outside the {len(payload)}-byte payload",
                            fatal=False)
    if layout is not None and nbytes < layout.offset + (layout.total_bytes or 0):
        raise ProtocolError(f"{where}: the {nbytes}-byte buffer ends before its binding does "
                            f"(BindingOffset {layout.offset} + TotalTensorSizeInBytes {layout.total_bytes})",
                            fatal=False)
    return bytes(payload[offset:offset + nbytes])


def _decode_buffers_request(frame: Frame, case_id: str, op: str, params: dict[str, Any]) -> RunRequest:
    header = frame.header
    path = header.get("path", "operator")
    if path not in PATH_NAMES:
        raise ProtocolError(f"run request 'path' {path!r} is not one of {', '.join(PATH_NAMES)}", fatal=False)
    input_descs: dict[str, TensorDesc] = {}
    outputs: dict[str, TensorDesc] = {}
    layouts: dict[str, TensorLayout] = {}
    images: dict[str, bytes] = {}
    aliases: dict[str, str] = {}
    for entry in _entry_list(header, "inputs"):
        name, desc = read_tensor_desc(entry, "inputs")
        input_descs[name] = desc
        layouts[name] = _read_layout(entry, desc, f"inputs.{name}")
        images[name] = _read_image(entry, frame.payload, layouts[name], f"inputs.{name}")
    for entry in _entry_list(header, "outputs"):
        name, desc = read_tensor_desc(entry, "outputs")
        outputs[name] = desc
        layouts[name] = _read_layout(entry, desc, f"outputs.{name}")
        alias = entry.get("alias")
        if alias is None:
            images[name] = _read_image(entry, frame.payload, layouts[name], f"outputs.{name}")
        elif alias not in input_descs or path != "in-place":
            raise ProtocolError(f"outputs.{name}: alias {alias!r} must name an input, on the in-place path",
                                fatal=False)
        else:
            aliases[name] = alias
    edges = _entry_list(header, "edges") if "edges" in header else []
    if bool(edges) != (path == "graph"):
        raise ProtocolError("run request 'edges' comes with the graph path, and only with it", fatal=False)
    for entry in edges:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or name.removesuffix(EDGES_SUFFIX) not in outputs or \
                not name.endswith(EDGES_SUFFIX):
            raise ProtocolError(f"edges: {name!r} is not an output's name followed by {EDGES_SUFFIX}", fatal=False)
        images[name] = _read_image(entry, frame.payload, layouts[name.removesuffix(EDGES_SUFFIX)], f"edges.{name}")
    return RunRequest(case_id, op, params, {}, input_descs, outputs, True, path, layouts, images, aliases)


def encode_result(case_id: str, status: str, outputs: Sequence[tuple[str, np.ndarray]] = (),
                  message: str = "", extra: Mapping[str, Any] | None = None,
                  images: Mapping[str, bytes] | None = None) -> bytes:
    header: dict[str, Any] = {"type": "result", "id": case_id, "status": status}
    payload = b""
    if status == "ok" and images is not None:
        placed, payload = pack_bytes(list(images.items()))
        header["images"] = [{"name": name, **where} for name, where in placed.items()]
    elif status == "ok":
        header["outputs"], payload = pack_tensors(outputs)
    else:
        header["message"] = message
    header.update(extra or {})
    return encode_frame(header, payload)


@dataclass
class Reply:
    status: str
    message: str = ""
    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    #: A request with buffers: every buffer after the dispatch, by name.
    images: dict[str, bytes] | None = None


def decode_result(frame: Frame, case_id: str, expected: Mapping[str, TensorDesc],
                  images: Mapping[str, int] | None = None) -> Reply:
    """Check a reply against the case it answers; fatal errors mean the stream is out of step. `images`: for a
    request with buffers, the size of every buffer the reply must return."""
    header = frame.header
    if frame.type != "result":
        raise ProtocolError(f"expected a 'result' message, got type {header.get('type')!r}")
    if header.get("id") != case_id:
        raise ProtocolError(f"reply is for case {header.get('id')!r}, not {case_id!r}")
    status = header.get("status")
    if status not in REPLY_STATUSES:
        raise ProtocolError(f"unknown reply status {status!r} (known: {', '.join(REPLY_STATUSES)})")
    message = header.get("message", header.get("reason", ""))
    message = message if isinstance(message, str) else json.dumps(message)
    if status != "ok":
        return Reply(status, message, header=header)
    if images is not None:
        return Reply(status, message, header=header, images=_decode_images(header, frame.payload, images))
    outputs: dict[str, np.ndarray] = {}
    for entry in _entry_list(header, "outputs", fatal=False):
        name, desc = read_tensor_desc(entry, "outputs")
        want = expected.get(name)
        if want is None:
            raise ProtocolError(f"outputs.{name}: not an output of this case (expected "
                                f"{', '.join(expected)})", fatal=False)
        if desc.dtype is not want.dtype:
            raise ProtocolError(f"outputs.{name}: DataType {desc.dtype.name} ({desc.dtype.value}), expected "
                                f"{want.dtype.name} ({want.dtype.value})", fatal=False)
        if desc.shape != want.shape:
            raise ProtocolError(f"outputs.{name}: Sizes {list(desc.shape)}, expected {list(want.shape)}",
                                fatal=False)
        outputs[name] = unpack_tensor(entry, frame.payload, "outputs")[1]
    missing = [name for name in expected if name not in outputs]
    if missing:
        raise ProtocolError(f"outputs: {', '.join(missing)} missing from an 'ok' reply", fatal=False)
    return Reply(status, message, outputs, header)


def _decode_images(header: Mapping[str, Any], payload: bytes, sizes: Mapping[str, int]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in _entry_list(header, "images", fatal=False):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in sizes:
            raise ProtocolError(f"images: {name!r} is not a buffer of this case (expected {', '.join(sizes)})",
                                fatal=False)
        image = _read_image(entry, payload, None, f"images.{name}")
        if len(image) != sizes[name]:
            raise ProtocolError(f"images.{name}: {len(image)} bytes, but the buffer sent had {sizes[name]}",
                                fatal=False)
        found[name] = image
    missing = [name for name in sizes if name not in found]
    if missing:
        raise ProtocolError(f"images: {', '.join(missing)} missing from an 'ok' reply", fatal=False)
    return found


def _entry_list(header: Mapping[str, Any], key: str, fatal: bool = True) -> list[Any]:
    entries = header.get(key, [])
    if not isinstance(entries, list):
        raise ProtocolError(f"'{key}' must be a list of tensor entries, got {entries!r}", fatal=fatal)
    return entries


def encode_model_request(case_id: str, model: bytes, inputs: Sequence[tuple[str, np.ndarray]],
                         outputs: Mapping[str, TensorDesc]) -> bytes:
    """An ONNX model host's request (docs/native-harness.md section 9): the serialized model at the start of the
    payload, then the input tensors; the outputs by name, DataType and Sizes."""
    entries, tensors = pack_tensors(inputs)
    start = len(model) + (-len(model) % TENSOR_ALIGNMENT)
    for entry in entries:
        entry["offset"] += start
    header = {"type": "run_model", "id": case_id, "model": {"offset": 0, "nbytes": len(model)}, "inputs": entries,
              "outputs": [tensor_desc_entry(name, desc) for name, desc in outputs.items()]}
    return encode_frame(header, model + b"\0" * (start - len(model)) + tensors)


@dataclass
class ModelHostHello:
    """What an ONNX model host says about itself: the runtime, its execution provider and, on a GPU provider, the
    device it runs on (a DirectML feature level where the host queried one)."""

    name: str
    version: str
    execution_provider: str
    runtime_version: str
    adapter: str
    driver_version: str
    api: str
    #: DirectML.dll's file version where the provider runs on DirectML, else "".
    directml: str
    feature_level: FeatureLevel | None
    feature_level_source: str
    extra: dict[str, str] = field(default_factory=dict)


def decode_model_host_hello(frame: Frame) -> ModelHostHello:
    header = frame.header
    if frame.type == "error":
        raise ProtocolError(f"the host refused to start: {header.get('message', '(no message)')}")
    if frame.type != "hello":
        raise ProtocolError(f"expected the host's 'hello', got type {header.get('type')!r}")
    if header.get("protocol") != PROTOCOL_VERSION:
        raise ProtocolError(f"the host speaks protocol {header.get('protocol')!r}; this dmlconform speaks "
                            f"{PROTOCOL_VERSION}")
    if header.get("serves") != "onnx-models":
        raise ProtocolError(f"hello: serves {header.get('serves')!r}, not 'onnx-models': this is not an ONNX model "
                            "host (a DirectML harness goes to --backend native)")
    provider = header.get("execution_provider")
    if not isinstance(provider, str) or not provider:
        raise ProtocolError(f"hello: execution_provider must name the provider, got {provider!r}")
    raw_level = header.get("feature_level")
    level = None
    if raw_level is not None:
        try:
            level = FeatureLevel(raw_level) if _is_int(raw_level) else FeatureLevel.parse(raw_level)
        except ValueError:
            raise ProtocolError(f"hello: feature_level {raw_level!r} is not a DML feature level such as "
                                "'6_4'") from None
    text = {key: str(header.get(key, "")) for key in ("name", "version", "onnxruntime", "adapter", "driver_version",
                                                       "api", "directml", "feature_level_source")}
    extra = header.get("extra", {})
    return ModelHostHello(text["name"] or "host", text["version"], provider, text["onnxruntime"],
                          text["adapter"] or "unknown adapter", text["driver_version"], text["api"], text["directml"],
                          level, text["feature_level_source"],
                          {str(k): str(v) for k, v in extra.items()} if isinstance(extra, dict) else {})


@dataclass
class Hello:
    """What a harness says about itself in the handshake."""

    protocol: int
    name: str
    version: str
    adapter: str
    driver_version: str
    api: str
    feature_level: FeatureLevel
    feature_level_source: str
    #: Operator name -> data types the harness runs; None: it decides case by case.
    operators: dict[str, frozenset[DataType]] | None
    extra: dict[str, str] = field(default_factory=dict)
    #: How many requests the runner may have sent and not yet had answered (section 1 of docs/native-harness.md):
    #: 1, one at a time, unless the harness's hello says `pipeline`.
    pipeline: int = 1
    #: What the hello's `surface` offers (contract §9): requests with buffers (layouts), and the paths it runs.
    layouts: bool = False
    paths: frozenset[str] = frozenset({"operator"})


def encode_hello_reply(hello: Hello) -> bytes:
    header: dict[str, Any] = {
        "type": "hello", "protocol": hello.protocol, "name": hello.name, "version": hello.version,
        "adapter": hello.adapter, "driver_version": hello.driver_version, "api": hello.api,
        "feature_level": hello.feature_level.label, "feature_level_source": hello.feature_level_source,
        "extra": hello.extra,
    }
    if hello.operators is not None:
        header["operators"] = {op: sorted(d.name for d in dtypes) for op, dtypes in hello.operators.items()}
    if hello.pipeline > 1:
        header["pipeline"] = hello.pipeline
    if hello.layouts:
        header["surface"] = {"layouts": True, "paths": sorted(hello.paths)}
    return encode_frame(header)


def _surface(header: Mapping[str, Any]) -> tuple[bool, frozenset[str]]:
    raw = header.get("surface")
    if raw is None:
        return False, frozenset({"operator"})
    if not isinstance(raw, Mapping) or not isinstance(raw.get("paths", []), list):
        raise ProtocolError(f"hello: surface must be {{layouts, paths}}, got {str(raw)[:80]}")
    paths = frozenset(str(p) for p in raw.get("paths", [])) | {"operator"}
    unknown = sorted(paths - set(PATH_NAMES))
    if unknown:
        raise ProtocolError(f"hello: surface.paths names {', '.join(unknown)}; paths are {', '.join(PATH_NAMES)}")
    return raw.get("layouts") is True, paths


def _pipeline(header: Mapping[str, Any]) -> int:
    """The hello's `pipeline`: how many requests the harness reads ahead of its replies (absent: 1)."""
    raw = header.get("pipeline", 1)
    if not _is_int(raw) or not 1 <= raw <= MAX_PIPELINE:
        raise ProtocolError(f"hello: pipeline must be a whole number of requests from 1 to {MAX_PIPELINE}, "
                            f"got {raw!r}")
    return int(raw)


def decode_hello(frame: Frame) -> Hello:
    header = frame.header
    if frame.type == "error":
        raise ProtocolError(f"the harness refused to start: {header.get('message', '(no message)')}")
    if frame.type != "hello":
        raise ProtocolError(f"expected the harness's 'hello', got type {header.get('type')!r}")
    protocol = header.get("protocol")
    if protocol != PROTOCOL_VERSION:
        raise ProtocolError(f"the harness speaks protocol {protocol!r}; this dmlconform speaks {PROTOCOL_VERSION}")
    raw_level = header.get("feature_level")
    try:
        level = FeatureLevel(raw_level) if _is_int(raw_level) else FeatureLevel.parse(raw_level)
    except ValueError:
        raise ProtocolError(f"hello: feature_level {raw_level!r} is not a DML feature level such as '6_4' "
                            f"or 0x6400") from None
    operators: dict[str, frozenset[DataType]] | None = None
    raw_ops = header.get("operators")
    if raw_ops is not None:
        if not isinstance(raw_ops, dict):
            raise ProtocolError(f"hello: 'operators' must map operator names to data type lists, got {raw_ops!r}")
        operators = {}
        for name, dtypes in raw_ops.items():
            key = str(name).upper().removeprefix("DML_OPERATOR_")
            if not isinstance(dtypes, list):
                raise ProtocolError(f"hello: operators.{name} must be a list of data types, got {dtypes!r}")
            try:
                operators[key] = frozenset(_data_type(d) for d in dtypes)
            except ValueError as exc:
                raise ProtocolError(f"hello: operators.{name}: {exc}") from None
    extra = header.get("extra", {})
    text = {key: str(header.get(key, "")) for key in ("name", "version", "adapter", "driver_version", "api",
                                                       "feature_level_source")}
    return Hello(PROTOCOL_VERSION, text["name"] or "harness", text["version"], text["adapter"] or "unknown adapter",
                 text["driver_version"], text["api"], level, text["feature_level_source"], operators,
                 {str(k): str(v) for k, v in extra.items()} if isinstance(extra, dict) else {}, _pipeline(header),
                 *_surface(header))
