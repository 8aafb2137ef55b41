"""The runner's side of the native-harness protocol: what a harness sends back (its hello, then one reply per case)
decoded as backends/native.py decodes it, turned into an outcome and judged.

Input: byte 0 picks the case (three bundled cases of different operators and types), the rest is the harness's
stdout. Contract: a one-line ProtocolError, or a Hello with its fields typed, and replies whose outputs are
exactly the case's (type and shape), judged without "judging failed"; memory within the bound of the case's
output tensors.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator

from dmlconform import harness_protocol as protocol
from dmlconform.backends.native import REPLY_HEADER_BYTES, expected_payload, reply_outcome
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST, FeatureLevel
from dmlconform.harness.server import GARBAGE_MODES
from dmlconform.harness_protocol import ProtocolError, StreamEnded
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite.loader import load_paths
from fuzz.contract import ContractBroken, check_refusal, memory_bound

CASE_IDS = ("seed/max-pooling-grad-2x2", "clip_grad1.edge/bounds-and-neighbours-f16",
            "slice_grad.edge/stride-minus3-size5")
#: Replies read from one input at most (a real run reads one per case).
MAX_REPLIES = 8
_cases: list[Case] = []


def cases() -> list[Case]:
    if not _cases:
        files = [bundled_suites() / name for name in ("seed", "clip_grad1/edge.yaml", "slice_grad/edge.yaml")]
        loaded = {case.full_id: case for case in load_paths(files)}
        _cases.extend(loaded[name] for name in CASE_IDS)
    return _cases


def one_input(data: bytes) -> None:
    if not data:
        return
    case = cases()[data[0] % len(cases())]
    expected = {name: case.description.tensors[name] for name in case.op.outputs}
    stream = io.BytesIO(data[1:])
    with memory_bound(len(data)) as declared:
        declared.bytes = sum(math.prod(d.shape) * d.dtype.numpy.itemsize for d in expected.values())
        try:
            hello = protocol.decode_hello(protocol.read_frame(stream.read, REPLY_HEADER_BYTES, 0))
        except ProtocolError as exc:
            check_refusal(exc)
            return
        if not (isinstance(hello.feature_level, FeatureLevel) and all(
                isinstance(getattr(hello, key), str) for key in ("name", "version", "adapter", "api"))):
            raise ContractBroken(f"hello decoded with fields of the wrong types: {hello}")
        for _ in range(MAX_REPLIES):
            try:
                frame = protocol.read_frame(stream.read, REPLY_HEADER_BYTES, expected_payload(case))
                reply = protocol.decode_result(frame, case.full_id, expected)
            except StreamEnded as exc:
                if not exc.at_boundary:
                    check_refusal(exc)
                return
            except ProtocolError as exc:
                check_refusal(exc)
                if exc.fatal:
                    return  # the runner restarts the harness: nothing more is read from this stream
                continue
            for name, array in reply.outputs.items():
                if array.dtype != expected[name].dtype.numpy or array.shape != expected[name].shape:
                    raise ContractBroken(f"reply output {name} is {array.dtype}{array.shape}, not {expected[name]}")
            result = judge_outcome(case, reply_outcome(reply), HIGHEST)
            case.forget_references()
            if result.status is Status.ERROR and result.message.startswith("judging failed"):
                raise ContractBroken(f"a decoded reply broke the judge: {result.message}")


def seeds() -> Iterator[bytes]:
    """A hello, then replies of every status and the fault-injection harness's garbage, for each case."""
    from dmlconform.harness.server import Faults, HarnessServer

    for number, case in enumerate(cases()):
        server = HarnessServer(NumpyBackend(), "numpy", io.BytesIO(), io.BytesIO(), Faults())
        hello = protocol.encode_hello_reply(server.hello())
        outputs = list(NumpyBackend().run(case).outputs.items())
        replies = [protocol.encode_result(case.full_id, "ok", outputs),
                   protocol.encode_result(case.full_id, "refused", message="E_INVALIDARG"),
                   protocol.encode_result(case.full_id, "unsupported", message="no fp16"),
                   protocol.encode_result(case.full_id, "error", message="device lost"),
                   protocol.encode_result(case.full_id, "device_removed", message="hung",
                                          extra={"hresult": "0x887A0006"})]
        yield bytes([number]) + hello + b"".join(replies)
        for mode in GARBAGE_MODES:
            if mode == "truncate":
                continue
            stdout = io.BytesIO()
            garbage = HarnessServer(NumpyBackend(), "numpy", io.BytesIO(), stdout, Faults(garbage_mode=mode))
            with contextlib.redirect_stderr(io.StringIO()):  # the server says what it injects
                garbage.send_garbage(case.full_id, outputs)
            yield bytes([number]) + hello + stdout.getvalue() + replies[0]
