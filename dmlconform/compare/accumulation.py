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
    weight_factors: f, how many factors of a term's weight are not ±1 (a resample weight is the product
        of one weight per axis). 0 means every weight is ±1: each product is a copy and cannot round.
    abs_gradient_sum: D = Σ |dy_i|, what a weight that underflows as it is rounded can cost (read only
        where f > 0).
    coordinate_slack: C, how far the element may move because the coordinates that weight its terms are
        not known exactly (ResampleGrad1 LINEAR: dmlconform/ops/_resample_coordinates.py); 0 elsewhere.
    """

    value: np.ndarray
    abs_sum: np.ndarray
    count: np.ndarray
    weight_factors: np.ndarray | int = 0
    abs_gradient_sum: np.ndarray | float = 0.0
    coordinate_slack: np.ndarray | float = 0.0
