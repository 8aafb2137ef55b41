"""The `native` backend: runs each case in an out-of-process harness (docs/native-harness.md).

The harness is a child process speaking the frame protocol of dmlconform.harness_protocol on its
stdin/stdout. Whatever it does, every case gets exactly one outcome: a hang becomes TIMEOUT, a dead
process or a device removal becomes CRASH, an unreadable reply becomes ERROR, and the harness is
restarted before the next case whenever its stream can no longer be trusted. `HarnessClient` is that
process handling on its own; the onnxruntime backend's ONNX model host (ort_host.py) goes through it too.
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dmlconform import __version__, processes
from dmlconform import harness_protocol as protocol
from dmlconform.backends import register
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.harness_protocol import Frame, Hello, ProtocolError, StreamEnded
from dmlconform.ops.base import TensorDesc
from dmlconform.surface.buffers import images_before

#: Seconds a harness may take to start and answer the handshake (device creation can be slow).
MIN_HANDSHAKE_S = 10.0
#: After this many restarts in a row that fail, the remaining cases fail fast instead of retrying.
MAX_FAILED_STARTS = 3
STDERR_LINES = 40
#: A reply's header holds a status, a message and tensor entries: far less than this.
REPLY_HEADER_BYTES = 1 << 20
MAX_STDERR_LINE = 2000
#: Requests a pipelining harness holds at most: enough that it never waits for the runner (which decodes and judges
#: one reply while the harness runs the next), few enough that a retry runs soon after its case.
PIPELINE_DEPTH = 4
_PYTHON_NAMES = ("python", "python3", "python.exe", "python3.exe")


class HarnessStartError(RuntimeError):
    """The harness could not be started or did not complete the handshake; the message is one line."""


class _Timeout(Exception):
    def __init__(self, received: int) -> None:
        super().__init__(received)
        self.received = received


class _WriteFailed(Exception):
    pass


#: What the writer thread puts among the harness's output when a write fails (see HarnessProcess.read_frame).
_WRITE_FAILED = object()
#: How long a harness that stopped taking requests, but is alive, may still deliver replies it had written.
WRITE_FAILED_GRACE_S = 0.5


def harness_argv(command: str) -> list[str]:
    """Split --harness into an argument list (never a shell); a leading `python` means this interpreter.

    That keeps `--harness "python -m dmlconform.harness ..."` working inside a virtual environment
    whose python is not first on PATH.
    """
    argv = shlex.split(command, posix=os.name != "nt")
    if os.name == "nt":  # non-POSIX shlex keeps quotes so backslashes in paths survive; drop the quotes
        argv = [a[1:-1] if len(a) >= 2 and a[0] == a[-1] == '"' else a for a in argv]
    if not argv:
        raise HarnessStartError("--harness is empty: give the harness command line, e.g. "
                                "--harness \"python -m dmlconform.harness --backend numpy\"")
    if argv[0].lower() in _PYTHON_NAMES:
        argv[0] = sys.executable
    return argv


def _stop_unused(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class HarnessProcess:
    """One running harness: the child, a reader and a writer thread per pipe, and a stderr tail.

    Blocking pipe I/O lives on threads (select() does not work on Windows pipes); the caller waits on
    a queue with a deadline, so a harness that stops reading or writing can never block the runner.
    """

    def __init__(self, argv: list[str], environment: Mapping[str, str] | None = None,
                 started: processes.StartedProgram | None = None) -> None:
        """`started`: a process started before (processes.worker_entry), taken over when it is this very program
        (command line and whole environment), else stopped."""
        self.argv = argv
        env = {**os.environ, **environment} if environment else None
        if started is not None and started.program.matches(argv, os.environ if env is None else env):
            self.process = started.process
        else:
            if started is not None:
                _stop_unused(started.process)
                print("dmlconform: the harness started ahead of this worker's setup was not the one its backend "
                      "starts (command line or environment differ): stopped, and the backend's own started",
                      file=sys.stderr)
            try:
                self.process = processes.start_program(argv, env)
            except OSError as exc:
                raise HarnessStartError(f"cannot start harness {shlex.join(argv)}: {exc.strerror or exc}") from None
        self._inbound: queue.Queue[bytes | BaseException | object] = queue.Queue()
        self._write_error: _WriteFailed | None = None
        self._outbound: queue.Queue[bytes | None] = queue.Queue()
        self._buffer = bytearray()
        self._stdout_closed = False
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES)
        self._stderr_done = threading.Event()
        for target in (self._read_stdout, self._write_stdin, self._read_stderr):
            threading.Thread(target=target, daemon=True, name=f"harness-{target.__name__}").start()

    # -- threads -----------------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                chunk = b""
            self._inbound.put(chunk)
            if not chunk:
                return

    def _write_stdin(self) -> None:
        assert self.process.stdin is not None
        fd = self.process.stdin.fileno()
        while (data := self._outbound.get()) is not None:
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:  # broken pipe: the harness exited or closed its stdin
                self._write_error = _WriteFailed(str(exc))
                self._inbound.put(_WRITE_FAILED)
                return
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # end of stream tells the harness to exit

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        # Draining stderr all the time keeps a chatty harness from blocking on a full pipe. Chunked reads,
        # because the pipe is unbuffered and readline() on it would cost one system call per byte.
        fd = self.process.stderr.fileno()
        partial = b""
        try:
            while chunk := os.read(fd, 1 << 16):
                *lines, partial = (partial + chunk).split(b"\n")
                partial = partial[-MAX_STDERR_LINE:]
                for line in lines:
                    self._keep_stderr(line)
        except OSError:
            pass
        finally:
            self._keep_stderr(partial)
            self._stderr_done.set()

    def _keep_stderr(self, raw: bytes) -> None:
        line = raw[-MAX_STDERR_LINE:].decode("utf-8", "replace").rstrip()
        if line:
            self.stderr_tail.append(line)

    # -- I/O ---------------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        self._outbound.put(data)

    def read_frame(self, deadline: float, max_payload: int = 0) -> Frame:
        """Read one frame before the deadline, its header at most REPLY_HEADER_BYTES and its payload at most
        `max_payload`; raises _Timeout, StreamEnded, _WriteFailed or ProtocolError.

        A failed write (a request behind this one, when requests are pipelined) does not overtake what the harness
        wrote before it: a dead harness's last replies and the end of its stdout are read first, and a live one that
        stopped taking requests has WRITE_FAILED_GRACE_S to deliver the reply being read."""
        received = 0

        def next_item() -> bytes | BaseException | object:
            remaining = deadline - time.monotonic()
            try:
                return self._inbound.get(timeout=max(remaining, 0.0)) if remaining > 0 else \
                    self._inbound.get_nowait()
            except queue.Empty:
                raise _Timeout(received) from None

        def read(count: int) -> bytes:
            nonlocal received
            while not self._buffer:
                if self._stdout_closed:
                    return b""
                item = next_item()
                if item is _WRITE_FAILED:
                    if self.process.poll() is not None:
                        continue  # it exited: what it wrote, then the end of its stdout, are still to come
                    try:
                        item = self._inbound.get(timeout=WRITE_FAILED_GRACE_S)
                    except queue.Empty:
                        assert self._write_error is not None
                        raise self._write_error from None
                if isinstance(item, BaseException):
                    raise item
                if not isinstance(item, bytes) or not item:
                    self._stdout_closed = True
                    return b""
                self._buffer += item
            chunk = bytes(self._buffer[:count])
            del self._buffer[:count]
            received += len(chunk)
            return chunk

        return protocol.read_frame(read, REPLY_HEADER_BYTES, max_payload)

    # -- life cycle --------------------------------------------------------------------------------
    def exit_code(self, wait_s: float) -> int | None:
        try:
            return self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                self.process.kill()
        self.exit_code(5.0)
        self._outbound.put(None)

    def stop(self, grace_s: float = 2.0) -> None:
        """Ask politely (bye, then end of stdin), then kill."""
        if self.process.poll() is None:
            self.send(protocol.encode_bye())
            self._outbound.put(None)
            if self.exit_code(grace_s) is None:
                self.kill()
        self._outbound.put(None)

    def stderr_text(self, lines: int = 5) -> str:
        # The child may have exited a moment ago; give the drain thread a chance to catch its last words.
        if self.process.poll() is not None:
            self._stderr_done.wait(0.5)
        tail = list(self.stderr_tail)[-lines:]
        return " | ".join(tail)

    def death(self, wait_s: float = 2.0) -> str:
        """How the process ended, in words: exit code or signal, plus the last stderr lines."""
        code = self.exit_code(wait_s)
        text = "it is still running but closed its stdout" if code is None else describe_exit(code)
        tail = self.stderr_text()
        return f"{text}; last stderr: {tail}" if tail else f"{text}; no stderr output"


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name} ({-code})"
    if code > 0xFFFF:  # Windows NTSTATUS codes such as 0xC0000005 (access violation) read better in hex
        return f"exit code 0x{code:08X}"
    return f"exit code {code}"


@dataclass
class _Request:
    """A request given to the client and not yet answered: its bytes are kept until then, so that it can go again to
    a fresh process when the one it went to died answering an earlier request."""

    case_id: str
    data: bytes
    expected: Mapping[str, TensorDesc]
    #: A request with buffers: the size of every buffer its reply returns.
    images: Mapping[str, int] | None = None
    #: When it went to the running process (None: not sent yet).
    sent_at: float | None = None


class HarnessClient:
    """A harness process seen from the runner: started with its handshake, restarted when it died or its stream can
    no longer be trusted, and requests with a deadline each. Whatever the process does, a request comes to its reply
    or to the Outcome it comes to (TIMEOUT, CRASH, ERROR). The native backend sends it DirectML operator
    descriptions; the onnxruntime backend sends an ONNX model host its models (docs/native-harness.md section 9).

    `exchange` is one request at a time. `submit` and `collect` keep up to `pipeline` requests in the harness (as
    many as its hello allows, at most PIPELINE_DEPTH), so that it never waits for the runner between cases; replies
    come back in order. A request's deadline runs from when the harness could begin it: its own sending or the
    previous reply, whichever is later. When the harness dies, hangs or garbles the stream on a request, that request
    alone comes to CRASH, TIMEOUT or ERROR: those sent behind it go again, unanswered, to a fresh process."""

    def __init__(self, command: str, timeout_s: float, decode_hello: Callable[[Frame], Any] = protocol.decode_hello,
                 client: str = f"dmlconform {__version__}", what: str = "harness", argv: Sequence[str] | None = None,
                 environment: Mapping[str, str] | None = None, started: object | None = None) -> None:
        """`command` is the harness command line; `argv` and `environment`, when given, are how it is started (the
        packaged programs: the command line then only names it in messages). `started` (BackendOptions.started): a
        process started early, which the first start takes over if it is this program."""
        self.command = command
        self.argv = list(argv) if argv is not None else harness_argv(command)
        self.environment = dict(environment or {})
        self.timeout_s = timeout_s
        self.client = client
        #: Names the process in messages: "harness", "host".
        self.what = what
        self._decode_hello = decode_hello
        self.restarts = 0
        self._failed_starts = 0
        self._process: HarnessProcess | None = None
        self._started = started if isinstance(started, processes.StartedProgram) else None
        #: Sent to the running process and not answered yet, oldest first; then those still to send.
        self._sent: deque[_Request] = deque()
        self._waiting: deque[_Request] = deque()
        #: When the running process's last reply was read.
        self._answered_at = 0.0
        self.hello = self._start()  # raises HarnessStartError: the run cannot begin without a harness

    @property
    def running(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> int | None:
        return self._process.process.pid if self._process is not None else None

    @property
    def pipeline(self) -> int:
        """How many requests `submit` keeps in the harness at once: what its hello allows, at most PIPELINE_DEPTH."""
        return max(1, min(int(getattr(self.hello, "pipeline", 1)), PIPELINE_DEPTH))

    @property
    def outstanding(self) -> int:
        """Requests submitted and not yet collected."""
        return len(self._sent) + len(self._waiting)

    # -- life cycle --------------------------------------------------------------------------------
    def _start(self) -> Any:
        process = HarnessProcess(self.argv, self.environment, self._started)
        self._started = None
        wait_s = max(self.timeout_s, MIN_HANDSHAKE_S)
        process.send(protocol.encode_hello_request(self.client))
        try:
            hello = self._decode_hello(process.read_frame(time.monotonic() + wait_s))
        except _Timeout:
            process.kill()
            raise HarnessStartError(f"{self.what} {self.command!r} did not answer the handshake within {wait_s:g} s; "
                                    f"last stderr: {process.stderr_text() or '(none)'}") from None
        except (StreamEnded, _WriteFailed):
            process.kill()
            raise HarnessStartError(f"{self.what} {self.command!r} ended before the handshake: "
                                    f"{process.death()}") from None
        except ProtocolError as exc:
            process.kill()
            tail = process.stderr_text()
            raise HarnessStartError(f"{self.what} {self.command!r} handshake failed: {exc}"
                                    + (f"; last stderr: {tail}" if tail else "")) from None
        self._process = process
        self._answered_at = 0.0
        return hello

    def _running(self) -> HarnessProcess:
        if self._process is None:
            if self._failed_starts >= MAX_FAILED_STARTS:
                raise HarnessStartError(f"the {self.what} failed to restart {self._failed_starts} times in a row; "
                                        "not trying again")
            try:
                hello = self._start()
            except HarnessStartError:
                self._failed_starts += 1
                raise
            self._failed_starts = 0
            self.restarts += 1
            first, now = (getattr(self.hello, "feature_level", None), getattr(self.hello, "adapter", None)), \
                (getattr(hello, "feature_level", None), getattr(hello, "adapter", None))
            if now != first:
                print(f"dmlconform: warning: restarted {self.what} reports {now[1]} at {now[0]}, first start "
                      f"reported {first[1]} at {first[0]}", file=sys.stderr)
        assert self._process is not None
        return self._process

    def discard(self, kill: bool = True) -> None:
        """Forget the running process (killed unless told otherwise); the next request starts a fresh one, and the
        requests it had not answered go to that one."""
        if self._process is not None:
            if kill:
                self._process.kill()
            self._process = None
        for request in reversed(self._sent):
            request.sent_at = None
            self._waiting.appendleft(request)
        self._sent.clear()

    def close(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None

    # -- requests ----------------------------------------------------------------------------------
    def exchange(self, case_id: str, request: bytes, expected: Mapping[str, TensorDesc]) -> protocol.Reply | Outcome:
        """Send one request and read its reply: a Reply (for any status the protocol knows) or, when the process
        hung, died or answered garbage, the Outcome that comes to."""
        assert not self.outstanding, "exchange with submitted requests not collected"
        self.submit(case_id, request, expected)
        return self.collect()

    def submit(self, case_id: str, request: bytes, expected: Mapping[str, TensorDesc],
               images: Mapping[str, int] | None = None) -> None:
        """Queue a request; it goes to the harness as soon as fewer than `pipeline` are unanswered there."""
        self._waiting.append(_Request(case_id, request, expected, images))
        if self._process is not None:
            self._send_more(self._process)

    def _send_more(self, process: HarnessProcess) -> None:
        while self._waiting and len(self._sent) < self.pipeline:
            request = self._waiting.popleft()
            request.sent_at = time.monotonic()
            process.send(request.data)
            self._sent.append(request)

    def collect(self) -> protocol.Reply | Outcome:
        """The reply to the oldest request submitted and not yet collected, or the Outcome it came to."""
        assert self.outstanding, "collect without a submitted request"
        try:
            process = self._running()
        except HarnessStartError as exc:
            (self._sent or self._waiting).popleft()
            return Outcome.error(f"{self.what} unavailable: {exc}")
        self._send_more(process)
        request = self._sent[0]
        assert request.sent_at is not None
        deadline = max(request.sent_at, self._answered_at) + self.timeout_s
        try:
            bound = payload_bound(request.expected) + sum(
                size + protocol.TENSOR_ALIGNMENT for size in (request.images or {}).values())
            reply = protocol.decode_result(process.read_frame(deadline, bound), request.case_id, request.expected,
                                           request.images)
        except _Timeout as exc:
            self._sent.popleft()
            self.discard()
            partial = f" ({exc.received} bytes of a reply had arrived)" if exc.received else ""
            return Outcome(OutcomeKind.TIMEOUT, message=f"no reply within {self.timeout_s:g} s{partial}; "
                           f"{self.what} killed and restarted")
        except (StreamEnded, _WriteFailed) as exc:
            self._sent.popleft()
            return self._ended(process, exc)
        except ProtocolError as exc:
            self._sent.popleft()
            if exc.fatal:
                self.discard()
            restarted = f"; {self.what} restarted" if exc.fatal else ""
            return Outcome.error(f"malformed reply from the {self.what}: {exc}{restarted}")
        except Exception as exc:  # a bug reading the reply: where the stream stands is unknown, so start afresh
            self._sent.popleft()
            self.discard()
            return Outcome.error(f"reading the {self.what}'s reply raised {type(exc).__name__}: {exc}; "
                                 f"{self.what} restarted")
        self._sent.popleft()
        self._answered_at = time.monotonic()
        if reply.status == "device_removed":
            # The device is gone and the process exits after saying so; the next case gets a fresh one.
            if process.exit_code(2.0) is None:
                process.kill()
            self.discard(kill=False)
        else:
            self._send_more(process)
        return reply

    def _ended(self, process: HarnessProcess, exc: Exception) -> Outcome:
        # A dying process closes stdout a moment before it is reaped; a live one is not waited on for long.
        code = process.exit_code(1.0)
        where = ""
        if isinstance(exc, StreamEnded) and not exc.at_boundary:
            where = f" mid-reply ({exc})"
        elif isinstance(exc, _WriteFailed):
            where = f" while receiving the request ({exc})"
        death = process.death(wait_s=0.0)
        self.discard()
        if code is None:
            # Alive but with a pipe closed: the stream is broken, not the process.
            pipe = "stopped reading its stdin" if isinstance(exc, _WriteFailed) else f"closed its stdout{where}"
            return Outcome.error(f"{self.what} {pipe}; {death}; {self.what} restarted")
        return Outcome(OutcomeKind.CRASH, message=f"{self.what} died{where}: {death}")


def payload_bound(outputs: Mapping[str, TensorDesc]) -> int:
    """The most payload bytes a reply with these outputs may carry: their elements at 8 bytes each (the widest type,
    so that a reply in the wrong type is still read, and refused with its type named), each aligned. A larger
    payload is refused from the frame's prefix, before it is read."""
    return sum(math.prod(desc.shape) * 8 + protocol.TENSOR_ALIGNMENT for desc in outputs.values())


