"""Two backends' outputs against each other: each rule accepts what two legitimate outputs can be, and no more."""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.compare import bound
from dmlconform.compare.accumulation import Accumulation
from dmlconform.compare.agreement import agreement
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def step(value: float, ulps: int, dtype=np.float32) -> np.ndarray:
    """`value` moved `ulps` steps up."""
    out = np.array([value], dtype)
    for _ in range(ulps):
        out = np.nextafter(out, np.array([np.inf], dtype))
    return out


def test_identical_nan_and_signed_zero_agree_under_exact():
    a = np.array([1.5, np.nan, 0.0, -np.inf], np.float32)
    b = np.array([1.5, -np.nan, -0.0, -np.inf], np.float32)
    assert agreement(a, b, F32, Tolerance.exact()).agree


@pytest.mark.parametrize("a,b", [([np.nan], [1.0]), ([np.inf], [-np.inf]), ([np.inf], [3.4e38]), ([1.0], [-1.0])])
def test_nan_and_infinities_only_match_themselves(a, b):
    found = agreement(np.array(a, np.float32), np.array(b, np.float32), F32, Tolerance.parse("ulp:1000"))
    assert not found.agree and found.mismatches == 1


def test_exact_fails_on_one_ulp():
    found = agreement(np.array([1.0, 2.0], np.float32), np.concatenate([[1.0], step(2.0, 1)]).astype(np.float32),
                      F32, Tolerance.exact())
    assert not found.agree and found.max_ulp == 1 and found.first_index == (1,)


def test_ulp_rule_allows_twice_n_between_two_outputs():
    rule = Tolerance.parse("ulp:2")
    assert agreement(step(1.0, 0), step(1.0, 4), F32, rule).agree
    assert not agreement(step(1.0, 0), step(1.0, 5), F32, rule).agree


def test_integers_are_exact_whatever_the_rule():
    a, b = np.array([2**62, 5], np.int64), np.array([2**62 + 1, 5], np.int64)
    assert not agreement(a, b, DataType.INT64, Tolerance.parse("ulp:4")).agree
    assert agreement(a, a.copy(), DataType.INT64, Tolerance.exact()).agree


def test_bound_is_the_sum_of_the_two_allowances():
    value = np.array([1.0], np.float16)
    accumulation = Accumulation(np.array([1.0]), np.array([4.0]), np.array([8]), np.array([1]), np.array([4.0]))
    parts = (accumulation.count, accumulation.abs_sum, accumulation.weight_factors, accumulation.abs_gradient_sum)
    one = float(bound.allowance(value, *parts, F16)[0])
    # Two outputs each just inside one allowance of 1.0, on opposite sides: legitimate, and more than one apart.
    low = np.array([1.0 - one], np.float16)
    high = np.array([1.0 + one], np.float16)
    low = np.where(np.abs(low.astype(np.float64) - 1) > one, np.nextafter(low, np.float16(1)), low).astype(np.float16)
    high = np.where(np.abs(high.astype(np.float64) - 1) > one, np.nextafter(high, np.float16(1)), high).astype(np.float16)
    assert float(high[0]) - float(low[0]) > float(bound.allowance(low, *parts, F16)[0])
    assert agreement(low, high, F16, Tolerance.bound(), accumulation).agree
    # Far beyond both allowances: they disagree.
    assert not agreement(low, (high + np.float16(1)).astype(np.float16), F16, Tolerance.bound(), accumulation).agree


def test_bound_keeps_copies_and_empty_elements_exact():
    accumulation = Accumulation(np.zeros(2), np.array([0.0, 3.0]), np.array([0, 1]))
    a = np.array([0.0, 3.0], np.float32)
    assert agreement(a, np.array([-0.0, 3.0], np.float32), F32, Tolerance.bound(), accumulation).agree
    assert not agreement(a, np.concatenate([[0.0], step(3.0, 1)]).astype(np.float32), F32, Tolerance.bound(),
                         accumulation).agree
    assert not agreement(a, np.array([1e-45, 3.0], np.float32), F32, Tolerance.bound(), accumulation).agree


def test_bound_needs_the_accumulation_data():
    with pytest.raises(ValueError, match="accumulation"):
        agreement(np.array([1.0], np.float32), np.array([2.0], np.float32), F32, Tolerance.bound())
