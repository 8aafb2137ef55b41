"""The ONNX model host (windows/ort_host): cross-built by the wheel's build, run under Wine with onnxruntime-directml
1.24.4's onnxruntime.dll, on its DirectML EP (lavapipe here) and, as the control, its CPU EP.

Needs what the DirectML harness tests need (x86_64-w64-mingw32-g++, Wine, Xvfb or DISPLAY) plus onnxruntime.dll,
onnxruntime_providers_shared.dll and DirectML.dll ($ORT_DML_HOST_DLLS, or `dmlconform fetch directml`'s release);
skips with the missing piece named otherwise. Kept cheap:
a handful of host starts and DirectML sessions (each session compiles its shaders on lavapipe: seconds).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dmlconform import harness_protocol as protocol
from dmlconform.backends.base import OutcomeKind
from dmlconform.backends.onnx_graphs import build_graph
from dmlconform.backends.onnxruntime_backend import OnnxRuntimeBackend
from dmlconform.backends.ort_host import HostRunner
from dmlconform.case_result import Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner import run_case
from tests.backends.test_onnxruntime_backend import make_case
from tests.harness.wine_tools import built_programs, counting_loader, missing_wine_tools, program_command

#: Each test starts host processes (Wine for the real host): seconds, not the quick loop.
pytestmark = pytest.mark.slow

DLLS = ("onnxruntime.dll", "onnxruntime_providers_shared.dll", "DirectML.dll")
#: Wine start-up plus ONNX Runtime, device creation and a first session; generous for a loaded machine.
TIMEOUT_S = 240.0


def _dll_dir() -> Path | None:
    """onnxruntime-directml's three DLLs: $ORT_DML_HOST_DLLS, else the default release `dmlconform fetch directml`
    keeps in the cache."""
    from dmlconform.directml.library import DEFAULT_VERSION, releases

    given = os.environ.get("ORT_DML_HOST_DLLS")
    places = [Path(given)] if given else [r.folder for r in releases() if r.package_version == DEFAULT_VERSION]
    return next((place for place in places if all((place / name).is_file() for name in DLLS)), None)


def _missing() -> str:
    tools = missing_wine_tools()
    if tools:
        return tools
    if _dll_dir() is None:
        return f"{', '.join(DLLS)} not found (dmlconform fetch directml, or set ORT_DML_HOST_DLLS)"
    return ""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, wine_ready: None) -> str:
    """The packaged host's command line as `--ep dml` starts it: built by the wheel's own build, onnxruntime-directml's
    DLLs named as Wine paths, on the package's Wine prefix and display, and lavapipe."""
    programs = built_programs(tmp_path_factory.mktemp("programs"))
    dlls = _dll_dir()
    assert dlls is not None
    return program_command(programs / "ort_dml_host.exe",
                           {"--dml": dlls / "DirectML.dll", "--onnxruntime": dlls / "onnxruntime.dll"})


@pytest.fixture(scope="module")
def dml(host: str) -> Iterator[HostRunner]:
    runner = HostRunner.start(host, "dml", TIMEOUT_S)
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def cpu(host: str) -> Iterator[HostRunner]:
    runner = HostRunner.start(host, "cpu", TIMEOUT_S)
    yield runner
    runner.close()


def slice_case(case_id: str = "slice") -> object:
    dy = np.array([[1, 3], [9, 11]], np.float32)
    return make_case("SLICE_GRAD", {"InputWindowOffsets": [0, 0], "InputWindowSizes": [4, 4],
                                    "InputWindowStrides": [2, -2]}, {"InputGradientTensor": dy}, (4, 4), case_id)


def relu_case(case_id: str = "relu", size: int = 4) -> object:
    """ReluGrad of `size` elements; the host keeps the last session, so a new size makes it create one."""
    x = np.resize(np.array([-1, 0, 2, -0.0], np.float32), size)
    dy = np.arange(5, 5 + size, dtype=np.float32)
    return make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": dy}, (size,), case_id)


def run_graph(runner: HostRunner, case: object, construction: str | None = None):  # type: ignore[no-untyped-def]
    graph = build_graph(case.description, construction=construction, ep=runner.choice.key)  # type: ignore[attr-defined]
    feeds = {name: case.inputs[name] for name in graph.inputs}  # type: ignore[attr-defined]
    return runner.execute(runner.prepare(graph, "FLOAT32"), graph, feeds, case, "FLOAT32")  # type: ignore[arg-type]


