"""One case looked at element by element: its tensors, the rule with its numbers, the elements nearest to (or
beyond) their allowance, a ULP histogram, and what the reference's accumulation data say about each element.

An element's ratio is |actual − expected| over what the rule allows it, as the comparator's closeness: 0 for
identical bits (and NaN against NaN), inf where an element allowed nothing is off; `ulp:N` counts ULPs / N.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dmlconform.backends.base import Outcome, OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.compare import bound
from dmlconform.compare.accumulation import Accumulation, ElementTerms
from dmlconform.compare.comparator import format_value
from dmlconform.compare.tolerance import RuleKind, Tolerance
from dmlconform.compare.ulp import ulp_distance
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST, FeatureLevel
from dmlconform.runner.judge import judge_answers, judge_outcome
from dmlconform.ulp_histogram import UlpBucket, integer_distance, merge_histograms, ulp_histogram

#: Elements listed by default, and terms listed per element.
TOP_ELEMENTS = 10
TERMS_SHOWN = 8
#: Terms are found by running the reference on parts of the gradient (the operators are linear in it), so only
#: for gradients up to this many elements.
PROBE_LIMIT = 4096
GRADIENT = "InputGradientTensor"


@dataclass(frozen=True)
class TensorSummary:
    role: str  # input, expected, actual, or a candidate's name
    name: str
    dtype: str
    shape: tuple[int, ...]
    minimum: str
    maximum: str
    mean: str
    zeros: int
    nans: int
    infinities: int
    subnormals: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Term:
    """One contribution t = w·dy to an output element."""

    source: tuple[int, ...]  # index into the gradient
    gradient: float
    weight: float
    value: float


@dataclass(frozen=True)
class Accumulated:
    """The reference's accumulation data at one output element (docs/reference/comparison.md)."""

    count: int  # n
    abs_sum: float  # M = Σ|t_i|
    value: float  # v = Σ t_i in float64; the golden is v rounded once
    weight_factors: int  # f
    abs_gradient_sum: float  # D
    terms: list[Term] | None  # None: not worked out (gradient too large to probe)
    terms_total: int = 0


@dataclass(frozen=True)
class ElementDetail:
    output: str
    index: tuple[int, ...]
    expected: str  # value with its bit pattern
    actual: str
    ulp: int | None  # None: a NaN or infinity mismatch, which has no distance
    abs_error: float | None
    #: The largest |actual − expected| the rule accepts here (0: exact), and the rule's branch with its numbers.
    allowed: float
    allowed_text: str
    ratio: float
    accumulated: Accumulated | None = None


@dataclass
class Inspection:
    case: Case
    status: Status | None  # what the outputs come to now (None without outputs)
    message: str
    answer: str | None  # the answer the outputs are compared with: expected, or a candidate's name
    tolerance: Tolerance | None
    rule_lines: list[str]
    tensors: list[TensorSummary]
    elements: list[ElementDetail] = field(default_factory=list)
    histogram: list[UlpBucket] = field(default_factory=list)
    closeness: float | None = None
    differing: int = 0
    notes: list[str] = field(default_factory=list)


def inspect_case(case: Case, outputs: dict[str, np.ndarray] | None, target: FeatureLevel = HIGHEST,
                 top: int = TOP_ELEMENTS) -> Inspection:
    try:
        return _inspect(case, outputs, target, top)
    finally:
        case.forget_references()  # judging keeps them on the case; a triage session inspects many cases


