"""Hand each case to a backend, judge what comes back, and collect one result per case."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from dmlconform.backends.base import Backend, BackendInfo, Outcome, OutcomeKind
from dmlconform.case import Case, Tensors
from dmlconform.compare.comparator import Judgement, judge
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import Reference
from dmlconform.results import CaseResult, Status


@dataclass
class RunResult:
    backend: BackendInfo
    target_level: FeatureLevel
    started: datetime
    duration_s: float
    results: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.status.acceptable for r in self.results)


def run_cases(cases: list[Case], backend: Backend, target_level: FeatureLevel | None = None, jobs: int = 1,
              progress: Callable[[CaseResult], None] | None = None) -> RunResult:
    info = backend.info()
    target = target_level or info.feature_level
    started, clock = datetime.now(UTC), time.perf_counter()

    def one(case: Case) -> CaseResult:
        result = run_case(case, backend, target)
        if progress is not None:
            progress(result)
        return result

    parallel = jobs > 1 and getattr(backend, "thread_safe", False)
    if parallel:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(one, cases))
    else:
        results = [one(case) for case in cases]
    return RunResult(info, target, started, time.perf_counter() - clock, results)


def run_case(case: Case, backend: Backend, target: FeatureLevel) -> CaseResult:
    clock = time.perf_counter()
    try:
        outcome = backend.run(case)
    except Exception as exc:  # a backend bug must cost one case, never the run
        outcome = Outcome.error(f"backend raised {type(exc).__name__}: {exc}")
    result = CaseResult(case.full_id, case.op.name, case.dtype.name, case.rank, case.required_level,
                        Status.ERROR, tags=case.tags, behaviour=case.behaviour, file=str(case.file))
    try:
        evaluate(case, outcome, result)
    except Exception as exc:  # judging must not lose the case either
        result.status, result.message = Status.ERROR, f"judging failed: {type(exc).__name__}: {exc}"
    result.duration_s = time.perf_counter() - clock
    result.required = case.required_level <= target
    if not result.required:
        # Contract §4: cases above the judged level run and are reported as not required; what they came
        # to stays in `outcome`, so verdicts at higher levels can still be shown.
        result.outcome, result.status = result.status, Status.NOT_REQUIRED
        result.message = f"{result.outcome.value} (required from {case.required_level}): {result.message}"
    return result


def evaluate(case: Case, outcome: Outcome, result: CaseResult) -> None:
    kind = outcome.kind
    if case.expect_invalid:
        if kind is OutcomeKind.REFUSED:
            result.status, result.message = Status.INVALID_OK, f"refused as it should be: {outcome.message}"
        elif kind is OutcomeKind.OUTPUTS:
            reason = _reference_refusal(case)
            result.status, result.message = Status.FAIL, f"accepted an invalid description ({reason})"
        else:
            _copy_failure(outcome, result)
        return
    if kind is OutcomeKind.REFUSED:
        result.status, result.message = Status.FAIL, f"refused a valid description: {outcome.message}"
        return
    if kind is not OutcomeKind.OUTPUTS:
        _copy_failure(outcome, result)
        return
    problem = _shape_problem(case, outcome.outputs)
    if problem:
        result.status, result.message = Status.ERROR, problem
        return
    _judge_answers(case, outcome.outputs, result)


def _copy_failure(outcome: Outcome, result: CaseResult) -> None:
    status = {OutcomeKind.NOT_SUPPORTED: Status.NOT_SUPPORTED, OutcomeKind.CRASH: Status.CRASH,
              OutcomeKind.TIMEOUT: Status.TIMEOUT}.get(outcome.kind, Status.ERROR)
    result.status, result.message = status, outcome.message


def _reference_refusal(case: Case) -> str:
    try:
        case.op.validate(case.description)
    except Exception as exc:
        return f"the rule it breaks: {exc}"
    return "no rule found broken"


def _shape_problem(case: Case, outputs: Tensors) -> str:
    for name in case.op.outputs:
        desc = case.description.tensors[name]
        if name not in outputs:
            return f"{name}: the backend returned no such output"
        array = outputs[name]
        if not isinstance(array, np.ndarray):
            return f"{name}: the backend returned {type(array).__name__}, not an array"
        if array.dtype != desc.dtype.numpy:
            return f"{name}: the backend returned data type {array.dtype}, expected {desc.dtype.name}"
        if array.shape != desc.shape:
            return f"{name}: the backend returned shape {list(array.shape)}, expected {list(desc.shape)}"
    return ""


def _judge_answers(case: Case, outputs: Tensors, result: CaseResult) -> None:
    references: dict[str, Reference] = {}

    def reference_for(answer: str) -> Reference:
        variant = answer if answer in case.op.variants else case.op.variants[0]
        if variant not in references:
            references[variant] = case.op.reference(case.description, case.inputs, variant)
        return references[variant]

    verdicts: dict[str, Judgement] = {}
    for answer, expected in case.answers().items():
        verdicts[answer] = _judge_outputs(case, expected, outputs, reference_for(answer))
    passing = [name for name, verdict in verdicts.items() if verdict.passed]
    chosen = passing[0] if passing else min(verdicts, key=lambda name: verdicts[name].mismatches)
    verdict = verdicts[chosen]
    result.tolerance = verdict.tolerance
    result.max_ulp, result.max_abs_error = verdict.max_ulp, verdict.max_abs_error
    result.worst_index, result.worst = verdict.worst_index, verdict.worst
    is_candidate_case = case.expected is None
    if passing:
        result.status = Status.PASS
        result.matched = chosen if is_candidate_case else None
        result.matched_all = tuple(passing) if is_candidate_case else ()
        result.message = f"matched candidate '{chosen}'" if is_candidate_case else verdict.summary()
        if len(passing) > 1:
            result.message += f" (also matches {', '.join(passing[1:])})"
    else:
        result.status = Status.FAIL
        result.message = verdict.summary()
        if is_candidate_case:
            result.message = (f"matched none of {', '.join(verdicts)}; closest '{chosen}': "
                              f"{verdict.summary()}")


def _judge_outputs(case: Case, expected: Tensors, actual: Tensors, reference: Reference) -> Judgement:
    tolerance = case.tolerance or case.op.default_tolerance(case.description, reference)
    worst: Judgement | None = None
    for name in case.op.outputs:
        verdict = judge(expected[name], actual[name], case.description.tensors[name].dtype, tolerance,
                        reference.accumulation.get(name))
        if worst is None or (worst.passed and not verdict.passed):
            worst = verdict
    assert worst is not None
    return worst


def summary(results: Iterable[CaseResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.status.value] = counts.get(result.status.value, 0) + 1
    return counts
