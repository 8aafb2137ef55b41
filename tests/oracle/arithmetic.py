"""How a simulated driver sums `Σ w_i·dy_i`: in which order, in which precision, with or without FMA.

Exact values are Python Fractions; rounding a Fraction to a float type is done here exactly (round to
nearest, ties to even, gradual underflow, overflow to infinity), so a simulated driver rounds where the
implementation it models rounds, and nowhere else. Inside a sum the exact values are plain integer pairs
(numerator, denominator), not Fractions: the same exact arithmetic without a Fraction's per-operation normalising
and type checks, which were most of the oracle tests' time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class _Format:
    mantissa_bits: int  # stored bits; the significand has one more
    min_exponent: int   # of the smallest normal
    largest: float


_FORMATS: dict[np.dtype, _Format] = {}
_FLOAT32 = np.dtype(np.float32)


def _format(dtype: np.dtype) -> _Format:
    found = _FORMATS.get(dtype)
    if found is None:
        info = np.finfo(dtype)
        found = _FORMATS[dtype] = _Format(int(info.nmant), int(info.minexp), float(info.max))
    return found


def round_fraction(q: Fraction, dtype: np.dtype) -> np.floating:
    """The float of `dtype` nearest to q (ties to even); an exact zero keeps the sign of `+0`."""
    return _round(q.numerator, q.denominator, dtype)


#: An exact value as (numerator, denominator > 0), not necessarily in lowest terms.
Ratio = tuple[int, int]


def _round(n: int, d: int, dtype: np.dtype) -> np.floating:
    """The float of `dtype` nearest to n/d (d > 0; any common factor allowed), ties to even.

    In integers: n/d is scaled by a power of two to a significand of mantissa_bits + 1 bits (fewer below the
    smallest normal), divided with its remainder, and rounded up where the remainder passes half (or is half and the
    significand odd). The inner loop of every simulated driver."""
    if n == 0:
        return dtype.type(0.0)
    fmt = _format(dtype)
    a = -n if n < 0 else n
    # Exponent e with 2^e <= n/d < 2^(e+1), clamped at the subnormal boundary.
    e = a.bit_length() - d.bit_length()
    if (d << e > a) if e >= 0 else (d > a << -e):
        e -= 1
    e = max(e, fmt.min_exponent)
    shift = fmt.mantissa_bits - e  # (n/d) / quantum = a·2^shift / d, quantum = 2^(e - mantissa_bits)
    scaled, divisor = (a << shift, d) if shift >= 0 else (a, d << -shift)
    whole, rest = divmod(scaled, divisor)
    if 2 * rest > divisor or (2 * rest == divisor and whole & 1):
        whole += 1
    sign = -1.0 if n < 0 else 1.0
    if whole.bit_length() - shift > 1024:  # past any float64, let alone dtype
        return dtype.type(sign * np.inf)
    value = math.ldexp(float(whole), -shift)  # exact: whole has at most mantissa_bits + 2 bits
    if value > fmt.largest:
        return dtype.type(sign * np.inf)
    return dtype.type(sign * value)


def _ratio(value: float | np.floating) -> Ratio:
    """A finite float's exact value (OverflowError for an infinity, ValueError for a NaN)."""
    return float(value).as_integer_ratio()


def _product(a: Ratio, b: Ratio) -> Ratio:
    return a[0] * b[0], a[1] * b[1]


def _sum(a: Ratio, b: Ratio) -> Ratio:
    (n, d), (m, e) = a, b
    if d == e:
        return n + m, d
    g = math.gcd(d, e)
    return n * (e // g) + m * (d // g), d // g * e


def _exact_sum(values: Iterable[Ratio]) -> Ratio:
    total: Ratio = (0, 1)
    for value in values:
        total = _sum(total, value)
    return total


def _exact_total(terms: Iterable[tuple[Weight, np.floating]]) -> Ratio:
    """Σ w·dy exactly, in one pass (OverflowError or ValueError where a dy is infinite or NaN)."""
    n, d = 0, 1
    for factors, dy in terms:
        a, b = float(dy).as_integer_ratio()
        for factor in factors:
            a, b = a * factor.numerator, b * factor.denominator
        n, d = _sum((n, d), (a, b))
    return n, d


def exact_total(terms: Iterable[tuple[Weight, np.floating]]) -> Fraction:
    """Σ w·dy exactly (every dy finite)."""
    return Fraction(*_exact_total(terms))


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
        if self.accumulate == "exact" and self.weights == "exact":  # the contract's own sum: the order is moot
            try:
                return _round(*_exact_total(terms), out)
            except (OverflowError, ValueError):
                pass  # an infinity or a NaN among the terms: below
        work = _FLOAT32 if self.accumulate == "float32" else out
        ordered = list(terms)[::-1] if self.order == "reverse" else list(terms)
        weights = [self._weight(w, out) for w, _ in ordered]
        try:
            values = [_ratio(dy) for _, dy in ordered]
        except (OverflowError, ValueError):  # an infinity or a NaN among the terms
            return self._nonfinite(weights, [dy for _, dy in ordered], out)
        if self.accumulate == "exact":
            n, d = _exact_sum(_product(w, v) for w, v in zip(weights, values, strict=True))
            return _round(n, d, out)
        if self.fma and self.order != "pairwise":
            acc = work.type(0.0)
            for w, v in zip(weights, values, strict=True):
                acc = _round(*_sum(_product(w, v), _ratio(acc)), work)
            with np.errstate(over="ignore"):
                return out.type(acc)  # float32 -> out rounds once more where out is narrower
        products = [_round(*_product(w, v), work) for w, v in zip(weights, values, strict=True)]

        def add(a: np.floating, b: np.floating) -> np.floating:
            return _round(*_sum(_ratio(a), _ratio(b)), work)
        acc = _pairwise(products, add) if self.order == "pairwise" else _sequential(products, add)
        with np.errstate(over="ignore"):
            return out.type(acc)

    def _weight(self, factors: Weight, out: np.dtype) -> Ratio:
        if self.weights.startswith("per-axis-"):
            work = _FLOAT32 if self.weights == "per-axis-float32" else out
            w = _ratio(round_fraction(factors[0], work))
            for factor in factors[1:]:
                w = _ratio(_round(*_product(w, _ratio(round_fraction(factor, work))), work))
            return _ratio(_round(*w, out))
        w: Ratio = (1, 1)
        for factor in factors:
            w = _product(w, (factor.numerator, factor.denominator))
        if self.weights == "float32":
            return _ratio(_round(*w, _FLOAT32))
        if self.weights == "data":
            return _ratio(_round(*w, out))
        return w

    def _nonfinite(self, weights: list[Ratio], values: list[np.floating], out: np.dtype) -> np.floating:
        # With an infinity or NaN among the terms IEEE arithmetic decides, whatever the precision.
        with np.errstate(invalid="ignore", over="ignore"):
            acc = np.float64(0.0)
            for (n, d), v in zip(weights, values, strict=True):
                acc = acc + np.float64(n / d) * np.float64(v)  # n / d: the nearest float64, as float(Fraction)
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