def _inspect(case: Case, outputs: dict[str, np.ndarray] | None, target: FeatureLevel, top: int) -> Inspection:
    tensors = [summarise("input", name, array) for name, array in case.inputs.items()]
    for answer, arrays in case.answers().items():
        tensors += [summarise(answer, name, array) for name, array in arrays.items()]
    if outputs is None:
        tolerance = case.tolerance
        lines = rule_lines(tolerance, case.dtype) if tolerance else ["the operator's default rule for this case"]
        if not case.expect_invalid and tolerance is None:
            reference = case.op.reference(case.description, case.inputs, case.op.variants[0])
            tolerance = case.op.default_tolerance(case.description, reference)
            lines = rule_lines(tolerance, case.dtype)
        return Inspection(case, None, "no actual outputs to compare", None, tolerance, lines, tensors)
    tensors += [summarise("actual", name, array) for name, array in outputs.items() if isinstance(array, np.ndarray)]
    judged = judge_outcome(case, Outcome.ran(outputs), target)
    status = judged.outcome or judged.status
    if case.expect_invalid or status is Status.ERROR:
        return Inspection(case, status, judged.message, None, None, [], tensors)
    choice = judge_answers(case, outputs)
    verdict = choice.verdicts[choice.chosen]
    answer = case.answers()[choice.chosen]
    variant = choice.chosen if choice.chosen in case.op.variants else case.op.variants[0]
    inspection = Inspection(case, status, judged.message, choice.chosen, verdict.tolerance,
                            rule_lines(verdict.tolerance, case.dtype), tensors, closeness=verdict.closeness)
    inspection.histogram = merge_histograms(ulp_histogram(answer[n], outputs[n]) for n in case.op.outputs)
    for name in case.op.outputs:
        details, differing = worst_elements(answer[name], outputs[name], case.description.tensors[name].dtype,
                                            verdict.tolerance, choice.reference.accumulation.get(name), name, top)
        inspection.elements += details
        inspection.differing += differing
    inspection.elements.sort(key=lambda e: (-e.ratio, -(e.ulp or 0)))
    inspection.elements = _with_terms(case, variant, inspection.elements[:top], inspection.notes)
    return inspection


def summarise(role: str, name: str, array: np.ndarray) -> TensorSummary:
    flat = array.ravel()
    dtype = DataType.from_numpy(array.dtype)
    if dtype.is_float:
        finite = flat[np.isfinite(flat)]
        tiny = np.finfo(array.dtype).tiny
        nans, infinities = int(np.isnan(flat).sum()), int(np.isinf(flat).sum())
        subnormals = int(((finite != 0) & (np.abs(finite) < tiny)).sum())
        values = finite.astype(np.float64)
    else:
        nans = infinities = subnormals = 0
        values = flat
    if values.size == 0:
        low = high = mean = "-"
    elif dtype.is_float:
        low, high = f"{values.min():.7g}", f"{values.max():.7g}"
        mean = f"{float(np.mean(values)):.7g}"
    else:
        low, high = str(int(values.min())), str(int(values.max()))
        mean = f"{float(np.mean(values, dtype=np.float64)):.7g}"
    return TensorSummary(role, name, dtype.name, tuple(array.shape), low, high, mean, int((flat == 0).sum()), nans,
                         infinities, subnormals)


def rule_lines(tolerance: Tolerance, dtype: DataType) -> list[str]:
    if not dtype.is_float or tolerance.kind is RuleKind.EXACT:
        return ["exact: every element must have the expected bits (+0 and −0 are equal; any NaN matches any NaN)"]
    if tolerance.kind is RuleKind.ULP:
        return [f"ulp:{tolerance.ulps}: every element within {tolerance.ulps} ULP of the expected value, on the "
                f"sign-magnitude integer line of {dtype.name} (a NaN only matches a NaN, an infinity only itself)"]
    k = "K = (n − 1) + max(2f, r)" if tolerance.k is None else f"K = {tolerance.k:g} (given by the case)"
    return [f"{tolerance}: docs/reference/comparison.md (derivation: docs/tolerances.md), per output element "
            "with n terms t = w·dy:",
            "  n = 0: only ±0 (nothing may appear where nothing lands)",
            "  n = 1 with weight ±1 (a copy): exact",
            f"  otherwise |actual − golden| <= γ_K·M + ½·ulp(golden) + U, {k}, γ_K = K·u/(1 − K·u), "
            f"u = 2^{int(math.log2(dtype.unit_roundoff))} ({dtype.name}), M = Σ|t|; U covers gradual underflow "
            "where a weight may round (f > 0); r = 5 where a term is a quotient dy / d (AveragePoolingGrad), else 0"]


