"""Judge what a backend returned for one case: a status, the rule, the worst elements and a message."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlconform.backends.base import Outcome, OutcomeKind
from dmlconform.case import Case, Tensors
from dmlconform.case_result import CaseResult, Status
from dmlconform.compare.comparator import Judgement, judge
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import Accumulation, Reference
from dmlconform.output_digest import output_sha256
from dmlconform.surface.buffers import images_before, read_back
from dmlconform.surface.paths import EDGES_SUFFIX, ExecutionPath
from dmlconform.ulp_histogram import merge_histograms, ulp_histogram


def judge_outcome(case: Case, outcome: Outcome, target: FeatureLevel, stray_writes: tuple[str, ...] = ()
                  ) -> CaseResult:
    """One result for what the backend did with the case, judged at the target level. `stray_writes`: writes outside
    the tensors recorded elsewhere (`verify` takes a package's as recorded: the bytes around its kept outputs are not
    kept), judged as if read back now."""
    result = CaseResult(case.full_id, case.op.name, case.dtype.name, case.rank, case.required_level,
                        Status.ERROR, tags=case.tags, behaviour=case.behaviour, file=str(case.file),
                        path=case.path.value)
    try:
        evaluate(case, outcome, result, stray_writes)
    except Exception as exc:  # judging must not lose the case either
        result.status, result.message = Status.ERROR, f"judging failed: {type(exc).__name__}: {exc}"
    if outcome.kind is OutcomeKind.OUTPUTS:
        result.output_sha256 = _digest(case, outcome.outputs)
    result.required = case.required_level <= target
    if not result.required:
        # docs/reference/verdicts.md: cases above the judged level run and are reported as not required; what they came
        # to stays in `outcome`, so verdicts at higher levels can still be shown.
        result.outcome, result.status = result.status, Status.NOT_REQUIRED
        result.message = f"{result.outcome.value} (required from {case.required_level}): {result.message}"
    return result


def evaluate(case: Case, outcome: Outcome, result: CaseResult, stray_writes: tuple[str, ...] = ()) -> None:
    kind = outcome.kind
    if kind is OutcomeKind.OUTPUTS and outcome.images is not None:
        # Read first, a negative case's too: an accepted invalid description keeps what it wrote (its digest, the
        # outputs a certification package holds) and any byte it wrote outside its tensors.
        read = read_back(case.description, case.binding, images_before(case.description, case.binding, case.inputs),
                         outcome.images)
        if read.problem:
            result.status, result.message = Status.ERROR, read.problem
            return
        outcome.outputs = read.outputs
        result.stray_writes = tuple(str(stray) for stray in read.stray)
    if case.expect_invalid:
        if kind is OutcomeKind.REFUSED:
            result.status, result.message = Status.INVALID_OK, f"refused as it should be: {outcome.message}"
        elif kind is OutcomeKind.OUTPUTS:
            reason = _reference_refusal(case)
            result.status, result.message = Status.FAIL, f"accepted an invalid description ({reason})"
            result.stray_writes = result.stray_writes or stray_writes
        else:
            _copy_failure(outcome, result)
        return
    if kind is OutcomeKind.REFUSED:
        if case.refusal_candidate is not None:
            # The docs leave open whether the description is accepted; refusing is one of the candidates.
            result.status, result.matched = Status.PASS, case.refusal_candidate
            result.matched_all = (case.refusal_candidate,)
            result.message = f"matched candidate '{case.refusal_candidate}': {outcome.message}"
            return
        result.status, result.message = Status.FAIL, f"refused a valid description: {outcome.message}"
        return
    if kind is not OutcomeKind.OUTPUTS:
        _copy_failure(outcome, result)
        return
    if outcome.images is None and case.path is not ExecutionPath.OPERATOR:
        result.status = Status.ERROR
        result.message = f"the backend returned no buffers for a case on the {case.path.value} path"
        return
    problem = _shape_problem(case, outcome.outputs)
    if problem:
        result.status, result.message = Status.ERROR, problem
        return
    _judge_answers(case, outcome.outputs, result)
    _fail_stray_writes(result, result.stray_writes or stray_writes)


def _fail_stray_writes(result: CaseResult, stray_writes: tuple[str, ...]) -> None:
    """A write outside a tensor's elements (contract §9) fails the case whatever its values: they can only fail a
    case, never pass it."""
    if not stray_writes:
        return
    result.stray_writes = stray_writes
    values = "its values match" if result.status is Status.PASS else f"and its values: {result.message}"
    result.status = Status.FAIL
    result.message = f"wrote outside its tensors: {stray_writes[0]}; {values}"


def _digest(case: Case, outputs: Tensors) -> str | None:
    """What the backend returned, as bits; None when some output is missing or not an array (an ERROR already
    says so), since a digest of part of the outputs would compare equal to nothing meaningful."""
    try:
        return output_sha256(outputs, case.op.outputs)
    except (KeyError, TypeError):
        return None


def _copy_failure(outcome: Outcome, result: CaseResult) -> None:
    status = {OutcomeKind.NOT_SUPPORTED: Status.NOT_SUPPORTED, OutcomeKind.UNEXPRESSIBLE: Status.SKIPPED,
              OutcomeKind.CRASH: Status.CRASH,
              OutcomeKind.TIMEOUT: Status.TIMEOUT}.get(outcome.kind, Status.ERROR)
    result.status, result.message = status, outcome.message


def _reference_refusal(case: Case) -> str:
    try:
        case.op.validate(case.description)
    except Exception as exc:
        return f"the rule it breaks: {exc}"
    return "no rule found broken"


def judged_outputs(case: Case) -> tuple[str, ...]:
    """The outputs a case's result is judged on: the operator's, and on the graph path their second copies."""
    if case.path is ExecutionPath.GRAPH:
        return (*case.op.outputs, *(name + EDGES_SUFFIX for name in case.op.outputs))
    return case.op.outputs


def _shape_problem(case: Case, outputs: Tensors) -> str:
    for name in judged_outputs(case):
        desc = case.description.tensors[name.removesuffix(EDGES_SUFFIX)]
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


@dataclass
class AnswerChoice:
    """Every answer of a case judged against the outputs, and the one the result reports."""

    #: The first answer that matched, else the closest (fewest elements outside the rule).
    chosen: str
    passing: list[str]
    verdicts: dict[str, Judgement]
    #: The reference the chosen answer is judged with (its variant's accumulation data, for `bound`).
    reference: Reference


class DeferredReference:
    """The reference of a case's variant, computed when first asked for (`Case.reference` keeps it for the case):
    an exact rule, or outputs bit-identical to the answer, never need it."""

    def __init__(self, case: Case, variant: str | None) -> None:
        self.case, self.variant = case, variant

    @property
    def outputs(self) -> Tensors:
        return self.case.reference(self.variant).outputs

    @property
    def accumulation(self) -> dict[str, Accumulation]:
        return self.case.reference(self.variant).accumulation


def judge_answers(case: Case, outputs: Tensors) -> AnswerChoice:
    def reference_for(answer: str) -> Reference:
        # Duck-typed as the Reference the operators' default_tolerance and the callers read.
        return DeferredReference(case, answer if answer in case.op.variants else None)  # type: ignore[return-value]

    verdicts: dict[str, Judgement] = {}
    for answer, expected in case.answers().items():
        verdicts[answer] = _judge_outputs(case, expected, outputs, reference_for(answer))
    passing = [name for name, verdict in verdicts.items() if verdict.passed]
    chosen = passing[0] if passing else min(verdicts, key=lambda name: verdicts[name].mismatches)
    return AnswerChoice(chosen, passing, verdicts, reference_for(chosen))


def _judge_answers(case: Case, outputs: Tensors, result: CaseResult) -> None:
    choice = judge_answers(case, outputs)
    chosen, passing, verdicts = choice.chosen, choice.passing, choice.verdicts
    verdict = verdicts[chosen]
    result.tolerance = verdict.tolerance
    result.max_ulp, result.max_abs_error = verdict.max_ulp, verdict.max_abs_error
    result.worst_index, result.worst = verdict.worst_index, verdict.worst
    result.closeness = verdict.closeness
    if not passing:
        # Only for failures: a histogram reads every element again, which passing cases need not pay for.
        answer = case.answers()[chosen]
        result.ulp_histogram = merge_histograms(ulp_histogram(answer[name.removesuffix(EDGES_SUFFIX)], outputs[name])
                                                for name in judged_outputs(case))
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
    closeness = 0.0
    for judged in judged_outputs(case):
        name = judged.removesuffix(EDGES_SUFFIX)
        verdict = judge(expected[name], actual[judged], case.description.tensors[name].dtype, tolerance,
                        accumulation_of=lambda name=name: reference.accumulation.get(name))
        closeness = max(closeness, verdict.closeness)
        if worst is None or (worst.passed and not verdict.passed):
            worst = verdict
    assert worst is not None
    worst.closeness = closeness
    return worst


def unrun_result(case: Case, status: Status, message: str, target: FeatureLevel) -> CaseResult:
    """The result of a case that was not run (SKIPPED by a skip list, NOT_RUN after an interrupt)."""
    return CaseResult(case.full_id, case.op.name, case.dtype.name, case.rank, case.required_level, status,
                      required=case.required_level <= target, message=message, tags=case.tags,
                      behaviour=case.behaviour, file=str(case.file), path=case.path.value)
