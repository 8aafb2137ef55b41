"""Worker processes: the same results as a serial run, a dead worker costs one case, a stop ends the run."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from dmlconform.backends.base import BackendOptions
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import CaseResult, Status
from dmlconform.cli import bundled_suites
from dmlconform.runner import run_cases
from dmlconform.runner.pool import BackendStartError, WorkerPool, WorkerSetup
from dmlconform.suite.loader import load_paths

HARNESS = "python -m dmlconform.harness --backend numpy"


@pytest.fixture(scope="module")
def cases():
    return load_paths([bundled_suites()])


def comparable(result: CaseResult) -> dict:
    data = asdict(result)
    data.pop("duration_s")
    return data


def make_pool(jobs: int, backend: str = "numpy", harness: str | None = None,
              stop: threading.Event | None = None) -> WorkerPool:
    return WorkerPool(WorkerSetup(backend, BackendOptions(harness=harness, timeout_s=30), None), jobs,
                      stop or threading.Event(), 30)


def run_all(pool: WorkerPool, cases, on_done=None) -> dict[int, list[CaseResult]]:
    """Start the pool if need be, run the cases without retries, and close (or kill, after a stop) the pool."""
    if pool.info is None:
        pool.start()
    done: dict[int, list[CaseResult]] = {}

    def finished(index: int, attempts: list[CaseResult]) -> None:
        done[index] = attempts
        if on_done is not None:
            on_done()

    try:
        pool.run(list(enumerate(cases)), finished, lambda result: False, 0)
    finally:
        pool.kill() if pool.stop.is_set() else pool.close()
    return done


@pytest.mark.slow
@pytest.mark.tier_scan
def test_two_workers_give_the_serial_results_case_for_case(scanned_cases) -> None:
    serial = run_cases(scanned_cases, NumpyBackend())
    done = run_all(make_pool(2), scanned_cases)
    assert sorted(done) == list(range(len(scanned_cases)))
    assert [comparable(done[i][0]) for i in range(len(scanned_cases))] == [comparable(r) for r in serial.results]


@pytest.mark.slow
def test_a_worker_that_dies_costs_its_case_and_is_replaced(cases) -> None:
    seed = [c for c in cases if c.suite == "seed"][:3]
    pool = make_pool(1, "native", f"{HARNESS} --delay 1")
    pool.start()
    victim = pool.workers[0].process.pid

    def kill_soon() -> None:
        time.sleep(0.3)  # the first case is in the harness's delay by then
        os.killpg(victim, signal.SIGKILL)

    threading.Thread(target=kill_soon).start()
    done = run_all(pool, seed)
    statuses = [done[i][0].status for i in range(3)]
    assert statuses[0] is Status.CRASH and "worker process died" in done[0][0].message
    assert "SIGKILL" in done[0][0].message
    assert statuses[1:] == [Status.PASS, Status.PASS]
    assert pool.workers[0].process.pid != victim


@pytest.mark.slow
def test_a_stop_ends_the_run_and_kill_takes_the_harnesses_with_it(cases, tmp_path) -> None:
    log = tmp_path / "served.log"
    stop = threading.Event()
    done = run_all(make_pool(2, "native", f"{HARNESS} --delay 0.2 --log-served {log}", stop), cases[:20], stop.set)
    assert 1 <= len(done) < 20
    harness_pids = {int(line.split()[1]) for line in log.read_text().splitlines()}
    assert harness_pids and not [pid for pid in harness_pids if alive(pid)]


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a parent (here PID 1 of a container) to reap it."""
    for _ in range(20):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return False
            return True
        if state == "Z":
            return False
        time.sleep(0.1)  # SIGKILL is delivered asynchronously
    return True


