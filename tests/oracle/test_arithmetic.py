"""The simulated drivers' exact rounding (tests/oracle/arithmetic.py): a Fraction rounded to a float type as IEEE
754 does it (nearest, ties to even, gradual underflow, overflow to infinity)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tests.oracle.arithmetic import round_fraction

TYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


def by_definition(q: Fraction, dtype: np.dtype) -> np.floating:
    """The rounding written out in Fractions: the exponent found by comparison, the quantum a Fraction."""
    info = np.finfo(dtype)
    if q == 0:
        return dtype.type(0.0)
    sign, q = (-1 if q < 0 else 1), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()  # off by at most one, corrected by comparison
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    e = max(e, int(info.minexp))
    quantum = Fraction(2) ** (e - info.nmant)
    scaled = q / quantum
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    value = whole * quantum
    if value > Fraction(float(info.max)):
        return dtype.type(sign * np.inf)
    return dtype.type(sign * float(value))


def same(a: np.floating, b: np.floating) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def fractions(rng: np.random.Generator, count: int) -> list[Fraction]:
    """Random exact values of every magnitude, and ties and near-ties of each type."""
    found = []
    for _ in range(count):
        scale = Fraction(2) ** int(rng.integers(-1100, 1030))
        q = Fraction(int(rng.integers(-2**62, 2**62)), int(rng.integers(1, 2**40))) * scale
        found.append(q)
    for dtype in TYPES:
        info = np.finfo(dtype)
        exponents = rng.uniform(info.minexp - info.nmant, info.maxexp - 1, count // 4)
        for x in rng.uniform(1, 2, count // 4) * np.exp2(exponents) * rng.choice([-1, 1], count // 4):
            v = dtype.type(x)
            if not np.isfinite(v) or v == 0:
                continue
            gap = Fraction(float(abs(v))) - Fraction(float(np.nextafter(abs(v), dtype.type(0))))  # the ULP below
            found += [Fraction(float(v)) + gap / 2, Fraction(float(v)) - gap / 2, Fraction(float(v)) + gap / 3]
        top = Fraction(float(info.max))
        found += [top + (top - Fraction(float(np.nextafter(info.max, dtype.type(0))))) / 2,
                  Fraction(float(info.smallest_subnormal)) / 2, Fraction(float(info.smallest_subnormal)) * 3 / 4]
    return found


def test_rounding_agrees_with_the_definition_in_fractions() -> None:
    rng = np.random.default_rng(5)
    for q in fractions(rng, 400):
        for dtype in TYPES:
            assert same(round_fraction(q, dtype), by_definition(q, dtype)), (q, dtype)


def test_rounding_a_float64_agrees_with_numpys_conversions() -> None:
    """An independent rounding: NumPy's float64 -> float32 and float64 -> float16 casts round to nearest even."""
    rng = np.random.default_rng(6)
    values = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.uniform(-46, 39, 3000),
                             rng.standard_normal(1000) * 2.0 ** -24, [65519.99, 65520.0, -65520.0, 2.0 ** -25]])
    for x in values:
        q = Fraction(float(x))
        for dtype in TYPES[:2]:
            with np.errstate(over="ignore"):
                assert same(round_fraction(q, dtype), np.float64(x).astype(dtype)), (x, dtype)


def test_ties_go_to_the_even_neighbour() -> None:
    """1 + 2^-11 lies halfway between two float16 values: even is 1, away from zero would be 1 + 2^-10; 1.5 subnormal
    quanta round up to 2 quanta, the even one."""
    tie = Fraction(1) + Fraction(1, 2**11)
    assert round_fraction(tie, np.dtype(np.float16)) == np.float16(1)
    assert by_definition(tie, np.dtype(np.float16)) == np.float16(1)
    assert round_fraction(Fraction(3) * Fraction(1, 2**25), np.dtype(np.float16)) == np.float16(2.0**-23)
