"""DML_OPERATOR_RESAMPLE_GRAD1: the adjoint (transpose) of Resample2 with the same scales and offsets.

Resample2 samples, per dimension, input coordinate `x = (o - OutputPixelOffset) / Scale - InputPixelOffset`
computed in float32. NEAREST_NEIGHBOR takes floor(x) (DECREASING) or ceil(x) (INCREASING), clamped to
the edge; LINEAR takes floor(x) and floor(x)+1 with weights 1-t and t, each clamped. Resampling is
separable, so the forward is dY = X ×_a W_a over every dimension a and the gradient is dX = dY ×_a W_aᵀ.

Which offsets the gradient's fields mean is undocumented (docs/reference/operators.md): `literal` reads them as the
forward's; `swapped` reads the gradient's InputPixelOffsets as the forward's OutputPixelOffsets and
vice versa. The two agree wherever the offsets are equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from dmlconform.compare.accumulation import Accumulation, LazyAccumulation
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops import _resample_coordinates as coordinates
from dmlconform.ops._resample_kernel import TransposePass, resample_transposed, transpose_passes
from dmlconform.ops.base import (
    Description,
    DescriptionError,
    Operator,
    Param,
    ParamKind,
    Reference,
)

SUPPORT = SupportTable((SupportRow(L.L5_1, 1, 4, frozenset({T.FLOAT32, T.FLOAT16})),))


def source_coordinates(n_out: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """x(o) for o in [0, n_out), in float32 and in the order of the documented formula."""
    f32 = np.float32
    o = np.arange(n_out, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return ((o - f32(output_offset)) / f32(scale) - f32(input_offset)).astype(np.float32)


@dataclass(frozen=True)
class AxisTaps:
    """The forward's taps along one axis: output `rows[j]` reads input `cols[j]` with weight `weights[j]`.

    Only taps of non-zero weight are kept, and two taps clamped onto the same input stay two taps:
    an implementation multiplies and adds each one, so each is a term of the sum.
    """

    n_in: int
    n_out: int
    rows: np.ndarray
    cols: np.ndarray
    weights: np.ndarray

    def matrix(self) -> np.ndarray:
        """W[o, i]: the total weight with which forward input i contributes to forward output o (float64)."""
        return self._scatter(self.weights)

    def tap_matrix(self) -> np.ndarray:
        """C[o, i]: how many taps of output o land on input i (0, 1, or 2 where two taps clamp together)."""
        return self._scatter(np.ones(self.weights.shape))

    def _scatter(self, values: np.ndarray) -> np.ndarray:
        w = np.zeros((self.n_out, self.n_in), dtype=np.float64)
        np.add.at(w, (self.rows, self.cols), values)
        return w

    def by_input(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The taps merged per (output, input) pair, sorted by input, then output: rows, cols, the weight W[o, i],
        and how many taps the entry stands for (2 where two taps of an output clamp onto one input)."""
        key, merged = np.unique(self.cols * self.n_out + self.rows, return_inverse=True)
        weights = np.bincount(merged, weights=self.weights, minlength=key.size)
        taps = np.bincount(merged, minlength=key.size).astype(np.float64)
        cols, rows = np.divmod(key, self.n_out)
        return rows, cols, weights, taps

    def passes(self) -> list[TransposePass]:
        """The taps as passes of the transposed product (dmlconform/ops/_resample_kernel.py)."""
        return transpose_passes(*self.by_input(), self.n_in)

    def terms_per_input(self) -> np.ndarray:
        return np.bincount(self.cols, minlength=self.n_in)

    def rounding_per_input(self, uncertain: np.ndarray | None = None) -> np.ndarray:
        """1 where some tap landing on the input has a weight other than ±1, or (`uncertain`: a reach
        matrix of coordinates not known exactly) a weight that may move: a factor that may round."""
        rounds = np.bincount(self.cols, weights=np.abs(self.weights) != 1, minlength=self.n_in) > 0
        if uncertain is not None:
            rounds |= uncertain.any(axis=0)
        return rounds.astype(np.int64)


