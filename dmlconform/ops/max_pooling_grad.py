"""DML_OPERATOR_MAX_POOLING_GRAD: route each dY element to the argmax of its window in X.

Tap position per spatial dim: `p = o*stride - startPad + k*dilation`. Taps outside the input
(padding, or past the padded input when dY is larger than the pooled size) never win. Taps are
scanned in row-major order with a strict `>`, so ties go to the lowest flat index. Overlapping
windows add; untouched elements are 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dmlconform.compare.accumulation import Accumulation, LazyAccumulation
from dmlconform.compare.tolerance import Tolerance
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
from dmlconform.ops.parallel import in_parallel

SUPPORT = SupportTable((
    SupportRow(L.L3_0, 4, 4, frozenset({T.FLOAT32, T.FLOAT16})),
    SupportRow(L.L4_0, 4, 5, frozenset({T.FLOAT32, T.FLOAT16})),
))

_GEOMETRY = ("Strides", "WindowSize", "StartPadding", "EndPadding", "Dilations")


def pooled_size(extent: int, window: int, stride: int, start: int, end: int, dilation: int) -> int:
    """The usual dY extent: (in + startPad + endPad - dilated window) // stride + 1."""
    return (extent + start + end - ((window - 1) * dilation + 1)) // stride + 1


#: X elements handled together (whole batch × channel planes): a chunk's temporaries stay in the CPU caches
#: (about 2 MiB of L2 a core), which makes the many small passes of the window search run at cache speed
#: rather than memory speed. Much smaller chunks make threads queue for the GIL between NumPy calls: at 2^17,
#: two threads were slower than one on the benchmark's 3-D pooling; at 2^19 they are 1.3-1.5x faster.
CHUNK_ELEMENTS = 1 << 19


def argmax_indices(x: np.ndarray, out_spatial: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
                   nan_rule: str = "nan-sticks") -> np.ndarray:
    """Flat index into x of each window's winner, shape [N, C, *out_spatial]; -1 where no tap is inside.

    nan_rule: `nan-sticks` (strict `>` scan: a NaN wins only as the first valid tap), `nan-wins`
    (the first NaN of a window wins), `nan-wins-last` (the last NaN wins: `v > best || isnan(v)`, as
    PyTorch scans) or `nan-ignored` (NaN wins only if every valid tap is NaN).
    """
    winners = np.empty((math.prod(x.shape[:2]), *out_spatial), dtype=np.int64)
    plane_size = math.prod(x.shape[2:])

    def keep(planes: slice, local: np.ndarray) -> None:
        globally = winners[planes]
        np.add(local, planes.start * plane_size, out=globally)
        globally[local < 0] = -1

    for_each_chunk(x, tuple(out_spatial), params, nan_rule, keep)
    return winners.reshape(x.shape[:2] + tuple(out_spatial))


