import numpy as np
import pytest

from dmlconform.compare.ulp import ulp_distance, ulp_of


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_adjacent_values_are_one_ulp_apart_across_zero_and_the_whole_range(dtype):
    info = np.finfo(dtype)
    tiny = np.array([info.smallest_subnormal], dtype=dtype)
    zero, neg_zero = np.array([0.0], dtype=dtype), np.array([-0.0], dtype=dtype)
    assert ulp_distance(zero, neg_zero)[0] == 0
    assert ulp_distance(zero, tiny)[0] == 1
    assert ulp_distance(-tiny, tiny)[0] == 2
    one = np.array([1.0], dtype=dtype)
    assert ulp_distance(one, np.nextafter(one, dtype(2)))[0] == 1
    big = np.array([info.max], dtype=dtype)
    # The whole finite line: from -max to +max is twice the count of positive finite values.
    positive_count = int(big.view(f"u{big.itemsize}")[0])
    assert int(ulp_distance(-big, big)[0]) == 2 * positive_count


def test_float64_extremes_do_not_overflow():
    big = np.array([np.finfo(np.float64).max])
    assert int(ulp_distance(-big, big)[0]) == 2 * 0x7FEFFFFFFFFFFFFF


def test_ulp_of_is_the_local_spacing_and_finite_at_the_largest_value():
    values = np.array([1.0, 0.0, 65504.0], dtype=np.float16)
    steps = ulp_of(values)
    assert steps[0] == 2.0**-10
    assert steps[1] == 2.0**-24
    assert steps[2] == 32.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_the_same_width_distance_is_the_int64_one_on_random_bit_patterns(dtype):
    # ulp_distance maps FLOAT16/FLOAT32 in their own width; the int64 map (ordered_integers) is the definition.
    from dmlconform.compare.ulp import ordered_integers

    rng = np.random.default_rng(5)
    width = np.dtype(dtype).itemsize
    a, b = (rng.integers(0, 2 ** (8 * width), size=100_000, dtype=np.uint64).astype(f"u{width}").view(dtype)
            for _ in range(2))
    finite = np.isfinite(a) & np.isfinite(b)
    a, b = a[finite], b[finite]
    ia, ib = ordered_integers(a), ordered_integers(b)
    expected = (np.maximum(ia, ib) - np.minimum(ia, ib)).astype(np.uint64)
    assert np.array_equal(ulp_distance(a, b), expected)
    assert not np.array_equal(ulp_distance(a, b), expected + (a != b))  # the check can fail
