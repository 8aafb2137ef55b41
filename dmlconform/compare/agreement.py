"""Whether two backends' outputs agree with each other under a case's own tolerance rule.

The comparator judges an output against a golden. Two backends can each be within the rule of the golden and
still be up to twice the rule apart, so centring the rule on one of them would call two legitimate
implementations different. Two outputs therefore *agree* where some value could be the golden of both,
element by element:

* identical bits, NaN against NaN (any payload), and +0 against -0 always agree; an infinity agrees with
  the same infinity only;
* `exact` (and every integer type): nothing else;
* `ulp:N`: at most 2N ULP apart (N on each side of a common value);
* `bound`: `|a − b| <= allowance(a) + allowance(b)`, each allowance the bound rule centred on one of the two
  outputs (`γ_K·M + ½·ulp + U`); elements the rule makes exact (nothing lands there, or one copy) must be
  equal. The accumulation data (n, M, f, D) is the case's own, as for the golden.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlconform.compare import bound
from dmlconform.compare.accumulation import ElementTerms
from dmlconform.compare.tolerance import RuleKind, Tolerance
from dmlconform.compare.ulp import ulp_distance
from dmlconform.dtypes import DataType


@dataclass(frozen=True)
class Agreement:
    agree: bool
    #: Elements on which the two outputs disagree.
    mismatches: int = 0
    #: Largest ULP distance between them (None where a NaN or infinity is involved in a disagreement).
    max_ulp: int | None = 0
    #: The first disagreeing element.
    first_index: tuple[int, ...] | None = None


def agreement(a: np.ndarray, b: np.ndarray, dtype: DataType, tolerance: Tolerance,
              accumulation: ElementTerms | None = None) -> Agreement:
    """Compare two outputs of the same data type and shape (checked by the caller)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"outputs differ in type or shape: {a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)}")
    differs = np.flatnonzero(a.view(dtype.bits_dtype) != b.view(dtype.bits_dtype))
    if differs.size == 0:
        return Agreement(True)
    if not dtype.is_float:
        first = tuple(int(i) for i in np.unravel_index(int(differs[0]), a.shape))
        return Agreement(False, int(differs.size), None, first)
    x, y = a.ravel()[differs], b.ravel()[differs]
    both_nan = np.isnan(x) & np.isnan(y)
    finite = np.isfinite(x) & np.isfinite(y)
    ulps = np.zeros(x.shape, dtype=np.uint64)
    ulps[finite] = ulp_distance(x[finite], y[finite])
    if tolerance.kind is RuleKind.BOUND:
        if accumulation is None:
            raise ValueError("the bound rule needs the case's accumulation data")
        allowed = np.zeros(x.shape, dtype=np.float64)
        for centre in (x, y):
            allowed = allowed + bound.allowance_at(centre, accumulation, a.shape, differs, dtype, tolerance.k)
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(x.astype(np.float64) - y.astype(np.float64))
        close = finite & ((ulps == 0) | (gap <= allowed))
    else:
        limit = 0 if tolerance.kind is RuleKind.EXACT else 2 * tolerance.ulps
        close = finite & (ulps <= np.uint64(limit))
    bad = ~(both_nan | close)
    count = int(bad.sum())
    if count == 0:
        return Agreement(True)
    max_ulp = None if (bad & ~finite).any() else int(ulps[bad].max())
    first = tuple(int(i) for i in np.unravel_index(int(differs[np.argmax(bad)]), a.shape))
    return Agreement(False, count, max_ulp, first)