def for_each_chunk(x: np.ndarray, out_spatial: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
                   nan_rule: str, consume: Callable[[slice, np.ndarray], None]) -> None:
    """argmax_indices a chunk of whole [N*C] planes at a time, chunks in parallel: `consume(planes, winners)` gets
    each window's winner as a flat index into its chunk. A chunk's temporaries stay in the CPU caches.

    Chunks whose windows read no NaN (and whose maxima are not -inf) take `WindowPlan.winners`: the maximum
    over the taps, then the first tap equal to it, which is what the strict `>` scan finds whatever the NaN
    rule (the rules differ only where a NaN is read). Other chunks take `scan_taps`, the tap-by-tap scan.
    """
    spatial = x.shape[2:]
    planes = x.reshape(-1, *spatial)
    step = max(1, CHUNK_ELEMENTS // max(math.prod(spatial), 1))
    plan = WindowPlan.build(spatial, out_spatial, params, min(step, planes.shape[0]))

    def chunk(first: int) -> None:
        with np.errstate(invalid="ignore", over="ignore"):
            part = planes[first:first + step]
            local = plan.winners(part)
            if local is None:
                local = scan_taps(part[:, None], out_spatial, params, nan_rule).reshape(part.shape[0], *out_spatial)
            consume(slice(first, first + part.shape[0]), local)

    in_parallel(chunk, range(0, planes.shape[0], step))


@dataclass(frozen=True)
class AxisPhases:
    """One spatial axis of the window geometry, split by stride phase.

    Tap k of output o reads position `o*stride + e_k` with `e_k = k*dilation - startPad`. Writing
    `e_k = q_k*stride + r_k` (0 <= r_k < stride), that is element `o + q_k` of the phase-`r_k` sequence
    `r_k, r_k + stride, ...`: every tap is a unit-step slice of one phase sequence (padded where it runs
    outside the input), so the window search reads contiguous memory however large the stride.
    """

    residues: tuple[int, ...]  # the phases some tap uses
    first: tuple[int, ...]  # per phase: the sequence index its padded copy starts at
    length: tuple[int, ...]  # per phase: the padded copy's length
    real: tuple[tuple[int, int], ...]  # per phase: the sequence indices [lo, hi) that lie inside the input
    stride: int
    tap_phase: tuple[int, ...]  # per tap: index into residues
    tap_start: tuple[int, ...]  # per tap: where its slice starts in that phase's padded copy
    tap_offset: tuple[int, ...]  # per tap: e_k

    @classmethod
    def build(cls, extent: int, out: int, window: int, stride: int, start: int, dilation: int) -> AxisPhases:
        offsets = [k * dilation - start for k in range(window)]
        residues = tuple(sorted({e % stride for e in offsets}))
        first, length, real = [], [], []
        for r in residues:
            shifts = [e // stride for e in offsets if e % stride == r]
            lo, hi = min(shifts), max(shifts) + out  # sequence indices [lo, hi) some tap reads
            first.append(lo)
            length.append(hi - lo)
            inside_hi = (extent - 1 - r) // stride + 1  # sequence indices [0, inside_hi) are in the input
            real.append((max(lo, 0), max(min(hi, inside_hi), max(lo, 0))))
        phase_of = {r: i for i, r in enumerate(residues)}
        tap_phase = tuple(phase_of[e % stride] for e in offsets)
        tap_start = tuple(e // stride - first[phase_of[e % stride]] for e in offsets)
        return cls(residues, tuple(first), tuple(length), tuple(real), stride, tap_phase, tap_start, tuple(offsets))


@dataclass(frozen=True)
class WindowPlan:
    spatial: tuple[int, ...]
    out: tuple[int, ...]
    axes: tuple[AxisPhases, ...]
    #: Planes in the largest chunk.
    planes: int

    @classmethod
    def build(cls, spatial: tuple[int, ...], out: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
              planes: int) -> WindowPlan:
        axes = tuple(AxisPhases.build(n, o, w, s, a, d) for n, o, w, s, a, d in
                     zip(spatial, out, params["WindowSize"], params["Strides"], params["StartPadding"],
                         params["Dilations"], strict=True))
        return cls(tuple(spatial), tuple(out), axes, planes)

    def phase_copies(self, chunk: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
        """Per combination of phases, the chunk's elements of that phase, -inf where a tap reads padding."""
        work = chunk.dtype if chunk.dtype.itemsize >= 4 else np.dtype(np.float32)  # exact, and fast to compare
        copies = {}
        for combo in itertools.product(*(range(len(axis.residues)) for axis in self.axes)):
            shape = (chunk.shape[0], *(axis.length[p] for axis, p in zip(self.axes, combo, strict=True)))
            copy = np.full(shape, -np.inf, dtype=work)
            spans = [axis.real[p] for axis, p in zip(self.axes, combo, strict=True)]
            if all(hi > lo for lo, hi in spans):
                target = tuple(slice(lo - axis.first[p], hi - axis.first[p]) for (lo, hi), axis, p in
                               zip(spans, self.axes, combo, strict=True))
                source = tuple(slice(axis.residues[p] + axis.stride * lo, axis.residues[p] + axis.stride * (hi - 1) + 1,
                                     axis.stride) for (lo, hi), axis, p in zip(spans, self.axes, combo, strict=True))
                copy[(slice(None), *target)] = chunk[(slice(None), *source)]
            copies[combo] = copy
        return copies

    def winners(self, chunk: np.ndarray) -> np.ndarray | None:
        """Flat index into `chunk` ([planes, *spatial]) of each window's winner, the first tap (row-major) holding
        the window's maximum; -1 where every tap is padding. None where a window reads a NaN, or a window's
        maximum is -inf and the chunk holds a -inf (then only a scan tells a real -inf from padding)."""
        copies = self.phase_copies(chunk)
        views = []
        for tap in itertools.product(*(range(len(axis.tap_phase)) for axis in self.axes)):
            combo = tuple(axis.tap_phase[k] for axis, k in zip(self.axes, tap, strict=True))
            window = tuple(slice(axis.tap_start[k], axis.tap_start[k] + o) for axis, k, o in
                           zip(self.axes, tap, self.out, strict=True))
            views.append(copies[combo][(slice(None), *window)])
        best = views[0].copy()
        for view in views[1:]:
            np.maximum(best, view, out=best)  # a NaN read anywhere in a window makes its maximum NaN
        if np.isnan(best).any():
            return None
        empty = best == -np.inf if self.may_read_only_padding or np.isneginf(best).any() else None
        if empty is not None and empty.any() and np.isneginf(chunk).any():
            return None
        # The winner's tap number is how many taps come before the first one equal to the maximum.
        tap = np.zeros(best.shape, dtype=np.uint8 if len(views) < 256 else np.int32)
        searching = np.ones(best.shape, dtype=bool)
        differs = np.empty(best.shape, dtype=bool)
        for view in views[:-1]:
            np.not_equal(view, best, out=differs)
            np.logical_and(searching, differs, out=searching)
            np.add(tap, searching, out=tap, casting="unsafe")
        index = self.tap_offsets[tap]
        index += self.origins[:chunk.shape[0]]
        if empty is not None:
            index[empty] = -1
        return index

    @cached_property
    def may_read_only_padding(self) -> bool:
        """Whether some window lies wholly in the padding (along some axis none of its taps is inside)."""
        return any(not all(any(0 <= o * axis.stride + e < n for e in axis.tap_offset) for o in range(out))
                   for axis, n, out in zip(self.axes, self.spatial, self.out, strict=True))

    @cached_property
    def tap_offsets(self) -> np.ndarray:
        """Per tap (row-major), its flat offset from the window's origin."""
        offsets = np.zeros((), dtype=np.int64)
        for axis, step in zip(self.axes, self.place, strict=True):
            offsets = np.add.outer(offsets, np.asarray(axis.tap_offset, dtype=np.int64) * step)
        return offsets.reshape(-1)

    @cached_property
    def origins(self) -> np.ndarray:
        """Per window of a full chunk, the flat index of `o*stride` (its origin without the padding)."""
        origin = np.arange(self.planes, dtype=np.int64) * math.prod(self.spatial)
        for axis, out, step in zip(self.axes, self.out, self.place, strict=True):
            origin = np.add.outer(origin, np.arange(out, dtype=np.int64) * (axis.stride * step))
        return origin

    @property
    def place(self) -> list[int]:
        """The flat step of each spatial axis within a plane."""
        return [math.prod(self.spatial[i + 1:]) for i in range(len(self.spatial))]


def scan_taps(x: np.ndarray, out_spatial: tuple[int, ...], params: Mapping[str, tuple[int, ...]],
              nan_rule: str = "nan-sticks") -> np.ndarray:
    """argmax_indices by a scan of the taps in row-major order, one NaN rule at a time (the path for planes
    holding NaN or -inf)."""
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


class RoutedGradients(LazyAccumulation):
    """MaxPoolingGrad's accumulation data: each dY element is one term of weight 1 routed to its window's winner.

    Keeps one index per dY element; sums for dX elements are formed only where asked (`at`)."""

    def __init__(self, shape: tuple[int, ...], targets: np.ndarray, gradients: np.ndarray) -> None:
        self.shape = shape
        #: Per dY element (flat), the flat dX index it is routed to; -1 for windows of padding only.
        self.targets = targets
        self.gradients = gradients

    def at(self, flat: np.ndarray, shape: tuple[int, ...] | None = None) -> Accumulation:
        """n, v, M (= Σ|dy|) at the sorted flat dX indices `flat`."""
        if flat.size == math.prod(self.shape):  # every element: the indices are the positions
            position, hit = self.targets, self.targets >= 0
        else:
            position = np.searchsorted(flat, self.targets).clip(max=max(flat.size - 1, 0))
            hit = flat[position] == self.targets if flat.size else np.zeros(self.targets.shape, dtype=bool)
        position, grads = position[hit], self.gradients[hit].astype(np.float64)
        value = np.bincount(position, weights=grads, minlength=flat.size)
        abs_sum = np.bincount(position, weights=np.abs(grads), minlength=flat.size)
        count = np.bincount(position, minlength=flat.size)
        return Accumulation(value, abs_sum, count, np.zeros(flat.size, dtype=np.int64), abs_sum)

    def max_count(self) -> int:
        """The most gradients any dX element receives (counted a chunk of planes at a time: a window's winner
        lies in the window's own plane)."""
        plane_size = math.prod(self.shape[2:])
        targets = self.targets.reshape(math.prod(self.shape[:2]), -1)
        step = max(1, CHUNK_ELEMENTS // max(plane_size, 1))
        most = 0
        for first in range(0, targets.shape[0], step):
            block = targets[first:first + step]
            routed = block[block >= 0] - first * plane_size
            if routed.size:
                most = max(most, int(np.bincount(routed).max()))
        return most


class MaxPoolingGrad(Operator):
    name = "MAX_POOLING_GRAD"
    inputs = ("InputTensor", "InputGradientTensor")
    support = SUPPORT
    params = tuple(Param(name, ParamKind.UINTS) for name in _GEOMETRY)
    dimension_arrays = _GEOMETRY
    same_sizes = ("InputTensor", "OutputGradientTensor")
    # NaN in X: DirectML 1.15.4 follows `nan-ignored` (HLSL max) on both stacks measured, hence the default.
    variants = ("nan-ignored", "nan-sticks", "nan-wins", "nan-wins-last")
    dimension_count_rule = "the spatial dimension count (InputTensor's DimensionCount - 2)"

    def expected_dimension_count(self, desc: Description) -> int:
        return desc.tensors["InputTensor"].rank - 2

    def check_rules(self, desc: Description) -> None:
        check_at_least_one(desc, ("Strides", "WindowSize", "Dilations"))
        check_batch_and_channels(desc, "InputTensor")

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        plane_size = math.prod(x.shape[2:])
        out = np.empty(x.shape, dtype=dy.dtype)
        out_planes = out.reshape(-1, plane_size)
        gradients = dy.reshape(-1, math.prod(dy.shape[2:]))
        winners = np.empty(gradients.shape, dtype=np.int64)

        def route(planes: slice, local: np.ndarray) -> None:
            local = local.reshape(local.shape[0], -1)
            grads = gradients[planes]
            np.add(local, planes.start * plane_size, out=winners[planes])
            routed = local >= 0
            if not routed.all():
                winners[planes][~routed] = -1
                local, grads = local[routed], grads[routed]
            # Each element's gradients summed in float64, then rounded once.
            value = np.bincount(local.reshape(-1), weights=grads.reshape(-1), minlength=out_planes[planes].size)
            np.copyto(out_planes[planes], value.reshape(-1, plane_size), casting="unsafe")

        for_each_chunk(x, dy.shape[2:], desc.params, variant or self.variants[0], route)
        return Reference({"OutputGradientTensor": out},
                         {"OutputGradientTensor": RoutedGradients(x.shape, winners.reshape(-1), dy.reshape(-1))})

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        routed = ref.accumulation["OutputGradientTensor"]
        assert isinstance(routed, RoutedGradients)
        return Tolerance.bound() if routed.max_count() > 1 else Tolerance.exact()


MAX_POOLING_GRAD = MaxPoolingGrad()
