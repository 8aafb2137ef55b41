"""DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD (v0): dX = (X <= Min or X >= Max) ? 0 : dY, with Min and Max DML FLOATs.

ClipGrad1's select (`_select.ElementwiseSelectGrad`) with one difference that is the heart of this operator: Min and
Max are 32-bit floats whatever the tensors' data type, so an integer or FLOAT16 X meets a float bound, and the page
does not say how. Each plausible reading is a reference variant (contract §2), one open choice changed at a time
from the default, which is what DirectML 1.15.4 was measured to do (examples/dml_harness/investigate/
clip_grad_bounds.py; docs/reference/operators.md):

* an integer X (OC-CG3, behaviour `clip-grad-integer-bounds`): `bound-in-type` (default: each bound clamped to the
  type's range and converted to it toward zero, as a C cast after a clamp; X compared in its own type), `exact` (X
  against the bound as real numbers, as a double compare does for every type up to 32 bits), `x-in-float32` (X
  converted to float32, nearest even, as an HLSL `(float)x` compare: INT32 above 2^24 and 64-bit integers round),
  `x-in-float64` (X converted to a double: 64-bit integers above 2^53 round), `bound-rounded` (each bound clamped and
  converted to nearest, ties to even: HLSL's round) and `bound-rounded-away` (ties away from zero: C's lround);
* a NaN bound beside an integer X (behaviour `clip-grad-integer-nan-bound`): converted to the type, it is the x86
  conversion's integer indefinite, as DirectML converts it on x64 (`bound-in-type`: INT32 -2^31, INT64 -2^63,
  UINT64 2^63, and 0 for the narrower types and UINT32, which it converts through a wider register), or 0
  (`nan-bound-zero`: D3D's float-to-integer rule, and an ARM64 conversion); compared as a number, no X is above or
  below it, so `Min < X < Max` zeroes every X (`exact`) and the page's `X <= Min or X >= Max` none for that bound
  (`nan-bound-ignored`);
* a FLOAT16 X (behaviour `clip-grad-float16-bounds`): `bound-in-type` (default: each bound clamped to ±65504 and
  rounded to the nearest FLOAT16, ties to even), `exact` (X converted to float32, which is exact, against the
  bound), `bound-half-overflowing` (IEEE's conversion, a bound past 65504 becoming ±inf), `bound-half-toward-zero`
  (D3D's float-to-half rule: toward zero, a finite bound past the range becoming ±65504);
* NaN in X (OC-CG1, behaviour `clip-grad-nan-input`): `Min < X < Max ? dY : 0` zeroes it (`nan-zero`, the default,
  as DirectML does and as it does for ClipGrad1); the page's pseudo-code read literally passes dY (`nan-passes`).
  The two forms also part for a NaN bound on float tensors (behaviour `clip-grad-float-nan-bound`): every X fails
  `X > NaN`, and every X fails `X <= NaN`.

A FLOAT32 X meets its bounds unconverted (DirectML does not clamp an infinite one). A zeroed element is +0 (a select,
as DirectML does; OC-CG2: the sign of a zero is free under the comparison, contract §3). Min > Max is computed as
written (OC-CG4, as DirectML does): every X is then <= Min or >= Max, and dX is all zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops._select import ElementwiseSelectGrad
from dmlconform.ops.base import Description, Param, ParamKind

_31 = frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.INT16, T.INT8, T.UINT32, T.UINT16, T.UINT8})
SUPPORT = SupportTable((
    SupportRow(L.L3_1, 1, 8, _31),
    SupportRow(L.L5_0, 1, 8, _31 | {T.INT64, T.UINT64}),
))


@dataclass(frozen=True)
class Reading:
    """One answer to every open choice (module docstring)."""

    #: How an integer X meets a bound: in-type (the bound truncated into the type), rounded (ties to even),
    #: rounded-away (ties away from zero), exact, float32, float64.
    integers: str = "in-type"
    #: What a NaN bound becomes in an integer type: indefinite (x86's), zero.
    nan_bound: str = "indefinite"
    #: How a FLOAT16 X meets a bound: in-type (clamped, nearest), exact, overflowing (nearest, past 65504 to inf),
    #: toward-zero (D3D's).
    half: str = "in-type"
    #: NaN in X, and a NaN bound on float tensors: nan-zero, nan-passes.
    nan: str = "nan-zero"


DEFAULT = Reading()

#: Every variant: the default (what DirectML 1.15.4 does) and each other reading of one choice.
VARIANTS: dict[str, Reading] = {
    "bound-in-type": DEFAULT,
    "exact": replace(DEFAULT, integers="exact", half="exact"),
    "x-in-float32": replace(DEFAULT, integers="float32", half="exact"),
    "x-in-float64": replace(DEFAULT, integers="float64", half="exact"),
    "bound-rounded": replace(DEFAULT, integers="rounded"),
    "bound-rounded-away": replace(DEFAULT, integers="rounded-away"),
    "nan-bound-zero": replace(DEFAULT, nan_bound="zero"),
    "nan-bound-ignored": replace(DEFAULT, integers="exact", half="exact", nan="nan-passes"),
    "bound-half-overflowing": replace(DEFAULT, half="overflowing"),
    "bound-half-toward-zero": replace(DEFAULT, half="toward-zero"),
    "nan-passes": replace(DEFAULT, nan="nan-passes"),
}

INTEGER_BOUNDS = "clip-grad-integer-bounds"
INTEGER_NAN_BOUND = "clip-grad-integer-nan-bound"
FLOAT16_BOUNDS = "clip-grad-float16-bounds"
NAN_INPUT = "clip-grad-nan-input"
FLOAT_NAN_BOUND = "clip-grad-float-nan-bound"

#: Per behaviour the pages leave open, its candidates: candidate name -> reference variant.
CANDIDATES: dict[str, dict[str, str]] = {
    INTEGER_BOUNDS: {name: name for name in ("bound-in-type", "exact", "x-in-float32", "x-in-float64",
                                             "bound-rounded", "bound-rounded-away")},
    INTEGER_NAN_BOUND: {"nan-bound-indefinite": "bound-in-type", "nan-bound-zero": "nan-bound-zero",
                        "exact": "exact", "nan-bound-ignored": "nan-bound-ignored"},
    FLOAT16_BOUNDS: {name: name for name in ("bound-in-type", "exact", "bound-half-overflowing",
                                             "bound-half-toward-zero")},
    NAN_INPUT: {"nan-zero": "bound-in-type", "nan-passes": "nan-passes"},
    FLOAT_NAN_BOUND: {"nan-zero": "bound-in-type", "nan-passes": "nan-passes"},
}


# -- comparing an X of the tensors' type with a FLOAT bound ---------------------------------------------------------
def round_integer(value: int, significand_bits: int) -> int:
    """An integer rounded to a float of `significand_bits` bits (nearest, ties to even), exactly (no range limit:
    every 64-bit integer is far inside float32's)."""
    magnitude = abs(value)
    excess = magnitude.bit_length() - significand_bits
    if excess <= 0:
        return value
    kept, rest = divmod(magnitude, 1 << excess)
    half = 1 << (excess - 1)
    if rest > half or (rest == half and kept & 1):
        kept += 1
    rounded = kept << excess
    return rounded if value >= 0 else -rounded


#: What x86's float-to-integer conversion makes of NaN (its "integer indefinite", the sign bit alone, in the register
#: the compiler converts through: 32 bits for INT32, 64 bits for UINT32 and the 64-bit types, 32 bits for the rest),
#: cut to the type: DirectML 1.15.4 converts a NaN bound so on x64.
NAN_AS_INDEFINITE = {T.INT32: -(2**31), T.INT64: -(2**63), T.UINT64: 2**63}
HALF_MAX = 65504.0


def integer_bound(bound: float, dtype: DataType, reading: Reading) -> int:
    """A bound converted into an integer type (the in-type and rounded readings): clamped to the type's range, then
    toward zero or to nearest (ties to even, or away from zero); NaN as `reading.nan_bound` says."""
    info = np.iinfo(dtype.numpy)
    if math.isnan(bound):
        return NAN_AS_INDEFINITE.get(dtype, 0) if reading.nan_bound == "indefinite" else 0
    if math.isinf(bound):
        return int(info.max) if bound > 0 else int(info.min)
    if reading.integers == "rounded":
        whole = round(bound)  # ties to even
    elif reading.integers == "rounded-away":
        whole = int(math.copysign(math.floor(abs(bound) + 0.5), bound))  # right for every float32 bound
    else:
        whole = math.trunc(bound)
    return min(max(whole, int(info.min)), int(info.max))


def half_bound(bound: float, reading: Reading) -> float:
    """A bound as a FLOAT16 X meets it (as a Python float): unconverted (exact), or converted to FLOAT16."""
    if reading.half == "exact" or math.isnan(bound):
        return bound
    if reading.half == "toward-zero":
        return _half_toward_zero(bound)
    if reading.half == "in-type":
        bound = min(max(bound, -HALF_MAX), HALF_MAX)
    with np.errstate(over="ignore"):
        return float(np.float16(bound))  # nearest, ties to even; past 65520 to ±inf


def _half_toward_zero(value: float) -> float:
    """float32 -> float16 toward zero, a finite value past the range becoming ±65504 (D3D's conversion rule)."""
    if math.isinf(value):
        return value
    with np.errstate(over="ignore"):
        half = float(np.float16(value))  # nearest; step back toward zero where that went away from it
    if abs(half) > abs(value):
        half = float(np.nextafter(np.float16(half), np.float16(0)))
    return math.copysign(min(abs(half), HALF_MAX), value)


def _last_integer_at_or_below(bound: float, low: int, high: int, convert: Callable[[int], int]) -> int | None:
    """The largest t in [low, high] with convert(t) <= bound (convert is monotonic), None if there is none."""
    if convert(low) > bound:
        return None
    if convert(high) <= bound:
        return high
    while high - low > 1:  # invariant: convert(low) <= bound < convert(high)
        middle = (low + high) // 2
        if convert(middle) <= bound:
            low = middle
        else:
            high = middle
    return low


def _converter(integers: str) -> Callable[[int], int]:
    bits = {"exact": None, "float32": 24, "float64": 53}[integers]
    return (lambda t: t) if bits is None else (lambda t: round_integer(t, bits))


@dataclass(frozen=True)
class Comparisons:
    """X's four comparisons with the bounds, each a boolean array (NaN fails all four)."""

    at_or_below_min: np.ndarray
    above_min: np.ndarray
    at_or_above_max: np.ndarray
    below_max: np.ndarray


def _integer_comparisons(x: np.ndarray, low: float, high: float, reading: Reading) -> Comparisons:
    dtype = DataType.from_numpy(x.dtype)
    t = x.dtype.type
    if reading.integers in ("in-type", "rounded", "rounded-away"):
        at_or_below = x <= t(integer_bound(low, dtype, reading))
        at_or_above = x >= t(integer_bound(high, dtype, reading))
        return Comparisons(at_or_below, ~at_or_below, at_or_above, ~at_or_above)
    info = np.iinfo(x.dtype)
    first, last = int(info.min), int(info.max)
    convert = _converter(reading.integers)
    none = np.zeros(x.shape, dtype=bool)
    # Python compares an int with a float exactly, so each threshold is exact over the whole 64-bit range.
    if math.isnan(low):
        at_or_below = above = none
    else:
        threshold = _last_integer_at_or_below(low, first, last, convert)
        at_or_below = none if threshold is None else x <= t(threshold)
        above = ~at_or_below
    if math.isnan(high):
        at_or_above = below = none
    else:
        # The smallest t with convert(t) >= high, found as the largest s = -t with -convert(-s) <= -high.
        mirrored = _last_integer_at_or_below(-high, -last, -first, lambda s: -convert(-s))
        at_or_above = none if mirrored is None else x >= t(-mirrored)
        below = ~at_or_above
    return Comparisons(at_or_below, above, at_or_above, below)


def compare(x: np.ndarray, low: float, high: float, reading: Reading) -> Comparisons:
    """X against Min and Max under a reading."""
    if x.dtype.kind in "iu":
        return _integer_comparisons(x, low, high, reading)
    if x.dtype == np.float16:
        low, high = half_bound(low, reading), half_bound(high, reading)
    # Every FLOAT16 and FLOAT32 value, and every bound, is exact in float64: the comparison is exact.
    wide, lo, hi = x.astype(np.float64), np.float64(low), np.float64(high)
    return Comparisons(wide <= lo, wide > lo, wide >= hi, wide < hi)


def behaviours(desc: Description) -> tuple[str, ...]:
    """The open choices a description's answer may depend on, whatever X holds: its data type's bounds reading, a
    NaN bound's, and NaN in X for float types."""
    dtype = desc.output.dtype
    bounds = (desc.params["Min"], desc.params["Max"])
    nan_bound = any(math.isnan(b) for b in bounds)
    if dtype.is_float:
        found = [NAN_INPUT] + ([FLOAT_NAN_BOUND] if nan_bound else [])
        return tuple(found + ([FLOAT16_BOUNDS] if dtype is DataType.FLOAT16 else []))
    return (INTEGER_BOUNDS,) + ((INTEGER_NAN_BOUND,) if nan_bound else ())


class ClipGrad(ElementwiseSelectGrad):
    name = "ELEMENT_WISE_CLIP_GRAD"
    support = SUPPORT
    params = (Param("Min", ParamKind.FLOAT), Param("Max", ParamKind.FLOAT))
    variants = tuple(VARIANTS)
    # As ClipGrad1's page: "OutputTensor is permitted to alias *InputTensor*"; the one output is OutputGradientTensor
    # (docs/api-surface.md).
    in_place = ("OutputGradientTensor", "InputTensor")

    def keep(self, x: np.ndarray, desc: Description, variant: str) -> np.ndarray:
        reading = VARIANTS[variant]
        c = compare(x, desc.params["Min"], desc.params["Max"], reading)
        if reading.nan == "nan-zero":
            return c.above_min & c.below_max
        return ~(c.at_or_below_min | c.at_or_above_max)


CLIP_GRAD = ClipGrad()
