"""ResampleGrad1's features: per output coordinate along one axis, how its source coordinate falls, and what chose
it (mode, rounding, the axis's scale and offsets).

An implementation's path is chosen per coordinate: a NEAREST_NEIGHBOR pick on an integer (floor and ceil agree) or
between, a LINEAR pair of taps or a single one (t = 0), a tap clamped onto the edge, and a coordinate so near an
integer that D3D's own evaluation order may put it on either side (a knife edge: real DirectML stacks differ there,
examples/dml_harness/results/DECISIONS.md). Whether a coordinate is known exactly depends on the scale (a power of
two inverts exactly; for LINEAR DirectML's coordinates are exact only then, ibid. §7) and the offsets. So a site is
a coordinate:

* `mode`, `rounding` (NEAREST_NEIGHBOR's direction; `none` for LINEAR, which has no rounding);
* `coordinate`, as the reference treats it (dmlconform/ops/_resample_coordinates.py): `knife-edge` (the reference
  lets the pick or taps move: the coordinate is uncertain and x ± Δx reaches another element, after the clamp),
  else `clamped-low` / `clamped-high` (a pick or tap lands outside and is clamped onto the edge), `integer`, `half`
  (x.5: where a round-half rule would part from floor and ceil; LINEAR's equal weights), `interior` (anything else);
* `scale`: `identity`, up or down, by a power of two (or an infinite scale: 1/S exact either way) or not;
* `offsets`: `zero`, `equal` (InputPixelOffsets = OutputPixelOffsets, non-zero) or `unequal` (a candidate case:
  the coordinates are those of DirectML's reading, `swapped`, docs/reference/operators.md).

The universe is derived by classifying, with the same code, every coordinate of small axes over pools of scales
and offsets of every kind (PROBE_SCALES, PROBE_OFFSETS), ones a few ULP off the round values among them; a test
checks that what no probe reaches is what the formula rules out (zero offsets never clamp low, a power of two with
zero offsets is exact, ...).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import Feature, Interaction, OperatorModel, Site
from dmlconform.ops import _resample_coordinates as coordinates
from dmlconform.ops.resample_grad1 import RESAMPLE_GRAD1, source_coordinates

OP = "RESAMPLE_GRAD1"
NONE = "none"
MODES = ("NEAREST_NEIGHBOR", "LINEAR")
ROUNDINGS = ("DECREASING", "INCREASING", NONE)
COORDINATES = ("integer", "half", "interior", "knife-edge", "clamped-low", "clamped-high")
SCALES = ("identity", "up-pow2", "up-other", "down-pow2", "down-other")
OFFSETS = ("zero", "equal", "unequal")

_F32_ULP_BELOW_1 = 2.0**-24
#: Scales of every kind the universe is probed with: round values, the float32 neighbours of 1, thirds and tenths
#: (not exact in float32), an infinite scale.
PROBE_SCALES = {
    "identity": (1.0,),
    "up-pow2": (2.0, 4.0, 8.0, float("inf")),
    "up-other": (1.5, 3.0, 1.25, 1.1, 1.3333334, 3.3333333, 1.0 + 2.0**-23),
    "down-pow2": (0.5, 0.25),
    "down-other": (0.75, 0.6, 0.4, 0.33333334, 0.1, 0.7, 1.0 - _F32_ULP_BELOW_1),
}
#: Offsets the universe is probed with (equal offsets use each; unequal ones each ordered pair of distinct ones).
PROBE_OFFSETS = (0.0, 0.5, 0.25, 1.0, 0.49999997, -0.5, 0.1, 0.9, -0.25, -0.3, 0.33333334, 2.5, float("inf"),
                 float("-inf"))
#: Unequal offsets are probed as the ordered pairs of the first PROBE_UNEQUAL offsets and the infinities.
PROBE_UNEQUAL = 5
#: Axis sizes the universe is probed with: inputs 1 to PROBE_INPUTS, outputs 0 .. PROBE_OUTPUTS - 1.
PROBE_INPUTS = 6
PROBE_OUTPUTS = 16
#: The probed input sizes as a column, and the COORDINATES indexes, for classifying every size at once.
INPUT_SIZES = np.arange(1, PROBE_INPUTS + 1, dtype=np.int64)[:, None]
CLASS_INDEXES = np.arange(len(COORDINATES))


def scale_kind(scale: float) -> str:
    s = np.float32(scale)
    if s == 1:
        return "identity"
    pow2 = coordinates.inverts_exactly(float(s))
    return f"{'up' if s > 1 else 'down'}-{'pow2' if pow2 else 'other'}"


def offsets_kind(input_offset: float, output_offset: float) -> str:
    ipo, opo = np.float32(input_offset), np.float32(output_offset)
    if ipo != opo:
        return "unequal"
    return "zero" if ipo == 0 else "equal"


def forward_offsets(input_offset: float, output_offset: float, swapped: bool | None = None) -> tuple[float, float]:
    """The forward's (input, output) offsets in the reading DirectML was measured to follow (the reference's
    default variant; `swapped` says which for another operator)."""
    if swapped is None:
        swapped = RESAMPLE_GRAD1.offsets_swapped(None)
    if swapped:
        return output_offset, input_offset
    return input_offset, output_offset


def coordinate_classes(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float,
                       mode: str, rounding: str) -> np.ndarray:
    """The COORDINATES index of every output coordinate of one axis (forward offsets), as the reference treats it."""
    x, delta = known_coordinates(n_out, scale, input_offset, output_offset, mode == "LINEAR", rounding)
    return classify_coordinates(x, delta, n_in, mode, rounding)


def known_coordinates(n_out: int, scale: float, input_offset: float, output_offset: float,
                      linear: bool, rounding: str = NONE) -> tuple[np.ndarray, np.ndarray]:
    """The reference's coordinates x(o) (float64) and how precisely it holds them known, Δx(o) (for NEAREST_NEIGHBOR
    under `rounding`, a half rule's rounded sum too)."""
    x = source_coordinates(n_out, scale, input_offset, output_offset).astype(np.float64)
    delta = coordinates.uncertainty(n_out, scale, input_offset, output_offset, linear)
    if not linear and rounding != NONE:
        delta = np.maximum(delta, coordinates.rounding_slack(x, rounding))
    return x, delta


