"""ACTIVATION_RELU_GRAD reference: the seed page's formula, the seed example, invariants and NaN variants."""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator

OP = find_operator("ACTIVATION_RELU_GRAD")


def run(describe, x, dy, variant=None):
    x, dy = np.asarray(x), np.asarray(dy)
    desc = describe("ACTIVATION_RELU_GRAD", {}, DataType.from_numpy(x.dtype), InputTensor=x.shape,
                    InputGradientTensor=dy.shape, OutputGradientTensor=x.shape)
    return OP.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}, variant).outputs["OutputGradientTensor"]


def test_seed_page_formula(describe):
    # seeds/003: OutputGradientTensor = (X > 0 ? dY : 0); numbers of the seed suite's example.
    x = np.array([[-2, 0, 1], [3, -0.5, 0.25]], np.float32)
    dy = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    assert run(describe, x, dy).tolist() == [[0, 0, 3], [4, 0, 6]]


def test_seed_suite_example_is_the_reference_bit_for_bit(seed_cases, same_bits):
    case = seed_cases["relu-grad-formula"]
    expected = case.expected["OutputGradientTensor"]
    assert expected.tolist() == [[0, 0, 3], [4, 0, 6]]
    assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], expected)


def test_signed_zero_and_infinities(describe):
    x = np.array([-0.0, 0.0, np.inf, -np.inf, 1e-45], np.float32)
    dy = np.array([1, 2, 3, 4, -np.inf], np.float32)
    out = run(describe, x, dy)
    assert out.tolist() == [0, 0, 3, 0, -np.inf]
    assert not np.signbit(out[:2]).any()  # zeroed elements are +0


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int16, np.int8])
def test_output_is_gradient_or_plus_zero(describe, dtype):
    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind == "f":
        x = rng.choice([-1.5, -0.0, 0.0, 2.0, np.inf, -np.inf], size=(4, 5, 3)).astype(dtype)
        dy = rng.normal(size=(4, 5, 3)).astype(dtype)
        dy.ravel()[::7] = -dy.ravel()[::7]
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(4, 5, 3), endpoint=True).astype(dtype)
        dy = rng.integers(info.min, info.max, size=(4, 5, 3), endpoint=True).astype(dtype)
    out = run(describe, x, dy)
    assert out.dtype == dtype
    passed = x > 0
    assert np.array_equal(out[passed], dy[passed])
    zero_bits = out[~passed].view(f"u{out.itemsize}")
    assert (zero_bits == 0).all()  # +0, never -0 or a masked-multiply NaN
    assert passed.any() and (~passed).any()


def test_nan_gradient_is_selected_not_multiplied(describe):
    out = run(describe, np.array([1, -1, 0], np.float16), np.array([np.nan, np.nan, np.inf], np.float16))
    assert np.isnan(out[0]) and out[1] == 0 and out[2] == 0


def test_nan_input_variants(describe):
    x = np.array([np.nan, 1, -1, -np.nan], np.float32)
    dy = np.array([1, 2, 3, 4], np.float32)
    assert OP.variants[0] == "nan-zero"
    assert run(describe, x, dy).tolist() == [0, 2, 0, 0]
    assert run(describe, x, dy, "nan-zero").tolist() == [0, 2, 0, 0]
    assert run(describe, x, dy, "nan-passes").tolist() == [1, 2, 0, 4]
