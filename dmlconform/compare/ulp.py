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
    ia, ib = ordered_integers(a), ordered_integers(b)
    high, low = np.maximum(ia, ib), np.minimum(ia, ib)
    # The true difference is below 2^64; subtracting in uint64 gives it without overflow.
    return high.view(np.uint64) - low.view(np.uint64)


def ulp_of(values: np.ndarray) -> np.ndarray:
    """One ULP of each value in its own type (the spacing at |value|), as float64."""
    magnitude = np.abs(values)
    with np.errstate(invalid="ignore", over="ignore"):
        step = np.spacing(magnitude)
        # At the largest finite value the step up is to infinity; use the step down instead.
        top = np.isinf(step) & np.isfinite(magnitude)
        step = np.where(top, magnitude - np.nextafter(magnitude, np.zeros_like(magnitude)), step)
    return step.astype(np.float64)
