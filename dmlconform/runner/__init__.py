"""Hand each case to a backend, judge what comes back, and collect one result per case.

`run_cases` runs in this process, one case after another (the library API and the tests use it);
`dmlconform.runner.pool` runs cases in worker processes, which is what `dmlconform run` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from enum import Enum

import numpy as np

from dmlconform.backends.base import Backend, Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import CaseResult, MovedElement, Status
from dmlconform.compare.comparator import format_value
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult, summary
from dmlconform.runner.judge import evaluate, judge_outcome

__all__ = ["KeepOutputs", "RunResult", "default_retries", "evaluate", "judge_case", "raw_status", "run_case",
           "run_cases", "summary"]

#: Moved elements kept per case; the count says how many there were in all.
MOVED_SHOWN = 10


def default_retries(backend_name: str) -> int:
    """Retries when none are asked for (and always in a certification): one out of process, where a driver or
    harness may flake (`native`, `directml`), none in process."""
    return 1 if backend_name in ("native", "directml") else 0


class KeepOutputs(Enum):
    """Which cases carry what the backend returned back to the caller (`run --artifacts`)."""

    NONE = "none"
    #: Cases whose outputs did not match (FAIL), or could not be compared (ERROR: wrong shape or type).
    FAILING = "failing"
    ALL = "all"


def run_cases(cases: list[Case], backend: Backend, target_level: FeatureLevel | None = None,
              progress: Callable[[CaseResult], None] | None = None, repeat: int = 1,
              keep_outputs: KeepOutputs = KeepOutputs.NONE) -> RunResult:
    info = backend.info()
    target = target_level or info.feature_level
    started, clock = datetime.now(UTC), time.perf_counter()
    results = []
    for index, case in enumerate(cases):
        result = run_case(case, backend, target, repeat, keep_outputs)
        result.index = index
        if progress is not None:
            progress(result)
        results.append(result)
    return RunResult(info, target, started, time.perf_counter() - clock, results)


def run_case(case: Case, backend: Backend, target: FeatureLevel, repeat: int = 1,
             keep_outputs: KeepOutputs = KeepOutputs.NONE) -> CaseResult:
    """Run a case `repeat` times: the first result that did not match (else the first), with every repeat's
    status in `attempts` and the output elements that were not bit-identical across repeats in `moved`."""
    clock = time.perf_counter()
    try:
        outcomes = [backend_outcome(case, backend) for _ in range(repeat)]
    except BaseException:
        case.forget_references()
        raise
    return judge_case(case, outcomes, target, keep_outputs, clock)


def judge_case(case: Case, outcomes: list[Outcome], target: FeatureLevel,
               keep_outputs: KeepOutputs = KeepOutputs.NONE, clock: float | None = None) -> CaseResult:
    """The result of a case's runs (`run_case`), once the backend has returned them; `clock` (perf_counter) is when
    the case began, for its duration."""
    try:
        judged = [judge_outcome(case, outcome, target) for outcome in outcomes]
    finally:
        case.forget_references()
    chosen = next((i for i, r in enumerate(judged) if not raw_status(r).matched), 0)
    result = judged[chosen]
    result.attempts = tuple(raw_status(r) for r in judged)
    # The first run's, whichever run is reported: repeats that moved are in `moved`, and a digest that depends
    # on which repeat failed would not compare between runs.
    result.output_sha256 = judged[0].output_sha256
    outcome = outcomes[chosen]
    if outcome.kind is OutcomeKind.OUTPUTS and (keep_outputs is KeepOutputs.ALL or (
            keep_outputs is KeepOutputs.FAILING and raw_status(result) in (Status.FAIL, Status.ERROR))):
        result.actual_outputs = dict(outcome.outputs)
    if len(outcomes) > 1:
        _record_moved(case, outcomes, result)
    if clock is not None:
        result.duration_s = time.perf_counter() - clock
    return result


def raw_status(result: CaseResult) -> Status:
    """What the backend's result came to, before the level (NOT_REQUIRED) and the CI overlay."""
    return result.outcome if result.outcome is not None else result.status


def backend_outcome(case: Case, backend: Backend) -> Outcome:
    try:
        return backend.run(case)
    except Exception as exc:  # a backend bug must cost one case, never the run
        return Outcome.error(f"backend raised {type(exc).__name__}: {exc}")


def _record_moved(case: Case, outcomes: list[Outcome], result: CaseResult) -> None:
    """Compare every repeat's outputs bit for bit with the first repeat's."""
    if any(o.kind is not OutcomeKind.OUTPUTS for o in outcomes):
        return
    for name in case.op.outputs:
        arrays = [o.outputs.get(name) for o in outcomes]
        if not all(isinstance(a, np.ndarray) for a in arrays) or len({(a.dtype, a.shape) for a in arrays}) != 1:
            continue
        bits = [np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1) for a in arrays]
        differs = np.zeros(arrays[0].size, dtype=bool)
        for other in bits[1:]:
            differs |= (other != bits[0]).any(axis=1)
        where = np.flatnonzero(differs)
        result.moved_count += int(where.size)
        for flat in where[: max(MOVED_SHOWN - len(result.moved), 0)]:
            index = tuple(int(i) for i in np.unravel_index(int(flat), arrays[0].shape))
            values = tuple(format_value(a.reshape(-1)[flat]) for a in arrays)
            result.moved.append(MovedElement(name, index, values))