def classify_coordinates(x: np.ndarray, delta: np.ndarray, n_in: int | np.ndarray, mode: str,
                         rounding: str) -> np.ndarray:
    """COORDINATES index of each coordinate x(o) on an input of n_in elements; `n_in` may be an array of input sizes
    shaped to broadcast against x (a column: one row of classes per size)."""
    last = np.asarray(n_in) - 1
    with np.errstate(invalid="ignore"):
        if mode == "LINEAR":
            below, above = np.floor(x - delta), np.floor(x + delta)
            # Either pair of taps, clamped: the reference's reach moves an element only where the pairs differ.
            moves = (np.clip(below, 0, last) != np.clip(above, 0, last)) | \
                (np.clip(below + 1, 0, last) != np.clip(above + 1, 0, last))
            low, high = x < 0, x > last
        else:
            def pick(values: np.ndarray) -> np.ndarray:
                return coordinates.pick(values, rounding)
            # The reference's ambiguous picks, less those the clamp puts on one element anyway.
            moves = np.clip(pick(x - delta), 0, last) != np.clip(pick(x + delta), 0, last)
            low, high = pick(x) < 0, pick(x) > last
        fraction = np.where(np.isfinite(x), x - np.floor(x), np.nan)
    shape = np.broadcast_shapes(x.shape, last.shape)
    # The first condition that holds names the class: a knife-edge before a clamp, a clamp before the fraction's.
    conditions = [(delta > 0) & moves, low, high, fraction == 0, fraction == 0.5]
    picked = ("knife-edge", "clamped-low", "clamped-high", "integer", "half")
    return np.select([np.broadcast_to(condition, shape) for condition in conditions],
                     [COORDINATES.index(name) for name in picked], COORDINATES.index("interior")).astype(np.int64)


def axis_sites(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float, mode: str,
               rounding: str, swapped: bool | None = None) -> set[tuple[str, str, str, str, str]]:
    """(mode, rounding, coordinate, scale, offsets) of every coordinate of one axis (the gradient's offsets)."""
    forward = forward_offsets(input_offset, output_offset, swapped)
    found = np.unique(coordinate_classes(n_in, n_out, scale, *forward, mode, rounding))
    head = (mode, rounding if mode == "NEAREST_NEIGHBOR" else NONE)
    tail = (scale_kind(scale), offsets_kind(input_offset, output_offset))
    return {(*head, COORDINATES[int(c)], *tail) for c in found}



def sites_per_axis(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], output_shape: tuple[int, ...],
                   axis_sites: Callable[[int, int, float, float, float], Iterable[tuple[str, ...]]]) -> set[Site]:
    """A resample gradient's sites: the data type and rank, then each axis's own (dX extent, dY extent, scale and the
    two offsets as given), for both ResampleGrads."""
    dy = inputs["InputGradientTensor"]
    head = (DataType.from_numpy(dy.dtype).name, str(len(output_shape)))
    found: set[Site] = set()
    for n_in, n_out, scale, ipo, opo in zip(output_shape, dy.shape, params["Scales"], params["InputPixelOffsets"],
                                            params["OutputPixelOffsets"], strict=True):
        found |= {(*head, *site) for site in axis_sites(n_in, n_out, float(scale), float(ipo), float(opo))}
    return found

