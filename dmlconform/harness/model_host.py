"""`python -m dmlconform.harness.model_host`: an ONNX model host (docs/native-harness.md section 9) in Python.

It runs the models the onnxruntime backend sends on the CPU EP of the onnxruntime installed here: the reference for
hosts like examples/ort_dml_host (which runs them on onnxruntime-directml's DirectML EP under Wine), and, with its
fault injection, how the tests prove that the backend survives a host that crashes, hangs, answers garbage, is
refused a graph or grows in memory, without Wine. `--provider NAME` makes it call its provider NAME in the handshake
(it still runs on the CPU EP), so that the backend's handling of another provider's host can be tested.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, BinaryIO

import numpy as np

from dmlconform import harness_protocol as protocol
from dmlconform.harness.server import regex_argument
from dmlconform.harness_protocol import Frame, ProtocolError, StreamEnded

#: What a refusal of a graph by a GPU provider looks like when it comes from ONNX Runtime with CPU fallback
#: disabled, and the placement log the host adds (the wording of onnxruntime 1.24).
FALLBACK_MESSAGE = ("This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU "
                    "EP has been explicitly disabled by the user.")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m dmlconform.harness.model_host", description=__doc__)
    parser.add_argument("--ep", default="cpu", help="the backend's --ep (accepted; the models run on the CPU EP)")
    parser.add_argument("--provider", default="", help="provider name to claim in the handshake "
                        "(default: CPUExecutionProvider for --ep cpu, DmlExecutionProvider for --ep dml)")
    faults = parser.add_argument_group("fault injection (REGEX is searched in the request id)")
    faults.add_argument("--crash-on", type=regex_argument, metavar="REGEX", help="exit abruptly (status 86)")
    faults.add_argument("--hang-on", type=regex_argument, metavar="REGEX", help="never answer")
    faults.add_argument("--garbage-on", type=regex_argument, metavar="REGEX",
                        help="answer with bytes that are no frame")
    faults.add_argument("--refuse-on", type=regex_argument, metavar="REGEX",
                        help="refuse the graph as a provider with CPU fallback disabled does, naming its first node "
                        "as placed on the CPU EP")
    faults.add_argument("--working-set-mib", type=int, default=0, metavar="N",
                        help="report a working set of N MiB (0: this process's resident memory)")
    return parser.parse_args(argv)


def resident_bytes() -> int:
    try:
        with open(f"/proc/{os.getpid()}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class ModelHost:
    def __init__(self, args: argparse.Namespace, stdin: BinaryIO, stdout: BinaryIO) -> None:
        import onnxruntime as ort

        self.ort = ort
        self.args = args
        self.stdin, self.stdout = stdin, stdout
        default = "DmlExecutionProvider" if args.ep == "dml" else "CPUExecutionProvider"
        self.provider = args.provider or default
        self._session: tuple[bytes, Any] | None = None

    def send(self, data: bytes) -> None:
        self.stdout.write(data)
        self.stdout.flush()

    def memory(self) -> dict[str, int]:
        used = self.args.working_set_mib << 20 if self.args.working_set_mib else resident_bytes()
        return {"working_set_bytes": used}

    def fail(self, case_id: str, message: str, **fields: str) -> None:
        self.send(protocol.encode_frame({"type": "result", "id": case_id, "status": "error", "message": message,
                                         **fields, **self.memory()}))

    def serve(self) -> int:
        def read(count: int) -> bytes:
            return self.stdin.read(count)

        while True:
            try:
                frame = protocol.read_frame(read)
            except StreamEnded:
                return 0
            except ProtocolError as exc:
                print(f"model_host: unreadable frame: {exc}", file=sys.stderr, flush=True)
                return 2
            if frame.type == "hello":
                self.send(protocol.encode_frame({
                    "type": "hello", "protocol": protocol.PROTOCOL_VERSION, "name": "dmlconform.harness.model_host",
                    "version": "1.0", "serves": "onnx-models", "execution_provider": self.provider,
                    "onnxruntime": self.ort.__version__, "adapter": "CPU",
                    "api": f"ONNX Runtime {self.ort.__version__} (CPU EP, in Python)", "extra": {"models_run_on":
                                                                                                 "CPUExecutionProvider"}}))
            elif frame.type == "run_model":
                self.run_model(frame)
            elif frame.type == "bye":
                return 0
            else:
                self.fail(str(frame.header.get("id", "")), f"unknown message type {frame.type!r}", stage="request")

    def run_model(self, frame: Frame) -> None:
        header, payload = frame.header, frame.payload
        case_id = str(header.get("id", ""))
        if self.args.crash_on and self.args.crash_on.search(case_id):
            print(f"model_host: injected crash on {case_id}", file=sys.stderr, flush=True)
            os._exit(86)
        if self.args.hang_on and self.args.hang_on.search(case_id):
            time.sleep(3600)
        if self.args.garbage_on and self.args.garbage_on.search(case_id):
            self.send(b"not a frame at all, sixteen+ bytes")
            return
        model = header.get("model", {})
        try:
            model_bytes = payload[model["offset"]:model["offset"] + model["nbytes"]]
            inputs = dict(protocol.unpack_tensor(entry, payload, "inputs") for entry in header["inputs"])
            outputs = dict(protocol.read_tensor_desc(entry, "outputs") for entry in header["outputs"])
        except (KeyError, TypeError, ProtocolError) as exc:
            self.fail(case_id, f"malformed run_model request: {exc}", stage="request")
            return
        if self.args.refuse_on and self.args.refuse_on.search(case_id):
            import onnx

            node = onnx.load_from_string(model_bytes).graph.node[0]
            placement = (f" Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n  {node.op_type} "
                         f"({node.name})\n Node(s) placed on [{self.provider}]. Number of nodes: 2")
            self.fail(case_id, FALLBACK_MESSAGE, stage="session creation", ort_error="Fail", placement=placement)
            return
        try:
            if self._session is None or self._session[0] != model_bytes:
                self._session = (model_bytes, self.ort.InferenceSession(model_bytes,
                                                                        providers=["CPUExecutionProvider"]))
        except Exception as exc:
            self.fail(case_id, str(exc), stage="session creation", ort_error=type(exc).__name__)
            return
        try:
            results = self._session[1].run(list(outputs), inputs)
        except Exception as exc:
            self.fail(case_id, str(exc), stage="run", ort_error=type(exc).__name__)
            return
        tensors = [(name, np.ascontiguousarray(value)) for name, value in zip(outputs, results, strict=True)]
        self.send(protocol.encode_result(case_id, "ok", tensors, extra=self.memory()))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries only frames
    try:
        return ModelHost(args, stdin, stdout).serve()
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
