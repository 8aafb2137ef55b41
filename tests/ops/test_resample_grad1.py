"""RESAMPLE_GRAD1 reference: the seed example (forward and backward), axis weights, offset conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.resample_grad1 import axis_weights

OP = find_operator("RESAMPLE_GRAD1")


def params(mode, rounding, scales, ipo, opo):
    return {"InterpolationMode": mode, "RoundingDirection": rounding, "Scales": list(scales),
            "InputPixelOffsets": list(ipo), "OutputPixelOffsets": list(opo)}


def run(describe, dy, dx_shape, p, variant=None):
    desc = describe("RESAMPLE_GRAD1", p, DataType.from_numpy(dy.dtype), InputGradientTensor=dy.shape,
                    OutputGradientTensor=tuple(dx_shape))
    return OP.reference(desc, {"InputGradientTensor": dy}, variant)


SEED = params("NEAREST_NEIGHBOR", "DECREASING", [0.5, 1.5], [0.5, 0.5], [-0.5, -0.5])


def test_seed_page_forward_example():
    # seeds/002: nearest, 0.5x height and 1.5x width: [[1,2],[3,4]] -> [1,1,2] (half-pixel, DECREASING).
    x = np.array([[1, 2], [3, 4]], np.float64)
    rows = axis_weights(2, 1, 0.5, 0.5, -0.5, "NEAREST_NEIGHBOR", "DECREASING")
    cols = axis_weights(2, 3, 1.5, 0.5, -0.5, "NEAREST_NEIGHBOR", "DECREASING")
    assert (rows @ x @ cols.T).tolist() == [[1, 1, 2]]


@pytest.mark.parametrize("variant", ["literal", "swapped"])
def test_seed_page_gradient_example(describe, variant):
    # seeds/002: [4,5,6] -> [[9,6],[0,0]]; both offset readings give it (dml-semantics.md 5.6).
    dy = np.array([[4, 5, 6]], np.float32)
    out = run(describe, dy, (2, 2), SEED, variant).outputs["OutputGradientTensor"]
    assert out.tolist() == [[9, 6], [0, 0]]


def test_seed_suite_example_is_the_reference_bit_for_bit(seed_cases, same_bits):
    case = seed_cases["resample-grad1-nearest"]
    for name in ("literal", "swapped"):
        expected = case.candidates[name]["OutputGradientTensor"]
        assert expected.tolist() == [[9, 6], [0, 0]]
        got = OP.reference(case.description, case.inputs, name).outputs["OutputGradientTensor"]
        assert same_bits(got, expected)


def plain_weights(n_in, n_out, scale, ipo, opo, mode, rounding):
    """The contract's formula with Python floats rounded to float32 after every operation."""
    f32 = np.float32
    w = np.zeros((n_out, n_in))
    for o in range(n_out):
        x = float(f32(f32(f32(o) - f32(opo)) / f32(scale)) - f32(ipo))
        clamp = lambda i: min(max(i, 0), n_in - 1)  # noqa: E731
        if mode == "NEAREST_NEIGHBOR":
            w[o, clamp(math.floor(x) if rounding == "DECREASING" else math.ceil(x))] += 1
        else:
            t = x - math.floor(x)
            w[o, clamp(math.floor(x))] += 1 - t
            w[o, clamp(math.floor(x) + 1)] += t
    return w


@pytest.mark.parametrize("mode", ["NEAREST_NEIGHBOR", "LINEAR"])
@pytest.mark.parametrize("rounding", ["DECREASING", "INCREASING"])
def test_axis_weights_follow_the_formula(mode, rounding):
    rng = np.random.default_rng(5)
    for _ in range(60):
        n_in, scale = int(rng.integers(1, 9)), float(np.float32(rng.choice([0.3, 0.5, 0.75, 1, 4 / 3, 1.5, 2, 3.7])))
        n_out = max(1, int(n_in * scale) + int(rng.integers(-1, 2)))
        ipo, opo = (float(v) for v in rng.choice([-0.5, -0.25, 0.0, 0.25, 0.5], size=2))
        w = axis_weights(n_in, n_out, scale, ipo, opo, mode, rounding)
        assert np.array_equal(w, plain_weights(n_in, n_out, scale, ipo, opo, mode, rounding))
        assert np.allclose(w.sum(axis=1), 1.0, rtol=0, atol=1e-15)  # each forward output is a convex mix


def test_rounding_directions_differ_only_off_integers():
    dec = axis_weights(2, 3, 1.5, 0, 0, "NEAREST_NEIGHBOR", "DECREASING")  # x = 0, 0.667, 1.333
    inc = axis_weights(2, 3, 1.5, 0, 0, "NEAREST_NEIGHBOR", "INCREASING")
    assert dec.argmax(axis=1).tolist() == [0, 0, 1]
    assert inc.argmax(axis=1).tolist() == [0, 1, 1]  # ceil(1.333) = 2 clamps to 1


