"""MAX_POOLING_GRAD reference: the seed example, a brute-force window scan, NaN rules and sum invariants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.max_pooling_grad import argmax_indices, pooled_size

OP = find_operator("MAX_POOLING_GRAD")


def geometry(dims, strides=None, window=None, start=None, end=None, dilations=None):
    return {"Strides": list(strides or [1] * dims), "WindowSize": list(window or [2] * dims),
            "StartPadding": list(start or [0] * dims), "EndPadding": list(end or [0] * dims),
            "Dilations": list(dilations or [1] * dims)}


def run(describe, x, dy, params, variant=None):
    desc = describe("MAX_POOLING_GRAD", params, DataType.from_numpy(x.dtype), InputTensor=x.shape,
                    InputGradientTensor=dy.shape, OutputGradientTensor=x.shape)
    return OP.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}, variant)


def brute_force_winners(x, out_spatial, p, nan_rule="nan-sticks"):
    """Flat winner index per window, written as plainly as possible (Python scalars, one window at a time)."""
    spatial = x.shape[2:]
    winners = np.full(x.shape[:2] + tuple(out_spatial), -1, dtype=np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*(range(k) for k in out_spatial)):
            best, best_value = -1, None
            for k in itertools.product(*(range(w) for w in p["WindowSize"])):
                pos = [oi * s - a + ki * d for oi, s, a, ki, d in
                       zip(o, p["Strides"], p["StartPadding"], k, p["Dilations"], strict=True)]
                if not all(0 <= q < size for q, size in zip(pos, spatial, strict=True)):
                    continue
                value = float(x[(n, c, *pos)])
                flat = int(np.ravel_multi_index((n, c, *pos), x.shape))
                if best < 0:
                    take = True
                elif nan_rule == "nan-wins":
                    take = (math.isnan(value) and not math.isnan(best_value)) or value > best_value
                elif nan_rule == "nan-wins-last":
                    take = math.isnan(value) or value > best_value
                elif nan_rule == "nan-ignored":
                    take = (math.isnan(best_value) and not math.isnan(value)) or value > best_value
                else:
                    take = value > best_value
                if take:
                    best, best_value = flat, value
            winners[(n, c, *o)] = best
    return winners


def test_seed_page_example(describe):
    # seeds/004: 2x2 window, stride 1; MaxPool indices [[4,4],[7,8]]; dY [[1,2],[4,5]] -> [[0,0,0],[0,3,0],[0,4,5]].
    x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
    dy = np.array([[1, 2], [4, 5]], np.float32).reshape(1, 1, 2, 2)
    p = geometry(2)
    assert argmax_indices(x, (2, 2), {k: tuple(v) for k, v in p.items()}).reshape(2, 2).tolist() == [[4, 4], [7, 8]]
    out = run(describe, x, dy, p).outputs["OutputGradientTensor"]
    assert out.reshape(3, 3).tolist() == [[0, 0, 0], [0, 3, 0], [0, 4, 5]]


def test_seed_suite_example_is_the_reference_bit_for_bit(seed_cases, same_bits):
    case = seed_cases["max-pooling-grad-2x2"]
    expected = case.expected["OutputGradientTensor"]
    assert expected.reshape(3, 3).tolist() == [[0, 0, 0], [0, 3, 0], [0, 4, 5]]
    assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], expected)


def test_pooled_size_formula():
    assert pooled_size(3, 2, 1, 0, 0, 1) == 2  # the seed example
    assert pooled_size(5, 2, 1, 0, 0, 2) == 3  # dilation widens the window to 3
    assert pooled_size(3, 2, 2, 1, 0, 1) == 2
    assert pooled_size(7, 3, 2, 1, 1, 1) == 4


def random_geometry(rng, dims):
    while True:
        spatial = [int(v) for v in rng.integers(2, 7 if dims == 2 else 5, size=dims)]
        window = [int(v) for v in rng.integers(1, 4, size=dims)]
        p = geometry(dims, [int(v) for v in rng.integers(1, 3, size=dims)], window,
                     [int(rng.integers(0, w + 1)) for w in window], [int(rng.integers(0, w + 1)) for w in window],
                     [int(v) for v in rng.integers(1, 3, size=dims)])
        pooled = [pooled_size(n, *args) for n, *args in zip(spatial, p["WindowSize"], p["Strides"], p["StartPadding"],
                                                           p["EndPadding"], p["Dilations"], strict=True)]
        if min(pooled) >= 1:
            out = [max(1, q + int(rng.integers(-1, 3))) for q in pooled]  # also past the pooled size
            return spatial, p, out


@pytest.mark.parametrize("dims", [2, 3])
def test_winners_match_a_brute_force_scan(dims):
    """Ties (few distinct values), padding, dilation, dY beyond the pooled size; all three NaN rules."""
    rng = np.random.default_rng(dims)
    for trial in range(25 if dims == 2 else 10):
        spatial, p, out = random_geometry(rng, dims)
        x = rng.choice([-1.0, 0.0, 2.0, np.nan if trial % 3 == 0 else 2.0], size=(2, 2, *spatial))
        x = x.astype(np.float32)
        frozen = {k: tuple(v) for k, v in p.items()}
        for rule in OP.variants:
            expected = brute_force_winners(x, out, p, rule)
            with np.errstate(invalid="ignore"):
                assert np.array_equal(argmax_indices(x, tuple(out), frozen, rule), expected), (p, out, rule)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradient_total_and_tolerance(describe, dtype):
    """Without padding-only windows the output sums to the sum of dY; overlapping windows switch to `bound`."""
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 20:
        spatial, p, out = random_geometry(rng, 2)
        out = [min(o, pooled_size(n, *args)) for o, n, *args in zip(out, spatial, p["WindowSize"], p["Strides"],
                                                                     p["StartPadding"], p["EndPadding"],
                                                                     p["Dilations"], strict=True)]
        x = rng.integers(0, 3, size=(1, 2, *spatial)).astype(dtype)
        dy = rng.integers(-4, 5, size=(1, 2, *out)).astype(dtype)
        if (argmax_indices(x, tuple(out), {k: tuple(v) for k, v in p.items()}) < 0).any():
            continue
        ref = run(describe, x, dy, p)
        result = ref.outputs["OutputGradientTensor"]
        assert result.astype(np.float64).sum() == dy.astype(np.float64).sum()
        counts = ref.accumulation["OutputGradientTensor"].count
        assert counts.sum() == dy.size
        desc = describe("MAX_POOLING_GRAD", p, DataType.from_numpy(x.dtype), InputTensor=x.shape,
                        InputGradientTensor=dy.shape, OutputGradientTensor=x.shape)
        assert str(OP.default_tolerance(desc, ref)) == ("bound" if counts.max() > 1 else "exact")
        checked += 1


def test_padding_only_windows_are_dropped(describe):
    x = np.array([1, 2], np.float32).reshape(1, 1, 1, 2)
    dy = np.array([10, 20, 30], np.float32).reshape(1, 1, 1, 3)
    out = run(describe, x, dy, geometry(2, strides=[1, 2], window=[1, 1])).outputs["OutputGradientTensor"]
    assert out.ravel().tolist() == [10, 0]


def test_nan_rules(describe):
    x = np.array([1, np.nan, 3, 2], np.float32).reshape(1, 1, 1, 4)
    dy = np.array([1, 2, 4], np.float32).reshape(1, 1, 1, 3)
    p = geometry(2, window=[1, 2])
    got = {v: run(describe, x, dy, p, v).outputs["OutputGradientTensor"].ravel().tolist() for v in OP.variants}
    assert got == {"nan-sticks": [1, 2, 4, 0], "nan-wins": [0, 3, 4, 0], "nan-wins-last": [0, 3, 4, 0],
                   "nan-ignored": [1, 0, 6, 0]}
    two_nans = np.array([np.nan, 1, np.nan, 0], np.float32).reshape(1, 1, 1, 4)
    window = geometry(2, window=[1, 4])
    dy = np.array([5], np.float32).reshape(1, 1, 1, 1)
    first = run(describe, two_nans, dy, window, "nan-wins").outputs["OutputGradientTensor"].ravel().tolist()
    last = run(describe, two_nans, dy, window, "nan-wins-last").outputs["OutputGradientTensor"].ravel().tolist()
    assert (first, last) == ([5, 0, 0, 0], [0, 0, 5, 0])
