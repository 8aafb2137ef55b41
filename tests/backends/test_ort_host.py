"""The onnxruntime backend through an ONNX model host: the Python one (dmlconform.harness.model_host, the CPU EP of
the onnxruntime here), so every path runs without Wine. examples/ort_dml_host itself: tests/harness/test_ort_dml_host.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dmlconform import harness_protocol as protocol
from dmlconform.backends import create_backend
from dmlconform.backends import onnxruntime_backend as orb
from dmlconform.backends import onnxruntime_common as orc
from dmlconform.backends.base import BackendOptions, OutcomeKind
from dmlconform.backends.ort_host import HostRunner, memory_limit
from dmlconform.case_result import Status
from dmlconform.cli import main
from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.runner import run_cases
from dmlconform.suite.loader import load_suite
from tests.backends.test_onnxruntime_backend import make_case

#: Each test starts host processes (Wine for the real host): seconds, not the quick loop.
pytestmark = pytest.mark.slow

HOST = "python -m dmlconform.harness.model_host"
SEED = Path(__file__).resolve().parents[2] / "test_vectors" / "seed" / "seed_examples.yaml"


def seed_cases() -> list:
    return load_suite(SEED, SEED.parent)[0]


def backend(options: str = "", ep: str = "cpu", timeout_s: float = 30.0) -> orb.OnnxRuntimeBackend:
    made = create_backend("onnxruntime", BackendOptions(ep=ep, harness=f"{HOST} {options}".strip(),
                                                        timeout_s=timeout_s))
    assert isinstance(made, orb.OnnxRuntimeBackend) and isinstance(made.runner, HostRunner)
    return made


def statuses(made: orb.OnnxRuntimeBackend, cases: list) -> dict[str, tuple[Status, str]]:
    try:
        result = run_cases(cases, made)
    finally:
        made.close()
    assert len(result.results) == len(cases)
    return {r.id: (r.status, r.message) for r in result.results}


def test_the_host_gives_the_in_process_statuses_and_says_what_it_is() -> None:
    cases = seed_cases()
    hosted = backend()
    info = hosted.info()
    assert info.extra["host"] == f"{HOST} --ep cpu" and info.extra["provider"] == "CPUExecutionProvider"
    assert "model host" in info.version and "constructions" in info.extra
    got = statuses(hosted, cases)
    in_process = create_backend("onnxruntime", BackendOptions(ep="cpu"))
    want = statuses(in_process, cases)  # type: ignore[arg-type]
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in want.items()}
    assert all(status is Status.PASS for status, _ in got.values())


def test_crash_hang_and_garbage_hit_exactly_their_cases_and_the_host_restarts() -> None:
    cases = seed_cases()
    ids = [c.full_id for c in cases]
    crash, hang, garbage = ids[0], ids[2], ids[4]
    hosted = backend(f"--crash-on '^{crash}$' --hang-on '^{hang}$' --garbage-on '^{garbage}$'", timeout_s=3.0)
    got = statuses(hosted, cases)
    assert got[crash][0] is Status.CRASH and "exit code 86" in got[crash][1] and "injected crash" in got[crash][1]
    assert got[hang][0] is Status.TIMEOUT and "host killed and restarted" in got[hang][1]
    assert got[garbage][0] is Status.ERROR and "malformed reply from the host" in got[garbage][1]
    others = [i for i in ids if i not in (crash, hang, garbage)]
    assert others and all(got[i][0] is Status.PASS for i in others)


def test_a_graph_the_provider_refuses_is_not_supported_with_the_nodes_it_left_to_the_cpu() -> None:
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": np.array([1, -1], np.float32),
                                                 "InputGradientTensor": np.array([2, 3], np.float32)}, (2,))
    hosted = backend("--refuse-on .", ep="dml")
    try:
        assert hosted.choice.key == "dml" and hosted.info().extra["cpu_fallback"] == "disabled"
        outcome = hosted.run(case)
    finally:
        hosted.close()
    assert outcome.kind is OutcomeKind.NOT_SUPPORTED, outcome
    assert "DmlExecutionProvider cannot run the graph [FLOAT32: Greater, Where] (session creation)" in outcome.message
    assert "fallback to CPU EP has been explicitly disabled" in outcome.message
    assert "placed on the CPU EP: Greater 'positive_2'" in outcome.message  # the node, by the name the graph gave it


def test_a_host_past_the_memory_bound_is_restarted_before_the_next_case(monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DMLCONFORM_HOST_MAX_RSS_MIB", "100")
    cases = seed_cases()[:3]
    grown = backend("--working-set-mib 200")
    runner = grown.runner
    assert isinstance(runner, HostRunner)
    got = statuses(grown, cases)
    assert all(status is Status.PASS for status, _ in got.values())
    assert runner.memory.restarts == len(cases) - 1 and runner.client.restarts == len(cases) - 1
    assert runner.memory.peak_bytes == 200 << 20
    assert "peak working set 200 MiB, 2 restart(s), 2 of them above the 100 MiB bound" in capsys.readouterr().err
    monkeypatch.setenv("DMLCONFORM_HOST_MAX_RSS_MIB", "1000")
    small = backend("--working-set-mib 200")
    runner = small.runner
    assert isinstance(runner, HostRunner)
    statuses(small, cases)
    assert runner.memory.restarts == 0  # under the bound: one host for every case


@pytest.mark.parametrize(("raw", "mib"), [("", 4096), ("512", 512)])
def test_memory_limit_from_the_environment(raw: str, mib: int) -> None:
    assert memory_limit({"DMLCONFORM_HOST_MAX_RSS_MIB": raw} if raw else {}) == mib << 20


@pytest.mark.parametrize("raw", ["lots", "0", "-3"])
def test_a_bad_memory_limit_is_a_usage_error(raw: str) -> None:
    with pytest.raises(RuntimeError, match="DMLCONFORM_HOST_MAX_RSS_MIB"):
        memory_limit({"DMLCONFORM_HOST_MAX_RSS_MIB": raw})


def test_a_host_serving_another_provider_or_a_dml_harness_is_refused_at_start() -> None:
    with pytest.raises(RuntimeError, match="serves CPUExecutionProvider, not DmlExecutionProvider"):
        create_backend("onnxruntime", BackendOptions(ep="dml", harness=f"{HOST} --provider CPUExecutionProvider"))
    with pytest.raises(RuntimeError, match="not an ONNX model host"):
        create_backend("onnxruntime", BackendOptions(ep="cpu", harness="python -m dmlconform.harness --backend numpy"))
    with pytest.raises(RuntimeError, match="runs the DirectML EP"):
        create_backend("onnxruntime", BackendOptions(ep="cuda", harness=HOST))


def test_cli_runs_the_seed_suite_through_a_host_and_records_it(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["run", "--backend", "onnxruntime", "--ep", "cpu", "--harness", HOST,
                                       str(SEED), "--json", str(report)])
    assert result.exit_code == 0, result.output
    import json

    document = json.loads(report.read_text())
    assert document["settings"]["harness"] == HOST and document["backend"]["host"] == f"{HOST} --ep cpu"


# -- the messages ----------------------------------------------------------------------------------------
def test_model_request_carries_the_model_then_aligned_tensors() -> None:
    model = b"onnx model bytes"  # 16 bytes: the tensors start right after
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    frame = protocol.read_frame(iter_reader(protocol.encode_model_request(
        "s/c", model + b"!", [("X", x)], {"Y": TensorDesc(DataType.FLOAT16, (2, 3))})))
    assert frame.type == "run_model" and frame.header["id"] == "s/c"
    assert frame.header["model"] == {"offset": 0, "nbytes": 17}
    (entry,) = frame.header["inputs"]
    assert entry["offset"] == 32 and entry["offset"] % protocol.TENSOR_ALIGNMENT == 0
    assert frame.payload[:17] == model + b"!"
    name, array = protocol.unpack_tensor(entry, frame.payload, "inputs")
    assert name == "X" and np.array_equal(array, x)
    assert frame.header["outputs"] == [{"name": "Y", "DataType": DataType.FLOAT16.value, "Sizes": [2, 3]}]


def iter_reader(data: bytes):  # type: ignore[no-untyped-def]
    view = memoryview(data)

    def read(count: int) -> bytes:
        nonlocal view
        chunk, view = bytes(view[:count]), view[count:]
        return chunk
    return read


@pytest.mark.parametrize(("header", "words"), [
    ({"type": "hello", "protocol": 1, "execution_provider": "X"}, "not an ONNX model host"),
    ({"type": "hello", "protocol": 2, "serves": "onnx-models", "execution_provider": "X"}, "speaks protocol 2"),
    ({"type": "hello", "protocol": 1, "serves": "onnx-models"}, "execution_provider must name"),
    ({"type": "hello", "protocol": 1, "serves": "onnx-models", "execution_provider": "X", "feature_level": "7_9"},
     "not a DML feature level"),
    ({"type": "error", "message": "no onnxruntime.dll"}, "refused to start: no onnxruntime.dll"),
])
def test_model_host_hello_errors_say_what_is_wrong(header: dict, words: str) -> None:
    with pytest.raises(protocol.ProtocolError, match=words):
        protocol.decode_model_host_hello(protocol.Frame(header))


def test_model_host_hello_reads_the_device_facts() -> None:
    hello = protocol.decode_model_host_hello(protocol.Frame({
        "type": "hello", "protocol": 1, "serves": "onnx-models", "execution_provider": "DmlExecutionProvider",
        "onnxruntime": "1.24.4", "directml": "1.15.4.0", "adapter": "llvmpipe", "feature_level": "6_4",
        "extra": {"wine": "8.0"}}))
    assert hello.runtime_version == "1.24.4" and hello.directml == "1.15.4.0"
    assert hello.feature_level is not None and hello.feature_level.label == "6_4" and hello.extra == {"wine": "8.0"}


@pytest.mark.parametrize(("placement", "nodes"), [
    (" Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n  ScatterElements (scattered_12)\n"
     " Node(s) placed on [DmlExecutionProvider]. Number of nodes: 4\n  DmlFusedNode_0_0 (DmlFusedNode_0_0)",
     ["ScatterElements 'scattered_12'"]),
    (" Node(s) placed on [DmlExecutionProvider]. Number of nodes: 2\n  A (a)\n"
     " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2\n  ScatterND (s)\n  Pad ()", ["ScatterND 's'", "Pad"]),
    (" All nodes placed on [CPUExecutionProvider]. Number of nodes: 1", ["every node"]),
    (" All nodes placed on [DmlExecutionProvider]. Number of nodes: 3", []),
    ("", []),
])
def test_cpu_placed_nodes_are_read_from_the_placement_log(placement: str, nodes: list[str]) -> None:
    assert orc.cpu_placed_nodes(placement) == nodes


def test_a_run_failure_that_is_no_capability_gap_is_an_error() -> None:
    outcome = orc.classify_failure("RuntimeException", "device hung", "run", "DmlExecutionProvider")
    assert outcome.kind is OutcomeKind.ERROR and "device hung" in outcome.message


def test_ort_messages_lose_build_paths_and_addresses_but_keep_file_line_and_hresult() -> None:
    raw = (r"Exception during initialization: E:\_work\1\s\onnxruntime\core\providers\dml\DmlExecutionProvider\src"
           r"\DmlGraphFusionHelper.cpp(588)\onnxruntime.dll!000000018011FA2F: (caller: 00000001800F7C07) Exception(1) "
           r"tid(24) 80070057 The parameter is incorrect.")
    outcome = orc.classify_failure("RuntimeException", raw, "session creation", "DmlExecutionProvider")
    assert outcome.kind is OutcomeKind.ERROR
    assert ("RuntimeException: Exception during initialization: onnxruntime\\core\\providers\\dml\\DmlExecutionProvider"
            "\\src\\DmlGraphFusionHelper.cpp(588) Exception(1) tid(24) 80070057 The parameter is incorrect.") \
        in outcome.message
    assert orc.condense_ort_message("no paths here") == "no paths here"


def test_the_packaged_hosts_start_is_worked_out_once_per_command_unless_a_host_of_ones_own_is_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle
    import sys

    from dmlconform import backends
    from dmlconform.backends import directml, ort_host
    from dmlconform.backends.base import BackendOptions
    from dmlconform.directml.start import OWN_HOST_ENV, ProgramStart
    from dmlconform.directml.wine import Launch

    calls: list[str] = []

    def packaged_start(options: BackendOptions) -> ProgramStart:
        calls.append(options.ep)
        return ProgramStart(Path("/p/ort_dml_host.exe"), Launch(("ort_dml_host.exe", "--ep", "dml"), {}),
                            None)  # type: ignore[arg-type]

    monkeypatch.setattr(ort_host, "packaged_start", packaged_start)
    monkeypatch.setattr(directml, "prepare_wine", lambda options=None: None)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv(OWN_HOST_ENV, raising=False)
    options = BackendOptions(ep="dml")
    prepared = pickle.loads(pickle.dumps(backends.prepare("onnxruntime", options)))
    assert calls == ["dml"] and prepared.prepared.launch.argv == ("ort_dml_host.exe", "--ep", "dml")
    monkeypatch.setenv(OWN_HOST_ENV, "my-host")
    assert backends.prepare("onnxruntime", options) is options and calls == ["dml"]
    assert backends.prepare("onnxruntime", BackendOptions(ep="cpu")).prepared is None