def test_offset_readings(describe):
    dy = np.array([1, 2, 4, 8], np.float32)
    half = params("NEAREST_NEIGHBOR", "DECREASING", [2.0], [0.5], [-0.5])
    assert run(describe, dy, (2,), half, "literal").outputs["OutputGradientTensor"].tolist() == [7, 8]
    assert run(describe, dy, (2,), half, "swapped").outputs["OutputGradientTensor"].tolist() == [3, 12]
    equal = params("LINEAR", "DECREASING", [2.0], [0.25], [0.25])
    a, b = (run(describe, dy, (2,), equal, v).outputs["OutputGradientTensor"] for v in ("literal", "swapped"))
    assert np.array_equal(a, b)


def test_linear_sums_and_counts(describe):
    dy = np.array([1, 2, 4, 8, 16, 32], np.float32)
    ref = run(describe, dy, (3,), params("LINEAR", "DECREASING", [2.0], [0.0], [0.0]))
    assert ref.outputs["OutputGradientTensor"].tolist() == [2, 9, 52]
    acc = ref.accumulation["OutputGradientTensor"]
    # Terms per input element: taps of non-zero weight. Output 5 reads x = 2.5, whose taps 2 and 3 both
    # clamp onto input 2: two products, so two terms, even though their weights add up to 1.
    assert acc.count.tolist() == [2, 3, 4]
    assert acc.abs_sum.tolist() == [2, 9, 52]
    assert np.asarray(acc.weight_factors).tolist() == [1, 1, 1]


def test_weight_factors_are_zero_where_every_term_is_a_copy(describe):
    dy = np.arange(1, 7, dtype=np.float32)
    nearest = run(describe, dy, (3,), params("NEAREST_NEIGHBOR", "DECREASING", [2.0], [0.0], [0.0]))
    acc = nearest.accumulation["OutputGradientTensor"]
    assert acc.count.tolist() == [2, 2, 2] and np.asarray(acc.weight_factors).tolist() == [0, 0, 0]
    # Scale 1 with InputPixelOffset 1: x = o - 1 = -1, 0, 1, whole numbers, so every LINEAR tap has weight
    # exactly 1 (t = 0); x = -1 clamps onto input 0, and nothing reads input 2.
    shifted = run(describe, dy[:3], (3,), params("LINEAR", "DECREASING", [1.0], [1.0], [0.0]))
    acc = shifted.accumulation["OutputGradientTensor"]
    assert acc.count.tolist() == [2, 1, 0] and np.asarray(acc.weight_factors).tolist() == [0, 0, 0]


def test_zero_weights_never_touch_nonfinite_gradients(describe):
    dy = np.array([np.inf, 1, 1, 1], np.float32)
    out = run(describe, dy, (2,), params("LINEAR", "DECREASING", [2.0], [0.0], [0.0])).outputs
    assert out["OutputGradientTensor"].tolist() == [np.inf, 2.5]


def test_fp16_sum_overflows_to_inf(describe):
    dy = np.array([60000, 60000], np.float16)
    out = run(describe, dy, (1,), params("NEAREST_NEIGHBOR", "DECREASING", [2.0], [0.0], [0.0])).outputs
    assert out["OutputGradientTensor"].tolist() == [np.inf]


def test_a_linear_coordinate_is_exact_only_with_a_scale_that_inverts_exactly():
    """x = (13 + 0.5)/0.75 + 0.5 = 18.5 is a float32 value in every modelled order, yet a 1-ULP reciprocal of 0.75 (D3D
    allows it; DirectML's LINEAR weights show it) gives 18.500002: uncertain for LINEAR, exact for a NEAREST pick, and
    exact for either with a power-of-two scale."""
    from dmlconform.ops import _resample_coordinates as coordinates

    x = coordinates.evaluation_orders(14, 0.75, -0.5, -0.5)
    assert np.all(x[:, 13] == np.float32(18.5))
    assert coordinates.uncertainty(14, 0.75, -0.5, -0.5)[13] == 0
    assert coordinates.uncertainty(14, 0.75, -0.5, -0.5, linear=True)[13] > 0
    assert not coordinates.uncertainty(14, 0.5, -0.5, -0.5, linear=True).any()
    assert coordinates.inverts_exactly(0.25) and coordinates.inverts_exactly(math.inf)
    assert not coordinates.inverts_exactly(0.75) and not coordinates.inverts_exactly(3.0)


def test_an_infinite_linear_coordinate_reaches_the_edge_it_is_clamped_to():
    """An infinite offset makes every coordinate ±inf; LINEAR clamps it to the last (first) element, so that is where
    the coordinate's slack belongs. (Cast straight to integers, ±inf became the most negative int64 and the slack
    landed on element 0 whatever the sign: too strict where the gradient is, too loose where it is not.)"""
    from dmlconform.ops._resample_coordinates import reach

    zero = np.zeros(2)
    assert reach(np.array([np.inf, np.inf]), zero, 3).tolist() == [[0, 0, 1], [0, 0, 1]]
    assert reach(np.array([-np.inf, 1.5]), np.array([0.0, 0.25]), 3).tolist() == [[1, 0, 0], [0, 1, 1]]
