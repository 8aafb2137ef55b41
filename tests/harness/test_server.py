"""The Python harness SDK: the server loop in-process, and `python -m dmlconform.harness` as a process."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np

from dmlconform import harness_protocol as protocol
from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions
from dmlconform.dtypes import DataType
from dmlconform.harness.server import HarnessServer
from dmlconform.harness_protocol import Frame
from dmlconform.ops import OPERATORS, find_operator
from dmlconform.ops.base import Description, TensorDesc


def _relu_request(case_id: str, out_shape: tuple[int, ...] = (4,)) -> bytes:
    op = find_operator("ACTIVATION_RELU_GRAD")
    x = np.array([-1.0, 0.0, 2.0, np.nan], np.float32)
    dy = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    tensors = {"InputTensor": TensorDesc(DataType.FLOAT32, (4,)),
               "InputGradientTensor": TensorDesc(DataType.FLOAT32, (4,)),
               "OutputGradientTensor": TensorDesc(DataType.FLOAT32, out_shape)}
    return protocol.encode_run_request(case_id, Description(op, {}, tensors), {"InputTensor": x,
                                                                                "InputGradientTensor": dy})


def _serve(*requests: bytes) -> tuple[int, list[Frame]]:
    stdin = io.BytesIO(protocol.encode_hello_request("test") + b"".join(requests))
    stdout = io.BytesIO()
    backend = create_backend("numpy", BackendOptions())
    code = HarnessServer(backend, "numpy", stdin, stdout).serve()
    reader = io.BytesIO(stdout.getvalue())
    frames = []
    while reader.tell() < len(stdout.getvalue()):
        frames.append(protocol.read_frame(reader.read))
    return code, frames


def test_handshake_then_results_then_bye() -> None:
    code, frames = _serve(_relu_request("s/a"), protocol.encode_bye(), _relu_request("s/never"))
    assert code == 0
    hello = protocol.decode_hello(frames[0])
    assert hello.feature_level.label == "6_4" and hello.operators is not None and set(hello.operators) == set(OPERATORS)
    reply = protocol.decode_result(frames[1], "s/a", {"OutputGradientTensor": TensorDesc(DataType.FLOAT32, (4,))})
    assert reply.outputs["OutputGradientTensor"].tolist() == [0.0, 0.0, 3.0, 0.0]
    assert len(frames) == 2  # nothing after bye


def test_invalid_description_is_refused_by_the_harness_itself() -> None:
    _, frames = _serve(_relu_request("s/bad", out_shape=(5,)))
    reply = protocol.decode_result(frames[1], "s/bad", {})
    assert reply.status == "refused" and "OutputGradientTensor.Sizes" in reply.message


def test_unknown_operator_is_unsupported() -> None:
    request = protocol.encode_frame({"type": "run", "id": "s/x", "op": "CONVOLUTION", "params": {}, "inputs": [],
                                     "outputs": []})
    _, frames = _serve(request)
    assert protocol.decode_result(frames[1], "s/x", {}).status == "unsupported"


def test_end_of_stdin_ends_the_server_cleanly() -> None:
    code, frames = _serve()
    assert code == 0 and len(frames) == 1


def test_module_reports_a_backend_it_cannot_create_in_the_handshake() -> None:
    result = subprocess.run([sys.executable, "-m", "dmlconform.harness", "--backend", "no-such-backend"],
                            input=protocol.encode_hello_request("test"), capture_output=True, timeout=60)
    assert result.returncode == 2
    frame = protocol.read_frame(io.BytesIO(result.stdout).read)
    assert frame.type == "error" and "no-such-backend" in frame.header["message"]


def test_module_serves_frames_only_on_stdout() -> None:
    result = subprocess.run([sys.executable, "-m", "dmlconform.harness", "--backend", "numpy"],
                            input=protocol.encode_hello_request("test") + _relu_request("s/a"),
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    reader = io.BytesIO(result.stdout)
    assert protocol.read_frame(reader.read).type == "hello"
    assert protocol.read_frame(reader.read).type == "result"
    assert reader.read() == b""
