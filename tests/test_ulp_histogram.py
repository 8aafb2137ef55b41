"""ULP histograms: power-of-two buckets, NaN/inf apart, exact 64-bit integer distances."""

import numpy as np

from dmlconform.ulp_histogram import UlpBucket, merge_histograms, ulp_histogram


def _ups(value: float, steps: int) -> np.float32:
    return (np.array([value], dtype=np.float32).view(np.uint32) + steps).view(np.float32)[0]


def test_distances_fall_into_power_of_two_buckets():
    expected = np.full(6, 1.0, dtype=np.float32)
    actual = np.array([1.0, _ups(1, 1), _ups(1, 2), _ups(1, 3), _ups(1, 4), _ups(1, 1000)], dtype=np.float32)
    buckets = ulp_histogram(expected, actual)
    assert [(b.label, b.count) for b in buckets] == [("0", 1), ("1", 1), ("2–3", 2), ("4–7", 1), ("512–1023", 1)]


def test_nan_against_nan_and_signed_zeros_count_as_zero_and_nonfinite_mismatches_apart():
    expected = np.array([np.nan, 0.0, np.inf, 1.0, np.nan], dtype=np.float32)
    actual = np.array([np.nan, -0.0, np.finfo(np.float32).max, np.nan, 1.0], dtype=np.float32)
    buckets = ulp_histogram(expected, actual)
    assert buckets[0] == UlpBucket(0, 0, 2)
    assert buckets[-1] == UlpBucket(None, None, 3) and buckets[-1].label == "NaN/inf"


def test_integer_distances_are_exact_across_the_64_bit_range():
    expected = np.array([2**63 - 1, -(2**63), 7], dtype=np.int64)
    actual = np.array([-(2**63), 2**63 - 1, 7], dtype=np.int64)
    buckets = ulp_histogram(expected, actual)
    assert buckets == [UlpBucket(0, 0, 1), UlpBucket(2**63, 2**64 - 1, 2)]
    assert buckets[1].short_label == "2^63–2^64−1"
    unsigned = ulp_histogram(np.array([0], dtype=np.uint64), np.array([2**64 - 1], dtype=np.uint64))
    assert unsigned == [UlpBucket(2**63, 2**64 - 1, 1)]


def test_histograms_of_several_outputs_merge_in_bucket_order():
    a = [UlpBucket(0, 0, 3), UlpBucket(None, None, 1)]
    b = [UlpBucket(0, 0, 1), UlpBucket(2, 3, 2)]
    assert merge_histograms([a, b]) == [UlpBucket(0, 0, 4), UlpBucket(2, 3, 2), UlpBucket(None, None, 1)]
