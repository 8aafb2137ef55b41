"""ULP distance on the sign-magnitude integer line of the data type's own width.

+0 and -0 are 0 ULP apart. NaN and infinity are not given a distance here; the comparator
handles them first (NaN matches any NaN, an infinity only itself).
"""

from __future__ import annotations

import numpy as np


def ordered_integers(values: np.ndarray) -> np.ndarray:
    """Map floats to int64 so that adjacent floats differ by 1 and ±0 both map to 0."""
    width = values.dtype.itemsize * 8
    bits = values.view(f"i{values.dtype.itemsize}").astype(np.int64)
    if width == 64:
        magnitude = bits & np.int64(0x7FFF_FFFF_FFFF_FFFF)
        return np.where(bits < 0, -magnitude, bits)
    sign = np.int64(1) << (width - 1)
    magnitude = bits & (sign - 1)
    return np.where(bits < 0, -magnitude, magnitude)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise ULP distance as uint64 (exact also for float64 across the whole range)."""
    if a.dtype.itemsize == 8:
        ia, ib = ordered_integers(a), ordered_integers(b)
    else:  # the data type's own width: half the memory traffic of int64 for FLOAT32, a quarter for FLOAT16
        ia, ib = _ordered_same_width(a), _ordered_same_width(b)
    high, low = np.maximum(ia, ib), np.minimum(ia, ib)
    # The true difference is below 2^width; subtracting in the unsigned type of that width gives it exactly.
    unsigned = np.dtype(f"u{ia.dtype.itemsize}")
    return np.subtract(high.view(unsigned), low.view(unsigned)).astype(np.uint64)


def _ordered_same_width(values: np.ndarray) -> np.ndarray:
    """ordered_integers in the signed type of the data type's width (sign-magnitude -> two's complement).

    For a negative pattern, flipping the magnitude bits gives -1 - magnitude; adding 1 back gives -magnitude,
    so -0 and +0 both map to 0. Four integer passes, no branches."""
    width = values.dtype.itemsize * 8
    bits = values.view(f"i{values.dtype.itemsize}")
    sign = bits >> (width - 1)  # 0 or -1
    ordered = sign & np.array((1 << (width - 1)) - 1, dtype=bits.dtype)
    np.bitwise_xor(ordered, bits, out=ordered)
    np.subtract(ordered, sign, out=ordered)
    return ordered


def ulp_of(values: np.ndarray) -> np.ndarray:
    """One ULP of each value in its own type (the spacing at |value|), as float64."""
    magnitude = np.abs(values)
    with np.errstate(invalid="ignore", over="ignore"):
        step = np.spacing(magnitude)
        # At the largest finite value the step up is to infinity; use the step down instead.
        top = np.isinf(step) & np.isfinite(magnitude)
        step = np.where(top, magnitude - np.nextafter(magnitude, np.zeros_like(magnitude)), step)
    return step.astype(np.float64)
