"""What the benchmarks share: timing ours and a peer in alternation, so that load from other processes hits both.

The benchmarks run as scripts (`python benchmarks/NAME.py`), which puts this folder on the import path.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def paired_medians(ours: Callable[[], object], peer: Callable[[], object], repeats: int) -> tuple[float, float]:
    ours()  # warm-up: first-touch page faults and thread start are not what we measure
    peer()
    mine, theirs = [], []
    for _ in range(repeats):
        for fn, times in ((ours, mine), (peer, theirs)):
            clock = time.perf_counter()
            fn()
            times.append(time.perf_counter() - clock)
    return statistics.median(mine), statistics.median(theirs)
