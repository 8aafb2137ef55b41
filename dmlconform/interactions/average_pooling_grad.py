"""AveragePoolingGrad's features: per window (one gradient element), where it lies against the input and its padding,
what it divides by and what its gradient holds; and the case's geometry.

An implementation's path through a window is chosen by where the window lies (a divisor that counts padding or not,
a window that runs past EndPadding: OC-AP1, one with no position in the input: OC-AP2), by the divisor (1 copies,
a power of two divides exactly, anything else rounds) and by the gradient (an infinity or a NaN must reach exactly
the elements its window covers). A site is a window:

* `place`: every position in the input (`inside`); some in the start padding (`beside-start`), the end padding
  (`beside-end`) or both (`beside-both`); some past the padded input (`past-padded-end`: a gradient larger than the
  pooled size, or a window larger than the padded input); none in the input (`outside`);
* `divisor`: the window's divisor (the reference's default reading, with the case's IncludePadding) is 1, a power of
  two, another number, or 0 (no position counts);
* `gradient`: the class of the window's gradient element: a normal number, a denormal, an infinity or a NaN;
* the case's `include-padding`, its `windows` (tiling the input, `gapped`: a stride larger than the window on some
  axis, or `overlapping`), its `gradient-size` against the pooled size, and its `padding` (none, symmetric,
  asymmetric on some axis).

The universe is derived, not asserted: every single-axis geometry over small extents, windows, strides, paddings and
gradient sizes is classified per window by the same code `sites` runs, and the windows of two and three axes are
every combination of one window per axis.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import LAYOUT_FEATURE, Feature, Interaction, OperatorModel, Site
from dmlconform.ops.average_pooling_grad import AxisWindows, pooled_size

OP = "AVERAGE_POOLING_GRAD"
INCLUDE = ("false", "true")
PLACE = ("inside", "beside-start", "beside-end", "beside-both", "past-padded-end", "outside")
DIVISOR = ("1", "power-of-two", "other", "0")
GRADIENT = ("normal", "denormal", "infinity", "nan")
WINDOWS = ("apart", "gapped", "overlapping")
SIZE = ("pooled", "smaller", "larger")
PADDING = ("none", "symmetric", "asymmetric")

#: A window's flags along an axis (bits) and its divisor factor's class (DIVISOR index) without and with padding.
BEFORE, AFTER, PAST, OUTSIDE = 1, 2, 4, 8


def factor_class(counts: np.ndarray) -> np.ndarray:
    """DIVISOR index of each count: 1, a power of two above 1, another number, 0."""
    counts = np.asarray(counts, dtype=np.int64)
    power = (counts > 1) & ((counts & (counts - 1)) == 0)
    return np.select([counts == 0, counts == 1, power], [3, 0, 1], 2)


@dataclass(frozen=True)
class AxisCodes:
    """One axis, per window: its flags and its divisor factor's class without (`plain`) and with (`padded`) the
    padding counted (the reference's default reading); and the axis's own windows, size and padding codes."""

    flags: np.ndarray
    plain: np.ndarray
    padded: np.ndarray
    windows: int
    size: int
    padding: int


def axis_codes(axis: AxisWindows) -> AxisCodes:
    first, last = axis.first, axis.first + axis.window  # positions [first, last)
    flags = ((first < 0) * BEFORE + (last > axis.extent) * AFTER + axis.overhangs * PAST
             + (axis.inside == 0) * OUTSIDE).astype(np.int64)
    windows = 2 if axis.window > axis.stride else (1 if axis.stride > axis.window else 0)
    pooled = max(1, pooled_size(axis.extent, axis.window, axis.stride, axis.start, axis.end))
    size = 2 if axis.out > pooled else (1 if axis.out < pooled else 0)
    padding = 0 if axis.start == axis.end == 0 else (1 if axis.start == axis.end else 2)
    return AxisCodes(flags, factor_class(axis.divisor_factor(False, "")),
                     factor_class(axis.divisor_factor(True, "clipped-to-padding")), windows, size, padding)


def place_of(flags: np.ndarray) -> np.ndarray:
    """PLACE index from a window's combined flags."""
    side = ((flags & BEFORE) > 0).astype(np.int64) + 2 * ((flags & AFTER) > 0)  # 0 inside, 1 start, 2 end, 3 both
    return np.select([(flags & OUTSIDE) > 0, (flags & PAST) > 0], [5, 4], side)


def window_sites(codes: list[AxisCodes], include: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per window of the gradient's spatial grid: its PLACE and DIVISOR indexes (arrays of the grid's shape)."""
    flags = np.zeros((), dtype=np.int64)
    divisor = np.zeros((), dtype=np.int64)
    for axis in codes:
        flags = np.bitwise_or.outer(flags, axis.flags)
        # A product's class from its factors' (DIVISOR's order): 0 wins, then another number, then a power of two.
        divisor = np.maximum.outer(divisor, axis.padded if include else axis.plain)
    return place_of(flags), divisor


def case_codes(codes: list[AxisCodes]) -> tuple[str, str, str]:
    """(windows, gradient-size, padding) of a case."""
    # Each code's order puts the value that wins over the axes last (overlapping, larger, asymmetric).
    return (WINDOWS[max(axis.windows for axis in codes)], SIZE[max(axis.size for axis in codes)],
            PADDING[max(axis.padding for axis in codes)])


def gradient_classes(dy: np.ndarray) -> np.ndarray:
    """GRADIENT index of every element."""
    magnitude = np.abs(dy)
    tiny = np.finfo(dy.dtype).tiny
    return np.select([np.isnan(dy), np.isinf(dy), (magnitude > 0) & (magnitude < tiny)], [3, 2, 1], 0)


def axes_of(params: Mapping[str, Any], spatial: tuple[int, ...], out: tuple[int, ...]) -> list[AxisWindows]:
    return [AxisWindows(n, o, k, s, a, e) for n, o, k, s, a, e in zip(
        spatial, out, params["WindowSize"], params["Strides"], params["StartPadding"], params["EndPadding"],
        strict=True)]


class AveragePoolingGradModel(OperatorModel):
    op = OP

    def __init__(self) -> None:
        self.features = (
            dtype_feature(OP),
            rank_feature(OP),
            Feature("include-padding", INCLUDE, "IncludePadding: whether the divisor counts padding"),
            Feature("place", PLACE, "where the window lies against the input and its padding"),
            Feature("divisor", DIVISOR, "the window's divisor: 1 (a copy), a power of two, another number, 0"),
            Feature("gradient", GRADIENT, "the class of the window's gradient element"),
            Feature("windows", WINDOWS, "whether the case's windows tile the input, leave gaps or overlap"),
            Feature("gradient-size", SIZE, "the gradient's spatial sizes against the pooled size"),
            Feature("padding", PADDING, "the case's padding: none, the same at both ends, or not"),
        )
        # A gradient that is not the pooled size, or a window past the padded input (a window larger than it), may be
        # refused (a `refused` candidate): such a case exercises its windows only where an implementation computes it.
        self.refusable = ("gradient-size", "place")
        self.higher = (
            Interaction(("include-padding", "place", "padding"),
                        "which padding a window's divisor counts: beside asymmetric padding with IncludePadding TRUE "
                        "(OC-AP3), past the padded input (OC-AP1), with no position in the input (OC-AP2)"),
            Interaction(("include-padding", "place", "divisor"),
                        "the divisor each reading gives a window beside or past the padding, and one that is 0"),
        )

    def possible(self, interaction: Interaction) -> frozenset[tuple[str, ...]]:
        """As every model's, but an interaction of none of the refusable features counts only what a case no
        implementation may refuse can hold: a window past the padded input, or a gradient of another size, is in
        refusable cases only (a window wholly past it is even `outside` with a divisor of 0 under IncludePadding)."""
        key = interaction.features
        if LAYOUT_FEATURE.name in key or self.counts_for_refusable(interaction):
            return super().possible(interaction)
        if key not in self._possible:
            self._possible[key] = frozenset(self.project(self.computable, interaction))
        return self._possible[key]

    @cached_property
    def computable(self) -> frozenset[Site]:
        """The sites of cases no implementation may refuse: the pooled size, no window past the padded input."""
        size, place = self.positions["gradient-size"], self.positions["place"]
        return frozenset(site for site in self.universe if site[size] == "pooled" and site[place] != "past-padded-end")

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        dy = inputs["InputGradientTensor"]
        axes = axes_of(params, tuple(output_shape[2:]), tuple(dy.shape[2:]))
        codes = [axis_codes(axis) for axis in axes]
        include = bool(params["IncludePadding"])
        place, divisor = window_sites(codes, include)
        grid = np.broadcast_to(place * len(DIVISOR) + divisor, dy.shape)
        rows = np.unique(np.stack([grid.reshape(-1), gradient_classes(dy).reshape(-1)], axis=1), axis=0)
        head = (DataType.from_numpy(dy.dtype).name, str(len(output_shape)), INCLUDE[include])
        tail = case_codes(codes)
        return {(*head, PLACE[window // len(DIVISOR)], DIVISOR[window % len(DIVISOR)], GRADIENT[value], *tail)
                for window, value in rows.tolist()}

    def possible_sites(self) -> Iterator[Site]:
        for dtype, rank in support_cells(OP):
            for include, place, divisor, windows, size, padding in enumerated_states(rank - 2):
                for gradient in GRADIENT:
                    yield (dtype.name, str(rank), include, place, divisor, gradient, windows, size, padding)


#: The single-axis geometries the universe is derived from.
EXTENTS, WINDOW_SIZES, STRIDES, PADS = range(1, 7), range(1, 5), range(1, 5), range(0, 6)


@cache
def axis_states() -> frozenset[tuple[int, int, int, int, int, int]]:
    """Every (flags, plain class, padded class, windows, size, padding) one window of one axis can have."""
    found: set[tuple[int, int, int, int, int, int]] = set()
    for extent, window, stride, start, end in itertools.product(EXTENTS, WINDOW_SIZES, STRIDES, PADS, PADS):
        pooled = max(1, pooled_size(extent, window, stride, start, end))
        for out in {max(1, pooled - 1), pooled, pooled + 1, pooled + 2}:
            codes = axis_codes(AxisWindows(extent, out, window, stride, start, end))
            for flags, plain, padded in zip(codes.flags.tolist(), codes.plain.tolist(), codes.padded.tolist(),
                                            strict=True):
                found.add((flags, plain, padded, codes.windows, codes.size, codes.padding))
    return frozenset(found)


@cache
def enumerated_states(spatial: int) -> frozenset[tuple[str, str, str, str, str, str]]:
    """Every (include-padding, place, divisor, windows, gradient-size, padding) of a window over `spatial` axes."""
    # One window per axis, merged as window_sites and case_codes merge them: the flags or-ed, every class the
    # largest. As arrays (a row per state, every pair of a state and an axis's state at once, duplicates dropped
    # after each axis): a loop over the pairs was a second of every `dmlconform generate`.
    single = np.array(sorted(axis_states()), dtype=np.int64)
    if single.min() < 0 or single.max() > 15:
        raise ValueError("an axis state field outside 0..15 does not fit the 4-bit keys below")
    states = single
    for _ in range(spatial - 1):
        merged = [states[:, None, 0] | single[None, :, 0],
                  *(np.maximum(states[:, None, field], single[None, :, field]) for field in range(1, 6))]
        # Each field is below 16: one int64 key a state, so that np.unique sorts numbers, not rows.
        keys = np.unique(sum(field.reshape(-1) << (4 * index) for index, field in enumerate(merged)))
        states = np.stack([(keys >> (4 * index)) & 15 for index in range(6)], axis=1)
    places = place_of(states[:, 0])
    found = set()
    for place, (_, plain, padded, windows, size, padding) in zip(places.tolist(), states.tolist(), strict=True):
        for include, divisor in ((INCLUDE[0], plain), (INCLUDE[1], padded)):
            found.add((include, PLACE[place], DIVISOR[divisor], WINDOWS[windows], SIZE[size], PADDING[padding]))
    return frozenset(found)
