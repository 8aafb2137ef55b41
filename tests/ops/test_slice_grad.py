"""SLICE_GRAD reference: the seed example, the Slice1 examples run backwards, and scatter invariants."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator

OP = find_operator("SLICE_GRAD")


def run(describe, dy, dx_shape, offsets, sizes, strides):
    dy = np.asarray(dy)
    params = {"InputWindowOffsets": list(offsets), "InputWindowSizes": list(sizes),
              "InputWindowStrides": list(strides)}
    desc = describe("SLICE_GRAD", params, DataType.from_numpy(dy.dtype), InputGradientTensor=dy.shape,
                    OutputGradientTensor=tuple(dx_shape))
    return OP.reference(desc, {"InputGradientTensor": dy}).outputs["OutputGradientTensor"]


def test_seed_page_example(describe):
    # seeds/000: [[a,c],[i,k]] scattered back to [[a,0,c,0],[0,0,0,0],[i,0,k,0],[0,0,0,0]].
    a, c, i, k = 1.0, 3.0, 9.0, 11.0
    dy = np.array([[a, c], [i, k]], np.float32)
    expected = [[a, 0, c, 0], [0, 0, 0, 0], [i, 0, k, 0], [0, 0, 0, 0]]
    assert run(describe, dy, (4, 4), (0, 0), (4, 4), (2, 2)).tolist() == expected
    assert run(describe, dy, (4, 4), (0, 0), (3, 3), (2, 2)).tolist() == expected  # window 3 reaches 2 too
    four_d = run(describe, dy.reshape(1, 1, 2, 2), (1, 1, 4, 4), (0, 0, 0, 0), (1, 1, 3, 3), (1, 1, 2, 2))
    assert four_d.reshape(4, 4).tolist() == expected


@pytest.mark.parametrize("case_id", ["slice-grad-2d", "slice-grad-4d"])
def test_seed_suite_examples_are_the_reference_bit_for_bit(seed_cases, same_bits, case_id):
    case = seed_cases[case_id]
    expected = case.expected["OutputGradientTensor"]
    assert expected.reshape(4, 4).tolist() == [[1, 0, 3, 0], [0, 0, 0, 0], [9, 0, 11, 0], [0, 0, 0, 0]]
    assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], expected)


def test_slice1_examples_backwards(describe):
    # Slice1 page: input 1..16 (4x4), offsets {0,0,0,1}, sizes {1,1,4,3}. Strides {1,1,2,2} picked
    # [[2,4],[10,12]]; strides {1,1,-2,2} picked [[14,16],[6,8]] (rows 3, 1 -- not the reverse of 0, 2).
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    for strides, picked in (((1, 1, 2, 2), [[2, 4], [10, 12]]), ((1, 1, -2, 2), [[14, 16], [6, 8]])):
        dy = np.array(picked, np.float32).reshape(1, 1, 2, 2)
        dx = run(describe, dy, (1, 1, 4, 4), (0, 0, 0, 1), (1, 1, 4, 3), strides)
        # Each gradient value lands on the input element that held the same value.
        assert np.array_equal(dx[dx != 0], x[np.isin(x, dy)])
        assert sorted(dx[dx != 0].tolist()) == sorted(np.ravel(picked).tolist())


def test_negative_stride_starts_at_window_end(describe):
    dx = run(describe, np.array([10, 20], np.int32), (7,), (1,), (5,), (-3,))
    assert dx.tolist() == [0, 0, 20, 0, 0, 10, 0]  # start 1 + 5 - 1 = 5, then 5 - 3 = 2


@pytest.mark.parametrize("name", ["FLOAT64", "FLOAT32", "FLOAT16", "INT64", "INT32", "INT16", "INT8", "UINT64",
                                  "UINT32", "UINT16", "UINT8"])
def test_scatter_invariants(describe, name):
    """Every dY element lands exactly once, unchanged; the rest is zero; integers keep all 64 bits."""
    dtype = DataType.parse(name).numpy
    rng = np.random.default_rng(DataType.parse(name).value)
    for _ in range(20):
        rank = int(rng.integers(1, 6))
        dx = [int(v) for v in rng.integers(1, 6, size=rank)]
        sizes = [int(rng.integers(1, n + 1)) for n in dx]
        offsets = [int(rng.integers(0, n - s + 1)) for n, s in zip(dx, sizes, strict=True)]
        strides = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in dx]
        counts = [int(rng.integers(1, 1 + (s - 1) // abs(t) + 1)) for s, t in zip(sizes, strides, strict=True)]
        total = int(np.prod(counts))
        if np.dtype(dtype).kind == "f":
            dy = (np.arange(total) + 1).astype(dtype).reshape(counts)
        else:
            top = int(np.iinfo(dtype).max)
            dy = np.array([top - i for i in range(total)], dtype=dtype).reshape(counts)
        out = run(describe, dy, dx, offsets, sizes, strides)
        assert out.dtype == dtype and out.shape == tuple(dx)
        assert np.count_nonzero(out) == total
        assert sorted(out[out != 0].tolist()) == sorted(dy.ravel().tolist())
        for c in itertools.product(*(range(n) for n in counts)):
            place = tuple((o + (s - 1 if t < 0 else 0)) + t * ci
                          for o, s, t, ci in zip(offsets, sizes, strides, c, strict=True))
            assert out[place] == dy[c]
