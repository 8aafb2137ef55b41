"""DML_OPERATOR_AVERAGE_POOLING_GRAD: the adjoint of DML_AVERAGE_POOLING.

The forward averages window `o` of the input: along spatial axis a it covers positions
`p = o·Strides[a] − StartPadding[a] + k`, `0 <= k < WindowSize[a]`, reads zeros where `p` lies outside the input,
and divides the window's sum by a divisor `d(o)`. The gradient is its transpose:

    dX[x] = Σ_{o : x ∈ window(o)} dY[o] / d(o)

`d(o)` with IncludePadding FALSE counts the window's positions inside the input. With IncludePadding TRUE the
pages say padding counts; what a window that runs past EndPadding counts is open (OC-AP1, windows of a gradient
larger than the pooled size or larger than the padded input), and so is whether EndPadding counts as StartPadding
does (OC-AP3). The candidates, variants of the reference (docs/reference/operators.md):

* `full-window`: `Π WindowSize`, whatever the window covers;
* `clipped-to-padding`: the window's positions inside the padded input `[−StartPadding, In + EndPadding)`;
* `in-bounds-overhang`: `Π WindowSize`, but a window that runs past the padded input counts its positions in the
  input only (as if IncludePadding were FALSE for it);
* `end-padding-as-start`: the positions inside `[−StartPadding, In + StartPadding)` (the padded input as a
  symmetric-padding implementation clips it: PyTorch's kernels, torch-mlir's `getPoolSize` before llvm/torch-mlir#4756).

Every reading agrees wherever the window lies inside the padded input and StartPadding equals EndPadding; a window
with no position in the input (OC-AP2) reaches no element of dX, whatever its divisor, in every reading.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np

from dmlconform.compare.accumulation import Accumulation, LazyAccumulation
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops.base import (
    Description,
    Operator,
    Param,
    ParamKind,
    Reference,
    check_at_least_one,
    check_batch_and_channels,
)

SUPPORT = SupportTable((SupportRow(L.L3_0, 4, 5, frozenset({T.FLOAT32, T.FLOAT16})),))

GEOMETRY = ("Strides", "WindowSize", "StartPadding", "EndPadding")

FULL_WINDOW = "full-window"
CLIPPED = "clipped-to-padding"
IN_BOUNDS_OVERHANG = "in-bounds-overhang"
END_AS_START = "end-padding-as-start"

#: Roundings a term `dy / d` may cost (docs/tolerances.md §5c): D3D's division, within 2.5 ULP of the quotient (the
#: two-step `dy·(1/d)`'s bound: a 1-ULP reciprocal and a 0.5-ULP product), is off by up to 5u relative.
DIVISION_ROUNDINGS = 5


def pooled_size(extent: int, window: int, stride: int, start: int, end: int) -> int:
    """The forward's output size along an axis: (In + StartPadding + EndPadding − WindowSize) // Strides + 1 (the
    forward pages' formula; 0 or less where no whole window fits the padded input)."""
    return (extent + start + end - window) // stride + 1