class ResampleGrad1Model(OperatorModel):
    op = OP

    def __init__(self) -> None:
        self.features = (
            dtype_feature(OP),
            rank_feature(OP),
            Feature("mode", MODES, "the interpolation mode"),
            Feature("rounding", ROUNDINGS, "NEAREST_NEIGHBOR's rounding direction (none for LINEAR)"),
            Feature("coordinate", COORDINATES, "how the output coordinate's source coordinate falls"),
            Feature("scale", SCALES, "the axis's scale: 1, up or down, by a power of two or not"),
            Feature("offsets", OFFSETS, "the axis's pixel offsets: zero, equal or unequal"),
        )
        self.higher = (
            Interaction(("mode", "rounding", "coordinate"),
                        "each pick or pair of taps on each kind of coordinate (ResampleGrad1's own product)"),
            Interaction(("mode", "coordinate", "scale"),
                        "whether a coordinate is exact depends on the scale, and for LINEAR on a power of two "
                        "(DirectML's LINEAR coordinates round otherwise)"),
        )

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        mode, rounding = params["InterpolationMode"], params["RoundingDirection"]
        return sites_per_axis(params, inputs, output_shape, lambda *axis: _axis_sites(*axis, mode, rounding))

    def possible_sites(self) -> Iterator[Site]:
        axes = probed_axes()
        for dtype, rank in support_cells(OP):
            for site in axes:
                yield dtype.name, str(rank), *site


_axis_sites = cache(axis_sites)  # a suite repeats its axes: the coordinates' exactness is worked out once


def valid_axis(n_out: int, scale: float, input_offset: float, output_offset: float) -> bool:
    """Whether no source coordinate is NaN (inf − inf, inf/inf) in either reading of the offsets (the op's rule)."""
    return not any(np.isnan(source_coordinates(n_out, scale, a, b)).any()
                   for a, b in ((input_offset, output_offset), (output_offset, input_offset)))


def probe_offsets() -> list[tuple[float, float]]:
    """Equal offsets of every probed value, and unequal pairs of the first few (and the infinities)."""
    unequal = (*PROBE_OFFSETS[:PROBE_UNEQUAL], float("inf"), float("-inf"))
    return [(a, a) for a in PROBE_OFFSETS] + [(a, b) for a in unequal for b in unequal if a != b]


#: One probed axis: (scale, gradient's InputPixelOffset, OutputPixelOffset, input extent, the first output
#: coordinate that shows a combination).
Recipe = tuple[float, float, float, int, int]


@cache
def probed_recipes(roundings: tuple[str, ...] = ("DECREASING", "INCREASING"), swapped: bool | None = None,
                   extra_scales: tuple[float, ...] = (), extra_offsets: tuple[float, ...] = ()
                   ) -> dict[tuple[str, str, str, str, str], tuple[Recipe, ...]]:
    """Per (mode, rounding, coordinate, scale kind, offsets kind) some valid axis can show, every probed axis that
    shows it (an invalid one, with NaN coordinates, is skipped): the universe, and a generator's recipes. ResampleGrad1
    probes both RoundingDirections; ResampleGrad (v0) its one rule (`roundings`), offset reading (`swapped`), and the
    scales and equal offsets its rule needs besides (`extra_scales`, `extra_offsets`)."""
    found: dict[tuple[str, str, str, str, str], list[Recipe]] = {}
    modes = [*(("NEAREST_NEIGHBOR", rounding) for rounding in roundings), ("LINEAR", NONE)]
    for scale in (*itertools.chain(*PROBE_SCALES.values()), *extra_scales):
        for ipo, opo in (*probe_offsets(), *((c, c) for c in extra_offsets)):
            if not valid_axis(PROBE_OUTPUTS, scale, ipo, opo):
                continue
            forward = forward_offsets(ipo, opo, swapped)
            tail = (scale_kind(scale), offsets_kind(ipo, opo))
            for (mode, rounding) in modes:
                x, delta = known_coordinates(PROBE_OUTPUTS, scale, *forward, mode == "LINEAR", rounding)
                # Every input size at once (a row each); per row, each class shown and where it first shows, in
                # class order (what np.unique(row, return_index=True) gives, row by row).
                classes = classify_coordinates(x, delta, INPUT_SIZES, mode, rounding)
                hits = classes[:, :, None] == CLASS_INDEXES
                shown, first = hits.any(axis=1).tolist(), hits.argmax(axis=1).tolist()
                for n_in, row_shown, row_first in zip(INPUT_SIZES[:, 0].tolist(), shown, first, strict=True):
                    for c, o in ((c, o) for c, (hit, o) in enumerate(zip(row_shown, row_first, strict=True)) if hit):
                        found.setdefault((mode, rounding, COORDINATES[c], *tail), []).append(
                            (scale, ipo, opo, n_in, o))
    return {key: tuple(recipes) for key, recipes in found.items()}


def probed_axes() -> frozenset[tuple[str, str, str, str, str]]:
    """(mode, rounding, coordinate, scale, offsets) of every coordinate of every probed axis."""
    return frozenset(probed_recipes())
