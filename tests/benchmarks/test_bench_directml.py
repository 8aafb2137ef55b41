"""benchmarks/bench_directml.py's own logic: reading the harness's --timings, splitting a run's worker time, and
the two checks that the runs agree (per-case results, output bytes), which must catch a difference."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_directml.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_directml", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_directml"] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def request(case_id: str, wait: float = 100.0, **phases: float) -> dict[str, object]:
    record: dict[str, object] = {"id": case_id, "op": "SLICE_GRAD", "status": "ok", "t_us": 0.0, "wait": wait}
    record |= {phase: phases.get(phase, 10.0) for phase in ("decode", "create", "compile", "initializer", "heap",
                                                            "resources", "upload", "initialize", "bind",
                                                            "dispatch", "readback", "reply")}
    return record


def write_timings(folder: Path, pid: int, records: list[dict[str, object]], device_us: float = 5e5) -> None:
    lines = [json.dumps({"event": "start", "pid": pid, "main_unix_us": 1e15, "device_us": device_us,
                         "device": "ready"})]
    lines += [json.dumps(r) for r in records]
    (folder / f"timings-{pid}.jsonl").write_text("\n".join(lines) + "\n")


def make_run(bench: ModuleType, folder: Path, results: dict[str, tuple], jobs: int = 1, wall_s: float = 2.0,
             artifacts: dict[str, dict[str, str]] | None = None) -> object:
    starts, requests = bench.read_timings(folder)
    return bench.Run(f"jobs {jobs}", jobs, wall_s, folder, results, Counter(r[0] for r in results.values()),
                     "llvmpipe", starts, requests, 0.0, artifacts or {})


def test_timings_are_read_per_process_and_a_cut_off_line_is_skipped(bench: ModuleType, tmp_path: Path) -> None:
    write_timings(tmp_path, 7, [request("a/1"), request("a/2")])
    write_timings(tmp_path, 8, [request("a/3")])
    with open(tmp_path / "timings-8.jsonl", "a") as f:
        f.write('{"id": "a/4", "wait": 1')  # a harness killed while writing
    starts, requests = bench.read_timings(tmp_path)
    assert [s["pid"] for s in starts] == [7, 8]
    assert [r["id"] for r in requests] == ["a/1", "a/2", "a/3"]
    assert [r["order"] for r in requests] == [1, 2, 1]  # line numbers within each process's file


def test_the_breakdown_accounts_for_all_worker_time(bench: ModuleType, tmp_path: Path) -> None:
    write_timings(tmp_path, 7, [request("a/1", wait=9e5, heap=4e5), request("a/2", wait=2e4)], device_us=3e5)
    run = make_run(bench, tmp_path, {"a/1": ("PASS",), "a/2": ("PASS",)}, jobs=2, wall_s=2.0)
    parts = bench.breakdown(run)
    assert parts["descriptor heap (once, or per case)"] == pytest.approx(0.40001)
    assert parts["device creation (harness starts)"] == pytest.approx(0.3)
    # The first wait of a process (handshake, loading) is not the runner's per-case time.
    assert parts["harness waits for the runner"] == pytest.approx(0.02)
    assert sum(parts.values()) == pytest.approx(2 * 2.0)


def test_differing_results_are_reported_and_identical_ones_are_not(bench: ModuleType, tmp_path: Path) -> None:
    same = {"a/1": ("PASS", None, None, 0, 0.0), "a/2": ("FAIL", None, None, 3, 1e-7)}
    ours, again = make_run(bench, tmp_path, same), make_run(bench, tmp_path, dict(same))
    assert bench.result_differences([ours, again]) == []
    moved = make_run(bench, tmp_path, {**same, "a/2": ("FAIL", None, None, 4, 1e-7)})  # one ULP more
    missing = make_run(bench, tmp_path, {"a/1": same["a/1"]})
    lines = bench.result_differences([ours, moved, missing])
    assert len(lines) == 2 and all("a/2" in line for line in lines)


def test_outputs_must_be_byte_identical(bench: ModuleType, tmp_path: Path) -> None:
    def folder(name: str, values: np.ndarray) -> Path:
        path = tmp_path / name
        (path / "out").mkdir(parents=True)
        np.save(path / "out" / "dx.npy", values)
        return path

    values = np.array([1.0, -0.0, np.nan], np.float32)
    flipped = values.copy()
    flipped[1] = 0.0  # -0 -> +0: equal as numbers, not as bytes
    artifacts = {"a/1": {"OutputGradientTensor": "out/dx.npy"}}
    ours = make_run(bench, folder("ours", values), {}, artifacts=artifacts)
    assert bench.output_differences(ours, make_run(bench, folder("same", values.copy()), {}, artifacts=artifacts)) \
        == (1, [])
    compared, lines = bench.output_differences(ours, make_run(bench, folder("peer", flipped), {}, artifacts=artifacts))
    assert compared == 1 and lines == ["  a/1 OutputGradientTensor: not byte-identical"]
    other_type = make_run(bench, folder("f16", values.astype(np.float16)), {}, artifacts=artifacts)
    assert bench.output_differences(ours, other_type)[1]


def test_the_physical_limit_is_the_gpus_own_time_plus_one_device_creation(bench: ModuleType, tmp_path: Path) -> None:
    gpu = {"gpu_initialize": 10.0, "gpu_upload": 20.0, "gpu_dispatch": 30.0, "gpu_readback": 40.0}
    write_timings(tmp_path, 7, [request("a/1") | gpu, request("a/2") | gpu], device_us=3e5)
    write_timings(tmp_path, 8, [request("a/3") | gpu], device_us=2e5)
    run = make_run(bench, tmp_path, {}, jobs=2, wall_s=1.0)
    assert bench.gpu_seconds(run) == pytest.approx(3 * 100e-6)
    assert bench.physical_limit(run) == pytest.approx(0.2 + 3 * 100e-6)  # the fastest start, once
    assert "5.0x the limit" in bench.limit_lines([run])[1]


def host_request(case_id: str, **phases: float) -> dict[str, object]:
    record: dict[str, object] = {"id": case_id, "status": "ok", "session_created": True, "t_us": 0.0, "wait": 50.0,
                                 "heaps_created": 2, "heaps_reused": 4}
    return record | {phase: phases.get(phase, 10.0) for phase in ("decode", "session", "inputs", "run", "outputs",
                                                                  "reply", "gpu_session", "gpu_run")}


def test_host_timings_split_the_worker_time_and_count_only_the_runs_as_gpu_work(bench: ModuleType,
                                                                               tmp_path: Path) -> None:
    write_timings(tmp_path, 9, [host_request("relu_grad.smoke/a", session=8e5, gpu_session=7e5, gpu_run=100.0),
                                host_request("slice_grad.smoke/b", session=1e5, gpu_session=9e4, gpu_run=300.0)],
                  device_us=4e5)
    starts, requests = bench.read_timings(tmp_path)
    run = bench.Run("jobs 1", 1, 2.0, tmp_path, {}, Counter(), "llvmpipe", starts, requests, 0.0, {}, "ep")
    parts = bench.breakdown(run)
    assert parts["session (created, or the cached one)"] == pytest.approx(0.9)
    assert parts["device creation (host starts)"] == pytest.approx(0.4)
    assert sum(parts.values()) == pytest.approx(2.0)
    assert bench.physical_limit(run) == pytest.approx(0.4 + 400e-6)  # session brackets are CPU time: not counted
    assert [line.split()[0] for line in bench.operator_lines(run)[1:]] == ["relu_grad", "slice_grad"]
    sessions = bench.gpu_lines(run)[1]
    assert sessions.endswith("descriptor heaps (one host): 2 made, 4 handed out again")  # no buffer counts: no part
    requests[1] |= {"buffers_created": 9, "buffers_reused": 30}
    assert bench.gpu_lines(run)[1].endswith("; committed buffers (one host): 9 made, 30 handed out again")


def test_each_run_is_the_command_a_user_runs(bench: ModuleType, tmp_path: Path) -> None:
    import argparse

    args = argparse.Namespace(suites=None, tier="standard", timeout=60.0, k="relu", ep=False, adapter="lavapipe",
                              directml=None, directml_version="1.24.4", session_config=["ep.dml.x=1"],
                              path="operator")
    packaged = bench.Harness("env A=1 wine64 dml_harness.exe", "packaged", wine=True, packaged=True)
    command = bench.run_command(args, packaged, 2, "--buffers-per-case", tmp_path / "t-%p.jsonl", tmp_path / "r.json")
    assert command[command.index("--backend") + 1] == "directml" and "--directml-version" in command
    assert "--path" not in command  # the operator path: the command as before issue 40
    args.path = "graph"
    on_graph = bench.run_command(args, packaged, 2, "", None, tmp_path / "r.json")
    assert on_graph[on_graph.index("--path") + 1] == "graph"
    args.path = "operator"
    assert command[-3:] == ["--program-option=--buffers-per-case", "--program-option=--timings",
                            f"--program-option=Z:{str(tmp_path).replace('/', chr(92))}{chr(92)}t-%p.jsonl"]
    assert not [c for c in command if c.startswith("--session-config")]
    args.ep = True
    command = bench.run_command(args, packaged, 2, "", None, tmp_path / "r.json")
    assert command[command.index("--backend") + 1:command.index("--backend") + 4] == ["onnxruntime", "--ep", "dml"]
    assert "--session-config=ep.dml.x=1" in command
    own = bench.Harness("my-harness --fast", "mine")
    command = bench.run_command(args, own, 1, "", tmp_path / "t.jsonl", tmp_path / "r.json")
    assert command[command.index("--harness") + 1] == f"my-harness --fast --timings {tmp_path / 't.jsonl'}"
