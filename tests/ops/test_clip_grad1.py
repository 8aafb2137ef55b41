"""ELEMENT_WISE_CLIP_GRAD1 reference: the seed page's rule, exact integer bounds, NaN variants."""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator

OP = find_operator("ELEMENT_WISE_CLIP_GRAD1")


def run(describe, x, dy, low, high, variant=None):
    x, dy = np.asarray(x), np.asarray(dy)
    desc = describe("ELEMENT_WISE_CLIP_GRAD1", {"Min": low, "Max": high}, DataType.from_numpy(x.dtype),
                    InputTensor=x.shape, InputGradientTensor=dy.shape, OutputGradientTensor=x.shape)
    return OP.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}, variant).outputs["OutputGradientTensor"]


def test_seed_page_rule(describe):
    # seeds/001: 0 if x <= Min; 0 if x >= Max; else gradient. Min -1, Max 2; X at both bounds gives 0.
    x = np.array([-2, -1, -0.5, 1.5, 2, 3], np.float32)
    dy = np.array([10, 20, 30, 40, 50, 60], np.float32)
    assert run(describe, x, dy, -1.0, 2.0).tolist() == [0, 0, 30, 40, 0, 0]


def test_seed_suite_example_is_the_reference_bit_for_bit(seed_cases, same_bits):
    case = seed_cases["clip-grad1-formula"]
    expected = case.expected["OutputGradientTensor"]
    assert expected.tolist() == [0, 0, 30, 40, 0, 0]
    assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], expected)


INTEGER_TYPES = ["INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8"]


@pytest.mark.parametrize("name", INTEGER_TYPES)
def test_integers_compare_exactly_at_the_type_limits(describe, name):
    """Against Python ints: bounds one step inside the type limits, X at and around them."""
    dtype = DataType.parse(name).numpy
    info = np.iinfo(dtype)
    low, high = int(info.min) + 1, int(info.max) - 1
    xs = [int(info.min), low, low + 1, high - 1, high, int(info.max)]
    dys = [int(info.max) - i for i in range(6)]
    out = run(describe, np.array(xs, dtype), np.array(dys, dtype), low, high)
    assert [int(v) for v in out] == [dy if low < x < high else 0 for x, dy in zip(xs, dys, strict=True)]
    assert [int(v) for v in out] == [0, 0, dys[2], dys[3], 0, 0]


def test_int64_bounds_beyond_float64_resolution(describe):
    big = 2**63 - 8
    x = np.array([big, big + 1, big + 2, big + 3], np.int64)
    out = run(describe, x, np.array([1, 2, 3, 4], np.int64), big, big + 3)
    assert out.tolist() == [0, 2, 3, 0]  # float64 cannot tell big and big + 3 apart


def test_float16_bounds_are_read_in_the_tensor_type(describe):
    # Min 0.1 is stored as the nearest half (DML_SCALAR_UNION holds FLOAT16 as bits); X equal to it is at Min.
    x = np.array([0.1, 0.2], np.float16)
    assert run(describe, x, np.array([1, 2], np.float16), 0.1, 1.0).tolist() == [0, 2]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_output_is_gradient_or_plus_zero(describe, dtype):
    rng = np.random.default_rng(3)
    x = rng.choice([-2.0, -1.0, -0.0, 0.5, 1.0, 3.0, np.inf, -np.inf], size=200).astype(dtype)
    dy = rng.normal(size=200).astype(dtype)
    dy[::5] = np.inf
    out = run(describe, x, dy, -1.0, 1.0)
    inside = (x > -1) & (x < 1)
    assert np.array_equal(out[inside], dy[inside])
    assert (out[~inside].view(f"u{out.itemsize}") == 0).all()


def test_nan_input_variants(describe):
    x = np.array([np.nan, -1, -0.5, 2, 3, 0], np.float32)
    dy = np.ones(6, np.float32)
    assert OP.variants[0] == "nan-zero"  # the default follows DirectML 1.15.4 (both stacks measured)
    assert run(describe, x, dy, -1.0, 2.0).tolist() == [0, 0, 1, 0, 0, 1]
    assert run(describe, x, dy, -1.0, 2.0, "nan-passes").tolist() == [1, 0, 1, 0, 0, 1]
