"""The harness side of the protocol: serve any in-process backend over stdin/stdout.

`python -m dmlconform.harness --backend numpy` is the reference harness: the runner's native
backend talks to it exactly as it would to a C++ DirectML harness. Fault injection (crash, hang,
garbage, device removal on chosen case ids) lets tests prove the runner survives each of them.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import numpy as np

from dmlconform import __version__
from dmlconform import harness_protocol as protocol
from dmlconform.backends.base import Backend, OutcomeKind
from dmlconform.case import Case
from dmlconform.harness_protocol import Frame, Hello, ProtocolError, StreamEnded
from dmlconform.ops import OPERATORS, find_operator
from dmlconform.ops.base import Description, DescriptionError, ParamError
from dmlconform.surface.buffers import images_after, read_inputs
from dmlconform.surface.paths import PATH_NAMES, ExecutionPath

GARBAGE_MODES = ("size", "bytes", "json", "dtype", "shape", "id", "kind", "truncate")
CRASH_MODES = ("exit", "abort")
CRASH_EXIT_CODE = 86


@dataclass
class Faults:
    """Misbehaviour to inject, each on the case ids its pattern finds (re.search)."""

    crash_on: re.Pattern[str] | None = None
    crash_mode: str = "exit"
    hang_on: re.Pattern[str] | None = None
    garbage_on: re.Pattern[str] | None = None
    garbage_mode: str = "size"
    device_removed_on: re.Pattern[str] | None = None
    #: Give a wrong answer on the 1st, 3rd, 5th... request for each matching case: one time in two.
    flaky_on: re.Pattern[str] | None = None
    #: Seconds to wait before answering each request: a slow device.
    delay_s: float = 0.0
    #: Append the id of every case served to this file (one line each), to check what ran where.
    log_served: Path | None = None

    @staticmethod
    def hits(pattern: re.Pattern[str] | None, case_id: str) -> bool:
        return pattern is not None and pattern.search(case_id) is not None


class HarnessServer:
    def __init__(self, backend: Backend, backend_name: str, stdin: BinaryIO, stdout: BinaryIO,
                 faults: Faults | None = None, api: str | None = None) -> None:
        self.backend = backend
        #: What the handshake says the harness drives (default: the in-process backend).
        self.api = api
        self.backend_name = backend_name
        self.stdin, self.stdout = stdin, stdout
        self.faults = faults or Faults()
        self.served: dict[str, int] = {}

    def log(self, message: str) -> None:
        print(f"dmlconform.harness: {message}", file=sys.stderr, flush=True)

    def send(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.flush()

    def hello(self) -> Hello:
        info = self.backend.info()
        return Hello(protocol.PROTOCOL_VERSION, f"dmlconform.harness[{self.backend_name}]", __version__,
                     info.device, info.version, self.api or f"in-process backend '{info.name}'", info.feature_level,
                     f"the {info.name} backend's own claim: {info.feature_level_source}",
                     {op.name: op.support.all_dtypes for op in OPERATORS.values()}, dict(info.extra),
                     layouts=True, paths=frozenset(PATH_NAMES))

    def serve(self) -> int:
        """Answer requests until 'bye' or end of stdin; the exit status for the process."""
        try:
            first = protocol.read_frame(self.stdin.read)
        except StreamEnded:
            return 0
        except ProtocolError as exc:
            self.log(f"bad handshake: {exc}")
            return 2
        if first.type != "hello" or first.header.get("protocol") != protocol.PROTOCOL_VERSION:
            message = (f"expected hello with protocol {protocol.PROTOCOL_VERSION}, got type {first.type!r} "
                       f"protocol {first.header.get('protocol')!r}")
            self.send(protocol.encode_frame({"type": "error", "message": message}))
            return 2
        self.send(protocol.encode_hello_reply(self.hello()))
        while True:
            try:
                frame = protocol.read_frame(self.stdin.read)
            except StreamEnded as exc:
                if not exc.at_boundary:
                    self.log(f"request cut short: {exc}")
                return 0 if exc.at_boundary else 2
            except ProtocolError as exc:
                self.log(f"unreadable request, giving up: {exc}")
                return 2
            if frame.type == "bye":
                return 0
            if frame.type != "run":
                self.log(f"ignoring a message of unknown type {frame.type!r}")
                continue
            self.handle(frame)

    def handle(self, frame: Frame) -> None:
        case_id = frame.header.get("id")
        if not isinstance(case_id, str):
            self.send(protocol.encode_result(str(case_id), "error", message="run request without a string id"))
            return
        self.served[case_id] = self.served.get(case_id, 0) + 1
        if self.faults.log_served is not None:
            with self.faults.log_served.open("a", encoding="utf-8") as log:
                log.write(f"{case_id} {os.getpid()}\n")
        self.inject_before(case_id)
        if frame.header.get("buffers", False) is not False:
            self.send(self.run_buffers(frame, case_id))
            return
        status, outputs, message = self.run(frame)
        if Faults.hits(self.faults.garbage_on, case_id):
            self.send_garbage(case_id, outputs)
            return
        if Faults.hits(self.faults.flaky_on, case_id) and self.served[case_id] % 2 == 1:
            status, outputs, message = self.wrong_answer(case_id, status, outputs, message)
        self.send(protocol.encode_result(case_id, status, outputs, message))

    def run(self, frame: Frame) -> tuple[str, list[tuple[str, np.ndarray]], str]:
        """(status, outputs, message) for one run request; never raises."""
        try:
            request = protocol.decode_run_request(frame)
        except ProtocolError as exc:
            return "error", [], f"unreadable request: {exc}"
        try:
            case = self.rebuild(request)
        except KeyError as exc:
            return "unsupported", [], str(exc.args[0])
        except (ParamError, ProtocolError) as exc:
            return "error", [], f"request does not describe a case: {exc}"
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return "refused", [], str(exc)
        try:
            outcome = self.backend.run(case)
        except Exception as exc:  # an in-process backend bug costs this case only
            return "error", [], f"backend raised {type(exc).__name__}: {exc}"
        if outcome.kind is OutcomeKind.OUTPUTS:
            return "ok", [(name, outcome.outputs[name]) for name in case.op.outputs if name in outcome.outputs], ""
        status = {OutcomeKind.REFUSED: "refused", OutcomeKind.NOT_SUPPORTED: "unsupported",
                  OutcomeKind.UNEXPRESSIBLE: "unsupported"}.get(outcome.kind, "error")
        prefix = "" if status != "error" or outcome.kind is OutcomeKind.ERROR else f"{outcome.kind.value}: "
        return status, [], prefix + outcome.message

    def run_buffers(self, frame: Frame, case_id: str) -> bytes:
        """A request with buffers (docs/native-harness.md): the inputs read from their buffers through their layouts,
        the backend run on the logical tensors, and the outputs written where their layouts put them, in the
        buffers as they came (over the aliased input in place; into the second copy on the graph path)."""
        try:
            request = protocol.decode_run_request(frame)
            case = self.rebuild(request)
        except KeyError as exc:
            return protocol.encode_result(case_id, "unsupported", message=str(exc.args[0]))
        except (ParamError, ProtocolError) as exc:
            return protocol.encode_result(case_id, "error", message=f"request does not describe a case: {exc}")
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return protocol.encode_result(case_id, "refused", message=str(exc))
        binding = case.binding
        missing = [name for name in binding.buffers() if name not in request.images]
        if missing:
            return protocol.encode_result(case_id, "error", message=f"no buffer image for {', '.join(missing)}")
        logical = replace(case, description=replace(case.description, layouts={}), path=ExecutionPath.OPERATOR,
                          inputs=read_inputs(case.description, binding, request.images))
        try:
            outcome = self.backend.run(logical)
        except Exception as exc:  # an in-process backend bug costs this case only
            return protocol.encode_result(case_id, "error", message=f"backend raised {type(exc).__name__}: {exc}")
        if outcome.kind is not OutcomeKind.OUTPUTS:
            status = {OutcomeKind.REFUSED: "refused", OutcomeKind.NOT_SUPPORTED: "unsupported",
                  OutcomeKind.UNEXPRESSIBLE: "unsupported"}.get(outcome.kind,
                                                                                                     "error")
            return protocol.encode_result(case_id, status, message=outcome.message)
        images = images_after(case.description, binding, request.images, outcome.outputs)
        return protocol.encode_result(case_id, "ok", images=images)

    @staticmethod
    def rebuild(request: protocol.RunRequest) -> Case:
        """A Case from the request alone: operator, DML field values and tensor descriptions."""
        op = find_operator(request.op)
        descs = {**request.input_descs, **request.outputs}
        expected = set(op.tensors)
        if set(descs) != expected:
            raise ProtocolError(f"tensors {sorted(descs)} are not {op.name}'s {sorted(expected)}")
        dtype = descs[op.outputs[0]].dtype
        params = op.parse_params(protocol.params_from_wire(op, request.params, dtype), dtype)
        suite, _, name = request.id.partition("/")
        layouts = {key: layout for key, layout in request.layouts.items() if not layout.is_default}
        return Case(suite, name or request.id, Path("<harness request>"), Description(op, params, descs, layouts),
                    request.inputs, path=ExecutionPath(request.path))

    def close_stdout(self) -> None:
        # sys.stdout.buffer does not own fd 1, so closing the object alone would leave the pipe open.
        try:
            fd = self.stdout.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.stdout.close()
            return
        os.close(fd)

    # -- fault injection ---------------------------------------------------------------------------
    def inject_before(self, case_id: str) -> None:
        faults = self.faults
        if faults.delay_s > 0:
            time.sleep(faults.delay_s)
        if Faults.hits(faults.crash_on, case_id):
            self.log(f"injected crash ({faults.crash_mode}) on {case_id}")
            if faults.crash_mode == "abort":
                os.abort()
            os._exit(CRASH_EXIT_CODE)
        if Faults.hits(faults.hang_on, case_id):
            self.log(f"injected hang on {case_id}")
            threading.Event().wait()
        if Faults.hits(faults.device_removed_on, case_id):
            self.log(f"injected device removal on {case_id}")
            self.send(protocol.encode_result(case_id, "device_removed", message="DXGI_ERROR_DEVICE_HUNG "
                                             "(injected by --device-removed-on)", extra={"hresult": "0x887A0006"}))
            os._exit(3)

    def wrong_answer(self, case_id: str, status: str, outputs: list[tuple[str, np.ndarray]],
                     message: str) -> tuple[str, list[tuple[str, np.ndarray]], str]:
        """A well-formed reply that fails the case: element 0 changed (NaN, or +1 for integers), or an error
        where there is no output to change."""
        self.log(f"injected flaky failure on {case_id} (request {self.served[case_id]})")
        if status == "ok" and outputs and outputs[0][1].size:
            name, array = outputs[0]
            wrong = array.copy()
            flat = wrong.reshape(-1)
            if np.issubdtype(flat.dtype, np.floating):
                flat[0] = 0 if np.isnan(flat[0]) else np.nan
            else:
                flat[0] = flat[0] + np.array(1, dtype=flat.dtype)
            return status, [(name, wrong), *outputs[1:]], message
        return "error", [], "injected flaky failure (--flaky-on)"  # nothing to distort: refuse differently

    def send_garbage(self, case_id: str, outputs: list[tuple[str, np.ndarray]]) -> None:
        mode = self.faults.garbage_mode
        self.log(f"injected garbage ({mode}) on {case_id}")
        if not outputs:  # the malformations below need a tensor to distort
            outputs = [("OutputGradientTensor", np.zeros(4, np.float32))]
        if mode == "bytes":
            self.send(b"this is not a frame, it is text on stdout\n")
        elif mode == "json":
            text = b'{"type": "result", "id": '
            self.send(protocol.PREFIX.pack(protocol.MAGIC, len(text), 0) + text)
        elif mode == "id":
            self.send(protocol.encode_result(case_id + "-someone-else", "ok", outputs))
        elif mode == "kind":
            self.send(protocol.encode_result(case_id, "maybe", message="not a status"))
        elif mode == "dtype":
            name, array = outputs[0]
            other = np.float64 if array.dtype != np.float64 else np.float32
            self.send(protocol.encode_result(case_id, "ok", [(name, array.astype(other)), *outputs[1:]]))
        elif mode == "shape":
            name, array = outputs[0]
            wrong = array.reshape(-1) if array.ndim != 1 else array.reshape(1, -1)
            self.send(protocol.encode_result(case_id, "ok", [(name, wrong), *outputs[1:]]))
        elif mode == "truncate":
            data = protocol.encode_result(case_id, "ok", outputs)
            self.send(data[: max(len(data) // 2, 1)])
            self.close_stdout()
            while self.stdin.read(1 << 16):  # stay alive but silent: a broken stream, not a dead process
                pass
            os._exit(0)
        else:  # size: the first tensor's bytes do not add up to its Sizes
            entries, payload = protocol.pack_tensors(outputs)
            itemsize = outputs[0][1].dtype.itemsize
            entries[0]["nbytes"] -= itemsize
            header = {"type": "result", "id": case_id, "status": "ok", "outputs": entries}
            self.send(protocol.encode_frame(header, payload))


def regex_argument(text: str) -> re.Pattern[str]:
    """An argparse type for the fault-injection options (--crash-on REGEX, ...) of the harnesses' command lines."""
    try:
        return re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular expression: {exc}") from None
