"""Adjoint properties: ResampleGrad1 is the transpose of Resample2, ResampleGrad (v0) of Resample1, SliceGrad the
transpose of Slice1, ElementWiseClipGrad (v0) the transpose of Clip's Jacobian where it has one,
AveragePoolingGrad the adjoint of a brute-force average pooling under every reading of its divisor.

The forward operators are written here, independently of the gradient code paths: Resample2 from the
per-axis weight matrices (dmlconform.ops.resample_grad1.axis_weights, itself checked against the
formula in test_resample_grad1.py) and Slice1 as a plain loop over output coordinates.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.resample_grad1 import axis_weights

RESAMPLE = find_operator("RESAMPLE_GRAD1")
SLICE = find_operator("SLICE_GRAD")


def resample2(x, out_shape, scales, ipo, opo, mode, rounding):
    """Forward Resample2 in float64: apply every axis' weights in turn."""
    y = x
    for axis, (n_out, s, i, o) in enumerate(zip(out_shape, scales, ipo, opo, strict=True)):
        w = axis_weights(x.shape[axis], n_out, s, i, o, mode, rounding)
        y = np.moveaxis(np.tensordot(w, np.moveaxis(y, axis, 0), axes=(1, 0)), 0, axis)
    return y


@pytest.mark.parametrize("mode", ["NEAREST_NEIGHBOR", "LINEAR"])
@pytest.mark.parametrize("rounding", ["DECREASING", "INCREASING"])
@pytest.mark.parametrize("variant", ["literal", "swapped"])
def test_resample_grad_is_the_adjoint_of_resample2(describe, mode, rounding, variant):
    rng = np.random.default_rng(11)
    for _ in range(12):
        rank = int(rng.integers(1, 5))
        dx = [int(v) for v in rng.integers(1, 6, size=rank)]
        scales = [float(rng.choice([0.5, 0.75, 1.0, 4 / 3, 1.5, 2.0, 2.5, 3.0])) for _ in range(rank)]
        dy_shape = [max(1, int(n * s) + int(rng.integers(-1, 2))) for n, s in zip(dx, scales, strict=True)]
        ipo = [float(v) for v in rng.choice([-0.5, 0.0, 0.25, 0.5], size=rank)]
        opo = [float(v) for v in rng.choice([-0.5, 0.0, 0.25, 0.5], size=rank)]
        p = {"InterpolationMode": mode, "RoundingDirection": rounding, "Scales": scales,
             "InputPixelOffsets": ipo, "OutputPixelOffsets": opo}
        desc = describe("RESAMPLE_GRAD1", p, DataType.FLOAT32, InputGradientTensor=dy_shape,
                        OutputGradientTensor=dx)
        x = rng.normal(size=dx)
        dy = rng.normal(size=dy_shape).astype(np.float32)
        grad = RESAMPLE.reference(desc, {"InputGradientTensor": dy}, variant).accumulation["OutputGradientTensor"]
        # The forward's offsets: the gradient's own fields (literal) or the two arrays exchanged (swapped).
        f_ipo, f_opo = (ipo, opo) if variant == "literal" else (opo, ipo)
        forward = resample2(x, dy_shape, [float(np.float32(s)) for s in scales], f_ipo, f_opo, mode, rounding)
        lhs = float(np.sum(forward * dy.astype(np.float64)))
        rhs = float(np.sum(x * grad.value))
        assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)
        assert np.array_equal(grad.value.astype(np.float32), RESAMPLE.reference(
            desc, {"InputGradientTensor": dy}, variant).outputs["OutputGradientTensor"])


def slice1(x, offsets, sizes, strides, counts):
    """Forward Slice1, one output element at a time (Slice1 page: start + stride * c per dimension)."""
    out = np.empty(counts, dtype=x.dtype)
    starts = [o + (s - 1 if t < 0 else 0) for o, s, t in zip(offsets, sizes, strides, strict=True)]
    for c in itertools.product(*(range(n) for n in counts)):
        out[c] = x[tuple(b + t * ci for b, t, ci in zip(starts, strides, c, strict=True))]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