def axis_taps(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float,
              mode: str, rounding: str, edges: str = "clamped") -> AxisTaps:
    """The forward's taps along one axis. `rounding` names NEAREST_NEIGHBOR's rule (`coordinates.PICKS`); `edges` what
    LINEAR does with a tap outside the input: `clamped` onto the edge (Resample2's), or `dropped` (a reading of
    ResampleGrad v0's silent page)."""
    x = source_coordinates(n_out, scale, input_offset, output_offset).astype(np.float64)
    rows = np.arange(n_out)
    if mode == "NEAREST_NEIGHBOR":
        pick = coordinates.pick(x, rounding)
        return AxisTaps(n_in, n_out, rows, np.clip(pick, 0, n_in - 1).astype(np.int64), np.ones(n_out))
    x = np.where(np.isfinite(x), x, np.clip(x, -1, n_in))  # an infinite coordinate clamps to an edge
    low = np.floor(x)
    t = x - low  # exact: x is a float32 value
    rows = np.concatenate([rows, rows])
    taps = np.concatenate([low, low + 1])
    cols = np.clip(taps, 0, n_in - 1).astype(np.int64)
    weights = np.concatenate([1.0 - t, t])
    keep = weights != 0
    if edges == "dropped":
        keep &= (taps >= 0) & (taps <= n_in - 1)
    return AxisTaps(n_in, n_out, rows[keep], cols[keep], weights[keep])


def axis_weights(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float,
                 mode: str, rounding: str, edges: str = "clamped") -> np.ndarray:
    """W[o, i]: the weight with which forward input i contributes to forward output o (float64)."""
    return axis_taps(n_in, n_out, scale, input_offset, output_offset, mode, rounding, edges).matrix()


