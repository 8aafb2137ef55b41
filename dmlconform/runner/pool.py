"""Run cases in worker processes, each with a backend of its own (for `native`, a harness of its own).

The parent hands out cases in order, several to a message for fast cases (see QUEUED_S), and collects one
message per case with its attempts; the order cases finish in does not matter because every result carries its index
in the selection. A worker that dies costs the oldest case it had not answered (CRASH) and is replaced; a worker that
makes no progress within the deadline costs that case (TIMEOUT). A failing case is retried on the worker that ran it,
by the worker itself (serve.py: at once, or, on a pipelining harness, behind the few cases already in the harness), so
that a harness's state carries over; a retry policy that cannot travel to the workers (a lambda) keeps the retries in
the parent, one case at a time.

Workers start their own process group (POSIX), so a terminal's Ctrl-C reaches only the parent, and
`kill` takes each worker down together with the harness it started. Workers also watch a lifeline
pipe from the parent: when the parent dies, even by SIGKILL, they kill their group and exit.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait

from dmlconform import processes
from dmlconform.backend_info import BackendInfo
from dmlconform.backends.base import BackendOptions, Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import CaseResult
from dmlconform.feature_levels import FeatureLevel
from dmlconform.runner import KeepOutputs
from dmlconform.runner.judge import judge_outcome
from dmlconform.runner.serve import Message, RetryPolicy, Server

#: How often the parent looks at the stop flag and the deadlines while it waits for results.
POLL_S = 0.1
#: Extra seconds beyond the per-case timeout before the parent kills a worker itself, on top of time for a
#: harness restart (the native backend allows max(timeout, 10 s) for a handshake).
DEADLINE_GRACE_S = 5.0
RESTART_ALLOWANCE_S = 10.0
START_TIMEOUT_S = 120.0
#: When nothing is retried, a worker holds the case it runs and the next ones, so that neither it nor the parent
#: waits for the other; the next ones go in one message, since a message costs both processes a wake-up, which
#: is dearer than one of the reference's small cases. It holds about QUEUED_S of work by the durations of the
#: cases so far (two cases before the first result; at most MAX_QUEUED cases; at most QUEUED_BYTES of tensors
#: beyond its next case), and is topped up once half of that has run. With retries, one case (a retry runs
#: right after its case).
QUEUED_S = 0.02
MAX_QUEUED = 32
QUEUED_BYTES = 64 << 20
#: Arrays from this size on travel to a worker beside the pickle, straight from their own memory.
OUT_OF_BAND_BYTES = 1 << 20
#: A worker slot whose replacement fails to start this many times in a row is given up.
MAX_FAILED_STARTS = 3


class BackendStartError(RuntimeError):
    """No worker could create the backend; the message is one line."""


@dataclass(frozen=True)
class WorkerSetup:
    """Everything a worker needs to create its backend and judge cases; sent to it once."""

    backend: str
    options: BackendOptions
    target: FeatureLevel | None
    repeat: int = 1
    keep_outputs: KeepOutputs = KeepOutputs.NONE
    #: The environment the worker's backend sees: the command's own when the run began. A fork-server worker would
    #: otherwise have the environment the fork server was started with, which a command that runs several times in
    #: one process (matrix, tests) or sets DISPLAY for its programs (run_environment) has changed since.
    environment: Mapping[str, str] | None = None


def serve_worker(conn: Connection, started: processes.StartedProgram | None) -> None:
    """A worker process, after `processes.worker_entry`: its setup (the first message), its backend (taking over
    `started`, a program started before the setup came, when it is the very one the backend starts), then cases until
    the parent says stop."""
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        setup = None
    if not isinstance(setup, WorkerSetup):  # the parent went away before it sent the setup
        if started is not None:
            started.process.kill()
        return
    from dmlconform.backends import create_backend

    if setup.environment is not None:
        os.environ.clear()
        os.environ.update(setup.environment)
    try:
        backend = create_backend(setup.backend, replace(setup.options, started=started))
    except Exception as exc:
        conn.send(("failed", str(exc.args[0]) if exc.args else str(exc)))
        return
    try:
        info = backend.info()
        inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        send_lock = threading.Lock()

        def send(kind: str, payload: object) -> None:
            with send_lock:
                conn.send((kind, payload))

        server = Server(backend, setup.target or info.feature_level, setup.repeat, setup.keep_outputs, inbox, send)
        conn.send(("ready", info, server.depth + 2 if server.depth else 1))
        threading.Thread(target=_take_in_tasks, args=(conn, inbox), daemon=True).start()
        server.serve()
    finally:
        backend.close()


def _take_in_tasks(conn: Connection, inbox: queue.SimpleQueue[Message]) -> None:
    """Read the parent's messages as they come, whatever the worker is running. The parent blocks while it sends
    a message larger than the pipe holds; were the worker to read only between cases, it could meanwhile block
    sending a large result (kept outputs) that the blocked parent never reads: both would wait for ever."""
    while True:
        try:
            message = receive_tasks(conn)
        except Exception:  # the pipe closed, or a message that cannot be read: the worker ends
            message = None
        inbox.put(message)
        if message is None:
            return


def send_tasks(conn: Connection, tasks: list[tuple[int, Case]]) -> None:
    """Send cases in one message with their large arrays out of band (pickle protocol 5): the pipe reads the
    arrays' memory where it is, so a case of gigabytes is not first copied into one pickle, and the worker keeps
    the bytes it reads."""
    buffers: list[pickle.PickleBuffer] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        if buffer.raw().nbytes < OUT_OF_BAND_BYTES:
            return True  # in the pickle itself: one message is cheaper for the many small cases
        buffers.append(buffer)
        return False

    header = pickle.dumps(tasks, protocol=5, buffer_callback=out_of_band)
    conn.send((len(buffers), header))
    for buffer in buffers:
        conn.send_bytes(buffer.raw())


def receive_tasks(conn: Connection) -> Message:
    """What send_tasks sent, or the retry policy (None: stop). The arrays wrap the bytes read, so they are
    read-only."""
    message = conn.recv()
    if message is None:
        return None
    if message[0] == "policy":
        policy = message[1]
        return policy if isinstance(policy, RetryPolicy) else None
    count, header = message
    tasks: list[tuple[int, Case]] = pickle.loads(header, buffers=[conn.recv_bytes() for _ in range(count)])
    return tasks


def _warn_start_failure(slot: int, message: str) -> None:
    print(f"dmlconform: warning: worker {slot} could not start its backend ({message}); the run goes on without it",
          file=sys.stderr)


def next_batch(pending: deque[tuple[int, Case]], room: int) -> list[tuple[int, Case]]:
    """The next cases for a worker, in order: the first, then as many as `room` allows whose tensors add up to at
    most QUEUED_BYTES."""
    batch = [pending.popleft()]
    held = 0
    while pending and len(batch) < room:
        size = case_bytes(pending[0][1])
        if held + size > QUEUED_BYTES:
            break
        held += size
        batch.append(pending.popleft())
    return batch


def case_bytes(case: Case) -> int:
    return sum(array.nbytes for tensors in (case.inputs, *case.answers().values()) for array in tensors.values())


class _Worker:
    """A worker process as the parent sees it: the process, and the cases it holds."""

    def __init__(self, process: processes.WorkerProcess, setup: WorkerSetup) -> None:
        self.slot = process.slot
        self.worker = process
        self.process, self.conn = process.process, process.conn
        self.conn.send(setup)
        #: Cases sent and not yet answered, in order; the first is the one running.
        self.tasks: deque[tuple[int, Case]] = deque()
        #: When the running case overruns.
        self.deadline = 0.0
        self.info: BackendInfo | None = None

    @classmethod
    def start(cls, context: multiprocessing.context.BaseContext, setup: WorkerSetup, slot: int) -> _Worker:
        return cls(processes.WorkerProcess(context, slot, processes.WORKER_MAIN), setup)

    def send(self, tasks: list[tuple[int, Case]], deadline_s: float) -> None:
        if not self.tasks:
            self.deadline = time.monotonic() + deadline_s
        send_tasks(self.conn, tasks)
        self.tasks.extend(tasks)

    def answered(self, index: int, deadline_s: float) -> tuple[int, Case]:
        """The case with this index has its result (the oldest, unless one before it runs again); the worker has
        deadline_s from now for its next."""
        position = next((i for i, (held, _) in enumerate(self.tasks) if held == index), None)
        if position is None:
            raise KeyError(index)
        task = self.tasks[position]
        del self.tasks[position]
        self.progressed(deadline_s)
        return task

    def progressed(self, deadline_s: float) -> None:
        if self.tasks:
            self.deadline = time.monotonic() + deadline_s

    def kill(self) -> None:
        self.worker.kill()

    def stop(self, grace_s: float) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.process.join(grace_s)
        self.kill()

    def death(self) -> str:
        self.process.join(1.0)
        code = self.process.exitcode
        if code is None:
            return "it stopped answering"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"


class WorkerPool:
    """N worker processes running cases for the parent; `stop` (an Event) ends `run` within POLL_S."""

    def __init__(self, setup: WorkerSetup, jobs: int, stop: threading.Event, timeout_s: float,
                 early: Sequence[processes.WorkerProcess] = ()) -> None:
        """`early`: worker processes the command started before it had the setup (cli/early_start.py), which the
        pool takes as its first workers."""
        self.setup, self.jobs, self.stop = setup, jobs, stop
        self.early = list(early)
        self.deadline_s = timeout_s * setup.repeat + max(timeout_s, RESTART_ALLOWANCE_S) + DEADLINE_GRACE_S
        self.context = processes.context()
        self.workers: list[_Worker] = []
        self.info: BackendInfo | None = None
        self.target: FeatureLevel | None = None
        #: A running mean of the cases' durations so far (None before the first), for how many a worker holds.
        self.case_s: float | None = None
        #: Cases a worker wants to hold at least (what its backend keeps in flight, and the next ones).
        self.prefetch = 1
        #: The retry policy the workers apply themselves (None: retries, if any, are the parent's).
        self.policy: RetryPolicy | None = None
        #: Workers still creating their backends, by slot, with when they give up (`start`).
        self.starting: dict[int, tuple[_Worker, float]] = {}
        self._launching: threading.Thread | None = None
        self._launched: list[_Worker] = []

    # -- life cycle --------------------------------------------------------------------------------
    def launch(self) -> None:
        """Start the worker processes, from a thread of this process: the first start waits for the fork server to
        import its modules (a few tenths of a second) and the caller meanwhile does other work (loading the suites);
        each worker then creates its backend."""
        started: list[_Worker] = []

        early, self.early = self.early, []
        for spare in early[self.jobs:]:
            spare.kill()

        def start_workers() -> None:
            for slot in range(self.jobs):
                started.append(_Worker(early[slot], self.setup) if slot < len(early) else
                               _Worker.start(self.context, self.setup, slot))

        self._launching = threading.Thread(target=start_workers, name="dmlconform-launch", daemon=True)
        self._launching.start()
        self._launched = started

    def _launched_workers(self) -> None:
        """The workers `launch` started, once they all are (nothing when it was not called)."""
        if self._launching is not None:
            self._launching.join()
            self._launching = None
            self.workers = self._launched
            if len(self.workers) < self.jobs:  # a start failed (the thread ended on its exception)
                self.kill()
                raise BackendStartError(f"could not start {self.jobs} worker processes (started "
                                        f"{len(self.workers)})")

    def start(self) -> BackendInfo:
        """Wait until a worker (launched here if need be) has created its backend, and return what it reports; the
        others join the run as each becomes ready (`run`): device creation is slow and, on a GPU, contended, so the
        first harness works while the last is still starting. BackendStartError when none can start; a worker that
        cannot while another could is said in a warning and the run goes on without it."""
        if not self.workers and self._launching is None:
            self.launch()
        self._launched_workers()
        give_up = time.monotonic() + START_TIMEOUT_S
        self.starting = {worker.slot: (worker, give_up) for worker in self.workers}
        failures: list[tuple[int, str]] = []
        while self.info is None:
            if self.stop.is_set() or not self.starting:
                self.kill()
                raise BackendStartError("interrupted while the backend was starting" if self.stop.is_set() else
                                        failures[0][1] if failures else "no worker process started")
            failures += self._settle_starting(POLL_S, warn=False)[1]
        for slot, message in failures:
            _warn_start_failure(slot, message)
        self.target = self.setup.target or self.info.feature_level
        return self.info

    def _settle_starting(self, timeout_s: float, warn: bool = True) -> tuple[list[_Worker], list[tuple[int, str]]]:
        """The starting workers that became ready within `timeout_s`, and (slot, why) for those that gave up (each
        said in a warning with `warn`); both leave `starting`."""
        if not self.starting:
            return [], []
        starting = [worker for worker, _ in self.starting.values()]
        wait([w.conn for w in starting] + [w.process.sentinel for w in starting], timeout=timeout_s)
        ready: list[_Worker] = []
        failed: list[tuple[int, str]] = []
        for slot, (worker, give_up) in list(self.starting.items()):
            if worker.conn.poll(0) or worker.process.exitcode is not None:
                message = self._await_ready(worker)
            elif time.monotonic() > give_up:
                message = f"the backend did not start within {START_TIMEOUT_S:g} s"
                worker.kill()
            else:
                continue
            del self.starting[slot]
            if not message:
                ready.append(worker)
                continue
            failed.append((slot, message))
            if warn:
                _warn_start_failure(slot, message)
        return ready, failed

    def _await_ready(self, worker: _Worker) -> str:
        """'' once the worker is ready, else why it is not."""
        give_up = time.monotonic() + START_TIMEOUT_S
        while not worker.conn.poll(POLL_S):
            if self.stop.is_set():
                return "interrupted while the backend was starting"
            if worker.process.exitcode is not None and not worker.conn.poll(0):
                return f"worker process ended while creating the backend ({worker.death()})"
            if time.monotonic() > give_up:
                return f"the backend did not start within {START_TIMEOUT_S:g} s"
        try:
            kind, payload, *rest = worker.conn.recv()
        except (EOFError, OSError):
            return f"worker process ended while creating the backend ({worker.death()})"
        if kind != "ready":
            return str(payload)
        if self.policy is not None:
            try:
                worker.conn.send(("policy", self.policy))
            except (OSError, ValueError):
                return f"worker process ended after creating the backend ({worker.death()})"
        worker.info = payload
        self.prefetch = max([self.prefetch, *(r for r in rest if isinstance(r, int))])
        if self.info is None:
            self.info = payload
        elif (payload.version, payload.device, payload.feature_level) != \
                (self.info.version, self.info.device, self.info.feature_level):
            print(f"dmlconform: warning: worker {worker.slot} reports {payload.device} ({payload.version}) at "
                  f"{payload.feature_level}, the first worker {self.info.device} ({self.info.version}) at "
                  f"{self.info.feature_level}", file=sys.stderr)
        return ""

    def close(self, grace_s: float = 5.0) -> None:
        """Let each worker close its backend (a harness gets 'bye'), then make sure they are gone."""
        self._drop_early()
        with contextlib.suppress(BackendStartError):
            self._launched_workers()
        for worker in self.workers:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in self.workers:
            worker.stop(grace_s)

    def _drop_early(self) -> None:
        """Early workers never taken over (a pool that ends before `launch`)."""
        for early in self.early:
            early.kill()
        self.early = []

    def kill(self) -> None:
        self._drop_early()
        if self._launching is not None:  # not yet taken over: wait for the starts, so that none is left behind
            self._launching.join()
            self._launching = None
            self.workers = self._launched
        for worker in self.workers:
            worker.kill()

    # -- running -----------------------------------------------------------------------------------
    def run(self, tasks: list[tuple[int, Case]], on_done: Callable[[int, list[CaseResult]], None],
            needs_retry: Callable[[CaseResult], bool], retries: int) -> None:
        """Run every task; `on_done(index, attempts)` gets each case's attempts (more than one when retried).

        Returns when all are done, or as soon as `stop` is set (cases not done are simply not reported)."""
        pending = deque(tasks)
        attempts: dict[int, list[CaseResult]] = {}
        self._share_policy(needs_retry, retries)
        idle = [worker for worker in self.workers if worker.slot not in self.starting]
        busy: dict[int, _Worker] = {}  # slot -> worker
        while (pending or busy) and not self.stop.is_set():
            self._dispatch(idle, pending, busy, retries)
            if not busy and not self.starting:
                break
            waitables = [w.conn for w in busy.values()] + [w.process.sentinel for w in busy.values()]
            wait(waitables + [w.conn for w, _ in self.starting.values()], timeout=POLL_S)
            idle += self._settle_starting(0)[0]
            for slot in list(busy):
                finished = self._collect(busy[slot], pending)
                if not finished:
                    continue
                done: list[int] = []
                for (index, case), results in finished:
                    tries = attempts.setdefault(index, [])
                    tries.extend(results)
                    for result in results:
                        if result.duration_s > 0:
                            self.case_s = result.duration_s if self.case_s is None else \
                                0.9 * self.case_s + 0.1 * result.duration_s
                    if self.policy is None and needs_retry(results[-1]) and len(tries) <= retries and \
                            not self.stop.is_set() and \
                            self._send(self.workers[slot], (index, case), pending, retry=True):
                        continue
                    done.append(index)
                worker = self.workers[slot]  # replaced if it died
                if worker.tasks:
                    busy[slot] = worker
                else:
                    busy.pop(slot, None)
                    if worker.process.exitcode is not None:  # it died after its last answer: no case to charge
                        worker = self._replace(worker) or worker
                    if worker.process.exitcode is None and worker not in idle:
                        idle.append(worker)
                # The worker has its next cases before these are journaled and shown, so that it computes
                # while the parent writes.
                if not self.stop.is_set():
                    self._dispatch(idle, pending, busy, retries)
                for index in done:
                    on_done(index, attempts.pop(index))

    def _share_policy(self, needs_retry: Callable[[CaseResult], bool], retries: int) -> None:
        """Hand the retry policy to the workers, which then retry cases themselves; one that cannot be pickled (a
        lambda) stays here, and the parent retries, one case at a time."""
        self.policy = None
        if retries <= 0:
            return
        policy = RetryPolicy(needs_retry, retries)
        try:
            pickle.dumps(policy)
        except Exception:  # whatever pickling a callable can raise
            return
        for worker in self.workers:
            with contextlib.suppress(OSError, ValueError):  # a dead worker is replaced, and told, when next used
                worker.conn.send(("policy", policy))
        self.policy = policy

    def depth(self, retries: int) -> int:
        """How many cases a worker holds at most, the one it runs included."""
        if retries and self.policy is None:
            return 1
        least = max(2, self.prefetch)
        if self.case_s is None:
            return least
        return max(least, min(MAX_QUEUED, int(QUEUED_S / max(self.case_s, 1e-6))))

    def _dispatch(self, idle: list[_Worker], pending: deque[tuple[int, Case]], busy: dict[int, _Worker],
                  retries: int) -> None:
        while idle and pending:
            worker = idle.pop(0)
            if self._send(worker, pending.popleft(), pending):
                busy[worker.slot] = self.workers[worker.slot]
        depth = self.depth(retries)
        for worker in busy.values():
            if pending and len(worker.tasks) <= depth // 2:
                batch = next_batch(pending, depth - len(worker.tasks))
                try:
                    worker.send(batch, self.deadline_s)
                except (OSError, ValueError):  # dying: _collect reports its running case and hands back the rest
                    pending.extendleft(reversed(batch))

    def _send(self, worker: _Worker, task: tuple[int, Case], pending: deque[tuple[int, Case]],
              retry: bool = False) -> bool:
        try:
            worker.send([task], self.deadline_s)
            return True
        except (OSError, ValueError):  # the worker died between cases: replace it and try once more
            replacement = self._replace(worker)
            if replacement is None:
                if not retry:
                    pending.appendleft(task)
                return False
            replacement.send([task], self.deadline_s)
            return True

    def _collect(self, worker: _Worker, pending: deque[tuple[int, Case]]
                 ) -> list[tuple[tuple[int, Case], list[CaseResult]]]:
        """The cases the worker has finished, with their attempts; and, when the worker died or made no progress
        within the deadline, its oldest case as a CRASH or TIMEOUT (the cases queued behind go back to `pending`, to
        run next)."""
        finished: list[tuple[tuple[int, Case], list[CaseResult]]] = []
        ended = False
        try:
            while worker.conn.poll(0):
                kind, payload = worker.conn.recv()
                if kind == "progress":
                    worker.progressed(self.deadline_s)
                    continue
                index, results = payload
                finished.append((worker.answered(index, self.deadline_s), results))
        except (EOFError, OSError):
            ended = True  # the pipe closed: the worker is dead or dying
        if not worker.tasks or (not ended and worker.process.exitcode is None and time.monotonic() < worker.deadline):
            return finished
        assert self.target is not None
        task = worker.tasks.popleft()
        pending.extendleft(reversed(worker.tasks))
        worker.tasks.clear()
        if not ended and worker.process.exitcode is None:
            worker.kill()
            outcome = Outcome(OutcomeKind.TIMEOUT, message=f"no result within {self.deadline_s:g} s; "
                              "worker process killed and replaced")
        else:
            outcome = Outcome(OutcomeKind.CRASH, message=f"worker process died while running this case "
                              f"({worker.death()}); replaced")
        result = judge_outcome(task[1], outcome, self.target)
        result.index = task[0]
        result.attempts = (result.outcome or result.status,)
        self._replace(worker)
        finished.append((task, [result]))
        return finished

    def _replace(self, worker: _Worker) -> _Worker | None:
        worker.kill()
        for _ in range(MAX_FAILED_STARTS):
            replacement = _Worker.start(self.context, self.setup, worker.slot)
            if not self._await_ready(replacement):
                self.workers[worker.slot] = replacement
                return replacement
            replacement.kill()
        return None