def expected_payload(case: Case) -> int:
    """payload_bound of the case's outputs."""
    return payload_bound({name: case.description.tensors[name] for name in case.op.outputs})


def reply_outcome(reply: protocol.Reply) -> Outcome:
    """What a decoded reply from a DirectML harness means for its case."""
    if reply.status == "ok" and reply.images is not None:
        return Outcome.ran_buffers(reply.images)
    if reply.status == "ok":
        return Outcome.ran(reply.outputs)
    if reply.status == "refused":
        return Outcome.refused(reply.message or "refused (no message)")
    if reply.status == "unsupported":
        return Outcome.not_supported(reply.message or "the harness does not support this case")
    if reply.status == "device_removed":
        return device_removed_outcome(reply)
    return Outcome.error(f"harness error: {reply.message or '(no message)'}")


def device_removed_outcome(reply: protocol.Reply) -> Outcome:
    hresult = reply.header.get("hresult")
    code = f" ({hresult})" if isinstance(hresult, str) and hresult else ""
    return Outcome(OutcomeKind.CRASH, message=f"device removed{code}: {reply.message or 'no reason given'}")


class NativeBackend:
    name = "native"

    def __init__(self, command: str, timeout_s: float, client: str = f"dmlconform {__version__}",
                 argv: Sequence[str] | None = None, environment: Mapping[str, str] | None = None,
                 started: object | None = None) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.harness = HarnessClient(command, timeout_s, protocol.decode_hello, client, argv=argv,
                                     environment=environment, started=started)
        self.hello: Hello = self.harness.hello
        #: Cases submitted and not collected, in order: an Outcome already known (declined, not encodable) or None
        #: for one whose request went to the harness client.
        self._submitted: deque[Outcome | None] = deque()

    @property
    def restarts(self) -> int:
        return self.harness.restarts

    @property
    def pipeline(self) -> int:
        """Cases worth submitting ahead of their outcomes (1: the harness takes one request at a time)."""
        return self.harness.pipeline

    # -- Backend protocol --------------------------------------------------------------------------
    def info(self) -> BackendInfo:
        hello = self.hello
        version = " ".join(part for part in (hello.name, hello.version) if part)
        extra = {"harness": self.command, "protocol": str(hello.protocol), "driver_version": hello.driver_version,
                 "api": hello.api, **hello.extra}
        if hello.operators is not None:
            extra["operators"] = "; ".join(f"{op}: {', '.join(sorted(d.name for d in dtypes))}"
                                           for op, dtypes in sorted(hello.operators.items()))
        source = hello.feature_level_source or "claimed by the harness in its handshake"
        return BackendInfo(self.name, version, hello.adapter, hello.feature_level, source,
                           {k: v for k, v in extra.items() if v})

    def run(self, case: Case) -> Outcome:
        assert not self._submitted, "run with submitted cases not collected"
        self.submit(case)
        return self.collect()

    def submit(self, case: Case) -> None:
        """Hand the case to the harness without waiting for it: `collect` returns outcomes in submission order."""
        declined = self._declined(case)
        if declined:
            self._submitted.append(Outcome.not_supported(declined))
            return
        images: dict[str, int] | None = None
        try:
            if case.uses_buffers:
                binding = case.binding
                before = images_before(case.description, binding, case.inputs)
                request = protocol.encode_buffers_request(case.full_id, case.description, case.path.value, binding,
                                                          before)
                images = {name: len(before[name]) for name in binding.buffers()}
            else:
                request = protocol.encode_run_request(case.full_id, case.description, case.inputs)
        except (ValueError, KeyError, TypeError) as exc:
            self._submitted.append(Outcome.error(f"cannot encode the case for the harness: {exc}"))
            return
        expected = {name: case.description.tensors[name] for name in case.op.outputs}
        self._submitted.append(None)
        self.harness.submit(case.full_id, request, expected, images)

    def collect(self) -> Outcome:
        """The outcome of the oldest case submitted and not yet collected."""
        known = self._submitted.popleft()
        if known is not None:
            return known
        reply = self.harness.collect()
        return reply if isinstance(reply, Outcome) else reply_outcome(reply)

    def close(self) -> None:
        self.harness.close()

    # -- one case ----------------------------------------------------------------------------------
    def _declined(self, case: Case) -> str:
        """Valid cases the handshake says the harness cannot run are not sent; invalid ones always are. A layout or a
        path the handshake does not offer is never sent, invalid or not: the harness would run something else."""
        if case.description.has_layouts and not self.hello.layouts:
            return "the harness's handshake offers no memory layouts (its hello has no surface.layouts)"
        if case.path.value not in self.hello.paths or (case.uses_buffers and not self.hello.layouts):
            return f"the harness's handshake does not offer the {case.path.value} path"
        operators = self.hello.operators
        if operators is None or case.expect_invalid:
            return ""
        dtypes = operators.get(case.op.name)
        if dtypes is None:
            return f"the harness does not declare {case.op.name} in its handshake"
        if case.dtype not in dtypes:
            return f"the harness declares {case.op.name} without {case.dtype.name} in its handshake"
        return ""


@register("native")
def create(options: BackendOptions) -> NativeBackend:
    if not options.harness:
        raise RuntimeError("the native backend needs --harness \"CMD ARGS\" (for example "
                           "--harness \"python -m dmlconform.harness --backend numpy\")")
    try:
        return NativeBackend(options.harness, options.timeout_s, started=options.started)
    except HarnessStartError as exc:
        raise RuntimeError(str(exc)) from None
    except ValueError as exc:  # shlex: unbalanced quotes
        raise RuntimeError(f"--harness {options.harness!r}: {exc}") from None

