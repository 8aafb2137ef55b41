"""Every comparison path is shown to pass what it should and to fail what it should not."""

import numpy as np
import pytest

from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Accumulation

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def f32(*values):
    return np.array(values, dtype=np.float32)


def test_identical_bits_take_the_fast_path():
    a = f32(1, 2, np.nan)
    verdict = judge(a, a.copy(), F32, Tolerance.exact())
    assert verdict.passed and verdict.mismatches == 0


def test_exact_fails_on_one_ulp_and_points_at_the_element():
    expected = f32(1, 2, 3, 4)
    actual = expected.copy()
    actual[2] = np.nextafter(np.float32(3), np.float32(4))
    verdict = judge(expected, actual, F32, Tolerance.exact())
    assert not verdict.passed
    assert verdict.mismatches == 1 and verdict.max_ulp == 1 and verdict.worst_index == (2,)
    assert verdict.worst[0].index == (2,)
    assert "3.0" in verdict.worst[0].expected and "0x40400000" in verdict.worst[0].expected


def test_signed_zeros_match_and_nan_matches_any_payload():
    expected = np.array([0.0, np.nan], dtype=np.float32)
    actual = np.array([-0.0, 0.0], dtype=np.float32)
    actual.view(np.uint32)[1] = 0x7FC00123  # another NaN payload
    assert judge(expected, actual, F32, Tolerance.exact()).passed


@pytest.mark.parametrize("expected,actual", [
    (np.nan, 1.0), (1.0, np.nan), (np.inf, np.float32(np.finfo(np.float32).max)), (np.inf, -np.inf),
    (np.finfo(np.float32).max, np.inf),
])
def test_nan_and_infinity_match_only_themselves_under_every_rule(expected, actual):
    e, a = f32(expected), f32(actual)
    accumulation = Accumulation(np.array([1e30]), np.array([1e38]), np.array([1000]))
    for rule in (Tolerance.exact(), Tolerance.parse("ulp:1000000"), Tolerance.bound()):
        verdict = judge(e, a, F32, rule, accumulation)
        assert not verdict.passed, rule
        assert verdict.max_ulp is None


def test_ulp_rule_passes_within_and_fails_beyond():
    expected = f32(1.0)
    three_up = f32(1.0).view(np.uint32) + 3
    actual = three_up.view(np.float32)
    assert judge(expected, actual, F32, Tolerance.parse("ulp:3")).passed
    verdict = judge(expected, actual, F32, Tolerance.parse("ulp:2"))
    assert not verdict.passed and verdict.max_ulp == 3


def test_integers_are_exact_whatever_the_rule_and_64_bit_differences_are_exact():
    big = np.array([2**63 - 1, 5], dtype=np.int64)
    off = np.array([2**63 - 2, 5], dtype=np.int64)
    verdict = judge(big, off, DataType.INT64, Tolerance.parse("ulp:5"))
    assert not verdict.passed and verdict.max_ulp == 1 and verdict.worst_index == (0,)
    u = np.array([2**64 - 1], dtype=np.uint64)
    verdict = judge(u, np.array([0], dtype=np.uint64), DataType.UINT64, Tolerance.exact())
    assert not verdict.passed and verdict.max_ulp == 2**64 - 1


def _bound_case(actual_offset_units: float, count: int = 4, abs_sum: float = 8.0):
    value = np.array([2.0])
    accumulation = Accumulation(value, np.array([abs_sum]), np.array([count]))
    u = F32.unit_roundoff
    allowed = count * u * abs_sum + np.spacing(np.float32(2.0))
    actual = np.array([2.0 + actual_offset_units * allowed], dtype=np.float32)
    return f32(2.0), actual, accumulation


def test_bound_default_k_is_the_contribution_count():
    expected, inside, accumulation = _bound_case(0.9)
    assert judge(expected, inside, F32, Tolerance.bound(), accumulation).passed
    expected, outside, accumulation = _bound_case(1.5)
    verdict = judge(expected, outside, F32, Tolerance.bound(), accumulation)
    assert not verdict.passed
    assert "|err| <=" in verdict.worst[0].allowed


def test_bound_with_explicit_k_is_stricter_or_looser():
    expected, actual, accumulation = _bound_case(0.9, count=4)
    assert not judge(expected, actual, F32, Tolerance.bound(1.0), accumulation).passed
    assert judge(expected, actual, F32, Tolerance.bound(10.0), accumulation).passed


def test_bound_with_no_contribution_allows_only_one_ulp_of_zero():
    expected = np.zeros(2, dtype=np.float16)
    accumulation = Accumulation(np.zeros(2), np.zeros(2), np.zeros(2, dtype=np.int64))
    tiny = np.array([0.0, 2.0**-24], dtype=np.float16)
    assert judge(expected, tiny, F16, Tolerance.bound(), accumulation).passed
    small = np.array([0.0, 2.0**-23], dtype=np.float16)
    assert not judge(expected, small, F16, Tolerance.bound(), accumulation).passed


def test_bound_needs_accumulation_data():
    with pytest.raises(ValueError, match="accumulation"):
        judge(f32(1.0), f32(2.0), F32, Tolerance.bound(), None)


def test_worst_elements_are_ordered_worst_first():
    expected = np.zeros(6, dtype=np.float32)
    actual = np.array([0, 1e-45, 0, 3e-45, 0, 2e-45], dtype=np.float32)
    verdict = judge(expected, actual, F32, Tolerance.exact())
    assert [e.index for e in verdict.worst] == [(3,), (5,), (1,)]
    assert verdict.worst_index == (3,) and verdict.mismatches == 3
