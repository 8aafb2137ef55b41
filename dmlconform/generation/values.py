"""Tensor values chosen so that a wrong implementation cannot pass by accident.

* Gradients are distinct and non-zero (as far as the data type has values): a gradient sent to the wrong
  place, dropped or duplicated changes the output, and a zero gradient would hide whether a select kept
  its element.
* Special values (±inf, NaN, the type's extremes, fp16 denormals) are sprinkled where the operator copies
  or selects, never where it sums (a sum of extremes would overflow in some legitimate order).
* fp32 denormals never appear here: D3D lets fp32 arithmetic flush them, so they belong to candidate
  cases (`fp32-denormal-*` behaviours), which ask for them explicitly.

Floats are built from random bit patterns (sign, exponent in a range, every mantissa bit random), so they
exercise every bit of the significand; integers are drawn from the whole range unless a range is given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.draw import Draw


@dataclass(frozen=True)
class FloatLayout:
    mantissa_bits: int
    bias: int


_LAYOUT = {DataType.FLOAT16: FloatLayout(10, 15), DataType.FLOAT32: FloatLayout(23, 127),
           DataType.FLOAT64: FloatLayout(52, 1023)}


def _floats(dtype: DataType, count: int, draw: Draw, exponents: tuple[int, int]) -> np.ndarray:
    """Random finite non-zero floats of both signs with magnitude in [2^low, 2^high)."""
    layout = _LAYOUT[dtype]
    low, high = exponents
    raw = draw.raw(3 * count).reshape(3, count)
    sign = raw[0] & np.uint64(1)
    exponent = (raw[1] % np.uint64(high - low)).astype(np.int64) + low + layout.bias
    mantissa = raw[2] & np.uint64((1 << layout.mantissa_bits) - 1)
    width = dtype.bits
    bits = (sign << np.uint64(width - 1)) | (exponent.astype(np.uint64) << np.uint64(layout.mantissa_bits)) | mantissa
    return bits.astype(dtype.bits_dtype).view(dtype.numpy)


def _integers(dtype: DataType, count: int, draw: Draw, low: int, high: int) -> np.ndarray:
    span = high - low + 1
    raw = draw.raw(count)
    offset = raw % np.uint64(span) if span < 2**64 else raw
    shifted = offset + np.uint64(low % 2**64)  # wraps onto the right value: the result fits the type
    return shifted.view(np.int64).astype(dtype.numpy) if dtype.is_signed else shifted.astype(dtype.numpy)


def distinct_nonzero(dtype: DataType, count: int, draw: Draw, exponents: tuple[int, int] = (-4, 4),
                     int_range: tuple[int, int] | None = None) -> np.ndarray:
    """`count` non-zero values, all different while the range has that many, then repeating in the same order."""
    if dtype.is_float:
        layout = _LAYOUT[dtype]
        capacity = 2 * (exponents[1] - exponents[0]) << layout.mantissa_bits
    else:
        info = np.iinfo(dtype.numpy)
        low, high = int_range or (int(info.min), int(info.max))
        capacity = high - low + 1 - (1 if low <= 0 <= high else 0)
    wanted = min(count, capacity)
    found = np.empty(0, dtype=dtype.numpy)
    for _ in range(64):
        if found.size >= wanted:
            break
        more = max(16, 2 * (wanted - found.size))
        fresh = _floats(dtype, more, draw, exponents) if dtype.is_float else _integers(dtype, more, draw, low, high)
        pool = np.concatenate([found, fresh[fresh != 0]])
        _, first = np.unique(pool.view(dtype.bits_dtype), return_index=True)
        found = pool[np.sort(first)]
    found = found[:wanted]
    if found.size < count:  # the range is exhausted: cycle through it
        found = np.resize(found, count)
    return found


def specials(dtype: DataType, with_nan: bool = True) -> list[np.generic]:
    """Values at the edges of the type (no zero: callers add ±0 where a zero means something)."""
    t = dtype.numpy.type
    if not dtype.is_float:
        info = np.iinfo(dtype.numpy)
        values = [t(info.min), t(info.max), t(1), t(info.max - 1)]
        if dtype.is_signed:
            values += [t(-1), t(info.min + 1)]
        return values
    info = np.finfo(dtype.numpy)
    values = [t(info.max), t(-info.max), t(np.inf), t(-np.inf), t(info.tiny), t(-info.tiny)]
    if dtype is not DataType.FLOAT32:  # fp16 (and fp64) denormals must be preserved, fp32 ones may flush
        values += [t(info.smallest_subnormal), -t(info.smallest_subnormal), t(info.tiny - info.smallest_subnormal)]
    if with_nan:
        values.append(t(np.nan))
    return values


def gradients(dtype: DataType, count: int, draw: Draw, with_specials: bool = True,
              exponents: tuple[int, int] = (-4, 4)) -> np.ndarray:
    """A gradient tensor's elements: distinct and non-zero; with specials, a few of them at the type's edges."""
    values = distinct_nonzero(dtype, count, draw, exponents)
    if with_specials and count >= 4:
        edge = [value for value in specials(dtype) if value != 0 or np.isnan(value)]
        places = draw.shuffled(range(count))[: min(len(edge), count // 4)]
        for place, value in zip(places, draw.shuffled(edge), strict=False):
            values[place] = value
    return values


def small_integer_gradients(dtype: DataType, count: int, draw: Draw) -> np.ndarray:
    """Non-zero integers of magnitude below 256 as floats, distinct while there are enough: every partial sum of up
    to eight of them is an integer below 2048, exact in fp16, so every summation order gives the same bits (for
    answers that no reference variant computes, which are judged against the reference's element counts)."""
    magnitudes = np.array(draw.shuffled(range(1, 256)), dtype=np.float64)
    signs = np.where(draw.indices(count, 2) == 0, -1.0, 1.0)
    return (np.resize(magnitudes, count) * signs).astype(dtype.numpy)


def pick(pool: np.ndarray, count: int, draw: Draw) -> np.ndarray:
    """`count` elements drawn from `pool` with repetition (ties on purpose), each element of the pool
    appearing at least once when there is room."""
    picks = pool[draw.indices(count, pool.size)]
    if count >= pool.size:
        places = draw.shuffled(range(count))[: pool.size]
        picks[places] = pool
    return picks


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """The distinct values of an array in ascending order, as np.unique gives them, but the same on every
    machine: where equal values have different bits (+0 and -0), np.unique keeps whichever its sort kernel
    (chosen by the CPU's SIMD width) puts first. Here +0 stands for both zeros, and NaNs, which no pool holds,
    are refused."""
    if values.dtype.kind == "f":
        if np.isnan(values).any():
            raise ValueError("unique_sorted: a pool of values holds a NaN")
        bits_dtype = DataType.from_numpy(values.dtype).bits_dtype
        # Integers sort alike on every kernel; +0's pattern (all zero bits) comes before -0's, and the stable
        # sort by value keeps that order between the two.
        distinct = np.unique(values.view(bits_dtype)).view(values.dtype)
        ordered = distinct[np.argsort(distinct, kind="stable")]
        keep = np.ones(ordered.size, dtype=bool)
        keep[1:] = ordered[1:] != ordered[:-1]
        return ordered[keep]
    return np.unique(values)


def next_toward(value: np.generic, direction: float) -> np.generic:
    """The neighbour of a float or integer in its own type, one step toward `direction`."""
    t = type(value)
    if np.issubdtype(t, np.floating):
        with np.errstate(over="ignore"):
            return np.nextafter(value, t(direction))
    info = np.iinfo(t)
    step = 1 if direction > 0 else -1
    return t(min(max(int(value) + step, int(info.min)), int(info.max)))
