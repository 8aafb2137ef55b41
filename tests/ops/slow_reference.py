"""The reference kernels as they were before issue 11 made them fast: the test oracle for the fast ones.

Verbatim copies of the MaxPoolingGrad tap scan and the dense ResampleGrad1 (one matrix product per axis), with
their full float64 accumulation arrays. `tests/ops/test_fast_kernels.py` holds the fast kernels to these bit for
bit (outputs) and value for value (accumulation data) over many random descriptions. Nothing in the package
imports this module.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dmlconform.compare.accumulation import Accumulation
from dmlconform.ops.base import Description


def argmax_indices(x: np.ndarray, out_spatial: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
                   nan_rule: str = "nan-sticks") -> np.ndarray:
    """Flat index into x of each window's winner, shape [N, C, *out_spatial]; -1 where no tap is inside.

    nan_rule: `nan-sticks` (strict `>` scan: a NaN wins only as the first valid tap), `nan-wins`
    (the first NaN of a window wins), `nan-wins-last` (the last NaN wins: `v > best || isnan(v)`, as
    PyTorch scans) or `nan-ignored` (NaN wins only if every valid tap is NaN).
    """
    spatial = x.shape[2:]
    dims = len(spatial)
    strides, dilations, start = params["Strides"], params["Dilations"], params["StartPadding"]
    # Pad X so that every tap is a strided slice (a view); `inside` says which padded places are real.
    last_tap = [(o - 1) * s - a + (k - 1) * d for o, s, a, k, d in
                zip(out_spatial, strides, start, params["WindowSize"], dilations, strict=True)]
    before = [max(0, a) for a in start]
    after = [max(0, t - (n - 1)) for t, n in zip(last_tap, spatial, strict=True)]
    region = tuple(slice(b, b + n) for b, n in zip(before, spatial, strict=True))
    padded = np.zeros(x.shape[:2] + tuple(b + n + e for b, n, e in zip(before, spatial, after, strict=True)),
                      dtype=x.dtype)
    padded[(slice(None), slice(None), *region)] = x
    inside = np.zeros(padded.shape[2:], dtype=bool)
    inside[region] = True

    taps = list(itertools.product(*(range(w) for w in params["WindowSize"])))
    best_value = np.zeros(x.shape[:2] + out_spatial, dtype=x.dtype)
    best_tap = np.full(x.shape[:2] + out_spatial, -1, dtype=np.int16 if len(taps) < 2**15 else np.int32)
    for number, tap in enumerate(taps):
        window = tuple(slice(b - a + k * d, b - a + k * d + (o - 1) * s + 1, s) for b, a, k, d, o, s in
                       zip(before, start, tap, dilations, out_spatial, strides, strict=True))
        values = padded[(slice(None), slice(None), *window)]
        take = values > best_value
        if nan_rule == "nan-wins":
            take |= np.isnan(values) & ~np.isnan(best_value)
        elif nan_rule == "nan-wins-last":
            take |= np.isnan(values)
        elif nan_rule == "nan-ignored":
            take |= np.isnan(best_value) & ~np.isnan(values)
        take &= inside[window]
        take |= (best_tap < 0) & inside[window]
        np.copyto(best_value, values, where=take)
        best_tap[take] = number

    # Winner's flat index = plane offset + sum over dims of (o*stride - startPad + k*dilation) * place.
    tap_table = np.array(taps, dtype=np.int64).reshape(len(taps), dims)
    plane_strides = np.cumprod((1, *spatial[::-1]))[:-1][::-1]
    index = np.zeros(best_tap.shape, dtype=np.int64)
    chosen = np.maximum(best_tap, 0)
    for i in range(dims):
        shape = [1] * (dims + 2)
        shape[2 + i] = out_spatial[i]
        origin = (np.arange(out_spatial[i], dtype=np.int64) * strides[i] - start[i]).reshape(shape)
        index += (origin + tap_table[chosen, i] * dilations[i]) * plane_strides[i]
    plane = int(np.prod(spatial))
    index += np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * dims) * plane
    return np.where(best_tap >= 0, index, -1)


def max_pooling_grad(desc: Description, inputs: Mapping[str, np.ndarray], variant: str = "nan-sticks"
                     ) -> tuple[np.ndarray, Accumulation]:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    with np.errstate(invalid="ignore"):
        winners = argmax_indices(x, dy.shape[2:], desc.params, variant).ravel()
    routed = winners >= 0
    target, grads = winners[routed], dy.ravel()[routed].astype(np.float64)
    value = np.bincount(target, weights=grads, minlength=x.size).reshape(x.shape)
    abs_sum = np.bincount(target, weights=np.abs(grads), minlength=x.size).reshape(x.shape)
    count = np.bincount(target, minlength=x.size).reshape(x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        out = value.astype(dy.dtype)
    return out, Accumulation(value, abs_sum, count)



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

    def rounding_per_input(self) -> np.ndarray:
        """1 where some tap landing on the input has a weight other than ±1 (a factor that may round), else 0."""
        return (np.bincount(self.cols, weights=np.abs(self.weights) != 1, minlength=self.n_in) > 0).astype(np.int64)


def axis_taps(n_in: int, n_out: int, scale: float, input_offset: float, output_offset: float,
              mode: str, rounding: str) -> AxisTaps:
    x = source_coordinates(n_out, scale, input_offset, output_offset).astype(np.float64)
    rows = np.arange(n_out)
    if mode == "NEAREST_NEIGHBOR":
        pick = np.floor(x) if rounding == "DECREASING" else np.ceil(x)
        return AxisTaps(n_in, n_out, rows, np.clip(pick, 0, n_in - 1).astype(np.int64), np.ones(n_out))
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


def contribution_counts(taps: list[AxisTaps]) -> tuple[np.ndarray, np.ndarray]:
    """Per dX element: the number of terms summed into it (the product of the per-axis tap counts), and
    the number of axes whose weight factor may round (a term's weight is the product of its axes')."""
    count = np.ones((), dtype=np.int64)
    factors = np.zeros((), dtype=np.int64)
    for axis in taps:
        count = np.multiply.outer(count, axis.terms_per_input())
        factors = np.add.outer(factors, axis.rounding_per_input())
    return count, factors


def resample_taps(desc: Description, variant: str = "literal") -> list[AxisTaps]:
    p = desc.params
    ipo, opo = p["InputPixelOffsets"], p["OutputPixelOffsets"]
    if variant == "swapped":
        ipo, opo = opo, ipo
    dy = desc.tensors["InputGradientTensor"].shape
    dx = desc.output.shape
    return [axis_taps(dx[a], dy[a], p["Scales"][a], ipo[a], opo[a], p["InterpolationMode"],
                      p["RoundingDirection"]) for a in range(len(dx))]


def resample_grad1(desc: Description, inputs: Mapping[str, np.ndarray], variant: str = "literal"
                   ) -> tuple[np.ndarray, Accumulation]:
    dy = inputs["InputGradientTensor"]
    taps = resample_taps(desc, variant)
    weights = [axis.matrix() for axis in taps]
    dy64 = dy.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        value = apply_transposed(dy64, weights)
        abs_sum = apply_transposed(np.abs(dy64), [np.abs(w) for w in weights])
        abs_gradient_sum = apply_transposed(np.abs(dy64), [axis.tap_matrix() for axis in taps])
        out = value.astype(dy.dtype)
    count, factors = contribution_counts(taps)
    return out, Accumulation(value, abs_sum, count, factors, abs_gradient_sum)
