"""DML_OPERATOR_RESAMPLE_GRAD1: the adjoint (transpose) of Resample2 with the same scales and offsets.

Resample2 samples, per dimension, input coordinate `x = (o - OutputPixelOffset) / Scale - InputPixelOffset`
computed in float32. NEAREST_NEIGHBOR takes floor(x) (DECREASING) or ceil(x) (INCREASING), clamped to
the edge; LINEAR takes floor(x) and floor(x)+1 with weights 1-t and t, each clamped. Resampling is
separable, so the forward is dY = X ×_a W_a over every dimension a and the gradient is dX = dY ×_a W_aᵀ.

Which offsets the gradient's fields mean is undocumented (contract §2): `literal` reads them as the
forward's; `swapped` reads the gradient's InputPixelOffsets as the forward's OutputPixelOffsets and
vice versa. The two agree wherever the offsets are equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dmlconform.compare.accumulation import Accumulation
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops import _resample_coordinates as coordinates
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
              mode: str, rounding: str) -> AxisTaps:
    x = source_coordinates(n_out, scale, input_offset, output_offset).astype(np.float64)
    rows = np.arange(n_out)
    if mode == "NEAREST_NEIGHBOR":
        pick = np.floor(x) if rounding == "DECREASING" else np.ceil(x)
        return AxisTaps(n_in, n_out, rows, np.clip(pick, 0, n_in - 1).astype(np.int64), np.ones(n_out))
    x = np.where(np.isfinite(x), x, np.clip(x, -1, n_in))  # an infinite coordinate clamps to an edge
    low = np.floor(x)
    t = x - low  # exact: x is a float32 value
    rows = np.concatenate([rows, rows])
    cols = np.clip(np.concatenate([low, low + 1]), 0, n_in - 1).astype(np.int64)
    weights = np.concatenate([1.0 - t, t])
    keep = weights != 0
    return AxisTaps(n_in, n_out, rows[keep], cols[keep], weights[keep])


def axis_weights(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float,
                 mode: str, rounding: str) -> np.ndarray:
    """W[o, i]: the weight with which forward input i contributes to forward output o (float64)."""
    return axis_taps(n_in, n_out, scale, input_offset, output_offset, mode, rounding).matrix()


def apply_transposed(dy: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    """dX = dY ×_a W_aᵀ for every axis a, in float64; identity axes are skipped.

    Only real contributions may touch a NaN or infinity: a dense product would spread one through
    0·NaN to every element, so non-finite data takes a path that adds the non-zero weights alone.
    """
    out = dy
    for axis, w in enumerate(weights):
        if w.shape[0] == w.shape[1] and np.array_equal(w, np.eye(w.shape[0])):
            continue
        last = np.moveaxis(out, axis, -1)
        if np.isfinite(last).all():
            summed = last @ w
        else:
            rows, cols = np.nonzero(w)
            summed = np.zeros((*last.shape[:-1], w.shape[1]), dtype=np.float64)
            for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
                summed[..., col] += w[row, col] * last[..., row]
        out = np.moveaxis(summed, -1, axis)
    return out


def contribution_counts(taps: list[AxisTaps], uncertain: list[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray]:
    """Per dX element: the number of terms summed into it (the product of the per-axis tap counts), and
    the number of axes whose weight factor may round (a term's weight is the product of its axes')."""
    count = np.ones((), dtype=np.int64)
    factors = np.zeros((), dtype=np.int64)
    for axis, reach in zip(taps, uncertain, strict=True):
        count = np.multiply.outer(count, axis.terms_per_input())
        factors = np.add.outer(factors, axis.rounding_per_input(reach))
    return count, factors


def coordinate_slack(dy_abs: np.ndarray, deltas: list[np.ndarray], reaches: list[np.ndarray]) -> np.ndarray:
    """C per dX element: Σ over the gradients whose taps may reach it of |dy|·Σ_a Δx_a (float64)."""
    slack = np.zeros(tuple(r.shape[1] for r in reaches))
    for axis, delta in enumerate(deltas):
        if not delta.any():
            continue
        shape = [1] * dy_abs.ndim
        shape[axis] = delta.size
        slack += apply_transposed(dy_abs * delta.reshape(shape), reaches)
    return slack


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
    variants = ("literal", "swapped")

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
        for variant in self.variants:
            for axis, (_, n_out, scale, ipo, opo) in enumerate(self.axes(desc, variant)):
                if np.isnan(source_coordinates(n_out, scale, ipo, opo)).any():
                    raise DescriptionError(f"Scales[{axis}]", f"with these offsets some source coordinate of axis "
                                           f"{axis} is NaN (inf − inf or inf/inf)")

    def weights(self, desc: Description, variant: str | None = None) -> list[np.ndarray]:
        """Per axis, the dense forward weight matrix W[o, i]."""
        return [axis.matrix() for axis in self.taps(desc, variant)]

    def axes(self, desc: Description, variant: str | None = None) -> list[tuple[int, int, float, float, float]]:
        """Per axis: (dX extent, dY extent, scale, forward input offset, forward output offset)."""
        p = desc.params
        ipo, opo = p["InputPixelOffsets"], p["OutputPixelOffsets"]
        if (variant or self.variants[0]) == "swapped":
            ipo, opo = opo, ipo
        dy = desc.tensors["InputGradientTensor"].shape
        dx = desc.output.shape
        return [(dx[a], dy[a], p["Scales"][a], ipo[a], opo[a]) for a in range(len(dx))]

    def taps(self, desc: Description, variant: str | None = None) -> list[AxisTaps]:
        p = desc.params
        return [axis_taps(*axis, p["InterpolationMode"], p["RoundingDirection"]) for axis in self.axes(desc, variant)]

    def uncertain_coordinates(self, desc: Description, variant: str | None = None
                              ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per axis: the contract's coordinates x(o) and how precisely they are known, Δx(o)."""
        return [(source_coordinates(n_out, scale, ipo, opo).astype(np.float64),
                 coordinates.uncertainty(n_out, scale, ipo, opo))
                for _, n_out, scale, ipo, opo in self.axes(desc, variant)]

    def ambiguous_picks(self, desc: Description, variant: str | None = None) -> list[np.ndarray]:
        """NEAREST_NEIGHBOR: per axis, the output coordinates whose pick depends on the evaluation order."""
        rounding = desc.params["RoundingDirection"]
        return [coordinates.ambiguous_picks(x, delta, rounding)
                for x, delta in self.uncertain_coordinates(desc, variant)]

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        dy = inputs["InputGradientTensor"]
        taps = self.taps(desc, variant)
        weights = [axis.matrix() for axis in taps]
        dy64 = dy.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            value = apply_transposed(dy64, weights)
            abs_sum = apply_transposed(np.abs(dy64), [np.abs(w) for w in weights])
            abs_gradient_sum = apply_transposed(np.abs(dy64), [axis.tap_matrix() for axis in taps])
            out = value.astype(dy.dtype)
            slack, uncertain = self._coordinate_slack(desc, variant, taps, np.abs(dy64))
        count, factors = contribution_counts(taps, uncertain)
        return Reference({"OutputGradientTensor": out},
                         {"OutputGradientTensor": Accumulation(value, abs_sum, count, factors,
                                                               abs_gradient_sum, slack)})

    def _coordinate_slack(self, desc: Description, variant: str | None, taps: list[AxisTaps], dy_abs: np.ndarray
                          ) -> tuple[np.ndarray | float, list[np.ndarray | None]]:
        """What coordinates that are not known exactly cost each element, and per axis the reach of those
        coordinates (for the weight factors that may round); (0, [None, ...]) where every one is exact."""
        known = self.uncertain_coordinates(desc, variant)
        if not any(delta.any() for _, delta in known):
            return 0.0, [None] * len(taps)
        deltas = [delta for _, delta in known]
        if desc.params["InterpolationMode"] == "LINEAR":
            reaches = [coordinates.reach(x, delta, axis.n_in) for (x, delta), axis in zip(known, taps, strict=True)]
            return coordinate_slack(dy_abs, deltas, reaches), [r * (d > 0)[:, None] for r, d in
                                                               zip(reaches, deltas, strict=True)]
        rounding = desc.params["RoundingDirection"]
        ambiguous = [coordinates.ambiguous_picks(x, delta, rounding).astype(np.float64) for x, delta in known]
        if not any(a.any() for a in ambiguous):
            return 0.0, [None] * len(taps)
        reaches = [coordinates.pick_reach(x, delta, axis.n_in, rounding)
                   for (x, delta), axis in zip(known, taps, strict=True)]
        # An ambiguous pick may put the whole gradient on either element: |dy| of slack on both.
        return coordinate_slack(dy_abs, ambiguous, reaches), [None] * len(taps)

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        return Tolerance.bound()


RESAMPLE_GRAD1 = ResampleGrad1()
