"""How a worker process serves the cases the parent hands it: one at a time, or, on a backend that pipelines (a
harness whose hello says `pipeline`), several in the harness at once, so that the harness runs the next case while
the worker decodes and judges the last. Either way each case's attempts come back as one message, in the order the
cases finish, and a case that did not come out as expected is run again on this worker: at once, or, pipelined,
after the cases already in the backend (at most its `pipeline` of them).
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dmlconform.backends.base import Backend, Outcome
from dmlconform.case import Case
from dmlconform.case_result import CaseResult
from dmlconform.feature_levels import FeatureLevel
from dmlconform.runner import KeepOutputs, judge_case, run_case

Task = tuple[int, Case]


@dataclass(frozen=True)
class RetryPolicy:
    """When a worker runs a case again: `needs_retry` of its result, at most `retries` times more."""

    needs_retry: Callable[[CaseResult], bool]
    retries: int


@runtime_checkable
class PipelinedBackend(Protocol):
    """A backend that takes cases ahead of their outcomes (backends/native.py): `collect` gives the outcome of the
    oldest case submitted and not yet collected; `pipeline` is how many are worth having submitted at once."""

    pipeline: int

    def submit(self, case: Case) -> None: ...

    def collect(self) -> Outcome: ...


def pipeline_depth(backend: Backend, repeat: int) -> int:
    """Cases the worker keeps submitted to `backend` at once; 0: one at a time through `run` (a backend that does not
    pipeline, or repeated runs, which go back to back)."""
    if repeat != 1 or not isinstance(backend, PipelinedBackend):
        return 0
    depth = getattr(backend, "pipeline", 1)
    return depth if isinstance(depth, int) and depth > 1 else 0


#: What the parent's messages come to in the worker's inbox: cases to run, the retry policy, or None (stop).
Message = list[Task] | RetryPolicy | None
Send = Callable[[str, object], None]


class Server:
    """One worker's cases: those handed in, those to run again, and (pipelined) those in the backend."""

    def __init__(self, backend: Backend, target: FeatureLevel, repeat: int, keep: KeepOutputs,
                 inbox: queue.SimpleQueue[Message], send: Send) -> None:
        self.backend, self.target, self.repeat, self.keep = backend, target, repeat, keep
        self.inbox, self.send = inbox, send
        self.policy = RetryPolicy(lambda result: False, 0)
        self.queued: deque[Task] = deque()
        self.again: deque[Task] = deque()  # cases to run again, before anything queued
        self.attempts: dict[int, list[CaseResult]] = {}
        self.closing = False
        self.depth = pipeline_depth(backend, repeat)

    def serve(self) -> None:
        """Run every case handed in until the parent says stop (after the cases it handed in before)."""
        if self.depth:
            self._serve_pipelined()
        else:
            self._serve_one_at_a_time()

    # -- the parent's messages -------------------------------------------------------------------------
    def _take(self, block: bool) -> bool:
        """Take in one message (waiting for it if `block`); False when there was none."""
        try:
            message = self.inbox.get() if block else self.inbox.get_nowait()
        except queue.Empty:
            return False
        if message is None:
            self.closing = True
        elif isinstance(message, RetryPolicy):
            self.policy = message
        else:
            self.queued.extend(message)
        return True

    def _next(self) -> Task | None:
        """The next case to run: one to run again, else the next handed in (taking in what has arrived)."""
        if not self.again and not self.queued:
            while not self.closing and self._take(block=False):
                pass
        if self.again:
            return self.again.popleft()
        return self.queued.popleft() if self.queued else None

    def _wait(self) -> bool:
        """Wait for work; False once the parent said stop and nothing is left."""
        while not self.again and not self.queued:
            if self.closing:
                return False
            self._take(block=True)
        return True

    # -- results ---------------------------------------------------------------------------------------
    def _finish(self, task: Task, result: CaseResult) -> None:
        index = task[0]
        tries = self.attempts.setdefault(index, [])
        result.index = index
        tries.append(result)
        if len(tries) <= self.policy.retries and self.policy.needs_retry(result):
            self.again.append(task)
            self.send("progress", index)  # the parent's deadline for this worker starts again
            return
        self.send("result", (index, self.attempts.pop(index)))

    def _serve_one_at_a_time(self) -> None:
        while self._wait():
            task = self._next()
            assert task is not None
            self._finish(task, run_case(task[1], self.backend, self.target, self.repeat, self.keep))

    def _serve_pipelined(self) -> None:
        backend = self.backend
        assert isinstance(backend, PipelinedBackend)
        in_backend: deque[Task] = deque()
        began = 0.0  # when the oldest case in the backend could begin: its submission or the last outcome

        def fill() -> None:
            nonlocal began
            while len(in_backend) < self.depth and (task := self._next()) is not None:
                if not in_backend:
                    began = time.perf_counter()
                try:
                    backend.submit(task[1])
                except Exception as exc:  # a backend bug costs this case, never the worker
                    self._finish(task, judge_case(task[1], [_raised(exc)], self.target, self.keep,
                                                  time.perf_counter()))
                    continue
                in_backend.append(task)

        while True:
            fill()
            if not in_backend:
                if not self._wait():
                    return
                continue
            task = in_backend.popleft()
            try:
                outcome = backend.collect()
            except Exception as exc:
                outcome = _raised(exc)
            clock, began = began, time.perf_counter()
            fill()  # the backend has its next cases before this one is judged
            self._finish(task, judge_case(task[1], [outcome], self.target, self.keep, clock))


def _raised(exc: Exception) -> Outcome:
    return Outcome.error(f"backend raised {type(exc).__name__}: {exc}")
