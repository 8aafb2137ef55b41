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

from collections.abc import Mapping
from dataclasses import dataclass
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
    DescriptionError,
    Operator,
    Param,
    ParamKind,
    Reference,
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
    # Provisional order (the first is the default): the most literal reading first, until DirectML is measured.
    variants = (CLIPPED, FULL_WINDOW, IN_BOUNDS_OVERHANG, END_AS_START)
    dimension_count_rule = "the spatial dimension count (the tensors' DimensionCount - 2)"

    def expected_dimension_count(self, desc: Description) -> int:
        return desc.output.rank - 2

    def check_rules(self, desc: Description) -> None:
        for name in ("Strides", "WindowSize"):
            for i, value in enumerate(desc.params[name]):
                if value < 1:
                    raise DescriptionError(f"{name}[{i}]", f"{value} must be at least 1")
        dx, dy = desc.tensors["OutputGradientTensor"].shape, desc.tensors["InputGradientTensor"].shape
        for i, label in enumerate(("BatchCount", "ChannelCount")):
            if dy[i] != dx[i]:
                raise DescriptionError(f"InputGradientTensor.Sizes[{i}]", f"{label} {dy[i]} differs from "
                                       f"OutputGradientTensor's {dx[i]}")

    def reading(self, variant: str | None) -> str:
        return variant or self.variants[0]

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        dy = inputs["InputGradientTensor"]
        axes = axes_of(desc)
        divisor = divisors(axes, bool(desc.params["IncludePadding"]), self.reading(variant))
        with np.errstate(invalid="ignore", over="ignore"):
            value = scatter(divided(dy, divisor), axes)
            out = value.astype(dy.dtype)
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
