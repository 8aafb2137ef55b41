"""Judge one output tensor against its expected value under a tolerance rule.

Every judgement names its rule and reports the maximum ULP distance, the maximum absolute
error and the worst element, so a report can point at the element that decided it, and its closeness:
the largest error/allowance ratio over the elements (0 bit-exact, 1 at the limit, above 1 outside it),
so that runs can be compared by how near a passing case came to failing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dmlconform.compare import bound
from dmlconform.compare.accumulation import ElementTerms
from dmlconform.compare.tolerance import RuleKind, Tolerance
from dmlconform.compare.ulp import ulp_distance
from dmlconform.dtypes import DataType

WORST_SHOWN = 5


@dataclass(frozen=True)
class Element:
    """One mismatching element, for reports."""

    index: tuple[int, ...]
    expected: str
    actual: str
    ulp: int | None
    allowed: str


@dataclass
class Judgement:
    passed: bool
    tolerance: Tolerance
    mismatches: int = 0
    max_ulp: int | None = 0
    max_abs_error: float | None = 0.0
    worst_index: tuple[int, ...] | None = None
    worst: list[Element] = field(default_factory=list)
    note: str = ""
    #: The largest |error| / allowance over the elements: 0 when every element is exact, 1 at the limit;
    #: `ulp:N` gives max_ulp / N, and inf wherever an element allowed nothing (exact, NaN, ±inf) is off.
    closeness: float = 0.0

    def summary(self) -> str:
        if self.passed:
            return f"matched under {self.tolerance}"
        where = f" worst at {list(self.worst_index)}" if self.worst_index is not None else ""
        ulp = "" if self.max_ulp is None else f", max {self.max_ulp} ULP"
        return f"{self.mismatches} element(s) outside {self.tolerance}{ulp}{where}"


def format_value(value: np.generic) -> str:
    if isinstance(value, np.floating):
        bits = np.array(value).view(f"u{value.dtype.itemsize}")
        return f"{value!s} (0x{int(bits):0{value.dtype.itemsize * 2}x})"
    return str(int(value))


def judge(expected: np.ndarray, actual: np.ndarray, dtype: DataType, tolerance: Tolerance,
          accumulation: ElementTerms | None = None,
          accumulation_of: Callable[[], ElementTerms | None] | None = None) -> Judgement:
    """Compare `actual` against `expected` (same dtype and shape, checked by the caller). The bound rule takes the
    reference's accumulation data, or `accumulation_of` to compute it only when some element's bits differ
    (computing the reference is most of what judging a case costs, and most outputs are bit-identical)."""
    if not dtype.is_float:
        tolerance = Tolerance.exact()
    # Only elements whose bits differ can be off; identical bits match under every rule.
    differs = differing_elements(expected.view(dtype.bits_dtype).reshape(-1), actual.view(dtype.bits_dtype).reshape(-1))
    if differs.size == 0:
        return Judgement(True, tolerance, worst_index=None)
    if tolerance.kind is RuleKind.BOUND and accumulation is None and accumulation_of is not None:
        accumulation = accumulation_of()
    if tolerance.kind is RuleKind.BOUND and accumulation is None:
        raise ValueError("the bound rule needs the reference's accumulation data")
    e, a = np.take(expected.reshape(-1), differs), np.take(actual.reshape(-1), differs)
    if not dtype.is_float:
        return _judge_integers(e, a, differs, expected.shape, tolerance)
    return _judge_floats(e, a, differs, expected.shape, dtype, tolerance, accumulation)


#: Elements compared at a time when looking for differing bits: the comparison's mask stays in the CPU caches.
BLOCK_ELEMENTS = 1 << 18


def differing_elements(expected_bits: np.ndarray, actual_bits: np.ndarray) -> np.ndarray:
    """Flat indices where the bit patterns differ (1-D inputs of one integer type)."""
    if expected_bits.size <= BLOCK_ELEMENTS:
        return np.flatnonzero(expected_bits != actual_bits)
    mask = np.empty(BLOCK_ELEMENTS, dtype=bool)
    found = []
    for first in range(0, expected_bits.size, BLOCK_ELEMENTS):
        block = mask[:min(BLOCK_ELEMENTS, expected_bits.size - first)]
        np.not_equal(expected_bits[first:first + BLOCK_ELEMENTS], actual_bits[first:first + BLOCK_ELEMENTS], out=block)
        if block.any():
            found.append(np.flatnonzero(block) + first)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.intp)


def _judge_integers(e: np.ndarray, a: np.ndarray, where: np.ndarray, shape: tuple[int, ...],
                    tolerance: Tolerance) -> Judgement:
    # Python ints keep 64-bit differences exact.
    errors = [abs(int(x) - int(y)) for x, y in zip(e.tolist(), a.tolist(), strict=True)]
    order = np.argsort(errors, kind="stable")[::-1]
    worst = [_element(e, a, where, shape, int(i), errors[i], "0") for i in order[:WORST_SHOWN]]
    return Judgement(False, tolerance, len(errors), max(errors), float(max(errors)),
                     _unravel(int(where[order[0]]), shape), worst, closeness=math.inf)


def _judge_floats(e: np.ndarray, a: np.ndarray, where: np.ndarray, shape: tuple[int, ...], dtype: DataType,
                  tolerance: Tolerance, accumulation: ElementTerms | None) -> Judgement:
    finite = np.isfinite(e)
    finite &= np.isfinite(a)
    all_finite = bool(finite.all())
    # Non-finite pairs: NaN matches any NaN, an infinity only the same infinity (bits differ, so never).
    special_ok = np.zeros(e.shape, dtype=bool) if all_finite else np.isnan(e) & np.isnan(a)
    if all_finite:
        ulps = ulp_distance(e, a)
    else:
        ulps = np.zeros(e.shape, dtype=np.uint64)
        ulps[finite] = ulp_distance(e[finite], a[finite])
    with np.errstate(invalid="ignore", over="ignore"):
        abs_error = np.subtract(e, a, dtype=np.float64)
        np.abs(abs_error, out=abs_error)
        if not all_finite:
            abs_error[~finite] = np.inf

    allowed: np.ndarray | None = None
    if tolerance.kind is RuleKind.BOUND:
        assert accumulation is not None
        terms = accumulation.at(where, shape)  # only the elements being judged
        allowed = bound.allowance_of(e, terms, dtype, tolerance.k)
        ok_finite = finite & (abs_error <= allowed)
        with np.errstate(invalid="ignore", divide="ignore"):
            # An element allowed nothing that is off at all ranks above every element allowed something.
            score = np.where(allowed > 0, abs_error / np.where(allowed > 0, allowed, 1.0), np.inf)
            score = np.where(finite, np.where(abs_error == 0, 0.0, score), np.inf)
    else:
        limit = 0 if tolerance.kind is RuleKind.EXACT else tolerance.ulps
        ok_finite = finite & (ulps <= np.uint64(limit))
        score = ulps if all_finite else np.where(finite, ulps.astype(np.float64), np.inf)
    bad = ~(special_ok | ok_finite)
    closeness = _closeness(tolerance, score, special_ok)
    mismatches = int(bad.sum())
    max_ulp: int | None = int(ulps.max())
    finite_errors = abs_error if all_finite else abs_error[finite]
    max_abs = float(finite_errors.max()) if finite_errors.size else 0.0
    if mismatches == 0:
        return Judgement(True, tolerance, 0, max_ulp, max_abs, _unravel(int(where[np.argmax(score)]), shape),
                         closeness=closeness)
    score = score.astype(np.float64)
    if (bad & ~finite).any():
        max_ulp = None  # a NaN or infinity mismatch has no ULP distance
    score = np.where(bad, score, -1.0)
    order = np.argsort(score, kind="stable")[::-1][:min(WORST_SHOWN, mismatches)]
    worst = []
    for i in order.tolist():
        if allowed is None:
            limit_text = "0 ULP" if tolerance.kind is RuleKind.EXACT else f"{tolerance.ulps} ULP"
        else:
            limit_text = bound.explain_at(e[i], terms, i, dtype, tolerance.k)
        worst.append(_element(e, a, where, shape, i, int(ulps[i]) if finite[i] else None, limit_text))
    return Judgement(False, tolerance, mismatches, max_ulp, max_abs, _unravel(int(where[order[0]]), shape), worst,
                     closeness=closeness)


def _closeness(tolerance: Tolerance, score: np.ndarray, special_ok: np.ndarray) -> float:
    """The largest error/allowance ratio: the bound's score is that ratio already; a ULP score is in ULPs."""
    ratios = np.where(special_ok, 0.0, score)
    if tolerance.kind is RuleKind.ULP and tolerance.ulps:
        ratios = ratios / tolerance.ulps
    elif tolerance.kind is not RuleKind.BOUND:
        ratios = np.where(ratios > 0, np.inf, 0.0)  # exact, or ulp:0: any distance is infinitely far
    return float(ratios.max())


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _element(e: np.ndarray, a: np.ndarray, where: np.ndarray, shape: tuple[int, ...], i: int, ulp: int | None,
             allowed: str) -> Element:
    return Element(_unravel(int(where[i]), shape), format_value(e[i]), format_value(a[i]), ulp, allowed)
