"""Requests pipelined to a harness whose hello says `pipeline`: the same results as one at a time, and every fault
still costs exactly its own case (the requests sent behind it go again to a fresh harness)."""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest

from dmlconform.backends.native import PIPELINE_DEPTH, HarnessClient, NativeBackend
from dmlconform.case import Case
from dmlconform.case_result import CaseResult, Status
from dmlconform.runner import KeepOutputs
from dmlconform.runner.serve import Server
from tests.backends.test_native import HARNESS, SEED, VECTORS, load, reference_statuses

PIPELINED = "python -m tests.backends.pipelined_harness --backend numpy"


def most_in_flight(backend: NativeBackend) -> list[int]:
    """Records, in the returned list, how many requests the client had in the harness after each send."""
    seen: list[int] = []
    client = backend.harness
    original = client._send_more

    def counting(process: object) -> None:
        original(process)  # type: ignore[arg-type]
        seen.append(len(client._sent))

    client._send_more = counting  # type: ignore[method-assign]
    return seen


def serve(backend: NativeBackend, cases: list[Case]) -> dict[str, CaseResult]:
    """The cases through a worker's server (runner/serve.py), as `dmlconform run` runs them."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    inbox.put(list(enumerate(cases)))
    inbox.put(None)
    done: dict[str, CaseResult] = {}

    def send(kind: str, payload: object) -> None:
        if kind == "result":
            index, attempts = payload  # type: ignore[misc]
            done[cases[index].full_id] = attempts[-1]

    Server(backend, backend.info().feature_level, 1, KeepOutputs.NONE, inbox, send).serve()
    assert len(done) == len(cases)  # every case gets exactly one result
    return done


def test_a_harness_without_pipeline_gets_one_request_at_a_time() -> None:
    cases = [c for c in load([SEED]) if not c.expect_invalid][:5]
    backend = NativeBackend(HARNESS, 30)
    seen = most_in_flight(backend)
    try:
        assert backend.pipeline == 1
        got = serve(backend, cases)
    finally:
        backend.close()
    assert max(seen) == 1
    assert all(r.status is Status.PASS for r in got.values())


@pytest.mark.slow
def test_a_pipelining_harness_holds_several_requests_and_gives_the_same_results() -> None:
    cases = load([SEED])
    backend = NativeBackend(PIPELINED, 30)
    seen = most_in_flight(backend)
    try:
        assert backend.pipeline == min(4, PIPELINE_DEPTH) > 1
        got = serve(backend, cases)
    finally:
        backend.close()
    assert max(seen) == backend.pipeline  # requests went ahead of replies, never more than the window
    assert {k: r.status for k, r in got.items()} == reference_statuses(cases)


@pytest.mark.slow
def test_faults_in_the_middle_of_a_pipeline_cost_exactly_their_cases(tmp_path: Path) -> None:
    cases = [c for c in load([VECTORS / "relu_grad"]) if not c.expect_invalid][:12]
    ids = [c.full_id for c in cases]
    crash, hang, garbage, fatal, removed = ids[1], ids[4], ids[6], ids[8], ids[10]
    log = tmp_path / "served.log"
    harness = (f"{PIPELINED} --crash-on '^{crash}$' --hang-on '^{hang}$' --garbage-on '^({garbage}|{fatal})$' "
               f"--device-removed-on '^{removed}$' --log-served {log}")
    backend = NativeBackend(harness, 3.0)
    seen = most_in_flight(backend)
    try:
        # A second harness garbles its stream on `fatal` (bad magic), the first only the sizes of `garbage`: the
        # garbage mode is one per process, so the fatal case goes to its own backend below.
        got = serve(backend, [c for c in cases if c.full_id != fatal])
    finally:
        backend.close()
    assert max(seen) == backend.pipeline > 1  # the faults hit with requests behind them in the harness
    assert got[crash].status is Status.CRASH and "exit code 86" in got[crash].message
    assert got[hang].status is Status.TIMEOUT and "3 s" in got[hang].message
    assert got[garbage].status is Status.ERROR and "nbytes" in got[garbage].message
    assert got[removed].status is Status.CRASH and "DXGI_ERROR_DEVICE_HUNG" in got[removed].message
    for case_id in set(ids) - {crash, hang, garbage, removed, fatal}:
        assert got[case_id].status is Status.PASS, f"{case_id}: {got[case_id].message}"
    # The case sent right behind the crash sat unread in the dead harness's pipe: the fresh harness ran it, once.
    served = [line.split() for line in log.read_text().splitlines()]
    pids = {case_id: [pid for served_id, pid in served if served_id == case_id] for case_id in ids}
    assert len(pids[ids[2]]) == 1 and pids[ids[2]] != pids[crash], served

    backend = NativeBackend(f"{PIPELINED} --garbage-on '^{fatal}$' --garbage-mode bytes", 30)
    try:
        after = serve(backend, cases[7:])
    finally:
        backend.close()
    assert after[fatal].status is Status.ERROR and "magic" in after[fatal].message
    assert all(after[i].status is Status.PASS for i in ids[7:] if i != fatal)


def test_exchange_refuses_to_overtake_requests_still_outstanding() -> None:
    client = HarnessClient(PIPELINED, 30)
    try:
        case = next(c for c in load([SEED]) if not c.expect_invalid)
        from dmlconform import harness_protocol as protocol

        request = protocol.encode_run_request(case.full_id, case.description, case.inputs)
        expected = {name: case.description.tensors[name] for name in case.op.outputs}
        client.submit(case.full_id, request, expected)
        with pytest.raises(AssertionError):
            client.exchange(case.full_id, request, expected)
        assert client.collect().status == "ok" and client.outstanding == 0
    finally:
        client.close()


def big_relu(case_id: str, elements: int = 1 << 21) -> Case:
    """8 MiB a tensor: more than a pipe holds, so that writing the next request is under way when a harness exits."""
    import numpy as np

    from tests.backends.test_onnxruntime_backend import make_case

    x = np.linspace(-1, 1, elements, dtype=np.float32)
    return make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": np.ones_like(x)},
                     (elements,), case_id)


@pytest.mark.slow
def test_a_harness_that_exits_after_each_reply_costs_the_requests_it_never_read() -> None:
    """A harness that exits right after each reply, with large requests behind it in the pipe (writing them fails):
    each reply counts (the case ran); the next request, which that harness never read, is the CRASH; and so on,
    harness after harness."""
    cases = [big_relu(f"big{i}") for i in range(4)]
    backend = NativeBackend(f"{PIPELINED} --exit-after 1", 60)
    try:
        got = serve(backend, cases)
    finally:
        backend.close()
    statuses = [got[case.full_id].status for case in cases]
    assert statuses == [Status.PASS, Status.CRASH, Status.PASS, Status.CRASH], [got[c.full_id].message for c in cases]
    assert "exit code 0" in got[cases[1].full_id].message


@pytest.mark.slow
def test_a_live_harness_that_stops_reading_its_stdin_costs_the_request_it_did_not_take() -> None:
    """Its stdin closed, a harness that is still alive cannot take the next request: ERROR at once (the writer's
    failure, after the grace for a reply already written), not a TIMEOUT, and the next case gets a fresh harness."""
    cases = [c for c in load([SEED]) if not c.expect_invalid][:3]
    backend = NativeBackend(f"{PIPELINED} --pipeline 1 --close-stdin-after 1", 30)
    try:
        got = serve(backend, cases)
    finally:
        backend.close()
    second = got[cases[1].full_id]
    assert got[cases[0].full_id].status is Status.PASS and got[cases[2].full_id].status is Status.PASS
    assert second.status is Status.ERROR and "stopped reading its stdin" in second.message, second.message


def test_a_failed_write_does_not_overtake_what_the_harness_wrote_before_it() -> None:
    """The writer thread's failure (a request behind, pipelined) and the reader thread's bytes race into one queue:
    the failure may come first. A harness that has exited still has its last reply read; a live one that stopped
    taking requests gets a short grace for the reply being read, then the failure counts."""
    import subprocess
    import sys

    from dmlconform import harness_protocol as protocol
    from dmlconform.backends import native

    def process(items: list[object], command: list[str]) -> native.HarnessProcess:
        harness = native.HarnessProcess.__new__(native.HarnessProcess)  # no threads: the queue is the test's
        harness.process = subprocess.Popen(command)
        harness._inbound = queue.Queue()
        for item in items:
            harness._inbound.put(item)
        harness._buffer = bytearray()
        harness._stdout_closed = False
        harness._write_error = native._WriteFailed("[Errno 32] Broken pipe")
        return harness

    reply = protocol.encode_result("s/c", "refused", message="no")
    exited = process([native._WRITE_FAILED, reply[:20], reply[20:], b""], [sys.executable, "-c", "pass"])
    exited.process.wait()
    assert exited.read_frame(time.monotonic() + 5).header["id"] == "s/c"
    alive = process([native._WRITE_FAILED, reply], [sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert alive.read_frame(time.monotonic() + 5).header["id"] == "s/c"  # it came within the grace
        silent = process([native._WRITE_FAILED], [sys.executable, "-c", "import time; time.sleep(30)"])
        began = time.monotonic()
        with pytest.raises(native._WriteFailed):
            silent.read_frame(time.monotonic() + 5)
        assert native.WRITE_FAILED_GRACE_S <= time.monotonic() - began < 4
    finally:
        for harness in (alive, locals().get("silent")):
            if harness is not None:
                harness.process.kill()
                harness.process.wait()
