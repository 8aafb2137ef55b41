"""A worker's server (runner/serve.py): cases one at a time or pipelined, retries run on the worker itself."""

from __future__ import annotations

import queue
from collections import deque

import numpy as np
import pytest

from dmlconform.backends.base import Outcome, OutcomeKind
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.case_result import CaseResult, Status
from dmlconform.cli import bundled_suites
from dmlconform.results.expectations import Expectations
from dmlconform.runner import KeepOutputs
from dmlconform.runner.serve import PipelinedBackend, RetryPolicy, Server, pipeline_depth
from dmlconform.suite.loader import load_paths


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    chosen = [c for c in load_paths([bundled_suites() / "seed"]) if not c.expect_invalid]
    assert len(chosen) >= 4
    return chosen


class Pipelined:
    """The numpy backend behind submit/collect: the first run of each case in `wrong_once` answers wrongly."""

    name = "pipelined"

    def __init__(self, pipeline: int = 3, wrong_once: frozenset[str] = frozenset(), raise_on: str = "") -> None:
        self.pipeline = pipeline
        self.numpy = NumpyBackend()
        self.held: deque[Case] = deque()
        self.most_held = 0
        self.collected: list[str] = []
        self.wrong_once, self.raise_on = set(wrong_once), raise_on

    def info(self):  # type: ignore[no-untyped-def]
        return self.numpy.info()

    def run(self, case: Case) -> Outcome:
        self.submit(case)
        return self.collect()

    def submit(self, case: Case) -> None:
        if case.full_id == self.raise_on:
            raise RuntimeError("submit broke")
        self.held.append(case)
        self.most_held = max(self.most_held, len(self.held))

    def collect(self) -> Outcome:
        case = self.held.popleft()
        self.collected.append(case.full_id)
        outcome = self.numpy.run(case)
        if case.full_id in self.wrong_once:
            self.wrong_once.discard(case.full_id)
            outcome = Outcome.ran({name: np.full_like(array, 7) for name, array in outcome.outputs.items()})
        return outcome

    def close(self) -> None:
        pass


def serve(backend: object, cases: list[Case], policy: RetryPolicy | None = None
          ) -> tuple[list[tuple[int, list[CaseResult]]], list[tuple[str, object]]]:
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    if policy is not None:
        inbox.put(policy)
    inbox.put(list(enumerate(cases)))
    inbox.put(None)
    sent: list[tuple[str, object]] = []
    server = Server(backend, NumpyBackend().info().feature_level, 1, KeepOutputs.NONE, inbox,  # type: ignore[arg-type]
                    lambda kind, payload: sent.append((kind, payload)))
    server.serve()
    results = [payload for kind, payload in sent if kind == "result"]
    return results, sent  # type: ignore[return-value]


def test_pipelined_cases_all_come_back_in_order_with_at_most_the_window_held(cases) -> None:
    backend = Pipelined(pipeline=3)
    assert isinstance(backend, PipelinedBackend) and pipeline_depth(backend, 1) == 3
    results, _ = serve(backend, cases)
    assert [index for index, _ in results] == list(range(len(cases)))
    assert all(len(attempts) == 1 and attempts[0].status is Status.PASS for _, attempts in results)
    assert backend.most_held == 3  # ahead of their outcomes, never more than the window


def test_a_failing_case_runs_again_soon_on_the_worker_and_both_attempts_come_back(cases) -> None:
    flaky = cases[1].full_id
    backend = Pipelined(pipeline=3, wrong_once=frozenset({flaky}))
    results, sent = serve(backend, cases, RetryPolicy(Expectations().needs_retry, 1))
    attempts = dict(results)
    assert [a.status for a in attempts[1]] == [Status.FAIL, Status.PASS]
    assert all(len(attempts[i]) == 1 for i in attempts if i != 1)
    assert ("progress", 1) in sent  # the parent's deadline started again for the retry
    first, again = [i for i, case_id in enumerate(backend.collected) if case_id == flaky]
    assert again - first - 1 <= backend.pipeline  # behind the cases already in the backend, no more


def test_without_a_policy_nothing_runs_twice_and_a_plain_backend_goes_one_at_a_time(cases) -> None:
    flaky = cases[0].full_id
    backend = Pipelined(pipeline=1, wrong_once=frozenset({flaky}))
    assert pipeline_depth(backend, 1) == 0 and pipeline_depth(Pipelined(pipeline=4), repeat=2) == 0
    results, _ = serve(backend, cases)
    assert [len(a) for _, a in results] == [1] * len(cases) and results[0][1][0].status is Status.FAIL
    plain, _ = serve(NumpyBackend(), cases, RetryPolicy(Expectations().needs_retry, 1))
    assert [a[0].status for _, a in plain] == [Status.PASS] * len(cases)


def test_a_backend_that_raises_on_submit_costs_that_case_only(cases) -> None:
    backend = Pipelined(pipeline=3, raise_on=cases[2].full_id)
    results, _ = serve(backend, cases)
    statuses = {index: attempts[-1] for index, attempts in results}
    assert statuses[2].status is Status.ERROR and "submit broke" in statuses[2].message
    assert all(statuses[i].status is Status.PASS for i in statuses if i != 2)
    assert sorted(statuses) == list(range(len(cases)))


def test_an_outcome_that_is_not_outputs_is_judged_as_before(cases) -> None:
    class Crashing(Pipelined):
        def collect(self) -> Outcome:
            self.held.popleft()
            return Outcome(OutcomeKind.CRASH, message="harness died")

    results, _ = serve(Crashing(), cases[:2])
    assert all(a[0].status is Status.CRASH and a[0].message == "harness died" for _, a in results)
