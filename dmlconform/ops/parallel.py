"""Run a reference kernel's independent chunks on the machine's cores.

NumPy releases the GIL inside its array loops, so threads that each work on their own chunk of planes run
in parallel. Each chunk writes its own slice of the output, so the result does not depend on how many
threads there are or in which order they finish: every sum is still formed in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

#: Chunks below this many are run in the calling thread: handing them out costs more than it gains.
MIN_CHUNKS = 4


def threads() -> int:
    """Cores this process may use (its CPU affinity where the platform says), or DMLCONFORM_THREADS."""
    configured = os.environ.get("DMLCONFORM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@cache
def _executor(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dmlconform-kernel")


def in_parallel(work: Callable[[int], None], chunks: Iterable[int]) -> None:
    """work(chunk) for every chunk, on up to threads() threads; exceptions propagate."""
    chunks = list(chunks)
    workers = min(threads(), len(chunks)) if len(chunks) >= MIN_CHUNKS else 1
    if workers <= 1:
        for chunk in chunks:
            work(chunk)
        return
    for future in [_executor(workers).submit(work, chunk) for chunk in chunks]:
        future.result()
