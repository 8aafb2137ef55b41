"""What the reference knows about each summed output element, for the `bound` rule (contract §3).

Plain data, produced by the summing operators' references (MaxPoolingGrad, ResampleGrad1) and read by
the comparator. Every array broadcasts to the output's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Accumulation:
    """Per output element: the terms `t_i = w_i·dy_i` that land on it.

    value: v = Σ t_i in float64 (the golden is v rounded once to the data type).
    abs_sum: M = Σ |t_i|.
    count: n, the number of terms (a LINEAR tap whose weight is 0 is not a term; two taps clamped onto
        the same element are two terms, because an implementation multiplies and adds them separately).
    unit_weights: whether every weight w_i is exactly ±1 (then a product is a copy and cannot round).
    """

    value: np.ndarray
    abs_sum: np.ndarray
    count: np.ndarray
    unit_weights: np.ndarray | bool = True