def test_the_host_starts_on_onnxruntime_1_24_4_and_directml_1_15_4(dml: HostRunner, cpu: HostRunner) -> None:
    hello = dml.hello
    assert hello.execution_provider == "DmlExecutionProvider" and hello.runtime_version == "1.24.4"
    assert hello.directml == "1.15.4.0" and hello.feature_level is not None and hello.feature_level.label == "6_4"
    assert "on the device handed to the DML EP" in hello.feature_level_source
    assert hello.extra["cpu_ep_fallback"].startswith("disabled") and "checked at start-up" in hello.extra["ort_api"]
    assert "DmlExecutionProvider" in hello.extra["available_providers"] and hello.extra["wine"]
    info = OnnxRuntimeBackend(dml).info()
    assert info.feature_level.label == "6_4" and info.extra["directml"] == "1.15.4.0"
    assert "MAX_POOLING_GRAD: gather-sum" in info.extra["constructions"]
    assert cpu.hello.execution_provider == "CPUExecutionProvider" and cpu.hello.feature_level is None


def test_a_scatter_the_dml_ep_leaves_to_the_cpu_is_refused_by_name_and_the_controls_run(dml: HostRunner,
                                                                                    cpu: HostRunner) -> None:
    """SliceGrad at opset 21: ScatterElements-18 goes to the CPU EP, so with fallback disabled the session is refused,
    naming the node; the CPU-EP control runs that graph, and the DML EP takes the opset-17 construction whole."""
    case = slice_case()
    refused = run_graph(dml, case, "scatter")
    assert refused.kind is OutcomeKind.NOT_SUPPORTED, refused
    assert "fallback to CPU EP has been explicitly disabled" in refused.message
    assert "placed on the CPU EP: ScatterElements 'scattered_" in refused.message
    expected = case.expected["OutputGradientTensor"]  # type: ignore[attr-defined]
    for runner, construction in ((cpu, "scatter"), (dml, "scatter-opset17")):
        outcome = run_graph(runner, case, construction)
        assert outcome.kind is OutcomeKind.OUTPUTS, outcome
        np.testing.assert_array_equal(outcome.outputs["OutputGradientTensor"], expected)


def test_a_wrong_answer_from_the_device_would_fail(dml: HostRunner) -> None:
    """ReluGrad on the DML EP through the whole backend: judged PASS; the same outputs judged against a golden
    that passes dY at X = 0 fail, so the comparison is live."""
    case = relu_case()
    backend = OnnxRuntimeBackend(dml)
    assert run_case(case, backend, HIGHEST).status is Status.PASS
    case.expected = {"OutputGradientTensor": np.array([0, 6, 7, 0], np.float32)}  # type: ignore[attr-defined]
    assert run_case(case, backend, HIGHEST).status is Status.FAIL


def test_a_session_past_the_timeout_kills_the_host_and_the_next_case_gets_a_fresh_one(dml: HostRunner) -> None:
    # A new session of 4 Mi elements (16 MiB in, 16 MiB out, on a new session) takes tens of milliseconds at the
    # least; a tiny one, with a session of a few milliseconds since the host's sessions have one thread, could be
    # answered before this thread waits for it.
    dml.client.timeout_s = 0.001
    try:
        outcome = run_graph(dml, relu_case("slow", size=1 << 22), None)
    finally:
        dml.client.timeout_s = TIMEOUT_S
    assert outcome.kind is OutcomeKind.TIMEOUT and "host killed and restarted" in outcome.message
    restarts = dml.client.restarts
    assert run_graph(dml, relu_case("after-timeout")).kind is OutcomeKind.OUTPUTS
    assert dml.client.restarts == restarts + 1


