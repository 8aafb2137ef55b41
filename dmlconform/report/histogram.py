"""ULP histogram bars, shared by the terminal (`show`) and the HTML report."""

from __future__ import annotations

import math

from dmlconform.ulp_histogram import UlpBucket

BAR_WIDTH = 40


def histogram_bars(buckets: list[UlpBucket], width: int = BAR_WIDTH) -> list[tuple[UlpBucket, int]]:
    """Each bucket with its bar length on a log scale (counts span orders of magnitude); at least 1 if not empty."""
    top = max((b.count for b in buckets), default=0)
    if top == 0:
        return []
    return [(b, max(1, round(width * math.log1p(b.count) / math.log1p(top)))) for b in buckets]
