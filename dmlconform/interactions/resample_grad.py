"""ResampleGrad (v0)'s features: ResampleGrad1's (dmlconform/interactions/resample_grad1.py), per output coordinate
along one axis, without the rounding direction v0 has no field for.

A coordinate is classed as the reference treats it under the readings DirectML was measured to follow
(dmlconform/ops/resample_grad.py: the offsets swapped, NEAREST_NEIGHBOR rounding half up): `half` is now where the
pick changes (x.5, a tie: floor(x + 0.5) rounds it up, where half-down and half-even part from it), `integer` where
every rule agrees, `knife-edge` where the evaluation order may move a pick across a half-integer (or a LINEAR tap
across an integer), `clamped-low` / `clamped-high` past an edge. The universe is derived, as ResampleGrad1's, by
classifying every coordinate of small probed axes with the same code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import numpy as np

from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import Feature, Interaction, OperatorModel, Site
from dmlconform.interactions.resample_grad1 import (
    COORDINATES,
    MODES,
    NONE,
    OFFSETS,
    SCALES,
    Recipe,
    axis_sites,
    probed_recipes,
    sites_per_axis,
)
from dmlconform.ops.resample_grad import DEFAULT

OP = "RESAMPLE_GRAD"
#: NEAREST_NEIGHBOR's rule and the offsets' reading the coordinates are classed under: DirectML's.
ROUNDING = DEFAULT.rounding
SWAPPED = DEFAULT.offsets == "swapped"


def _rounding(mode: str) -> str:
    return ROUNDING if mode == "NEAREST_NEIGHBOR" else NONE


@cache
def _axis_sites(n_in: int, n_out: int, scale: float, ipo: float, opo: float, mode: str
                ) -> frozenset[tuple[str, str, str, str]]:
    """(mode, coordinate, scale, offsets) of every coordinate of one axis (the gradient's offsets)."""
    found = axis_sites(n_in, n_out, scale, ipo, opo, mode, _rounding(mode), SWAPPED)
    return frozenset((m, coordinate, scale_kind, offsets) for m, _, coordinate, scale_kind, offsets in found)


#: What round half up needs probed besides ResampleGrad1's pools: an even scale that is no power of two (x = o/6 puts
#: exact ties on 3, 9, ...: a `half` with zero offsets), and equal offsets c = -(0.25 - 2^-26), whose x(0) = -2c =
#: 0.49999997 is exact but whose x + 0.5 rounds to 1.0 in float32 (a knife edge of the identity).
EXTRA_SCALES = (6.0,)
EXTRA_OFFSETS = (-(0.25 - 2.0**-26),)


def recipes() -> dict[tuple[str, str, str, str, str], tuple[Recipe, ...]]:
    """ResampleGrad1's probed axes under v0's rounding rule and offset reading, by (mode, rounding, coordinate, scale
    kind, offsets kind); the rounding is ROUNDING for NEAREST_NEIGHBOR and `none` for LINEAR."""
    return probed_recipes((ROUNDING,), SWAPPED, EXTRA_SCALES, EXTRA_OFFSETS)


def probed_axes() -> frozenset[tuple[str, str, str, str]]:
    return frozenset((mode, coordinate, scale, offsets) for mode, _, coordinate, scale, offsets in recipes())


class ResampleGradModel(OperatorModel):
    op = OP

    def __init__(self) -> None:
        self.features = (
            dtype_feature(OP),
            rank_feature(OP),
            Feature("mode", MODES, "the interpolation mode"),
            Feature("coordinate", COORDINATES, "how the output coordinate's source coordinate falls (half: a tie of "
                    "round half up)"),
            Feature("scale", SCALES, "the axis's scale: 1, up or down, by a power of two or not"),
            Feature("offsets", OFFSETS, "the axis's pixel offsets: zero, equal or unequal"),
        )
        self.higher = (
            Interaction(("mode", "coordinate", "scale"),
                        "whether a coordinate is exact depends on the scale, and for LINEAR on a power of two"),
            Interaction(("mode", "coordinate", "offsets"),
                        "unequal offsets move every coordinate by the reading of the offsets; a tie or a clamp under "
                        "each"),
        )

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        return sites_per_axis(params, inputs, output_shape,
                              lambda *axis: _axis_sites(*axis, params["InterpolationMode"]))

    def possible_sites(self) -> Iterator[Site]:
        axes = probed_axes()
        for dtype, rank in support_cells(OP):
            for site in axes:
                yield dtype.name, str(rank), *site