def test_released_heaps_and_buffers_go_to_the_next_sessions_and_give_what_fresh_ones_give(host: str,
                                                                                        tmp_path: Path) -> None:
    """Under Wine the host hands the shader-visible descriptor heaps (heap_pool.h) and the committed buffers
    (buffer_pool.h) a session released to the next sessions: three sessions make the heaps of the first only and
    reuse buffers, and their outputs are those of a host that makes every heap and buffer afresh (--fresh-heaps
    --fresh-buffers). --timings writes a line per request, the GPU's own time of the run in it."""
    import json

    from dmlconform.directml.wine import windows_path

    cases = [relu_case(f"relu{size}", size) for size in (4, 6, 9)]
    fresh_option = " --fresh-heaps --fresh-buffers"
    outputs, lines, extra = {}, {}, {}
    for option in ("", fresh_option):
        timings = tmp_path / f"t{len(outputs)}-%p.jsonl"
        runner = HostRunner.start(f"{host}{option} --timings {shlex.quote(windows_path(timings))}", "dml", TIMEOUT_S)
        try:
            extra[option] = runner.hello.extra
            outputs[option] = [run_graph(runner, case) for case in cases]
        finally:
            runner.close()
        (path,) = tmp_path.glob(f"t{len(lines)}-*.jsonl")
        lines[option] = [json.loads(line) for line in path.read_text().splitlines()][1:]
    assert extra[""]["descriptor_heap_pool"].startswith("shader-visible heaps handed out again")
    assert extra[""]["buffer_pool"].startswith("committed buffers handed out again")
    assert extra[fresh_option]["descriptor_heap_pool"] == "off (--fresh-heaps)"
    assert extra[fresh_option]["buffer_pool"] == "off (--fresh-buffers)"
    assert [o.kind for o in outputs[""]] == [OutcomeKind.OUTPUTS] * 3
    for pooled, fresh in zip(outputs[""], outputs[fresh_option], strict=True):
        assert pooled.outputs["OutputGradientTensor"].tobytes() == fresh.outputs["OutputGradientTensor"].tobytes()
    pooled, fresh = lines[""], lines[fresh_option]
    assert [r["session_created"] for r in pooled] == [True] * 3 and all(r["gpu_run"] is not None for r in pooled)
    first = pooled[0]["heaps_created"]
    assert first >= 1 and pooled[2]["heaps_created"] == first and pooled[2]["heaps_reused"] >= 2 * first
    # Each session asks for as many buffers as the first did; those it gets again are not made.
    made, asked = pooled[0]["buffers_created"], pooled[0]["buffers_created"] + pooled[0]["buffers_reused"]
    assert made >= 1 and pooled[2]["buffers_reused"] >= asked and pooled[2]["buffers_created"] < 3 * made
    for key in ("heaps_created", "heaps_reused", "buffers_created", "buffers_reused", "buffers_freed"):
        assert fresh[2][key] == 0, key


def test_sessions_have_one_intra_op_thread_and_give_what_onnx_runtimes_default_pool_gives(dml: HostRunner,
                                                                                          host: str) -> None:
    """Sessions get one intra-op thread unless told otherwise (--intra-op-threads 0: ONNX Runtime's default, a pool of
    a thread per physical core made with every session); the hello says which, and the outputs are the same bytes."""
    assert dml.hello.extra["session_options"].startswith("1 intra-op thread, ORT_SEQUENTIAL")
    cases = [relu_case(f"threads{size}", size) for size in (5, 8)]
    ours = [run_graph(dml, case) for case in cases]
    runner = HostRunner.start(f"{host} --intra-op-threads 0", "dml", TIMEOUT_S)
    try:
        assert runner.hello.extra["session_options"].startswith("ONNX Runtime's default intra-op threads")
        pooled = [run_graph(runner, case) for case in cases]
    finally:
        runner.close()
    for one, default in zip(ours, pooled, strict=True):
        assert one.kind is default.kind is OutcomeKind.OUTPUTS, (one, default)
        assert one.outputs["OutputGradientTensor"].tobytes() == default.outputs["OutputGradientTensor"].tobytes()
    with pytest.raises(RuntimeError, match="--intra-op-threads lots"):
        HostRunner.start(f"{host} --intra-op-threads lots", "cpu", TIMEOUT_S)


def test_a_host_that_dies_is_a_crash_and_the_next_case_gets_a_fresh_one(cpu: HostRunner) -> None:
    assert run_graph(cpu, relu_case("before")).kind is OutcomeKind.OUTPUTS
    pid = cpu.client.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    outcome = run_graph(cpu, relu_case("killed"))
    assert outcome.kind is OutcomeKind.CRASH and "host died" in outcome.message and "SIGKILL" in outcome.message
    assert run_graph(cpu, relu_case("after-crash")).kind is OutcomeKind.OUTPUTS


