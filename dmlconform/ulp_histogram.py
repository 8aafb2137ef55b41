"""How far each output element is from its expected value, counted in power-of-two buckets of ULPs.

Buckets are 0, 1, 2–3, 4–7, …: bucket k holds the distances d with 2^(k-1) <= d < 2^k. Elements off by a
NaN or an infinity have no distance and are counted apart. Integers count their absolute difference.
Plain data, so that results carry it and reports draw it without the tensors.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dmlconform.compare.ulp import ulp_distance

#: Bucket k starts at 2^(k-1); searching a distance among these lower edges gives its bucket.
_EDGES = np.array([1 << k for k in range(64)], dtype=np.uint64)


@dataclass(frozen=True)
class UlpBucket:
    #: Smallest and largest distance in the bucket; both None for elements off by a NaN or an infinity.
    low: int | None
    high: int | None
    count: int

    @property
    def label(self) -> str:
        if self.low is None:
            return "NaN/inf"
        return str(self.low) if self.low == self.high else f"{self.low}–{self.high}"

    @property
    def short_label(self) -> str:
        """The label, with powers of two for wide buckets (2^30–2^31−1 rather than ten-digit numbers)."""
        if self.low is None or self.low < 1024:
            return self.label
        k = self.low.bit_length() - 1
        return f"2^{k}–2^{k + 1}−1"

    @property
    def nonfinite(self) -> bool:
        return self.low is None


def bucket_bounds(k: int) -> tuple[int, int]:
    return (0, 0) if k == 0 else (1 << (k - 1), (1 << k) - 1)


def ulp_histogram(expected: np.ndarray, actual: np.ndarray) -> list[UlpBucket]:
    """Non-empty buckets in order, the NaN/inf count last; identical bits and NaN against NaN count as 0."""
    e, a = expected.ravel(), actual.ravel()
    counts = np.zeros(65, dtype=np.int64)
    nonfinite = 0
    if e.dtype.kind == "f":
        same = e.view(f"u{e.itemsize}") == a.view(f"u{a.itemsize}")
        same |= np.isnan(e) & np.isnan(a)
        finite = np.isfinite(e) & np.isfinite(a) & ~same
        distances = ulp_distance(e[finite], a[finite])
        nonfinite = int((~same & ~finite).sum())
        counts[0] += int(same.sum())
    else:
        distances = integer_distance(e, a)
    counts += np.bincount(np.searchsorted(_EDGES, distances, side="right"), minlength=65)
    buckets = [UlpBucket(*bucket_bounds(k), int(n)) for k, n in enumerate(counts.tolist()) if n]
    if nonfinite:
        buckets.append(UlpBucket(None, None, nonfinite))
    return buckets


def merge_histograms(histograms: Iterable[list[UlpBucket]]) -> list[UlpBucket]:
    """One histogram of several outputs."""
    totals: dict[tuple[int | None, int | None], int] = {}
    for histogram in histograms:
        for bucket in histogram:
            totals[(bucket.low, bucket.high)] = totals.get((bucket.low, bucket.high), 0) + bucket.count
    finite = sorted((key for key in totals if key[0] is not None), key=lambda key: key[0] or 0)
    keys = finite + [key for key in totals if key[0] is None]
    return [UlpBucket(low, high, totals[(low, high)]) for low, high in keys]


def integer_distance(e: np.ndarray, a: np.ndarray) -> np.ndarray:
    """|e − a| as uint64, exact across the whole 64-bit range (two's complement difference of the larger)."""
    wide = np.uint64 if e.dtype.kind == "u" else np.int64
    high, low = np.maximum(e.astype(wide), a.astype(wide)), np.minimum(e.astype(wide), a.astype(wide))
    return high.view(np.uint64) - low.view(np.uint64)
