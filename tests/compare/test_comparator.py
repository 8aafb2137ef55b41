"""Every comparison path is shown to pass what it should and to fail what it should not."""

import numpy as np
import pytest

from dmlconform.compare.accumulation import Accumulation
from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType

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


def _acc(value: float, abs_sum: float, count: int, factors: int, gradients: float = 0.0) -> Accumulation:
    return Accumulation(np.array([value]), np.array([abs_sum]), np.array([count]), np.array([factors]),
                        np.array([gradients]))


def _gamma(k: float, u: float) -> float:
    return k * u / (1 - k * u)


def _next_up(x: np.ndarray, steps: int = 1) -> np.ndarray:
    out = x.copy()
    for _ in range(steps):
        out = np.nextafter(out, np.array(np.inf, dtype=x.dtype))
    return out


@pytest.mark.parametrize("dtype", [F16, F32])
def test_bound_allows_only_signed_zero_where_nothing_lands(dtype):
    expected = np.zeros(3, dtype=dtype.numpy)
    accumulation = Accumulation(np.zeros(3), np.zeros(3), np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64))
    assert judge(expected, np.array([0.0, -0.0, 0.0], dtype=dtype.numpy), dtype, Tolerance.bound(),
                 accumulation).passed
    smallest_denormal = np.array([0.0, 0.0, np.finfo(dtype.numpy).smallest_subnormal], dtype=dtype.numpy)
    verdict = judge(expected, smallest_denormal, dtype, Tolerance.bound(), accumulation)
    assert not verdict.passed and verdict.worst_index == (2,)
    assert "no term lands" in verdict.worst[0].allowed
    # An explicit K, however large, does not loosen it.
    assert not judge(expected, smallest_denormal, dtype, Tolerance.bound(1000.0), accumulation).passed


@pytest.mark.parametrize("dtype", [F16, F32])
def test_bound_holds_a_unit_weight_copy_exact(dtype):
    golden = np.array([1.375], dtype=dtype.numpy)
    accumulation = _acc(1.375, 1.375, 1, 0)
    verdict = judge(golden, _next_up(golden), dtype, Tolerance.bound(), accumulation)
    assert not verdict.passed and verdict.max_ulp == 1
    assert "one copy" in verdict.worst[0].allowed
    assert not judge(golden, _next_up(golden), dtype, Tolerance.bound(50.0), accumulation).passed
    zero = np.array([0.0], dtype=dtype.numpy)
    assert judge(zero, -zero, dtype, Tolerance.bound(), _acc(-0.0, 0.0, 1, 0)).passed


def _largest_accepted_and_first_rejected(golden: np.ndarray, allowed: float):
    """The furthest float above golden within `allowed`, and the next one (which is beyond it)."""
    inside = golden.copy()
    while float(_next_up(inside)[0]) - float(golden[0]) <= allowed:
        inside = _next_up(inside)
    return inside, _next_up(inside)


@pytest.mark.parametrize("dtype", [F16, F32])
@pytest.mark.parametrize("count,factors,abs_sum", [(1, 1, 0.75), (2, 0, 3.0), (4, 0, 10.0), (3, 1, 6.5), (4, 2, 2.5),
                                                  (1, 3, 0.75)])
def test_bound_accepts_up_to_gamma_k_m_plus_half_ulp_and_no_further(dtype, count, factors, abs_sum):
    golden = np.array([0.75], dtype=dtype.numpy)
    u = dtype.unit_roundoff
    k = (count - 1) + 2 * factors
    allowed = _gamma(k, u) * abs_sum + 0.5 * float(np.spacing(golden[0]))
    if factors:  # the underflow term, negligible at 0.75 but part of the rule
        allowed += (1 + _gamma(k + 1, u)) * 0.5 * float(np.finfo(dtype.numpy).smallest_subnormal) * count
    inside, outside = _largest_accepted_and_first_rejected(golden, allowed)
    accumulation = _acc(0.75, abs_sum, count, factors)
    assert judge(golden, inside, dtype, Tolerance.bound(), accumulation).passed
    verdict = judge(golden, outside, dtype, Tolerance.bound(), accumulation)
    assert not verdict.passed
    assert f"K={k}," in verdict.worst[0].allowed and f"n={count}" in verdict.worst[0].allowed


