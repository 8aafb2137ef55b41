"""Judge one output tensor against its expected value under a tolerance rule.

Every judgement names its rule and reports the maximum ULP distance, the maximum absolute
error and the worst element, so a report can point at the element that decided it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dmlconform.compare.tolerance import RuleKind, Tolerance
from dmlconform.compare.ulp import ulp_distance, ulp_of
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Accumulation

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

    def summary(self) -> str:
        if self.passed:
            return f"matched under {self.tolerance}"
        where = f" worst at {list(self.worst_index)}" if self.worst_index is not None else ""
        ulp = "" if self.max_ulp is None else f", max {self.max_ulp} ULP"
        return f"{self.mismatches} element(s) outside {self.tolerance}{ulp}{where}"


def format_value(value: np.generic) -> str:
    if isinstance(value, np.floating):
        bits = np.array(value).view(f"u{value.dtype.itemsize}")
        return f"{value} (0x{int(bits):0{value.dtype.itemsize * 2}x})"
    return str(int(value))


def judge(expected: np.ndarray, actual: np.ndarray, dtype: DataType, tolerance: Tolerance,
          accumulation: Accumulation | None = None) -> Judgement:
    """Compare `actual` against `expected` (same dtype and shape, checked by the caller)."""
    if not dtype.is_float:
        tolerance = Tolerance.exact()
    # Fast path: identical bits always match, whatever the rule.
    if np.array_equal(expected.view(dtype.bits_dtype), actual.view(dtype.bits_dtype)):
        return Judgement(True, tolerance, worst_index=None)
    if not dtype.is_float:
        return _judge_integers(expected, actual, tolerance)
    return _judge_floats(expected, actual, dtype, tolerance, accumulation)


def _judge_integers(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance) -> Judgement:
    bad = expected != actual
    # Python ints keep 64-bit differences exact; only the mismatching elements are converted.
    flat_bad = np.flatnonzero(bad)
    errors = [abs(int(a) - int(e)) for e, a in zip(expected.ravel()[flat_bad], actual.ravel()[flat_bad],
                                                   strict=True)]
    order = np.argsort(errors, kind="stable")[::-1]
    worst = [_element(expected, actual, int(flat_bad[i]), errors[i], "0") for i in order[:WORST_SHOWN]]
    top = int(flat_bad[order[0]])
    return Judgement(False, tolerance, int(bad.sum()), max(errors), float(max(errors)),
                     _unravel(top, expected.shape), worst)


def _judge_floats(expected: np.ndarray, actual: np.ndarray, dtype: DataType, tolerance: Tolerance,
                  accumulation: Accumulation | None) -> Judgement:
    e_nan, a_nan = np.isnan(expected), np.isnan(actual)
    finite = np.isfinite(expected) & np.isfinite(actual)
    # Non-finite pairs: NaN matches any NaN, an infinity only the same infinity.
    special_ok = (e_nan & a_nan) | (~e_nan & ~a_nan & ~finite & (expected == actual))
    ulps = np.zeros(expected.shape, dtype=np.uint64)
    ulps[finite] = ulp_distance(expected[finite], actual[finite])
    with np.errstate(invalid="ignore", over="ignore"):
        abs_error = np.where(finite, np.abs(expected.astype(np.float64) - actual.astype(np.float64)), np.inf)

    if tolerance.kind is RuleKind.BOUND:
        if accumulation is None:
            raise ValueError("the bound rule needs the reference's accumulation data")
        k = accumulation.count.astype(np.float64) if tolerance.k is None else tolerance.k
        with np.errstate(invalid="ignore", over="ignore"):
            allowed = k * dtype.unit_roundoff * np.broadcast_to(accumulation.abs_sum, expected.shape) \
                + ulp_of(expected)
        ok_finite = finite & (abs_error <= allowed)
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(finite, abs_error / np.where(allowed > 0, allowed, np.inf), np.inf)
        allowed_text = allowed
    else:
        limit = 0 if tolerance.kind is RuleKind.EXACT else tolerance.ulps
        ok_finite = finite & (ulps <= np.uint64(limit))
        score = np.where(finite, ulps.astype(np.float64), np.inf)
        allowed_text = None
    ok = special_ok | ok_finite
    bad = ~ok
    mismatches = int(bad.sum())
    max_ulp = int(ulps.max()) if ulps.size else 0
    finite_errors = abs_error[finite]
    max_abs = float(finite_errors.max()) if finite_errors.size else 0.0
    if mismatches == 0:
        return Judgement(True, tolerance, 0, max_ulp, max_abs, _unravel(int(np.argmax(score)), expected.shape))
    if (bad & ~finite).any():
        max_ulp = None  # a NaN or infinity mismatch has no ULP distance
    score = np.where(bad, score, -1.0)
    order = np.argsort(score.ravel(), kind="stable")[::-1][:min(WORST_SHOWN, mismatches)]
    worst = []
    for flat in order.tolist():
        index = np.unravel_index(flat, expected.shape)
        ulp = int(ulps[index]) if finite[index] else None
        if allowed_text is None:
            limit_text = "0 ULP" if tolerance.kind is RuleKind.EXACT else f"{tolerance.ulps} ULP"
        else:
            limit_text = f"|err| <= {float(allowed_text[index]):.6g}"
        worst.append(_element(expected, actual, flat, ulp, limit_text))
    return Judgement(False, tolerance, mismatches, max_ulp, max_abs, _unravel(int(order[0]), expected.shape),
                     worst)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _element(expected: np.ndarray, actual: np.ndarray, flat: int, ulp: int | None, allowed: str) -> Element:
    return Element(_unravel(flat, expected.shape), format_value(expected.ravel()[flat]),
                   format_value(actual.ravel()[flat]), ulp, allowed)