def element_ratios(expected: np.ndarray, actual: np.ndarray, dtype: DataType, tolerance: Tolerance,
                   accumulation: ElementTerms | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per flat element: ratio, ULP distance (uint64; 0 where none applies), |error| (inf where not finite), and
    the allowance (float64)."""
    e, a = expected.ravel(), actual.ravel()
    same = e.view(dtype.bits_dtype) == a.view(dtype.bits_dtype)
    if not dtype.is_float:
        ulps = integer_distance(e, a)
        return np.where(same, 0.0, np.inf), ulps, ulps.astype(np.float64), np.zeros(e.shape)
    same |= np.isnan(e) & np.isnan(a)
    finite = np.isfinite(e) & np.isfinite(a)
    ulps = np.zeros(e.shape, dtype=np.uint64)
    ulps[finite] = ulp_distance(e[finite], a[finite])
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.where(finite, np.abs(e.astype(np.float64) - a.astype(np.float64)), np.inf)
    if tolerance.kind is RuleKind.BOUND and accumulation is not None:
        allowed = bound.allowance_at(e, accumulation, expected.shape, None, dtype, tolerance.k)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(error == 0, 0.0, np.where(allowed > 0, error / np.where(allowed > 0, allowed, 1), np.inf))
    else:
        limit = tolerance.ulps if tolerance.kind is RuleKind.ULP else 0
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            allowed = np.where(finite, limit * np.abs(np.spacing(e).astype(np.float64)), 0.0)
            ratio = np.where(ulps == 0, 0.0, ulps.astype(np.float64) / limit if limit else np.inf)
    ratio = np.where(same, 0.0, np.where(finite, ratio, np.inf))
    return ratio, ulps, error, allowed


def worst_elements(expected: np.ndarray, actual: np.ndarray, dtype: DataType, tolerance: Tolerance,
                   accumulation: ElementTerms | None, output: str, top: int) -> tuple[list[ElementDetail], int]:
    """The `top` elements with the highest ratio among those whose bits differ, and how many differ."""
    ratio, ulps, error, allowed = element_ratios(expected, actual, dtype, tolerance, accumulation)
    differs = np.flatnonzero(expected.ravel().view(dtype.bits_dtype) != actual.ravel().view(dtype.bits_dtype))
    order = differs[np.lexsort((differs, -ulps[differs].astype(np.float64), -ratio[differs]))][:top]
    e, a = expected.ravel(), actual.ravel()
    finite = np.isfinite(e) & np.isfinite(a) if dtype.is_float else np.ones(e.shape, dtype=bool)
    details = []
    for flat in order.tolist():
        index = tuple(int(i) for i in np.unravel_index(flat, expected.shape)) if expected.shape else ()
        accumulated, text = None, _allowed_text(tolerance, dtype, float(allowed[flat]))
        if accumulation is not None:
            terms = accumulation.at(np.array([flat]), expected.shape)
            accumulated = _accumulated(terms)
            if tolerance.kind is RuleKind.BOUND:
                text = bound.explain_at(e[flat], terms, 0, dtype, tolerance.k)
        details.append(ElementDetail(output, index, format_value(e[flat]), format_value(a[flat]),
                                     int(ulps[flat]) if finite[flat] else None,
                                     float(error[flat]) if finite[flat] else None, float(allowed[flat]), text,
                                     float(ratio[flat]), accumulated))
    return details, int(differs.size)


def _allowed_text(tolerance: Tolerance, dtype: DataType, allowed: float) -> str:
    if not dtype.is_float or tolerance.kind is RuleKind.EXACT:
        return "0 ULP (exact)"
    return f"{tolerance.ulps} ULP (|err| <= {allowed:.6g} here)"


def _accumulated(terms: Accumulation) -> Accumulated:
    """The accumulation data of one element, taken by `at` (fields of one element, or scalars)."""
    def first(values: object) -> float:
        return float(np.asarray(values).reshape(-1)[0])

    return Accumulated(int(first(terms.count)), first(terms.abs_sum), first(terms.value),
                       int(first(terms.weight_factors)), first(terms.abs_gradient_sum), None)


def _with_terms(case: Case, variant: str, elements: list[ElementDetail], notes: list[str]) -> list[ElementDetail]:
    """Each element's terms. The operators are linear in the gradient: the weight of gradient element s in output
    element e is the reference's sum at e for a gradient that is 1 at s and 0 elsewhere (a probe). A probe with 1 on a
    whole range of gradient elements gives Σ|w| > 0 at e exactly when some element of the range reaches e, so the
    ranges are halved from the whole gradient down, and a range that reaches none of the elements is dropped: a few
    probes per term instead of one per gradient element."""
    wanted = [(e.output, e.index) for e in elements if e.accumulated is not None]
    gradient = case.inputs.get(GRADIENT)
    if not wanted or gradient is None:
        return elements
    if gradient.size > PROBE_LIMIT:
        notes.append(f"terms not listed: the gradient has {gradient.size} elements (listed up to {PROBE_LIMIT})")
        return elements
    weights: dict[tuple[str, tuple[int, ...]], list[Term]] = {key: [] for key in wanted}
    shapes = {output: case.description.tensors[output].shape for output, _ in wanted}
    flat_of = {(output, index): int(np.ravel_multi_index(index, shapes[output])) if index else 0
               for output, index in wanted}
    wanted_flat = {output: np.unique([flat_of[o, index] for o, index in wanted if o == output]) for output in shapes}

    def probe(start: int, stop: int) -> dict[tuple[str, tuple[int, ...]], tuple[float, float]]:
        """Per wanted element: Σ w and Σ |w| over the gradient elements start..stop-1."""
        ones = np.zeros_like(gradient)
        ones.flat[start:stop] = 1
        reference = case.op.reference(case.description, {**case.inputs, GRADIENT: ones}, variant)
        found: dict[tuple[str, int], tuple[float, float]] = {}
        for output, flat in wanted_flat.items():
            values, magnitudes = reference.accumulation[output].sums_at(flat, shapes[output])
            for i, value, magnitude in zip(flat, values, magnitudes, strict=True):
                found[output, int(i)] = (float(value), float(magnitude))
        return {key: found[key[0], flat_of[key]] for key in wanted}

    with np.errstate(all="ignore"):
        ranges = [(0, gradient.size)]  # a stack, lower half on top: sources are found in ascending order
        while ranges:
            start, stop = ranges.pop()
            sums = probe(start, stop)
            if all(magnitude == 0 for _, magnitude in sums.values()):
                continue
            if stop - start > 1:
                middle = (start + stop) // 2
                ranges += [(middle, stop), (start, middle)]
                continue
            source = tuple(int(i) for i in np.unravel_index(start, gradient.shape))
            dy = float(gradient.flat[start])
            for key, (weight, _) in sums.items():
                if weight != 0:
                    weights[key].append(Term(source, dy, weight, weight * dy))
    detailed = []
    for element in elements:
        terms = weights.get((element.output, element.index))
        if terms is None or element.accumulated is None:
            detailed.append(element)
            continue
        terms.sort(key=lambda t: -abs(t.value) if math.isfinite(t.value) else -math.inf)
        accumulated = Accumulated(**{**element.accumulated.__dict__, "terms": terms[:TERMS_SHOWN],
                                     "terms_total": len(terms)})
        detailed.append(ElementDetail(**{**element.__dict__, "accumulated": accumulated}))
    return detailed


def outcome_note(outcome: Outcome | None) -> str:
    if outcome is None or outcome.kind is OutcomeKind.OUTPUTS:
        return ""
    return f"{outcome.kind.value}: {outcome.message}"