def test_slice_grad_is_the_adjoint_of_slice1(describe, dtype):
    rng = np.random.default_rng(13)
    for _ in range(40):
        rank = int(rng.integers(1, 9))
        dx = [int(v) for v in rng.integers(1, 5 if rank < 5 else 3, size=rank)]
        sizes = [int(rng.integers(1, n + 1)) for n in dx]
        offsets = [int(rng.integers(0, n - s + 1)) for n, s in zip(dx, sizes, strict=True)]
        strides = [int(rng.choice([-4, -2, -1, 1, 2, 3])) for _ in dx]
        counts = [int(rng.integers(1, 2 + (s - 1) // abs(t))) for s, t in zip(sizes, strides, strict=True)]
        p = {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
        desc = describe("SLICE_GRAD", p, DataType.from_numpy(np.dtype(dtype)), InputGradientTensor=counts,
                        OutputGradientTensor=dx)
        x = rng.integers(0, 50, size=dx).astype(dtype)
        dy = rng.integers(1, 50, size=counts).astype(dtype)
        grad = SLICE.reference(desc, {"InputGradientTensor": dy}).outputs["OutputGradientTensor"]
        inner = lambda a, b: int(np.sum(a.astype(np.int64) * b.astype(np.int64)))  # noqa: E731
        assert inner(slice1(x, offsets, sizes, strides, counts), dy) == inner(x, grad)
        assert np.array_equal(slice1(grad, offsets, sizes, strides, counts), dy)  # Slice1 ∘ SliceGrad = id
        # SliceGrad ∘ Slice1 keeps exactly the selected elements of x and zeroes the rest.
        back = SLICE.reference(desc, {"InputGradientTensor": slice1(x, offsets, sizes, strides, counts)})
        kept = back.outputs["OutputGradientTensor"]
        assert np.array_equal(kept[grad != 0], x[grad != 0]) and not kept[grad == 0].any()


RESAMPLE_V0 = find_operator("RESAMPLE_GRAD")
V0_PICKS = {"floor": math.floor, "ceil": math.ceil, "half-up": lambda x: math.floor(x + 0.5),
            "half-down": lambda x: math.ceil(x - 0.5), "half-even": round}  # Python's round: half to even


def resample1_loop(x, out_shape, scales, ipo, opo, mode, rounding, edges):
    """Forward Resample1 one output element at a time, from its page's formula: per axis the float32 coordinate
    x = (o - OPO)/S - IPO, a NEAREST pick by `rounding` or LINEAR taps floor(x), floor(x) + 1 with weights 1 - t and t,
    clamped to the edge (or, `edges` dropped, left out); the output is the sum over the taps' products."""
    f32 = np.float32
    out = np.zeros(out_shape)
    for o in itertools.product(*(range(n) for n in out_shape)):
        per_axis = []
        for axis, oa in enumerate(o):
            n_in = x.shape[axis]
            c = float((f32(oa) - f32(opo[axis])) / f32(scales[axis]) - f32(ipo[axis]))
            if mode == "NEAREST_NEIGHBOR":
                per_axis.append([(min(max(V0_PICKS[rounding](c), 0), n_in - 1), 1.0)])
                continue
            low = math.floor(c)
            taps = [(low, 1 - (c - low)), (low + 1, c - low)]
            if edges == "dropped":
                taps = [(i, w) for i, w in taps if 0 <= i < n_in]
            per_axis.append([(min(max(i, 0), n_in - 1), w) for i, w in taps if w != 0])
        for combination in itertools.product(*per_axis):
            out[o] += math.prod(w for _, w in combination) * x[tuple(i for i, _ in combination)]
    return out


@pytest.mark.parametrize("mode", ["NEAREST_NEIGHBOR", "LINEAR"])
@pytest.mark.parametrize("variant", RESAMPLE_V0.variants)
def test_resample_grad_v0_is_the_adjoint_of_a_brute_force_resample1(describe, mode, variant):
    from dmlconform.ops.resample_grad import reading

    rng = np.random.default_rng(17)
    chosen = reading(variant)
    for _ in range(8):
        rank = int(rng.integers(1, 5))
        dx = [int(v) for v in rng.integers(1, 5, size=rank)]
        scales = [float(np.float32(rng.choice([0.5, 0.75, 1.0, 4 / 3, 2.0, 4.0]))) for _ in range(rank)]
        dy_shape = [max(1, int(n * s) + int(rng.integers(-1, 3))) for n, s in zip(dx, scales, strict=True)]
        ipo = [float(v) for v in rng.choice([-1.25, -0.5, 0.0, 0.25, 0.5, 0.75], size=rank)]
        opo = [float(v) for v in rng.choice([-1.25, -0.5, 0.0, 0.25, 0.5, 0.75], size=rank)]
        p = {"InterpolationMode": mode, "Scales": scales, "InputPixelOffsets": ipo, "OutputPixelOffsets": opo}
        desc = describe("RESAMPLE_GRAD", p, DataType.FLOAT32, InputGradientTensor=dy_shape, OutputGradientTensor=dx)
        x = rng.normal(size=dx)
        dy = rng.normal(size=dy_shape).astype(np.float32)
        grad = RESAMPLE_V0.reference(desc, {"InputGradientTensor": dy}, variant).accumulation["OutputGradientTensor"]
        f_ipo, f_opo = (ipo, opo) if chosen.offsets == "literal" else (opo, ipo)
        forward = resample1_loop(x, dy_shape, scales, f_ipo, f_opo, mode, chosen.rounding, chosen.edges)
        assert float(np.sum(forward * dy.astype(np.float64))) == pytest.approx(float(np.sum(x * grad.value)),
                                                                               rel=1e-12, abs=1e-12)


def clip_forward(x, low, high):
    """DML_ELEMENT_WISE_CLIP (v0) in exact arithmetic: min(Max, max(Min, x))."""
    return min(high, max(low, x))


@pytest.mark.parametrize("dtype", [DataType.FLOAT32, DataType.INT32, DataType.UINT8])
def test_clip_grad_v0_is_the_transpose_of_the_clip_jacobian(describe, dtype):
    """<ClipGrad(dY), v> = <dY, J v> with J the Jacobian of Clip (v0) at X, found by brute force from the forward
    (exact steps of 1/2^40 either side, Fraction arithmetic): the slope is 1 strictly inside the bounds on both
    sides, and the page's gradient is 0 where either side is flat (at a bound: its subgradient 0, not clamp's 1).
    Bounds that are values of the type, where every reading of them agrees."""
    from fractions import Fraction

    op = find_operator("ELEMENT_WISE_CLIP_GRAD")
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = 12
        if dtype.is_float:
            low, high = sorted(float(np.float32(v)) for v in rng.normal(size=2) * 3)
            x = rng.choice([low, high, (low + high) / 2, low - 1, high + 1, float(rng.normal())], size=n)
        else:
            info = np.iinfo(dtype.numpy)
            low, high = sorted(float(v) for v in rng.choice(np.arange(max(int(info.min), -10), 11), size=2,
                                                            replace=False))
            x = rng.integers(max(int(info.min), int(low) - 2), int(high) + 3, size=n)
        x = x.astype(dtype.numpy)
        dy = rng.integers(1, 50, size=n).astype(dtype.numpy)
        v = rng.integers(-9, 10, size=n)
        desc = describe("ELEMENT_WISE_CLIP_GRAD", {"Min": low, "Max": high}, dtype, InputTensor=(n,),
                        InputGradientTensor=(n,), OutputGradientTensor=(n,))
        dx = op.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}).outputs["OutputGradientTensor"]
        step = Fraction(1, 2**40)
        jacobian = []
        for value in x.tolist():
            at = Fraction(value)
            lo, hi = Fraction(low), Fraction(high)
            sides = [(clip_forward(at + s, lo, hi) - clip_forward(at, lo, hi)) / s for s in (step, -step)]
            jacobian.append(1 if sides == [1, 1] else 0)
        left = sum(int(a) * int(b) for a, b in zip(dx.tolist(), v.tolist(), strict=True))
        right = sum(int(a) * j * int(b) for a, j, b in zip(dy.tolist(), jacobian, v.tolist(), strict=True))
        assert left == right
        assert [int(a) for a in dx.tolist()] == [int(a) * j for a, j in zip(dy.tolist(), jacobian, strict=True)]


def average_pool(x, out_spatial, p, reading):
    """Forward DML_AVERAGE_POOLING (pages: window o covers o·Strides − StartPadding + k, zeros outside the input), one
    output at a time in float64, with the divisor `reading` gives a window (AVERAGE_POOLING_GRAD's variants: the
    positions of the window in the input, in the padded input, in [−StartPadding, In + StartPadding), or the whole
    window, or the whole window unless it runs past the padded input)."""
    spatial = x.shape[2:]
    start, end, window = p["StartPadding"], p["EndPadding"], p["WindowSize"]
    y = np.zeros((*x.shape[:2], *out_spatial))
    for o in itertools.product(*(range(n) for n in out_spatial)):
        taps = [[oi * s - a + k for k in range(w)] for oi, s, a, w in zip(o, p["Strides"], start, window, strict=True)]

        def count(low, high, taps=taps):
            return sum(all(lo <= q < hi for q, lo, hi in zip(c, low, high, strict=True))
                       for c in itertools.product(*taps))

        inside = count([0] * len(spatial), spatial)
        padded = [n + e for n, e in zip(spatial, end, strict=True)]
        if not p["IncludePadding"]:
            divisor = inside
        elif reading == "full-window":
            divisor = math.prod(window)
        elif reading == "in-bounds-overhang":
            past = any(t[-1] >= hi for t, hi in zip(taps, padded, strict=True))
            divisor = inside if past else math.prod(window)
        elif reading == "end-padding-as-start":
            divisor = count([-a for a in start], [n + a for n, a in zip(spatial, start, strict=True)])
        else:
            divisor = count([-a for a in start], padded)
        total = np.zeros(x.shape[:2])
        for c in itertools.product(*taps):
            if all(0 <= q < n for q, n in zip(c, spatial, strict=True)):
                total += x[(slice(None), slice(None), *c)]
        y[(slice(None), slice(None), *o)] = total / divisor if divisor else 0.0
    return y


@pytest.mark.parametrize("variant", find_operator("AVERAGE_POOLING_GRAD").variants)
@pytest.mark.parametrize("dims", [2, 3])
def test_average_pooling_grad_is_the_adjoint_of_average_pooling(describe, variant, dims):
    """<AvgPool(x), dY> = <x, AvgPoolGrad(dY)> under every reading of the divisor, with asymmetric padding, windows
    past the padded input (a gradient larger than the pooled size), windows of padding only (divisor 0 with
    IncludePadding FALSE: the forward writes 0 there, the gradient sends nothing back) and windows larger than the
    padded input."""
    from dmlconform.ops.average_pooling_grad import pooled_size

    op = find_operator("AVERAGE_POOLING_GRAD")
    rng = np.random.default_rng(17 + dims)
    for _ in range(25 if dims == 2 else 10):
        dx = [int(v) for v in rng.integers(1, 6 if dims == 2 else 4, size=dims)]
        window = [int(v) for v in rng.integers(1, 5, size=dims)]
        strides = [int(v) for v in rng.integers(1, 4, size=dims)]
        start = [int(v) for v in rng.integers(0, 4, size=dims)]
        end = [int(v) for v in rng.integers(0, 4, size=dims)]
        out = [max(1, pooled_size(n, k, s, a, e) + int(rng.integers(-1, 3)))
               for n, k, s, a, e in zip(dx, window, strides, start, end, strict=True)]
        p = {"Strides": strides, "WindowSize": window, "StartPadding": start, "EndPadding": end,
             "IncludePadding": bool(rng.integers(0, 2))}
        desc = describe("AVERAGE_POOLING_GRAD", p, DataType.FLOAT32, InputGradientTensor=(2, 1, *out),
                        OutputGradientTensor=(2, 1, *dx))
        x = rng.normal(size=(2, 1, *dx))
        dy = rng.normal(size=(2, 1, *out)).astype(np.float32)
        grad = op.reference(desc, {"InputGradientTensor": dy}, variant).accumulation["OutputGradientTensor"]
        lhs = float(np.sum(average_pool(x, out, p, variant) * dy.astype(np.float64)))
        assert lhs == pytest.approx(float(np.sum(x * grad.value)), rel=1e-12, abs=1e-12)
