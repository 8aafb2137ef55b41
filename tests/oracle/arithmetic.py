"""How a simulated driver sums `Σ w_i·dy_i`: in which order, in which precision, with or without FMA.

Exact values are Python Fractions; rounding a Fraction to a float type is done here exactly (round to
nearest, ties to even, gradual underflow, overflow to infinity), so a simulated driver rounds where the
implementation it models rounds, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


def round_fraction(q: Fraction, dtype: np.dtype) -> np.floating:
    """The float of `dtype` nearest to q (ties to even); an exact zero keeps the sign of `+0`."""
    info = np.finfo(dtype)
    if q == 0:
        return dtype.type(0.0)
    sign = -1 if q < 0 else 1
    q = abs(q)
    mantissa_bits = info.nmant  # stored bits; the significand has nmant + 1
    # Exponent e with 2^e <= q < 2^(e+1), clamped at the subnormal boundary.
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, int(info.minexp))
    quantum = Fraction(2) ** (e - mantissa_bits)
    scaled = q / quantum
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    value = whole * quantum
    if value > Fraction(float(info.max)):
        return dtype.type(sign * np.inf)
    return dtype.type(sign * float(value))  # exact: value is representable in dtype, hence in float64


def exact(value: float | np.floating) -> Fraction:
    return Fraction(float(value))


#: A term's weight as the exact per-axis factors whose product it is ((1,) for a copy).
Weight = tuple[Fraction, ...]


def weight_value(factors: Weight) -> Fraction:
    product = Fraction(1)
    for factor in factors:
        product *= factor
    return product


@dataclass(frozen=True)
class Summation:
    """One legitimate (or not) way to evaluate a weighted sum for an output of type `out`.

    order: `forward` (terms as the loops meet them), `reverse`, or `pairwise` (recursive halves).
    accumulate: `exact` (the true sum, rounded once to `out`), `data` (every product and partial sum
        rounded to `out`), or `float32` (rounded to float32, the result rounded once more to `out`).
    fma: each step is `acc = round(w·dy + acc)`, one rounding (only with a sequential order).
    weights: how the weight (a product of per-axis factors) is formed before it multiplies dY:
        `exact`; `float32` or `data` (the exact product rounded once to that type); `per-axis-float32` or
        `per-axis-data` (each factor rounded to that type, multiplied there factor by factor, and the
        result rounded to the data type: what a shader computing separable weights does).
    """

    order: str = "forward"
    accumulate: str = "exact"
    fma: bool = False
    weights: str = "exact"

    def total(self, terms: Sequence[tuple[Weight, np.floating]], out: np.dtype) -> np.floating:
        """Σ w·dy over `terms` (weight as exact per-axis factors, dy a value of `out`), as a value of `out`."""
        if not terms:
            return out.type(0.0)
        work = np.dtype(np.float32) if self.accumulate == "float32" else out
        ordered = list(terms)[::-1] if self.order == "reverse" else list(terms)
        weights = [self._weight(w, out) for w, _ in ordered]
        values = [dy for _, dy in ordered]
        if not all(np.isfinite(v) for v in values):
            return self._nonfinite(weights, values, out)
        if self.accumulate == "exact":
            return round_fraction(sum((w * exact(v) for w, v in zip(weights, values, strict=True)), Fraction(0)), out)
        if self.fma and self.order != "pairwise":
            acc = work.type(0.0)
            for w, v in zip(weights, values, strict=True):
                acc = round_fraction(w * exact(v) + exact(acc), work)
            with np.errstate(over="ignore"):
                return out.type(acc)  # float32 -> out rounds once more where out is narrower
        products = [round_fraction(w * exact(v), work) for w, v in zip(weights, values, strict=True)]
        def add(a: np.floating, b: np.floating) -> np.floating:
            return round_fraction(exact(a) + exact(b), work)
        acc = _pairwise(products, add) if self.order == "pairwise" else _sequential(products, add)
        with np.errstate(over="ignore"):
            return out.type(acc)

    def _weight(self, factors: Weight, out: np.dtype) -> Fraction:
        if self.weights.startswith("per-axis-"):
            work = np.dtype(np.float32) if self.weights == "per-axis-float32" else out
            w = exact(round_fraction(factors[0], work))
            for factor in factors[1:]:
                w = exact(round_fraction(w * exact(round_fraction(factor, work)), work))
            return exact(round_fraction(w, out))
        w = weight_value(factors)
        if self.weights == "float32":
            return exact(round_fraction(w, np.dtype(np.float32)))
        if self.weights == "data":
            return exact(round_fraction(w, out))
        return w

    def _nonfinite(self, weights: list[Fraction], values: list[np.floating], out: np.dtype) -> np.floating:
        # With an infinity or NaN among the terms IEEE arithmetic decides, whatever the precision.
        with np.errstate(invalid="ignore", over="ignore"):
            acc = np.float64(0.0)
            for w, v in zip(weights, values, strict=True):
                acc = acc + np.float64(float(w)) * np.float64(v)
            return out.type(acc)


def _sequential(values: list[np.floating], add: Callable[[np.floating, np.floating], np.floating]) -> np.floating:
    acc = values[0]
    for v in values[1:]:
        acc = add(acc, v)
    return acc


def _pairwise(values: list[np.floating], add: Callable[[np.floating, np.floating], np.floating]) -> np.floating:
    if len(values) == 1:
        return values[0]
    middle = len(values) // 2
    return add(_pairwise(values[:middle], add), _pairwise(values[middle:], add))
