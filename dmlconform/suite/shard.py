"""`--shard I/N`: a stable, balanced part of the selected cases.

Every case gets an estimated cost (a fixed per-case overhead plus the elements it moves), and cases are
dealt out largest first to the shard with the least cost so far (ties: the lower shard), in the order
(cost, id). The part a case lands in depends only on the set of selected cases, not on the order the
suites were loaded or `-k` listed them in; each shard then runs its cases in selection order.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence

from dmlconform.case import Case

#: Per-case overhead in element equivalents: one harness round trip and judging cost about as much as
#: moving this many elements through the reference and the comparator.
CASE_OVERHEAD = 4096
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
#: More shards than any CI runs: a count past it (on the command line, or in a result being merged) is refused,
#: as the shards are listed one by one.
MAX_SHARDS = 100_000


def parse_shard(text: str) -> tuple[int, int]:
    """'2/3' -> (2, 3); ValueError with a message naming the rule that is broken."""
    match = _SHARD.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not I/N (for example 2/3)")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"{text!r}: need 1 <= I <= N")
    if count > MAX_SHARDS:
        raise ValueError(f"{text!r}: at most {MAX_SHARDS} shards")
    return index, count


def estimated_cost(case: Case) -> int:
    tensors = [*case.inputs.values(), *next(iter(case.answers().values()), {}).values()]
    return CASE_OVERHEAD + sum(int(t.size) for t in tensors)


def shard_positions(cases: Sequence[Case], index: int, count: int) -> list[int]:
    """Positions (in `cases`) of the cases in shard `index` (1-based) of `count`, in selection order."""
    return [position for position, shard in enumerate(shard_assignment(cases, count)) if shard == index]


def shard_assignment(cases: Sequence[Case], count: int) -> list[int]:
    """The shard (1-based) of each case of `cases`, by position: the costliest case first, each to the shard with the
    least load so far (the lowest number among equals)."""
    costs = [estimated_cost(case) for case in cases]
    loads = [(0, shard) for shard in range(count)]  # a heap: the least (load, shard) first
    assigned = [0] * len(cases)
    for position in sorted(range(len(cases)), key=lambda p: (-costs[p], cases[p].full_id)):
        load, shard = heapq.heappop(loads)
        heapq.heappush(loads, (load + costs[position], shard))
        assigned[position] = shard + 1
    return assigned
