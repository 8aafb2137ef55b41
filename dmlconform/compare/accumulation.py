"""What the reference knows about each summed output element, for the `bound` rule (docs/reference/comparison.md).

Plain data, produced by the summing operators' references (MaxPoolingGrad, ResampleGrad1) and read by
the comparator. Every array broadcasts to the output's shape.

The comparator reads it only at the elements whose bits differ from the golden (`at`), which for a
conforming result is none. The references therefore return a `LazyAccumulation`, which computes the data at
the elements asked for and keeps nothing of the output's size: a 256 MiB output costs no float64 arrays of
twice its size unless every element of it is judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Accumulation:
    """Per output element: the terms `t_i = w_i·dy_i` that land on it.

    value: v = Σ t_i in float64 (the golden is v rounded once to the data type).
    abs_sum: M = Σ |t_i|.
    count: n, the number of terms (a LINEAR tap whose weight is 0 is not a term; two taps clamped onto
        the same element are two terms, because an implementation multiplies and adds them separately).
    weight_factors: f, how many factors of a term's weight are not ±1 (a resample weight is the product
        of one weight per axis). 0 means every weight is ±1: each product is a copy and cannot round.
    abs_gradient_sum: D = Σ |dy_i|, what a weight that underflows as it is rounded can cost (read only
        where f > 0).
    coordinate_slack: C, how far the element may move because the coordinates that weight its terms are
        not known exactly (ResampleGrad1: dmlconform/ops/_resample_coordinates.py); 0 elsewhere.
    coordinate_terms: m, how many terms those coordinates may bring to the element besides its own n (a NEAREST
        gradient whose pick may land here, a LINEAR tap that may reach it): a sum of up to n + m terms rounds.
    quotient_roundings: r, the roundings a term's weight and its product with dy may cost where that is more than the
        2f of weights that are products of factors: AveragePoolingGrad's `dy / divisor`, a division D3D allows
        2.5 ULP of the quotient (5u relative), counts 5 (docs/tolerances.md §5c); 0 elsewhere.
    """

    value: np.ndarray
    abs_sum: np.ndarray
    count: np.ndarray
    weight_factors: np.ndarray | int = 0
    abs_gradient_sum: np.ndarray | float = 0.0
    coordinate_slack: np.ndarray | float = 0.0
    coordinate_terms: np.ndarray | int = 0
    quotient_roundings: np.ndarray | int = 0

    def at(self, flat: np.ndarray, shape: tuple[int, ...]) -> Accumulation:
        """The same data at the given flat indices of an output of `shape`, as 1-D arrays."""

        def pick(values: np.ndarray | float) -> np.ndarray:
            return np.broadcast_to(values, shape).reshape(-1)[flat]

        return Accumulation(pick(self.value), pick(self.abs_sum), pick(self.count), pick(self.weight_factors),
                            pick(self.abs_gradient_sum), pick(self.coordinate_slack), pick(self.coordinate_terms),
                            pick(self.quotient_roundings))

    def sums_at(self, flat: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """v and M alone at the given flat indices (`at`'s other fields can cost far more: see LazyAccumulation)."""
        return (np.broadcast_to(self.value, shape).reshape(-1)[flat],
                np.broadcast_to(self.abs_sum, shape).reshape(-1)[flat])


class LazyAccumulation:
    """Accumulation data computed when asked for: at some elements (`at`), or for the whole output (`dense`,
    and the attributes of Accumulation, which read it). It reads the reference's inputs when asked, so they
    must not change while it is in use.

    A field of what `at` returns is a 1-D array over the elements asked for, or a scalar that stands for all
    of them (as in Accumulation, whose fields broadcast)."""

    shape: tuple[int, ...]

    def at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> Accumulation:
        """The data at `flat`, flat indices in ascending order (as the comparator finds them)."""
        raise NotImplementedError

    def sums_at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """v and M alone at `flat` (ascending flat indices). What `show` reads of many references that differ only in
        the gradient (dmlconform/triage/inspection.py); an operator whose other fields cost more than these (the
        coordinate slack of ResampleGrad1) computes them on their own."""
        asked = self.at(flat, shape)
        return np.broadcast_to(asked.value, flat.shape), np.broadcast_to(asked.abs_sum, flat.shape)

    @cached_property
    def dense(self) -> Accumulation:
        whole = self.at(np.arange(math.prod(self.shape)))
        fields = (whole.value, whole.abs_sum, whole.count, whole.weight_factors, whole.abs_gradient_sum,
                  whole.coordinate_slack, whole.coordinate_terms, whole.quotient_roundings)
        return Accumulation(*(a if np.ndim(a) == 0 else np.reshape(a, self.shape) for a in fields))

    @property
    def value(self) -> np.ndarray:
        return self.dense.value

    @property
    def abs_sum(self) -> np.ndarray:
        return self.dense.abs_sum

    @property
    def count(self) -> np.ndarray:
        return self.dense.count

    @property
    def weight_factors(self) -> np.ndarray | int:
        return self.dense.weight_factors

    @property
    def abs_gradient_sum(self) -> np.ndarray | float:
        return self.dense.abs_gradient_sum

    @property
    def coordinate_slack(self) -> np.ndarray | float:
        return self.dense.coordinate_slack

    @property
    def coordinate_terms(self) -> np.ndarray | int:
        return self.dense.coordinate_terms

    @property
    def quotient_roundings(self) -> np.ndarray | int:
        return self.dense.quotient_roundings


ElementTerms = Accumulation | LazyAccumulation