@dataclass(frozen=True)
class AxisWindows:
    """The windows along one spatial axis: window o covers positions [first[o], first[o] + window)."""

    extent: int
    out: int
    window: int
    stride: int
    start: int
    end: int

    @cached_property
    def first(self) -> np.ndarray:
        return np.arange(self.out, dtype=np.int64) * self.stride - self.start

    def covered(self, low: int, high: int) -> np.ndarray:
        """Per window, how many of its positions lie in [low, high)."""
        return np.clip(np.minimum(self.first + self.window, high) - np.maximum(self.first, low), 0, None)

    @cached_property
    def inside(self) -> np.ndarray:
        """Per window, its positions inside the input."""
        return self.covered(0, self.extent)

    @cached_property
    def overhangs(self) -> np.ndarray:
        """Per window, whether it runs past the padded input (only a gradient larger than the pooled size, or a window
        larger than the padded input, has such windows)."""
        return self.first + self.window > self.extent + self.end

    def divisor_factor(self, include_padding: bool, reading: str) -> np.ndarray:
        """This axis's factor of each window's divisor (every reading but `in-bounds-overhang` is a product of them)."""
        if not include_padding:
            return self.inside
        if reading == CLIPPED:
            return self.covered(-self.start, self.extent + self.end)
        if reading == END_AS_START:
            return self.covered(-self.start, self.extent + self.start)
        return np.full(self.out, self.window, dtype=np.int64)

    @cached_property
    def coverage(self) -> np.ndarray:
        """Per input position, how many windows cover it."""
        counts = np.zeros(self.extent, dtype=np.int64)
        for k in range(self.window):
            counts[self.tap(k)[1]] += 1
        return counts

    def tap(self, k: int) -> tuple[slice, slice]:
        """The windows whose k-th position lies inside the input, and those positions, as slices (both step with o)."""
        # Position o·s + offset lies in [0, extent) for o in [lo, hi).
        offset = k - self.start
        lo = max(0, -(offset // self.stride))
        hi = min(self.out, (self.extent - 1 - offset) // self.stride + 1)
        if hi <= lo:
            return slice(0, 0), slice(0, 0)
        return slice(lo, hi), slice(lo * self.stride + offset, (hi - 1) * self.stride + offset + 1, self.stride)


def axes_of(desc: Description) -> list[AxisWindows]:
    dx, dy = desc.tensors["OutputGradientTensor"].shape, desc.tensors["InputGradientTensor"].shape
    p = desc.params
    return [AxisWindows(n, o, k, s, a, e) for n, o, k, s, a, e in
            zip(dx[2:], dy[2:], p["WindowSize"], p["Strides"], p["StartPadding"], p["EndPadding"], strict=True)]


def divisors(axes: list[AxisWindows], include_padding: bool, reading: str) -> np.ndarray:
    """d(o) over the gradient's spatial grid, as int64."""
    def outer(factors: list[np.ndarray]) -> np.ndarray:
        grid = np.ones((), dtype=np.int64)
        for factor in factors:
            grid = np.multiply.outer(grid, factor)
        return grid

    if include_padding and reading == IN_BOUNDS_OVERHANG:
        overhang = np.zeros((), dtype=bool)
        for axis in axes:
            overhang = np.logical_or.outer(overhang, axis.overhangs)
        return np.where(overhang, outer([axis.inside for axis in axes]),
                        outer([np.full(axis.out, axis.window, dtype=np.int64) for axis in axes]))
    return outer([axis.divisor_factor(include_padding, reading) for axis in axes])


def scatter(values: np.ndarray, axes: list[AxisWindows]) -> np.ndarray:
    """Σ over the windows covering each position of `values` (gradient-shaped, float64), axis by axis: the transpose
    of the forward's window sums. Only positions a window covers receive anything, so an infinity in one window never
    meets a zero weight (no 0·inf)."""
    for a, axis in enumerate(axes):
        dim = a + 2
        shape = list(values.shape)
        shape[dim] = axis.extent
        result = np.zeros(shape, dtype=np.float64)
        for k in range(axis.window):
            windows, positions = axis.tap(k)
            if windows.stop > windows.start:
                target = [slice(None)] * len(shape)
                source = [slice(None)] * len(shape)
                target[dim], source[dim] = positions, windows
                result[tuple(target)] += values[tuple(source)]
        values = result
    return values


def divided(dy: np.ndarray, divisor: np.ndarray) -> np.ndarray:
    """dy / d in float64, 0 where d = 0 (a window with no position in the input, which reaches no element)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(divisor > 0, dy.astype(np.float64) / np.maximum(divisor, 1), 0.0)


#: Largest common multiple L of an element's divisors for which each `dy·(L/d)` and `L·midpoint` is a float64 exactly
#: (at most 24 bits of a float32 significand or 25 of a float32 midpoint, times at most 28 bits: 53).
EXACT_SCALE = 2**28


def rounded_once(dy: np.ndarray, axes: list[AxisWindows], divisor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ dY[o] / d(o) over the windows covering each element, rounded once to dY's type (the contract's golden),
    and the sums in float64 (v, within a few float64 ULPs of the exact sum, on the golden's side of its midpoint).

    The float64 sum of float64 quotients is within γ·M of the exact sum, but a quotient such as dy / 6 is no
    float64, and an exact sum that lies on a rounding midpoint of the data type (common: sums of float16 or float32
    values divided by small integers land on one at one or two elements in a hundred) would round to whichever side
    the float64 errors happen to fall on. Every element whose sum lies that close to where rounding changes is
    settled in exact arithmetic (`settle_near_midpoints`)."""
    with np.errstate(invalid="ignore", over="ignore"):
        quotients = divided(dy, divisor)
        value = scatter(quotients, axes)
        out = value.astype(dy.dtype)
        magnitude = scatter(np.abs(quotients), axes)
        terms = math.prod(int(np.max(axis.coverage, initial=0)) for axis in axes)
        # Each quotient rounds once and each of at most `terms` - 1 additions once: twice that margin is safe.
        margin = 2 * (terms + 1) * np.finfo(np.float64).eps * magnitude
        finite = np.isfinite(value) & np.isfinite(magnitude)
        below = (value - margin).astype(dy.dtype)
        above = (value + margin).astype(dy.dtype)
    # Compared as bits: a float64 sum a hair below an exact 0 would otherwise keep the sign it should not have.
    bits = f"u{dy.dtype.itemsize}"
    near = np.flatnonzero(finite & (below.view(bits) != above.view(bits)))
    if near.size:
        settle_near_midpoints(dy, axes, divisor, near, below.reshape(-1)[near], above.reshape(-1)[near], value, out)
    return value, out


def covering_windows(axes: list[AxisWindows], spatial: tuple[np.ndarray, ...]) -> tuple[list[np.ndarray], np.ndarray]:
    """For elements at spatial positions `spatial` (one array per axis, F elements), every window that may cover
    them: per axis an index array of shape (F, T), clipped into the gradient, and whether it covers the element."""
    grids, masks = [], []
    for a, (axis, p) in enumerate(zip(axes, spatial, strict=True)):
        # first[o] <= p < first[o] + window, first[o] = o·stride − start: o in [lo, hi).
        lo = np.maximum(0, -((axis.window - 1 - p - axis.start) // axis.stride))
        hi = np.minimum(axis.out, (p + axis.start) // axis.stride + 1)
        o = lo[:, None] + np.arange(-(-axis.window // axis.stride))[None, :]
        shape = [len(p)] + [1] * len(axes)
        shape[a + 1] = o.shape[1]
        grids.append(np.minimum(o, max(axis.out - 1, 0)).reshape(shape))
        masks.append((o < hi[:, None]).reshape(shape))
    full = np.broadcast_shapes(*(g.shape for g in grids))
    count = len(spatial[0])
    index = [np.broadcast_to(g, full).reshape(count, -1) for g in grids]
    mask = np.logical_and.reduce([np.broadcast_to(m, full) for m in masks]).reshape(count, -1)
    return index, mask


def settle_near_midpoints(dy: np.ndarray, axes: list[AxisWindows], divisor: np.ndarray, near: np.ndarray,
                          low: np.ndarray, high: np.ndarray, value: np.ndarray, out: np.ndarray) -> None:
    """Round the elements `near` (flat indices) once from their exact sums, in place in `out` and `value`.

    Their float64 sums lie within the margin of the midpoint between `low` and `high`, two neighbouring values of
    the type, so the side of that midpoint m the exact sum lies on decides: with L a common multiple of the element's
    divisors, `Σ dy·(L/d) − L·m` is a sum of float64 values each exact, whose sign math.fsum (a correctly rounded
    sum) gives exactly; 0 is a tie, to the even one. Elements this cannot settle (an L too large, neighbours that are
    not adjacent after heavy cancellation, a zero whose sign the exact sum decides) are summed as fractions."""
    dtype = dy.dtype
    element = np.unravel_index(near, value.shape)
    index, covers = covering_windows(axes, element[2:])
    divisors = divisor[tuple(index)]
    covers &= divisors > 0
    gradients = np.where(covers, dy[(element[0][:, None], element[1][:, None], *index)].astype(np.float64), 0.0)
    divisors = np.where(covers, np.minimum(divisors, EXACT_SCALE), 1)
    scale = np.ones(len(near), dtype=np.int64)
    for column in divisors.T:  # capped, so that no product overflows: a capped L only sends its element below
        scale = np.minimum(np.lcm(scale, column), EXACT_SCALE)
    with np.errstate(invalid="ignore"):
        adjacent = np.nextafter(low, dtype.type(np.inf)) == high
    fast = adjacent & (scale < EXACT_SCALE) & (low != 0) & (high != 0)

    largest = np.finfo(dtype).max
    threshold = float(largest) + (float(largest) - float(np.nextafter(largest, dtype.type(0)))) / 2
    low64, high64 = low[fast].astype(np.float64), high[fast].astype(np.float64)
    with np.errstate(invalid="ignore"):
        midpoint = np.where(np.isposinf(high64), threshold, np.where(np.isneginf(low64), -threshold,
                                                                     (low64 + high64) / 2))
    factors = (scale[fast, None] // divisors[fast]).astype(np.float64)
    rows = np.concatenate([gradients[fast] * factors, -(scale[fast] * midpoint)[:, None]], axis=1)
    side = np.sign([math.fsum(row) for row in rows.tolist()])
    even_low = (low[fast].view(f"u{dtype.itemsize}") & 1) == 0
    chosen = np.where(side > 0, high[fast], np.where(side < 0, low[fast], np.where(even_low, low[fast], high[fast])))
    settled = near[fast]
    np.put(out, settled, chosen)
    current = value.reshape(-1)[settled]
    agrees = (current - midpoint) * side > 0
    nudged = np.nextafter(midpoint, np.where(side > 0, np.inf, -np.inf))
    np.put(value, settled, np.where(side == 0, midpoint, np.where(agrees, current, nudged)))

    exact_divisors = divisor[tuple(index)]  # uncapped
    for k in np.flatnonzero(~fast):
        exact = sum((Fraction(g) / int(d) for g, d in zip(gradients[k][covers[k]].tolist(),
                                                           exact_divisors[k][covers[k]].tolist(), strict=True)),
                    Fraction(0))
        np.put(value, near[k], float(exact))  # the nearest float64 (Fraction's conversion is correctly rounded)
        np.put(out, near[k], round_exact(exact, dtype))


def round_exact(exact: Fraction, dtype: np.dtype) -> np.floating:
    """`exact` rounded to nearest in `dtype` (a float type of at most 53 bits), ties to the even significand, past
    the largest finite value + ½ ULP to an infinity (IEEE 754 §4.3.1, §7.4)."""
    kind = dtype.type
    largest = kind(np.finfo(dtype).max)
    top_ulp = Fraction(float(largest)) - Fraction(float(np.nextafter(largest, kind(0))))
    if abs(exact) >= Fraction(float(largest)) + top_ulp / 2:
        return kind(np.inf if exact > 0 else -np.inf)
    # Through float64 the value is its nearest or a neighbour of it (a second rounding moves it one ULP at most).
    with np.errstate(over="ignore"):  # float64 may round a value just below the threshold onto it
        through = kind(float(exact))
    candidates = [c for c in (np.nextafter(through, kind(-np.inf)), through, np.nextafter(through, kind(np.inf)))
                  if np.isfinite(c)]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(f"u{c.itemsize}")) & 1))


class WindowAverages(LazyAccumulation):
    """AveragePoolingGrad's accumulation data: every window covering an element brings one term `dy / d`."""

    def __init__(self, shape: tuple[int, ...], dy: np.ndarray, axes: list[AxisWindows], divisor: np.ndarray,
                 value: np.ndarray, dtype: DataType) -> None:
        self.shape = shape
        self.dy, self.axes, self.divisor, self.sums, self.dtype = dy, axes, divisor, value, dtype

    @cached_property
    def dense(self) -> Accumulation:
        terms = divided(self.dy, self.divisor)
        abs_sum = scatter(np.abs(terms), self.axes)
        gradient_sum = scatter(np.where(self.divisor > 0, np.abs(self.dy.astype(np.float64)), 0.0), self.axes)
        count = np.ones((), dtype=np.int64)
        for axis in self.axes:
            count = np.multiply.outer(count, axis.coverage)
        count = np.broadcast_to(count, self.shape)
        quotient = np.broadcast_to((self.divisor != 1) & (self.divisor > 0), self.dy.shape).astype(np.float64)
        # An implementation may convert the divisor to the data type: one more rounding where it is not a value of it.
        inexact = self.divisor.astype(self.dtype.numpy).astype(np.int64) != self.divisor
        inexact = np.broadcast_to(inexact & (self.divisor > 0), self.dy.shape).astype(np.float64)
        factors = (scatter(quotient, self.axes) > 0).astype(np.int64)
        roundings = np.where(factors > 0, DIVISION_ROUNDINGS + (scatter(inexact, self.axes) > 0), 0)
        return Accumulation(self.sums, abs_sum, count, factors, gradient_sum, 0.0, 0, roundings.astype(np.int64))

    def at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> Accumulation:
        return self.dense.at(flat, self.shape)


class AveragePoolingGrad(Operator):
    name = "AVERAGE_POOLING_GRAD"
    inputs = ("InputGradientTensor",)
    support = SUPPORT
    params = (*(Param(name, ParamKind.UINTS) for name in GEOMETRY), Param("IncludePadding", ParamKind.BOOL))
    dimension_arrays = GEOMETRY
    # The first is the default: what DirectML 1.15.4 did on lavapipe and an H200 (DECISIONS.md §11).
    variants = (CLIPPED, FULL_WINDOW, IN_BOUNDS_OVERHANG, END_AS_START)
    dimension_count_rule = "the spatial dimension count (the tensors' DimensionCount - 2)"

    def expected_dimension_count(self, desc: Description) -> int:
        return desc.output.rank - 2

    def check_rules(self, desc: Description) -> None:
        check_at_least_one(desc, ("Strides", "WindowSize"))
        check_batch_and_channels(desc, "OutputGradientTensor")

    def reading(self, variant: str | None) -> str:
        return variant or self.variants[0]

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        dy = inputs["InputGradientTensor"]
        axes = axes_of(desc)
        divisor = divisors(axes, bool(desc.params["IncludePadding"]), self.reading(variant))
        value, out = rounded_once(dy, axes, divisor)
        shape = desc.output.shape
        return Reference({"OutputGradientTensor": out},
                         {"OutputGradientTensor": WindowAverages(shape, dy, axes, divisor, value, desc.output.dtype)})

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        """Exact where nothing is summed or divided (every element reached at most once, every divisor 1), else
        bound (docs/tolerances.md §5c)."""
        terms = ref.accumulation["OutputGradientTensor"]
        assert isinstance(terms, WindowAverages)
        if int(np.max(terms.dense.count, initial=0)) <= 1 and bool(np.all(terms.divisor <= 1)):
            return Tolerance.exact()
        return Tolerance.bound()


AVERAGE_POOLING_GRAD = AveragePoolingGrad()
