"""Cross-backend arbitration: run every case on several backends and decide, where they disagree, who is wrong.

Per case, each backend's outputs are judged against the golden exactly as `dmlconform run` judges them (any
candidate may match), and every two backends that produced outputs are compared with each other under the
case's own rule (`dmlconform.compare.agreement`). Then one verdict, with these definitions:

* **all agree** — every backend that ran the case came out as the golden says (PASS against some candidate,
  or INVALID_OK for a negative case). Backends that follow different candidates of an undocumented behaviour
  still agree (each candidate is a right answer); NOT_SUPPORTED backends are left out and listed.
* **golden suspect** — at least two backends produced outputs that match no answer of the golden, agree
  with each other, and outnumber the backends that match the golden. For a negative case (`expect:
  invalid`) the backends that accepted the description count as agreeing with each other.
* **backend X differs** — otherwise, where at least one backend matched the golden: the backends that did not
  (a FAIL, an ERROR, a CRASH, a refused valid description) are named.
* **undecided** — no backend matched the golden and no two agree with each other (or no backend could run
  the case at all): there is nothing to arbitrate with.

A backend that differs where it declares a reading of the case's undocumented behaviour that the case does
not list among its candidates is *explained* (a documented semantic difference, e.g. PyTorch's max_pool lets
the last NaN of a window win); the explanation is part of the result.

Memory layouts and execution paths (contract §9) do not change a case's logical answer, which is what is arbitrated
here: a valid case with a layout (or on another path) is cross-checked on its packed description on the operator path
(`logical_case`), which every backend can express; `dmlconform run` tests the layout itself. A negative case keeps its
layout (the layout may be what makes it invalid): a backend that cannot express it says NOT_SUPPORTED and is left out.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import Enum
from itertools import combinations

from dmlconform.backend_info import BackendInfo
from dmlconform.backends.base import Backend, Outcome, OutcomeKind
from dmlconform.case import Case, Tensors
from dmlconform.case_result import CaseResult, Status
from dmlconform.compare.agreement import agreement
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner import backend_outcome
from dmlconform.runner.judge import judge_outcome
from dmlconform.surface.paths import ExecutionPath
from dmlconform.verdicts import behaviour_readings


class Verdict(Enum):
    ALL_AGREE = "all agree"
    BACKEND_DIFFERS = "backend differs"
    GOLDEN_SUSPECT = "golden suspect"
    UNDECIDED = "undecided"


@dataclass
class BackendTake:
    """One backend's result for one case."""

    backend: str
    status: Status
    matched: str | None
    matched_all: tuple[str, ...]
    message: str
    max_ulp: int | None
    duration_s: float
    #: The backend produced outputs (for a negative case: it accepted the description).
    ran: bool
    #: Why this backend's difference is a documented semantic difference, if it is one.
    explanation: str = ""


@dataclass(frozen=True)
class PairComparison:
    """Two backends' outputs against each other."""

    first: str
    second: str
    agree: bool
    mismatches: int = 0
    max_ulp: int | None = 0
    first_index: tuple[int, ...] | None = None


@dataclass
class CaseCrosscheck:
    id: str
    op: str
    dtype: str
    behaviour: str | None
    takes: list[BackendTake]
    pairs: list[PairComparison]
    verdict: Verdict = Verdict.UNDECIDED
    #: Backends named by the verdict: those that differ, or (golden suspect) those that agree against the golden.
    named: tuple[str, ...] = ()
    note: str = ""

    @property
    def explained(self) -> bool:
        """A `backend differs` verdict where every differing backend's difference is documented."""
        differing = [t for t in self.takes if t.backend in self.named]
        return self.verdict is Verdict.BACKEND_DIFFERS and bool(differing) and all(t.explanation for t in differing)

    def take(self, backend: str) -> BackendTake:
        return next(t for t in self.takes if t.backend == backend)


@dataclass
class CrosscheckRun:
    backends: list[BackendInfo]
    #: The label of each backend as the command line named it (e.g. `torch:cuda`), in the same order.
    labels: list[str]
    started: datetime
    duration_s: float
    cases: list[CaseCrosscheck] = field(default_factory=list)

    @property
    def golden_suspect(self) -> list[CaseCrosscheck]:
        return [c for c in self.cases if c.verdict is Verdict.GOLDEN_SUSPECT]

    def counts(self) -> dict[str, int]:
        counts = {verdict.value: 0 for verdict in Verdict}
        for case in self.cases:
            counts[case.verdict.value] += 1
        return counts


# -- running -----------------------------------------------------------------------------------------------
def crosscheck_cases(cases: Sequence[Case], backends: Sequence[Backend], labels: Sequence[str]) -> CrosscheckRun:
    started, clock = datetime.now(UTC), time.perf_counter()
    run = CrosscheckRun([b.info() for b in backends], list(labels), started, 0.0)
    for case in cases:
        run.cases.append(crosscheck_case(case, backends, labels))
    run.duration_s = time.perf_counter() - clock
    return run


def logical_case(case: Case) -> Case:
    """The case as cross-checked: a valid case with a layout or on another path as its packed description on the
    operator path (the same logical answer); any other case as it is."""
    if not case.uses_buffers or case.expect_invalid:
        return case
    return replace(case, description=replace(case.description, layouts={}), path=ExecutionPath.OPERATOR,
                   _references={})


def crosscheck_case(case: Case, backends: Sequence[Backend], labels: Sequence[str]) -> CaseCrosscheck:
    case = logical_case(case)
    try:
        return _crosscheck(case, backends, labels)
    finally:
        case.forget_references()  # shared by the numpy backend, the judge and the pair comparisons