def contribution_counts(taps: list[AxisTaps], uncertain: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per dX element: the number of terms summed into it (the product of the per-axis tap counts), and
    the number of axes whose weight factor may round (a term's weight is the product of its axes')."""
    count = np.ones((), dtype=np.int64)
    factors = np.zeros((), dtype=np.int64)
    for axis, reach in zip(taps, uncertain, strict=True):
        count = np.multiply.outer(count, axis.terms_per_input())
        factors = np.add.outer(factors, axis.rounding_per_input(reach))
    return count, factors


def apply_dense_transposed(dy: np.ndarray, matrices: list[np.ndarray]) -> np.ndarray:
    """dY ×_a M_aᵀ for dense (n_out, n_in) matrices, in float64 (the coordinate slack's reach: small per axis);
    identity axes are skipped.

    A dense product would spread a NaN or infinity through 0·NaN to every element, so non-finite data adds
    the non-zero entries alone."""
    out = dy
    for axis, m in enumerate(matrices):
        if m.shape[0] == m.shape[1] and np.array_equal(m, np.eye(m.shape[0])):
            continue
        last = np.moveaxis(out, axis, -1)
        if np.isfinite(last).all():
            summed = last @ m
        else:
            rows, cols = np.nonzero(m)
            summed = np.zeros((*last.shape[:-1], m.shape[1]), dtype=np.float64)
            for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
                summed[..., col] += m[row, col] * last[..., row]
        out = np.moveaxis(summed, -1, axis)
    return out


def coordinate_slack(dy_abs: np.ndarray, deltas: list[np.ndarray], reaches: list[np.ndarray]) -> np.ndarray:
    """C per dX element: Σ over the gradients whose taps may reach it of |dy|·Σ_a Δx_a (float64)."""
    slack = np.zeros(tuple(r.shape[1] for r in reaches))
    for axis, delta in enumerate(deltas):
        if not delta.any():
            continue
        shape = [1] * dy_abs.ndim
        shape[axis] = delta.size
        slack += apply_dense_transposed(dy_abs * delta.reshape(shape), reaches)
    return slack


@dataclass(frozen=True)
class UncertainCoordinates:
    """Source coordinates that are not known exactly (an implementation may evaluate them in another order) and
    what that lets the gradient's elements do, per axis: `weights` what each dY coordinate's |dy| is worth in
    slack (Δx for LINEAR, 1 where a NEAREST pick is ambiguous), `reaches` which inputs those coordinates may
    reach, `rounding` (LINEAR) the reach of the coordinates whose weight may move, for the weight factors."""

    weights: list[np.ndarray]
    reaches: list[np.ndarray]
    rounding: list[np.ndarray | None]

    def slack(self, dy: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            return coordinate_slack(np.abs(dy.astype(np.float64)), self.weights, self.reaches)

    def terms(self, shape: tuple[int, ...]) -> np.ndarray:
        """m per dX element: how many terms uncertain coordinates may bring there (per axis that may move a term,
        the gradients whose taps may reach the element; an upper bound)."""
        flags = [(w > 0).astype(np.float64) for w in self.weights]
        return np.rint(coordinate_slack(np.ones(shape), flags, self.reaches)).astype(np.int64)


class SeparableTerms(LazyAccumulation):
    """ResampleGrad1's accumulation data: the terms of dX element i are the products of one tap per axis, so
    n and f are per-axis products and sums, and v, M, D at a few elements are gathered from those taps. The
    coordinate slack C, needed only where coordinates are uncertain, is computed for the whole output when
    first asked for."""

    def __init__(self, shape: tuple[int, ...], dy: np.ndarray, taps: list[AxisTaps],
                 uncertainty: Callable[[], UncertainCoordinates | None] = lambda: None) -> None:
        self.shape, self.dy, self.taps, self._uncertainty = shape, dy, taps, uncertainty

    @cached_property
    def uncertain(self) -> UncertainCoordinates | None:
        """Worked out only when the comparator judges an element (none, for a conforming result)."""
        return self._uncertainty()

    @property
    def rounding_reaches(self) -> list[np.ndarray | None]:
        return self.uncertain.rounding if self.uncertain is not None else [None] * len(self.taps)

    @cached_property
    def slack(self) -> np.ndarray | float:
        return self.uncertain.slack(self.dy) if self.uncertain is not None else 0.0

    @cached_property
    def moving_terms(self) -> np.ndarray | int:
        return self.uncertain.terms(self.dy.shape) if self.uncertain is not None else 0

    @cached_property
    def passes(self) -> list[list[TransposePass]]:
        return [axis.passes() for axis in self.taps]

    @cached_property
    def dense(self) -> Accumulation:
        f64 = np.dtype(np.float64)
        value = resample_transposed(self.dy, self.passes, self.shape, f64)
        abs_sum = resample_transposed(self.dy, self.passes, self.shape, f64, magnitudes=True)
        gradients = resample_transposed(self.dy, self.passes, self.shape, f64, "taps", magnitudes=True)
        count, factors = contribution_counts(self.taps, self.rounding_reaches)
        return Accumulation(value, abs_sum, count, factors, gradients, self.slack, self.moving_terms)

    def at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> Accumulation:
        if flat.size * 8 >= math.prod(self.shape):  # most of the output: the whole is cheaper
            return self.dense.at(flat, self.shape)
        index = np.unravel_index(flat, self.shape)
        count = np.ones(flat.size, dtype=np.int64)
        factors = np.zeros(flat.size, dtype=np.int64)
        for axis, reach, i in zip(self.taps, self.rounding_reaches, index, strict=True):
            count *= axis.terms_per_input()[i]
            factors += axis.rounding_per_input(reach)[i]
        value, abs_sum, gradients = (np.zeros(flat.size) for _ in range(3))
        for first in range(0, flat.size, 256):  # a block of elements: their terms fit in memory
            block = slice(first, first + 256)
            value[block], abs_sum[block], gradients[block] = self._sums(tuple(i[block] for i in index))
        slack = np.broadcast_to(self.slack, self.shape).reshape(-1)[flat]
        moving = np.broadcast_to(self.moving_terms, self.shape).reshape(-1)[flat]
        return Accumulation(value, abs_sum, count, factors, gradients, slack, moving)

    def sums_at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """v and M from the elements' own terms: no coordinate slack, which takes most of `at`'s time and does not
        depend on the gradient."""
        index = np.unravel_index(flat, self.shape)
        value, abs_sum = np.zeros(flat.size), np.zeros(flat.size)
        for first in range(0, flat.size, 256):  # a block of elements: their terms fit in memory
            block = slice(first, first + 256)
            value[block], abs_sum[block], _ = self._sums(tuple(i[block] for i in index))
        return value, abs_sum

    def _sums(self, index: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """v, M, D at the given dX elements from their terms, one array axis per resampled axis."""
        where = np.zeros(index[0].shape, dtype=np.int64)
        weight = np.ones(index[0].shape)
        taps = np.ones(index[0].shape)
        valid = np.ones(index[0].shape, dtype=bool)
        for a, (axis, i) in enumerate(zip(self.taps, index, strict=True)):
            rows, weights, counts, present = _taps_of_inputs(axis, i)
            expand = (slice(None),) + (None,) * a + (slice(None),)
            step = math.prod(self.dy.shape[a + 1:])
            where = where[..., None] + rows[expand] * step
            weight = weight[..., None] * weights[expand]
            taps = taps[..., None] * counts[expand]
            valid = valid[..., None] & present[expand]
        grads = self.dy.reshape(-1)[where].astype(np.float64)
        summed_axes = tuple(range(1, where.ndim))
        with np.errstate(invalid="ignore", over="ignore"):
            terms = np.where(valid, weight * grads, 0.0)
            magnitudes = np.where(valid, np.abs(grads), 0.0)
            return terms.sum(axis=summed_axes), (np.abs(weight) * magnitudes).sum(axis=summed_axes), \
                (taps * magnitudes).sum(axis=summed_axes)


def _taps_of_inputs(axis: AxisTaps, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per requested input, its merged taps padded to a common width: rows, weights, tap counts, presence."""
    rows, cols, weights, counts = axis.by_input()
    start = np.searchsorted(cols, inputs)
    number = np.searchsorted(cols, inputs, side="right") - start
    width = max(int(number.max()) if number.size else 0, 1)
    slot = start[:, None] + np.arange(width)
    present = np.arange(width) < number[:, None]
    slot = np.where(present, slot, 0).clip(max=max(cols.size - 1, 0))
    if cols.size == 0:
        zeros = np.zeros(slot.shape)
        return slot, zeros, zeros, present
    return rows[slot], np.where(present, weights[slot], 0.0), np.where(present, counts[slot], 0.0), present


class ResampleGrad1(Operator):
    name = "RESAMPLE_GRAD1"
    inputs = ("InputGradientTensor",)
    support = SUPPORT
    params = (
        Param("InterpolationMode", ParamKind.ENUM, ("NEAREST_NEIGHBOR", "LINEAR"), "DML_INTERPOLATION_MODE_"),
        Param("RoundingDirection", ParamKind.ENUM, ("INCREASING", "DECREASING"), "DML_AXIS_DIRECTION_"),
        Param("Scales", ParamKind.FLOATS),
        Param("InputPixelOffsets", ParamKind.FLOATS),
        Param("OutputPixelOffsets", ParamKind.FLOATS),
    )
    dimension_arrays = ("Scales", "InputPixelOffsets", "OutputPixelOffsets")
    # DirectML 1.15.4 names the gradient's offsets after its own tensors (`swapped`) on both stacks measured,
    # hence the default; `literal` reads them as the forward's.
    variants = ("swapped", "literal")

    def check_rules(self, desc: Description) -> None:
        # The pages ask for nothing but scales (> 1 up, < 1 down); infinite scales and offsets are not
        # excluded, and DirectML 1.15.4 accepts them: their coordinates clamp to an edge like any other.
        for i, scale in enumerate(desc.params["Scales"]):
            if not scale > 0:
                raise DescriptionError(f"Scales[{i}]", f"{scale} must be a number above 0")
        for name in ("InputPixelOffsets", "OutputPixelOffsets"):
            for i, offset in enumerate(desc.params[name]):
                if np.isnan(offset):
                    raise DescriptionError(f"{name}[{i}]", "NaN is not an offset")
        for variant in self.offset_readings:
            for axis, (_, n_out, scale, ipo, opo) in enumerate(self.axes(desc, variant)):
                if np.isnan(source_coordinates(n_out, scale, ipo, opo)).any():
                    raise DescriptionError(f"Scales[{axis}]", f"with these offsets some source coordinate of axis "
                                           f"{axis} is NaN (inf − inf or inf/inf)")

    #: One variant per reading of the offsets (the only choice that decides which coordinates exist at all).
    offset_readings: tuple[str, ...] = ("swapped", "literal")

    def offsets_swapped(self, variant: str | None) -> bool:
        """Whether the variant reads the gradient's InputPixelOffsets as the forward's OutputPixelOffsets."""
        return (variant or self.variants[0]) == "swapped"

    def rounding(self, desc: Description, variant: str | None = None) -> str:
        """NEAREST_NEIGHBOR's rounding rule (a key of `coordinates.PICKS`): here the RoundingDirection field."""
        return str(desc.params["RoundingDirection"])

    def edges(self, variant: str | None = None) -> str:
        """What LINEAR does with a tap outside the input: Resample2 clamps it onto the edge."""
        return "clamped"

    def weights(self, desc: Description, variant: str | None = None) -> list[np.ndarray]:
        """Per axis, the dense forward weight matrix W[o, i]."""
        return [axis.matrix() for axis in self.taps(desc, variant)]

    def axes(self, desc: Description, variant: str | None = None) -> list[tuple[int, int, float, float, float]]:
        """Per axis: (dX extent, dY extent, scale, forward input offset, forward output offset)."""
        p = desc.params
        ipo, opo = p["InputPixelOffsets"], p["OutputPixelOffsets"]
        if self.offsets_swapped(variant):
            ipo, opo = opo, ipo
        dy = desc.tensors["InputGradientTensor"].shape
        dx = desc.output.shape
        return [(dx[a], dy[a], p["Scales"][a], ipo[a], opo[a]) for a in range(len(dx))]

    def taps(self, desc: Description, variant: str | None = None) -> list[AxisTaps]:
        mode, rounding, edges = desc.params["InterpolationMode"], self.rounding(desc, variant), self.edges(variant)
        return [axis_taps(*axis, mode, rounding, edges) for axis in self.axes(desc, variant)]

    def uncertain_coordinates(self, desc: Description, variant: str | None = None
                              ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per axis: the contract's coordinates x(o) and how precisely they are known, Δx(o): uncertain wherever the
        modelled orders disagree or the real value is not a float32 value (D3D's division and reciprocal are not
        correctly rounded), and for LINEAR wherever the scale is not a power of two (DirectML's LINEAR coordinates
        are not exact there even where the quotient is a float32 value). A LINEAR weight moves with such a
        coordinate; a NEAREST_NEIGHBOR pick moves only where x ± Δx straddles the rule's boundary (`ambiguous_picks`:
        an integer for floor and ceil, a half-integer for the half rules), as real GPUs showed (docs/tolerances.md
        §5b)."""
        linear = desc.params["InterpolationMode"] == "LINEAR"
        rounding = self.rounding(desc, variant)
        known = []
        for _, n_out, scale, ipo, opo in self.axes(desc, variant):
            x = source_coordinates(n_out, scale, ipo, opo).astype(np.float64)
            delta = coordinates.uncertainty(n_out, scale, ipo, opo, linear)
            # A rounding rule that adds a half may round that sum too (ResampleGrad v0's; none of RoundingDirection's).
            known.append((x, delta if linear else np.maximum(delta, coordinates.rounding_slack(x, rounding))))
        return known

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        dy = inputs["InputGradientTensor"]
        taps = self.taps(desc, variant)
        terms = SeparableTerms(desc.output.shape, dy, taps, partial(self.coordinate_uncertainty, desc, variant, taps))
        out = resample_transposed(dy, terms.passes, desc.output.shape, dy.dtype)
        return Reference({"OutputGradientTensor": out}, {"OutputGradientTensor": terms})

    def coordinate_uncertainty(self, desc: Description, variant: str | None, taps: list[AxisTaps]
                   ) -> UncertainCoordinates | None:
        """What coordinates that are not known exactly may move, per axis; None where every one is exact."""
        known = self.uncertain_coordinates(desc, variant)
        if not any(delta.any() for _, delta in known):
            return None
        deltas = [delta for _, delta in known]
        if desc.params["InterpolationMode"] == "LINEAR":
            reaches = [coordinates.reach(x, delta, axis.n_in) for (x, delta), axis in zip(known, taps, strict=True)]
            return UncertainCoordinates(deltas, reaches,
                                        [r * (d > 0)[:, None] for r, d in zip(reaches, deltas, strict=True)])
        rounding = self.rounding(desc, variant)
        ambiguous = [coordinates.ambiguous_picks(x, delta, rounding).astype(np.float64) for x, delta in known]
        if not any(a.any() for a in ambiguous):
            return None
        reaches = [coordinates.pick_reach(x, delta, axis.n_in, rounding)
                   for (x, delta), axis in zip(known, taps, strict=True)]
        # An ambiguous pick may put the whole gradient on either element: |dy| of slack on both.
        return UncertainCoordinates(ambiguous, reaches, [None] * len(taps))

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        return Tolerance.bound()


RESAMPLE_GRAD1 = ResampleGrad1()