def test_a_backend_that_cannot_start_is_one_line() -> None:
    pool = make_pool(2, "native", "no-such-harness-xyz")
    with pytest.raises(BackendStartError) as info:
        pool.start()
    assert "cannot start harness" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_a_worker_that_overruns_its_deadline_is_killed_and_the_case_is_a_timeout(cases) -> None:
    seed = [c for c in cases if c.suite == "seed"][:2]
    pool = make_pool(1, "native", f"{HARNESS} --delay 1.5")
    pool.deadline_s = 0.5  # far below the harness's own timeout: the parent's deadline acts first
    done = run_all(pool, seed)
    assert [done[i][0].status for i in (0, 1)] == [Status.TIMEOUT, Status.TIMEOUT]
    assert "no result within 0.5 s; worker process killed and replaced" in done[0][0].message


def test_large_arrays_travel_beside_the_pickle_and_arrive_equal(cases) -> None:
    import multiprocessing

    import numpy as np

    from dmlconform.runner import pool as pool_module

    case = next(c for c in cases if c.op.name == "ACTIVATION_RELU_GRAD" and not c.expect_invalid)
    big = np.arange(1 << 19, dtype=np.float32)  # 2 MiB
    case.inputs = {**case.inputs, "Extra": big}
    sending, receiving = multiprocessing.Pipe()
    sender = threading.Thread(target=pool_module.send_tasks, args=(sending, [(7, case)]))  # a pipe holds 64 KiB
    sender.start()
    count, header = receiving.recv()
    assert count == 1 and len(header) < (1 << 20)  # the 2 MiB array is not in the pickle; the small ones are
    payload = [receiving.recv_bytes()]
    sender.join()
    [(index, copy)] = __import__("pickle").loads(header, buffers=payload)
    assert index == 7 and np.array_equal(copy.inputs["Extra"], big) and not copy.inputs["Extra"].flags.writeable
    assert all(np.array_equal(copy.inputs[k], v) for k, v in case.inputs.items())