def _crosscheck(case: Case, backends: Sequence[Backend], labels: Sequence[str]) -> CaseCrosscheck:
    takes: list[BackendTake] = []
    outputs: dict[str, Tensors] = {}
    for backend, label in zip(backends, labels, strict=True):
        clock = time.perf_counter()
        outcome = backend_outcome(case, backend)
        elapsed = time.perf_counter() - clock
        result = judge_outcome(case, outcome, HIGHEST)
        take = _take(label, result, outcome, elapsed)
        take.explanation = _explanation(case, backend, take)
        takes.append(take)
        if outcome.kind is OutcomeKind.OUTPUTS and result.status is not Status.ERROR:
            outputs[label] = outcome.outputs
    # Backends are compared with each other only where one of them does not match the golden.
    disagreement = any(not t.status.matched for t in takes)
    pairs = _compare_pairs(case, outputs) if disagreement and not case.expect_invalid else []
    checked = CaseCrosscheck(case.full_id, case.op.name, case.dtype.name, case.behaviour, takes, pairs)
    decide(checked, expect_invalid=case.expect_invalid)
    return checked


def _take(label: str, result: CaseResult, outcome: Outcome, elapsed: float) -> BackendTake:
    ran = outcome.kind is OutcomeKind.OUTPUTS
    return BackendTake(label, result.status, result.matched, result.matched_all, result.message, result.max_ulp,
                       elapsed, ran)


def _explanation(case: Case, backend: Backend, take: BackendTake) -> str:
    if take.status.matched or case.behaviour is None:
        return ""
    readings = getattr(backend, "readings", {})
    # The behaviours the case's candidates answer: its own, and one nested in it (verdicts.NESTED_BEHAVIOURS: a
    # not-pooled-size MaxPoolingGrad case with NaN in X lists the NaN readings).
    behaviours = dict.fromkeys(name for candidate in case.candidates
                               for name in behaviour_readings(case.behaviour, candidate) if name != case.behaviour)
    for behaviour in [*behaviours, case.behaviour]:
        reading = readings.get(behaviour)
        if reading is None or reading in case.candidates:
            continue
        listed = ", ".join(case.candidates) or "one answer"
        return (f"{take.backend} follows '{reading}' for {behaviour}, which this case does not list "
                f"(candidates: {listed})")
    return ""


def _compare_pairs(case: Case, outputs: dict[str, Tensors]) -> list[PairComparison]:
    """Every two backends' outputs, under the case's rule with the accumulation data of any reading: two
    outputs agree if one reading of the undocumented behaviour makes them the same answer."""
    if len(outputs) < 2:
        return []
    references = [case.reference(variant) for variant in case.op.variants]
    pairs = []
    for first, second in combinations(outputs, 2):
        best = None
        for reference in references:
            tolerance = case.tolerance or case.op.default_tolerance(case.description, reference)
            for name in case.op.outputs:
                found = agreement(outputs[first][name], outputs[second][name], case.description.tensors[name].dtype,
                                  tolerance, reference.accumulation.get(name))
                if not found.agree:
                    break
            if best is None or found.agree or found.mismatches < best.mismatches:
                best = found
            if found.agree:
                break
        assert best is not None
        pairs.append(PairComparison(first, second, best.agree, best.mismatches, best.max_ulp, best.first_index))
    return pairs


# -- the verdict ---------------------------------------------------------------------------------------------
def decide(checked: CaseCrosscheck, expect_invalid: bool = False) -> None:
    """Set the verdict, the backends it names and a note (definitions in the module docstring)."""
    takes = checked.takes
    supporters = [t.backend for t in takes if t.status.matched]
    unsupported = [t.backend for t in takes if t.status in (Status.NOT_SUPPORTED, Status.SKIPPED)]
    dissenters = [t.backend for t in takes if t.ran and not t.status.matched]
    failed = [t.backend for t in takes if t.backend not in supporters + unsupported + dissenters]
    notes = []
    if unsupported:
        notes.append(f"not supported on {', '.join(unsupported)}")
    followed = {t.backend: t.matched for t in takes if t.matched}
    if len(set(followed.values())) > 1:
        notes.append("backends follow different candidates: " + ", ".join(f"{b}={m}" for b, m in followed.items()))
    group = _largest_agreeing_group(dissenters, checked.pairs, expect_invalid)
    if not dissenters and not failed:
        if supporters:
            checked.verdict = Verdict.ALL_AGREE
        else:
            checked.verdict = Verdict.UNDECIDED
            notes.append("no backend could run it")
    elif len(group) >= 2 and len(group) > len(supporters):
        checked.verdict, checked.named = Verdict.GOLDEN_SUSPECT, tuple(group)
        against = f"; {', '.join(supporters)} matched it" if supporters else ""
        notes.append(f"{' and '.join(group)} agree with each other and match no answer of the golden{against}")
    elif supporters:
        checked.verdict, checked.named = Verdict.BACKEND_DIFFERS, tuple(dissenters + failed)
        explained = [t.explanation for t in takes if t.backend in checked.named and t.explanation]
        notes.extend(explained)
    else:
        checked.verdict, checked.named = Verdict.UNDECIDED, tuple(dissenters + failed)
        notes.append("no backend matched the golden and no two backends agree with each other")
    checked.note = "; ".join(notes)


def _largest_agreeing_group(dissenters: list[str], pairs: list[PairComparison], expect_invalid: bool) -> list[str]:
    """The largest set of dissenting backends that agree pairwise (a negative case: all that accepted it)."""
    if expect_invalid:
        return list(dissenters)
    agree = {(p.first, p.second) for p in pairs if p.agree} | {(p.second, p.first) for p in pairs if p.agree}
    for size in range(len(dissenters), 1, -1):
        for group in combinations(dissenters, size):
            if all((a, b) in agree for a, b in combinations(group, 2)):
                return list(group)
    return dissenters[:1]