def test_bound_with_explicit_k_replaces_the_default_k():
    golden = f32(2.0)
    accumulation = _acc(2.0, 8.0, 4, 0)  # default K = 3
    u = F32.unit_roundoff
    four_k = _gamma(4, u) * 8.0 + 0.5 * float(np.spacing(np.float32(2.0)))
    inside, outside = _largest_accepted_and_first_rejected(golden, four_k)
    assert not judge(golden, inside, F32, Tolerance.bound(), accumulation).passed
    assert judge(golden, inside, F32, Tolerance.bound(4.0), accumulation).passed
    assert not judge(golden, outside, F32, Tolerance.bound(4.0), accumulation).passed


@pytest.mark.parametrize("dtype", [F16, F32])
def test_bound_allows_for_gradual_underflow_only_where_a_weight_may_round(dtype):
    # Two LINEAR terms (weights 1/2, one factor each) in the subnormal range: a product rounded there is
    # off by up to half the smallest subnormal, absolutely. The allowance covers n such roundings plus
    # the weights' own, scaled by D = Σ|dy|; beyond it, an element fails.
    s = float(np.finfo(dtype.numpy).smallest_subnormal)
    u = dtype.unit_roundoff
    golden = np.array([3 * s], dtype=dtype.numpy)
    count, gradients, abs_sum = 2, 6 * s, 3 * s
    k = (count - 1) + 2
    allowed = _gamma(k, u) * abs_sum + 0.5 * s + (1 + _gamma(k + 1, u)) * 0.5 * s * (count + 1 * gradients)
    assert 1.5 * s <= allowed < 2 * s
    one_up, two_up = _next_up(golden), _next_up(golden, 2)
    assert judge(golden, one_up, dtype, Tolerance.bound(), _acc(3 * s, abs_sum, count, 1, gradients)).passed
    assert not judge(golden, two_up, dtype, Tolerance.bound(), _acc(3 * s, abs_sum, count, 1, gradients)).passed
    # With unit weights nothing rounds among the subnormals (sums there are exact): a subnormal 1 ULP
    # off fails.
    assert not judge(golden, one_up, dtype, Tolerance.bound(), _acc(3 * s, abs_sum, count, 0, gradients)).passed


def test_bound_ranks_an_element_that_should_be_exact_first():
    golden = np.array([0.0, 1.0], dtype=np.float32)
    accumulation = Accumulation(np.array([0.0, 1.0]), np.array([0.0, 64.0]), np.array([0, 64]), 0)
    actual = np.array([1e-45, 1.0 + 2.0**-10], dtype=np.float32)  # both outside their limits
    verdict = judge(golden, actual, F32, Tolerance.bound(), accumulation)
    assert verdict.mismatches == 2 and verdict.worst_index == (0,)


def test_bound_needs_accumulation_data():
    with pytest.raises(ValueError, match="accumulation"):
        judge(f32(1.0), f32(2.0), F32, Tolerance.bound(), None)
    with pytest.raises(ValueError, match="accumulation"):
        judge(f32(1.0), f32(2.0), F32, Tolerance.bound(), accumulation_of=lambda: None)


def test_bound_asks_for_its_accumulation_data_only_where_some_bits_differ():
    """Computing the reference is most of what judging costs: identical outputs never ask for it, and data asked
    for judges exactly as data given."""
    asked: list[int] = []
    accumulation = Accumulation(np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([1, 1]), 0)

    def accumulation_of():
        asked.append(1)
        return accumulation

    same = judge(f32(1.0, 2.0), f32(1.0, 2.0), F32, Tolerance.bound(), accumulation_of=accumulation_of)
    assert same.passed and asked == []
    off = f32(1.0, float(np.nextafter(np.float32(2.0), np.float32(3.0))))
    deferred = judge(f32(1.0, 2.0), off, F32, Tolerance.bound(), accumulation_of=accumulation_of)
    assert asked == [1] and not deferred.passed
    assert deferred == judge(f32(1.0, 2.0), off, F32, Tolerance.bound(), accumulation)


