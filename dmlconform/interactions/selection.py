"""Choosing a few cases that cover every possible combination: greedy set cover over drawn candidates.

The candidates come from a generator that can reach every combination (values and geometry drawn from the
features' classes); the choice takes, each time, the candidate that covers the most combinations still missing
(lowest index on a tie, so the choice is the same on every machine). Greedy set cover is within a factor ln(n) of
the fewest cases, which is what pairwise test construction (AETG) does with its own candidates; here the candidates
are whole cases, so what a case covers is measured, not assumed.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence

from dmlconform.interactions.model import OperatorModel, Site

#: (interaction position in the model's list of that order, order, values)
Combination = tuple[int, int, tuple[str, ...]]


def combinations(model: OperatorModel, sites: Iterable[Site], orders: Sequence[int],
                 refusable: bool = False) -> set[Combination]:
    """What the sites cover; of a case an implementation may refuse (`refusable`), only the interactions with a
    refusable feature (OperatorModel.refusable)."""
    sites = list(sites)
    found: set[Combination] = set()
    for order in orders:
        for position, interaction in enumerate(model.interactions(order)):
            if refusable and not model.counts_for_refusable(interaction):
                continue
            found.update(zip(itertools.repeat(position), itertools.repeat(order), model.project(sites, interaction)))
    return found


_POSSIBLE: dict[tuple[int, tuple[int, ...]], frozenset[Combination]] = {}


def possible(model: OperatorModel, orders: Sequence[int]) -> frozenset[Combination]:
    key = (id(model), tuple(orders))
    if key not in _POSSIBLE:
        _POSSIBLE[key] = frozenset((position, order, values) for order in orders
                                   for position, interaction in enumerate(model.interactions(order))
                                   for values in model.possible(interaction))
    return _POSSIBLE[key]


def choose(candidates: Sequence[set[Combination]], goal: set[Combination],
           acceptable: Callable[[int], bool] = lambda index: True) -> tuple[list[int], set[Combination]]:
    """Indexes of candidates, in the order chosen, until the goal is covered or no candidate adds to it; and what
    stays missing. `acceptable(index)` is asked of a candidate before it is taken (a refusal drops it)."""
    missing = set(goal)
    heap = [(-len(c & missing), index) for index, c in enumerate(candidates)]
    heapq.heapify(heap)
    chosen: list[int] = []
    while missing and heap:
        negative_gain, index = heapq.heappop(heap)
        gain = len(candidates[index] & missing)
        if gain == 0:
            continue  # gains only shrink: it can never add anything
        if gain != -negative_gain:  # stale: gains only shrink, so push back with the true one
            heapq.heappush(heap, (-gain, index))
            continue
        if not acceptable(index):
            continue
        chosen.append(index)
        missing -= candidates[index]
    return chosen, missing
