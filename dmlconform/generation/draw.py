"""Deterministic choices for the generator: the PCG64 bit stream and integer arithmetic only.

NumPy keeps bit generators and SeedSequence stable across versions (NEP 19); `Generator` methods may
change their algorithms, so none is used. A Draw is seeded with a family's seed and the case's key, so
a case's data depends on nothing but its own identity: adding a case never changes another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


#: Words a Draw takes from its stream at a time for `below`: one NumPy call per word was most of a draw's cost.
AHEAD = 64


class Draw:
    def __init__(self, seed: int, *key: int) -> None:
        self._bits = np.random.PCG64([seed, *key])
        # Words taken from the stream ahead of use, and the next unused one: every word is still used in stream
        # order, whether `below` or `raw` asks for it, so the draws are those of taking words one at a time.
        self._ahead: list[int] = []
        self._next = 0

    def raw(self, count: int) -> np.ndarray:
        """`count` uniformly distributed 64-bit words."""
        taken = self._ahead[self._next:self._next + count]
        if not taken:
            return self._bits.random_raw(count)
        self._next += len(taken)
        return np.concatenate([np.array(taken, dtype=np.uint64), self._bits.random_raw(count - len(taken))])

    def below(self, bound: int) -> int:
        """An integer in [0, bound): the modulo bias is below 2^-40 for every bound used here."""
        if bound < 1:
            raise ValueError(f"below({bound})")
        if self._next == len(self._ahead):
            self._ahead, self._next = self._bits.random_raw(AHEAD).tolist(), 0
        word = self._ahead[self._next]
        self._next += 1
        return word % bound

    def between(self, low: int, high: int) -> int:
        """An integer in [low, high], both included."""
        return low + self.below(high - low + 1)

    def chance(self, numerator: int, denominator: int) -> bool:
        return self.below(denominator) < numerator

    def choice(self, items: Sequence[T]) -> T:
        return items[self.below(len(items))]

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A Fisher-Yates shuffle driven by this stream: swap i with below(i + 1), i from the last down to 1, its
        words taken at once (a call of `below` a swap was most of a shuffle's time)."""
        out = list(items)
        count = len(out) - 1
        if count < 1:
            return out
        words = self._ahead[self._next:self._next + count]
        self._next += len(words)
        if len(words) < count:
            words += self._bits.random_raw(count - len(words)).tolist()
        for i, word in zip(range(count, 0, -1), words, strict=True):
            j = word % (i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def fraction(self) -> float:
        """One float in [0, 1) from the next word: `unit(1)[0]` without an array (the top 53 bits, exactly scaled)."""
        if self._next == len(self._ahead):
            self._ahead, self._next = self._bits.random_raw(AHEAD).tolist(), 0
        word = self._ahead[self._next]
        self._next += 1
        return (word >> 11) * 2.0**-53

    def unit(self, count: int) -> np.ndarray:
        """`count` floats in [0, 1): the top 53 bits of each word, scaled exactly."""
        return (self.raw(count) >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def indices(self, count: int, bound: int) -> np.ndarray:
        """`count` integers in [0, bound) as int64."""
        return (self.raw(count) % np.uint64(bound)).astype(np.int64)


def shape_for(draw: Draw, rank: int, elements: int) -> tuple[int, ...]:
    """A shape of `rank` dimensions with at most `elements` elements and, where it fits, close to that many:
    a target count drawn between a quarter of the limit and the limit, grown one random dimension at a time,
    so that some dimensions stay 1 and others are long."""
    target = max(1, draw.between(max(1, elements // 4), max(1, elements)))
    dims = [1] * rank
    total = 1
    stuck = 0
    while stuck < 4 * rank:
        axis = draw.below(rank)
        grown = total // dims[axis] * (dims[axis] + 1)
        if grown > target:
            stuck += 1
            continue
        dims[axis] += 1
        total = grown
    return tuple(dims)
