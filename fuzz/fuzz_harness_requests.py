"""The harness's side of the native-harness protocol: `python -m dmlconform.harness` (harness/server.py) serving
the reference over stdin/stdout, reading whatever the runner (or anything else) writes to it.

Input: the bytes after a valid hello request (byte 0 odd: the whole stream, hello included, is the input).
Contract: `serve` returns 0 or 2 and raises nothing; what it wrote is a sequence of well-formed frames (a hello
or an error first, then one result per run request, each naming its id); memory within the bound of the tensors
the requests declare.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator

from dmlconform import harness_protocol as protocol
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.cli.common import bundled_suites
from dmlconform.harness.server import HarnessServer
from dmlconform.harness_protocol import ProtocolError
from dmlconform.suite.loader import load_paths
from dmlconform.surface.buffers import images_before
from dmlconform.surface.paths import ExecutionPath
from fuzz.contract import ContractBroken, memory_bound

HELLO = protocol.encode_hello_request("fuzz")
#: Frames read from one input at most.
MAX_FRAMES = 16


def declared_bytes(stream: bytes) -> int:
    """What the requests in the stream declare (payloads, and output tensors up to the protocol's limit)."""
    reader = io.BytesIO(stream)
    total = 0
    for _ in range(MAX_FRAMES):
        try:
            frame = protocol.read_frame(reader.read)
        except ProtocolError:
            break
        total += len(frame.payload)
        # A request with buffers declares logical tensors too: a broadcast input (stride 0) of many elements in a few
        # bytes of image is as large as its Sizes once read (docs/native-harness.md section 10).
        keys = ("inputs", "outputs") if frame.header.get("buffers") is True else ("outputs",)
        entries = [entry for key in keys for entry in (frame.header.get(key) if isinstance(frame.header.get(key), list)
                                                       else [])]
        for entry in entries:
            try:
                _, desc = protocol.read_tensor_desc(entry, "outputs")
            except ProtocolError:
                continue
            total += min(math.prod(desc.shape), protocol.MAX_ELEMENTS) * desc.dtype.numpy.itemsize
    return total


def one_input(data: bytes) -> None:
    stream = data[1:] if data[:1] and data[0] % 2 else HELLO + data
    stdout = io.BytesIO()
    server = HarnessServer(NumpyBackend(), "numpy", io.BytesIO(stream), stdout)
    with memory_bound(len(data)) as declared:
        declared.bytes = declared_bytes(stream)
        with contextlib.redirect_stderr(io.StringIO()):
            status = server.serve()
    if status not in (0, 2):
        raise ContractBroken(f"serve returned {status!r}")
    written = io.BytesIO(stdout.getvalue())
    first = True
    while written.tell() < len(stdout.getvalue()):
        try:
            frame = protocol.read_frame(written.read)
        except ProtocolError as exc:
            raise ContractBroken(f"the server wrote a malformed frame: {exc}") from exc
        kinds = ("hello", "error") if first else ("result",)
        if frame.type not in kinds or (frame.type == "result" and not isinstance(frame.header.get("id"), str)):
            raise ContractBroken(f"the server wrote {frame.header!r} where {' or '.join(kinds)} belongs")
        first = False


def seeds() -> Iterator[bytes]:
    """Run requests for bundled cases of every operator (valid and negative), and a bye."""
    by_op: dict[str, int] = {}
    for case in load_paths([bundled_suites() / "seed", bundled_suites() / "slice_grad"]):
        if by_op.get(case.op.name, 0) >= 3:
            continue
        by_op[case.op.name] = by_op.get(case.op.name, 0) + 1
        request = protocol.encode_run_request(case.full_id, case.description, case.inputs)
        yield request + protocol.encode_bye()
        yield bytes([1]) + HELLO + request
    yield protocol.encode_frame({"type": "run", "id": "x/y", "op": "SLICE_GRAD"})
    # Requests with buffers (layouts, the graph and in-place paths): a few layout cases of each operator, every path.
    taken: dict[str, int] = {}
    for case in load_paths([bundled_suites() / "smoke"]):
        if not case.description.has_layouts or taken.get(case.op.name, 0) >= 2:
            continue
        taken[case.op.name] = taken.get(case.op.name, 0) + 1
        for path in ExecutionPath:
            on_path = case.on_path(path)
            if on_path is not None:
                binding = on_path.binding
                before = images_before(on_path.description, binding, on_path.inputs)
                yield protocol.encode_buffers_request(on_path.full_id, on_path.description, path.value, binding,
                                                      before) + protocol.encode_bye()