def test_worst_elements_are_ordered_worst_first():
    expected = np.zeros(6, dtype=np.float32)
    actual = np.array([0, 1e-45, 0, 3e-45, 0, 2e-45], dtype=np.float32)
    verdict = judge(expected, actual, F32, Tolerance.exact())
    assert [e.index for e in verdict.worst] == [(3,), (5,), (1,)]
    assert verdict.worst_index == (3,) and verdict.mismatches == 3


# -- closeness: the largest error/allowance ratio, 0 bit-exact, 1 at the limit -------------------------------
def test_closeness_is_zero_for_identical_bits_signed_zeros_and_nan_payloads():
    assert judge(f32(1, 2), f32(1, 2), F32, Tolerance.exact()).closeness == 0.0
    actual = np.array([-0.0, np.nan], dtype=np.float32)
    actual.view(np.uint32)[1] = 0x7FC00123
    assert judge(f32(0.0, np.nan), actual, F32, Tolerance.parse("ulp:4")).closeness == 0.0


def test_closeness_under_ulp_n_is_max_ulp_over_n_on_both_sides_of_the_limit():
    expected = f32(1.0, 2.0)
    actual = expected.copy()
    actual[1] = _next_up(expected[1:], 3)[0]
    assert judge(expected, actual, F32, Tolerance.parse("ulp:4")).closeness == 0.75
    assert judge(expected, actual, F32, Tolerance.parse("ulp:3")).closeness == 1.0
    verdict = judge(expected, actual, F32, Tolerance.parse("ulp:2"))
    assert not verdict.passed and verdict.closeness == 1.5


def test_closeness_is_infinite_where_an_element_allowed_nothing_is_off():
    assert judge(f32(1.0), _next_up(f32(1.0)), F32, Tolerance.exact()).closeness == np.inf
    assert judge(f32(np.inf), f32(3.0), F32, Tolerance.parse("ulp:1000")).closeness == np.inf
    ints = judge(np.array([5], dtype=np.int32), np.array([6], dtype=np.int32), DataType.INT32, Tolerance.exact())
    assert ints.closeness == np.inf


@pytest.mark.parametrize("dtype", [F16, F32])
def test_closeness_under_bound_is_the_error_over_the_allowance(dtype):
    golden = np.array([0.75], dtype=dtype.numpy)
    accumulation = _acc(0.75, 3.0, 2, 0)
    allowed = _gamma(1, dtype.unit_roundoff) * 3.0 + 0.5 * float(np.spacing(golden[0]))
    inside, outside = _largest_accepted_and_first_rejected(golden, allowed)
    close = judge(golden, inside, dtype, Tolerance.bound(), accumulation)
    assert close.passed and close.closeness == pytest.approx((float(inside[0]) - 0.75) / allowed)
    assert 0 < close.closeness <= 1
    beyond = judge(golden, outside, dtype, Tolerance.bound(), accumulation)
    assert not beyond.passed and beyond.closeness > 1


def test_differing_elements_are_found_across_blocks_as_in_one_pass(monkeypatch):
    from dmlconform.compare import comparator

    monkeypatch.setattr(comparator, "BLOCK_ELEMENTS", 1000)
    rng = np.random.default_rng(3)
    expected = rng.standard_normal(10_500).astype(np.float32)
    actual = expected.copy()
    moved = np.array([0, 999, 1000, 4321, 10_499])
    actual[moved] = np.nextafter(actual[moved], np.float32(np.inf))
    bits = F32.bits_dtype
    assert comparator.differing_elements(expected.view(bits), actual.view(bits)).tolist() == moved.tolist()
    verdict = judge(expected, actual, F32, Tolerance.exact())
    assert verdict.mismatches == 5 and verdict.max_ulp == 1
    assert comparator.differing_elements(expected.view(bits), expected.copy().view(bits)).size == 0