def count_messages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of cases in each message the parent sends to a worker."""
    from dmlconform.runner import pool as pool_module

    sizes: list[int] = []
    original = pool_module.send_tasks

    def counting(conn, tasks):
        sizes.append(len(tasks))
        original(conn, tasks)

    monkeypatch.setattr(pool_module, "send_tasks", counting)
    return sizes


@pytest.mark.slow
def test_fast_cases_travel_many_to_a_message_and_give_the_serial_results(cases, monkeypatch) -> None:
    sizes = count_messages(monkeypatch)
    chosen = cases[:400]
    done = run_all(make_pool(1), chosen)
    serial = run_cases(chosen, NumpyBackend())
    assert [comparable(done[i][0]) for i in range(len(chosen))] == [comparable(r) for r in serial.results]
    assert sum(sizes) == len(chosen) and len(sizes) < len(chosen) / 4 and max(sizes) > 8


@pytest.mark.slow
def test_slow_cases_travel_one_to_a_message(cases, monkeypatch) -> None:
    sizes = count_messages(monkeypatch)
    seed = [c for c in cases if c.suite == "seed"][:4]
    done = run_all(make_pool(1, "native", f"{HARNESS} --delay 0.05"), seed)  # 50 ms a case: above QUEUED_S
    assert [done[i][0].status for i in range(4)] == [Status.PASS] * 4
    assert sizes == [1, 1, 1, 1]


@pytest.mark.slow
def test_a_worker_killed_while_it_holds_many_cases_costs_one_and_the_rest_run(cases) -> None:
    chosen = [c for c in cases if not c.expect_invalid][:300]
    # The harness never answers case 40, so the kill after 40 results lands while the worker runs a case (that one),
    # whatever the load; killed between cases, no case is to blame (the next test).
    pool = make_pool(1, "native", f"{HARNESS} --hang-on '^{re.escape(chosen[40].full_id)}$'")
    pool.start()
    victim = pool.workers[0].process.pid
    held: list[int] = []

    def kill_after_some() -> None:
        if len(done_so_far) == 40:
            held.append(len(pool.workers[0].tasks))
            os.killpg(victim, signal.SIGKILL)
            while pool.workers[0].process.exitcode is None:
                time.sleep(0.01)

    done_so_far: list[int] = []
    done = run_all(pool, chosen, lambda: (done_so_far.append(1), kill_after_some()))
    assert held and held[0] > 2  # the worker held several cases when it died
    assert sorted(done) == list(range(len(chosen)))
    crashed = [i for i in done if done[i][0].status is Status.CRASH]
    assert crashed == [40]
    assert all(done[i][0].status is Status.PASS for i in done if i not in crashed)


@pytest.mark.slow
def test_a_worker_killed_after_answering_all_it_held_is_replaced_and_the_rest_run(cases) -> None:
    """Killed once its answers are in the pipe, the worker has no case running: it is replaced all the same (it was
    not: the run ended there, and the cases left came out as ERROR, "no worker process could run it")."""
    chosen = [c for c in cases if not c.expect_invalid][:200]
    pool = make_pool(1)
    pool.start()
    victim = pool.workers[0].process.pid

    def kill_once_idle() -> None:
        if len(done_so_far) == 20:
            time.sleep(0.5)  # the worker answers the few cases it holds (when it is slower, it dies in one)
            os.killpg(victim, signal.SIGKILL)
            while pool.workers[0].process.exitcode is None:
                time.sleep(0.01)

    done_so_far: list[int] = []
    done = run_all(pool, chosen, lambda: (done_so_far.append(1), kill_once_idle()))
    assert pool.workers[0].process.pid != victim
    assert sorted(done) == list(range(len(chosen)))
    crashed = [i for i in done if done[i][0].status is Status.CRASH]
    assert len(crashed) <= 1 and all(i >= 20 for i in crashed)
    assert all(done[i][0].status is Status.PASS for i in done if i not in crashed)


def test_a_worker_holds_cases_by_their_duration_and_their_bytes(cases) -> None:
    import numpy as np

    from dmlconform.runner import pool as pool_module

    pool = make_pool(1)
    assert pool.depth(retries=1) == 1 and pool.depth(retries=0) == 2  # nothing measured yet
    pool.case_s = pool_module.QUEUED_S / 10
    assert pool.depth(0) == 10
    pool.case_s = 1e-9
    assert pool.depth(0) == pool_module.MAX_QUEUED
    pool.case_s = 5.0
    assert pool.depth(0) == 2 and pool.depth(1) == 1

    small = next(c for c in cases if c.op.name == "ACTIVATION_RELU_GRAD" and not c.expect_invalid)
    big = copy_with_input(small, np.zeros(pool_module.QUEUED_BYTES // 4 // 2 + 1, np.float32))  # just over half
    from collections import deque

    pending = deque([(0, big), (1, big), (2, big), (3, small)])
    # The first goes whatever its size; behind it, one big case fits under the cap and a second would not.
    assert [i for i, _ in pool_module.next_batch(pending, 10)] == [0, 1]
    assert [i for i, _ in pool_module.next_batch(pending, 10)] == [2, 3]
    assert [i for i, _ in pool_module.next_batch(deque([(0, small), (1, big), (2, big)]), 10)] == [0, 1]
    assert [i for i, _ in pool_module.next_batch(deque([(0, small), (1, small), (2, small)]), 2)] == [0, 1]


def copy_with_input(case, array):
    import dataclasses

    return dataclasses.replace(case, inputs={**case.inputs, "Extra": array})


def test_large_cases_with_kept_outputs_do_not_wait_on_each_other(cases) -> None:
    # The parent blocks sending a 4 MiB case while the worker sends a 4 MiB result (outputs kept for artifacts):
    # unless the worker reads while it runs, each waits for the other for ever.
    import copy
    import dataclasses

    import numpy as np

    from dmlconform.runner import KeepOutputs

    relu = next(c for c in cases if c.op.name == "ACTIVATION_RELU_GRAD" and c.expected is not None)
    n = 1 << 20
    x, dy = np.linspace(-1, 1, n, dtype=np.float32), np.ones(n, np.float32)
    big = []
    for i in range(4):
        case = copy.deepcopy(relu)
        tensors = {k: dataclasses.replace(t, shape=(n,)) for k, t in case.description.tensors.items()}
        case.description = dataclasses.replace(case.description, tensors=tensors)
        case.inputs = {"InputTensor": x, "InputGradientTensor": dy}
        case.expected = {"OutputGradientTensor": np.where(x > 0, dy, 0).astype(np.float32)}
        case.id = f"big{i}"
        big.append(case)
    pool = WorkerPool(WorkerSetup("numpy", BackendOptions(timeout_s=30), None, 1, KeepOutputs.ALL), 1,
                      threading.Event(), 30)
    pool.start()
    done: dict[int, list[CaseResult]] = {}
    running = threading.Thread(target=pool.run, args=(list(enumerate(big)), done.__setitem__, lambda r: False, 0),
                               daemon=True)
    running.start()
    running.join(60)
    hung = running.is_alive()
    pool.kill()
    assert not hung, "the parent and the worker waited on each other"
    assert [done[i][0].status for i in range(4)] == [Status.PASS] * 4
    assert all(done[i][0].actual_outputs["OutputGradientTensor"].nbytes == 4 * n for i in range(4))


@pytest.mark.slow
@pytest.mark.parametrize("harness", [HARNESS, "python -m tests.backends.pipelined_harness --backend numpy"])
def test_a_failing_case_is_retried_by_its_worker_and_both_attempts_come_back(cases, harness: str) -> None:
    """The retry policy travels to the workers (it pickles): they retry, holding several cases, pipelined or not; a
    policy that cannot travel (a lambda) keeps the retries in the parent, one case at a time, to the same effect."""
    from dmlconform.results.expectations import Expectations

    chosen = [c for c in cases if c.suite == "seed" and not c.expect_invalid][:4]
    flaky = chosen[1].full_id
    for needs_retry, travels in ((Expectations().needs_retry, True),
                                 (lambda result: Expectations().needs_retry(result), False)):
        pool = make_pool(1, "native", f"{harness} --flaky-on '^{re.escape(flaky)}$'")
        pool.start()
        done: dict[int, list[CaseResult]] = {}
        try:
            pool.run(list(enumerate(chosen)), done.__setitem__, needs_retry, 1)
            worker_side = pool.policy is not None
            depth = pool.depth(1)
        finally:
            pool.close()
        assert worker_side is travels
        assert depth >= max(2, pool.prefetch) if travels else depth == 1  # workers then hold several cases
        assert [r.status for r in done[1]] == [Status.FAIL, Status.PASS]
        assert all([r.status for r in done[i]] == [Status.PASS] for i in (0, 2, 3))


def _one_worker_differs(tmp_path: Path, other: str) -> str:
    """A harness command for two workers: the first to start runs the harness at once, the other `other` (shell)."""
    lock = tmp_path / "first"
    return f"sh -c 'if mkdir {lock} 2>/dev/null; then exec {HARNESS}; else {other}; fi'"


@pytest.mark.slow
def test_the_run_begins_with_the_first_ready_worker_and_the_others_join_as_they_come(cases, tmp_path: Path) -> None:
    chosen = [c for c in cases if c.suite == "seed"][:6]
    pool = make_pool(2, "native", _one_worker_differs(tmp_path, f"sleep 6; exec {HARNESS}"))
    try:
        pool.start()
        assert len(pool.starting) == 1  # the slow one is still starting: the run need not wait for it
        done: dict[int, list[CaseResult]] = {}
        pool.run(list(enumerate(chosen)), done.__setitem__, lambda result: False, 0)
        assert len(pool.starting) == 1  # all done by the first
    finally:
        pool.kill()  # not close: it would wait for the slow one to come up
    assert sorted(done) == list(range(len(chosen))) and all(len(a) == 1 for a in done.values())
    assert {a[0].status for a in done.values()} <= {Status.PASS, Status.INVALID_OK}


@pytest.mark.slow
@pytest.mark.parametrize("failing", ["exit 3", "sleep 0.5; exit 3"])  # while the first starts, or once it runs
def test_a_worker_that_cannot_start_beside_one_that_can_is_a_warning_and_the_run_goes_on(
        cases, tmp_path: Path, capfd: pytest.CaptureFixture[str], failing: str) -> None:
    chosen = [c for c in cases if c.suite == "seed"][:6]
    pool = make_pool(2, "native", _one_worker_differs(tmp_path, failing).replace(
        f"exec {HARNESS}", f"exec {HARNESS} --delay 0.3"))
    done = run_all(pool, chosen)
    assert sorted(done) == list(range(len(chosen)))
    warnings = [line for line in capfd.readouterr().err.splitlines() if "could not start its backend" in line]
    assert len(warnings) == 1 and "the run goes on without it" in warnings[0]


def _counted_harness(tmp_path: Path) -> tuple[str, Path]:
    """A harness command that notes each start (its pid, a line) in a file, then serves as HARNESS does."""
    starts = tmp_path / "starts"
    script = tmp_path / "counted.py"
    script.write_text("import os, sys\n"
                      f"with open({str(starts)!r}, 'a') as f:\n"
                      "    f.write(f'{os.getpid()}\\n')\n"
                      "os.execv(sys.executable, [sys.executable, '-m', 'dmlconform.harness', '--backend', 'numpy'])\n")
    return f"{sys.executable} {script}", starts


@pytest.mark.slow
@pytest.mark.parametrize("same", [True, False], ids=["its-own-program", "another-environment"])
def test_early_workers_start_their_harness_before_the_setup_and_the_backend_takes_it_over_only_if_it_is_its_own(
        cases, tmp_path: Path, same: bool) -> None:
    """Workers started before the pool (the run command's early start) start the program first; the backend takes it
    over when it is its very program (one start per worker), and otherwise stops it and starts its own, and the
    cases come out the same either way."""
    from dmlconform import processes
    from dmlconform.backends.native import harness_argv

    command, starts = _counted_harness(tmp_path)
    environment = dict(os.environ) if same else {**os.environ, "DMLCONFORM_TEST_OTHER": "1"}
    program = processes.EarlyProgram.of(harness_argv(command), environment)
    early = [processes.WorkerProcess(processes.context(), slot, processes.WORKER_MAIN, program) for slot in range(2)]
    deadline = time.monotonic() + 30
    while (not starts.exists() or len(starts.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)  # both started before their workers have a setup
    chosen = [c for c in cases if c.suite == "seed"][:6]
    pool = WorkerPool(WorkerSetup("native", BackendOptions(harness=command, timeout_s=30), None, 1,
                                  environment=dict(os.environ)), 2, threading.Event(), 30, early=early)
    pool.launch()
    done = run_all(pool, chosen)
    assert sorted(done) == list(range(len(chosen)))
    assert {a[0].status for a in done.values()} <= {Status.PASS, Status.INVALID_OK}
    pids = starts.read_text().split()
    assert len(pids) == (2 if same else 4)
    if not same:  # the early ones were stopped, not left running
        deadline = time.monotonic() + 5
        while any(alive(int(pid)) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(int(pid)) for pid in pids)


def test_early_workers_the_pool_never_took_are_stopped_with_their_programs(tmp_path: Path) -> None:
    from dmlconform import processes
    from dmlconform.backends.native import harness_argv

    command, starts = _counted_harness(tmp_path)
    program = processes.EarlyProgram.of(harness_argv(command), dict(os.environ))
    early = [processes.WorkerProcess(processes.context(), 0, processes.WORKER_MAIN, program)]
    deadline = time.monotonic() + 30
    while not starts.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pool = WorkerPool(WorkerSetup("native", BackendOptions(harness=command, timeout_s=30), None), 1,
                      threading.Event(), 30, early=early)
    pool.kill()  # a command that ends (bad input) before its run begins
    (pid,) = starts.read_text().split()
    assert not early[0].process.is_alive()
    deadline = time.monotonic() + 5
    while alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(int(pid))