def test_malformed_requests_are_answered_and_the_host_goes_on(host: str) -> None:
    process = subprocess.Popen(shlex.split(f"{host} --ep cpu"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None

    def exchange(header: dict, payload: bytes = b"") -> dict:
        process.stdin.write(protocol.encode_frame(header, payload))  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        return protocol.read_frame(process.stdout.read).header  # type: ignore[union-attr]

    try:
        early = exchange({"type": "run_model", "id": "t/early"})
        assert early["status"] == "error" and "before the hello" in early["message"]
        assert exchange({"type": "hello", "protocol": 1})["serves"] == "onnx-models"
        reply = exchange({"type": "run_model", "id": "t/no-model", "inputs": [], "outputs": []})
        assert reply["status"] == "error" and reply["stage"] == "request" and "'model'" in reply["message"]
        reply = exchange({"type": "run", "id": "t/op", "op": "SLICE_GRAD"})
        assert reply["status"] == "error" and "DirectML harness" in reply["message"]
        reply = exchange({"type": "run_model", "id": "t/not-onnx", "model": {"offset": 0, "nbytes": 4},
                          "inputs": [], "outputs": [{"name": "y", "DataType": 1, "Sizes": [1]}]}, b"junk")
        assert reply["status"] == "error" and reply["stage"] == "session creation" and reply["ort_error"]
        graph = build_graph(relu_case().description)  # type: ignore[attr-defined]
        x = np.array([1, -1, 0, 2], np.float32)
        request = protocol.encode_model_request("t/ok", graph.model.SerializeToString(),
                                                [("InputTensor", x), ("InputGradientTensor", x)],
                                                {"OutputGradientTensor": relu_case().description.output})  # type: ignore[attr-defined]
        process.stdin.write(request)
        process.stdin.flush()
        frame = protocol.read_frame(process.stdout.read)
        assert frame.header["status"] == "ok" and frame.header["working_set_bytes"] > 0
        out = protocol.unpack_tensor(frame.header["outputs"][0], frame.payload, "outputs")[1]
        np.testing.assert_array_equal(out, np.array([1, 0, 0, 2], np.float32))
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0


def test_a_dll_that_is_no_onnx_runtime_is_refused_in_the_handshake(host: str, tmp_path: Path) -> None:
    not_ort = tmp_path / "onnxruntime.dll"
    shutil.copy(_dll_dir() / "onnxruntime_providers_shared.dll", not_ort)  # type: ignore[operator]
    with pytest.raises(RuntimeError, match="does not export OrtGetApiBase"):
        HostRunner.start(f"{host} --onnxruntime Z:{not_ort}", "cpu", TIMEOUT_S)


def test_the_run_command_starts_its_host_early_and_its_worker_takes_it_over(tmp_path: Path, wine_ready: None) -> None:
    """`run --backend onnxruntime --ep dml` starts its workers and their packaged hosts before its imports
    (cli/early_start.py), and the worker's backend takes its host over: one host process in all at `-j 1`, where a
    worker that started its own would make two. The loader is a wrapper that notes every host it starts."""
    import json

    from click.testing import CliRunner

    from dmlconform.cli import main
    from dmlconform.cli.common import bundled_suites
    from dmlconform.directml.library import DEFAULT_VERSION, releases

    if not [r for r in releases() if r.package_version == DEFAULT_VERSION]:
        pytest.skip(f"onnxruntime-directml {DEFAULT_VERSION} is not in the cache (dmlconform fetch directml)")
    loader, started = counting_loader(tmp_path / "wine", "ort_dml_host.exe")
    env = {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(built_programs(tmp_path / "programs")), "WINE": str(loader),
           "DMLCONFORM_ORT_HOST": "", "DMLCONFORM_EARLY_START": ""}
    out = tmp_path / "seed.json"
    result = CliRunner().invoke(main, ["run", "--backend", "onnxruntime", "--ep", "dml", "--adapter", "lavapipe",
                                       str(bundled_suites() / "seed"), "--json", str(out), "-j", "1"], env=env)
    assert result.exit_code == 0, result.output
    assert started.read_text().split() == ["started"]
    backend = json.loads(out.read_text())["backend"]
    assert backend["provider"] == "DmlExecutionProvider" and backend["buffer_pool"].startswith("committed buffers")


@pytest.fixture
def ep_pool_reports(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    given = request.config.getoption("--ep-pool-reports")
    if given is None or len(given) != 2:
        pytest.skip("checks the DML EP runs of .ci/run: --ep-pool-reports POOLED.json,FRESH.json, from dmlconform run "
                    "--backend onnxruntime --ep dml --adapter lavapipe --tier standard --json, the second with "
                    "--program-option=--fresh-buffers")
    return given


@pytest.mark.ep_pool_report
def test_the_buffer_pool_changes_no_output_bit(ep_pool_reports: tuple[Path, Path]) -> None:
    """On the results of .ci/run's two DML EP runs of the standard tier (the packaged host from the installed wheel),
    one with the host's committed buffer pool and one making every buffer afresh (--fresh-buffers): every case has the
    same status and the same output bytes (their digests). Run on every commit, on whatever machine CI has, instead
    of against outputs kept from another machine's lavapipe."""
    import json

    pooled_path, fresh_path = ep_pool_reports
    pooled, fresh = (json.loads(path.read_text()) for path in (pooled_path, fresh_path))
    assert pooled["backend"]["buffer_pool"].startswith("committed buffers handed out again")
    assert fresh["backend"]["buffer_pool"] == "off (--fresh-buffers)"
    cases = {case["id"]: case for case in pooled["cases"]}
    others = {case["id"]: case for case in fresh["cases"]}
    assert set(cases) == set(others) and len(cases) >= 1800
    ran = [case_id for case_id, case in cases.items() if case["output_sha256"]]
    assert len(ran) >= 1600
    differing = [case_id for case_id in cases
                 if (cases[case_id]["status"], cases[case_id]["output_sha256"])
                 != (others[case_id]["status"], others[case_id]["output_sha256"])]
    assert differing == [], differing[:10]
