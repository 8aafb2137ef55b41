"""ELEMENT_WISE_CLIP_GRAD (v0) reference: the page's rule, its support table and rules, FLOAT bounds against every
data type under each reading (each variant shown apart from the default by a case), and the comparisons checked
against a brute force written here from the readings' definitions."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, DescriptionError, ParamError, TensorDesc
from dmlconform.ops.clip_grad import (
    CANDIDATES,
    FLOAT16_BOUNDS,
    FLOAT_NAN_BOUND,
    INTEGER_BOUNDS,
    INTEGER_NAN_BOUND,
    NAN_INPUT,
    VARIANTS,
    behaviours,
    compare,
    round_integer,
)

OP = find_operator("ELEMENT_WISE_CLIP_GRAD")
INTEGER_TYPES = ["INT64", "INT32", "INT16", "INT8", "UINT64", "UINT32", "UINT16", "UINT8"]


def describe(dtype: str | DataType, low: object, high: object, shape: tuple[int, ...] = (4,), **changes) -> Description:
    dt = dtype if isinstance(dtype, DataType) else DataType.parse(dtype)
    tensors = {name: TensorDesc(dt, shape) for name in OP.tensors}
    tensors.update(changes)
    return Description(OP, OP.parse_params({"Min": low, "Max": high}, dt), tensors)


def run(x, dy, low, high, variant=None) -> np.ndarray:
    x, dy = np.asarray(x), np.asarray(dy)
    desc = describe(DataType.from_numpy(x.dtype), low, high, x.shape)
    OP.validate(desc)
    return OP.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}, variant).outputs["OutputGradientTensor"]


def passed(x, low, high, variant=None) -> list[int]:
    """The positions whose gradient passes (dY = 1, 2, 3, ...)."""
    x = np.asarray(x)
    dy = np.arange(1, x.size + 1).astype(x.dtype)
    out = run(x, dy, low, high, variant)
    return [i for i in range(x.size) if out[i] != 0]


# -- the page ------------------------------------------------------------------------------------------------------
def test_the_pages_rule_both_bounds_excluded():
    # f(x, gradient) = 0 if x <= Min; 0 if x >= Max; else gradient. Min -1, Max 2.
    x = np.array([-2, -1, -0.5, 1.5, 2, 3], np.float32)
    dy = np.array([10, 20, 30, 40, 50, 60], np.float32)
    assert run(x, dy, -1.0, 2.0).tolist() == [0, 0, 30, 40, 0, 0]


def test_support_table_levels_from_the_page():
    assert OP.introduced is FeatureLevel.L3_1
    for name in ("FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"):
        assert OP.support.required_level(DataType.parse(name), 1) is FeatureLevel.L3_1
        assert OP.support.required_level(DataType.parse(name), 8) is FeatureLevel.L3_1
    for name in ("INT64", "UINT64"):
        assert OP.support.required_level(DataType.parse(name), 4) is FeatureLevel.L5_0
    assert OP.support.required_level(DataType.FLOAT64, 1) is None
    assert OP.in_place == ("OutputGradientTensor", "InputTensor")


@pytest.mark.parametrize("changes,field", [
    ({"InputTensor": TensorDesc(DataType.FLOAT64, (4,)), "InputGradientTensor": TensorDesc(DataType.FLOAT64, (4,)),
      "OutputGradientTensor": TensorDesc(DataType.FLOAT64, (4,))}, "InputTensor.DataType"),
    ({"InputGradientTensor": TensorDesc(DataType.FLOAT16, (4,))}, "InputGradientTensor.DataType"),
    ({"OutputGradientTensor": TensorDesc(DataType.INT32, (4,))}, "OutputGradientTensor.DataType"),
    ({"InputGradientTensor": TensorDesc(DataType.FLOAT32, (2, 2))}, "InputGradientTensor.DimensionCount"),
    ({"OutputGradientTensor": TensorDesc(DataType.FLOAT32, (5,))}, "OutputGradientTensor.Sizes"),
    ({name: TensorDesc(DataType.FLOAT32, (1,) * 9) for name in OP.tensors}, "InputTensor.DimensionCount"),
    ({name: TensorDesc(DataType.FLOAT32, (0,)) for name in OP.tensors}, "InputTensor.Sizes"),
])
def test_every_rule_is_refused_naming_its_field(changes, field):
    with pytest.raises(DescriptionError) as info:
        OP.validate(describe("FLOAT32", 0.0, 1.0, **changes))
    assert info.value.field == field


def test_min_and_max_are_dml_floats_whatever_the_tensors_type():
    desc = describe("INT32", 0.1, 16777217)
    assert desc.params["Min"] == float(np.float32(0.1)) and desc.params["Max"] == 16777216.0  # float32 values
    assert math.isnan(describe("UINT8", "nan", 1).params["Min"])
    assert describe("INT8", "-inf", "inf").params["Max"] == math.inf
    assert math.copysign(1, describe("INT8", "-0.0", 1).params["Min"]) == -1
    for bad in (True, "big", [1], 1e39):
        with pytest.raises(ParamError) as info:
            describe("INT32", bad, 1)
        assert info.value.field == "Min"
    with pytest.raises(ParamError) as info:  # ClipGrad1's MinMaxDataType is not a field of v0
        OP.parse_params({"Min": 0, "Max": 1, "MinMaxDataType": "INT32"}, DataType.INT32)
    assert info.value.field == "MinMaxDataType"


def test_a_zeroed_element_is_plus_zero_whatever_the_gradient():
    # OC-CG2: a select, as DirectML does; a multiply by a 0/1 mask would give -0 and NaN here.
    x = np.array([-1, -1, -1, -1, 2], np.float32)
    dy = np.array([-1, -np.inf, np.nan, np.inf, -7], np.float32)
    out = run(x, dy, 0.0, 1.0)
    assert out.view(np.uint32).tolist() == [0] * 5


@pytest.mark.parametrize("dtype", ["FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64"])
def test_min_above_max_and_min_equal_to_max_zero_everything(dtype):
    # OC-CG4: computed as written (DirectML computes it, and refuses nothing): every X is <= Min or >= Max.
    x = np.array([0, 2, 3, 4, 5, 9], DataType.parse(dtype).numpy)
    for variant in OP.variants:
        assert passed(x, 4.0, 3.0, variant) == []
        assert passed(x, 3.7, 3.2, variant) == []
        assert passed(x, 3.0, 3.0, variant) == []


# -- each variant apart from the default ---------------------------------------------------------------------------
def test_the_default_is_what_directml_does():
    assert OP.variants[0] == "bound-in-type"
    assert set(OP.variants) == set(VARIANTS)


def test_fractional_integer_bounds():
    x = np.arange(-4, 6, dtype=np.int32)  # -4 .. 5
    # Min -2.5, Max 3.5. In the type toward zero: -2 and 3, so -1..2 pass; exactly: -2..3; to nearest even: -2, 4.
    assert [int(x[i]) for i in passed(x, -2.5, 3.5)] == [-1, 0, 1, 2]
    assert [int(x[i]) for i in passed(x, -2.5, 3.5, "exact")] == [-2, -1, 0, 1, 2, 3]
    assert [int(x[i]) for i in passed(x, -2.5, 3.5, "bound-rounded")] == [-1, 0, 1, 2, 3]
    # ties away from zero: -3 and 4, so -2 .. 3 pass (as exactly); 2.5 and 6.5 are 3 and 7 where ties to even give 2, 6
    assert [int(x[i]) for i in passed(x, -2.5, 3.5, "bound-rounded-away")] == [-2, -1, 0, 1, 2, 3]
    assert [int(x[i]) for i in passed(x, 2.5, 6.5, "bound-rounded-away")] == [4, 5]
    assert [int(x[i]) for i in passed(x, 2.5, 6.5, "bound-rounded")] == [3, 4, 5]
    assert [int(x[i]) for i in passed(x, -2.5, 3.5, "x-in-float32")] == [-2, -1, 0, 1, 2, 3]


def test_int32_above_2p24_through_float32():
    big = 2**24
    x = np.array([big, big + 1, big + 2, big + 3, big + 4], np.int32)
    assert passed(x, float(big), float(big + 4)) == [1, 2, 3]
    # through float32, 2^24 + 1 rounds (ties to even) to 2^24 = Min and 2^24 + 3 to 2^24 + 4 = Max
    assert passed(x, float(big), float(big + 4), "x-in-float32") == [2]


def test_int64_above_2p53_through_float64():
    big, step = 2**53, 2**30  # float32's step at 2^53: Min 2^53 and Max 2^53 + 2^30 are FLOATs
    x = np.array([big, big + 1, big + 2, big + step - 1, big + step], np.int64)
    assert passed(x, float(big), float(big + step)) == [1, 2, 3]
    # through a double 2^53 + 1 is 2^53 (ties to even) and 2^53 + 2^30 - 1 is Max
    assert passed(x, float(big), float(big + step), "x-in-float64") == [2]
    assert passed(x, float(big), float(big + step), "x-in-float32") == []  # each rounds onto a bound


@pytest.mark.parametrize("dtype,low,high", [("UINT8", -1.0, 300.0), ("INT8", -200.0, 200.0),
                                            ("INT32", -3e9, 3e9), ("UINT64", -1.0, 2e19), ("INT16", "-inf", "inf")])
def test_bounds_beyond_the_type_saturate(dtype, low, high):
    info = np.iinfo(DataType.parse(dtype).numpy)
    x = np.array([info.min, info.min + 1, info.max - 1, info.max], DataType.parse(dtype).numpy)
    assert passed(x, low, high) == [1, 2]  # the bounds became the type's ends: X at them is zeroed
    assert passed(x, low, high, "exact") == [0, 1, 2, 3]


@pytest.mark.parametrize("dtype,indefinite", [("INT32", -(2**31)), ("INT64", -(2**63)), ("UINT64", 2**63),
                                              ("INT16", 0), ("INT8", 0), ("UINT32", 0), ("UINT16", 0), ("UINT8", 0)])
def test_a_nan_bound_in_an_integer_type(dtype, indefinite):
    numpy_type = DataType.parse(dtype).numpy
    info = np.iinfo(numpy_type)
    values = sorted({int(info.min), indefinite, indefinite + 1, 5, int(info.max)})
    x = np.array(values, numpy_type)
    expect_min = [i for i, v in enumerate(values) if indefinite < v < 10]
    assert passed(x, "nan", 10.5) == expect_min
    assert passed(x, "nan", 10.5, "nan-bound-zero") == [i for i, v in enumerate(values) if 0 < v < 10]
    assert passed(x, "nan", 10.5, "exact") == []  # no X is above NaN
    assert passed(x, "nan", 10.5, "nan-bound-ignored") == [i for i, v in enumerate(values) if v < 10]  # nor below it
    assert passed(x, "nan", 10.5, "nan-passes") == expect_min  # nothing compares with NaN here: the type's value


def test_float16_bounds_between_halves_and_past_65504():
    h = np.float16
    x = np.array([0.99951171875, 1.0, 1.0009765625, 2.0, 2.001953125], h)
    # Min 0.99995: nearest half 1.0, toward zero 0.99951; Max 2.0015: nearest 2.00195, toward zero 2.0.
    assert passed(x, 0.99995, 2.0015) == [2, 3]
    assert passed(x, 0.99995, 2.0015, "exact") == [1, 2, 3]
    assert passed(x, 0.99995, 2.0015, "bound-half-toward-zero") == [1, 2]
    assert passed(x, 0.99995, 2.0015, "bound-half-overflowing") == [2, 3]
    far = np.array([-np.inf, -65504, 0, 65504, np.inf], h)
    assert passed(far, -70000.0, 70000.0) == [2]  # clamped to ±65504
    assert passed(far, -70000.0, 70000.0, "bound-half-overflowing") == [1, 2, 3]  # ±inf
    assert passed(far, -70000.0, 70000.0, "exact") == [1, 2, 3]
    assert passed(far, "-inf", "inf") == [2]
    assert passed(far, "-inf", "inf", "bound-half-toward-zero") == [1, 2, 3]


def test_float32_bounds_are_not_converted():
    big = float(np.finfo(np.float32).max)
    x = np.array([-np.inf, -big, 0, big, np.inf], np.float32)
    for variant in OP.variants:
        assert passed(x, "-inf", "inf", variant) == [1, 2, 3]


def test_nan_input_and_nan_bounds_on_floats():
    x = np.array([np.nan, -1, -0.5, 2, 3, 0], np.float32)
    assert passed(x, -1.0, 2.0) == [2, 5]
    assert passed(x, -1.0, 2.0, "nan-passes") == [0, 2, 5]
    y = np.array([-1, 0, 0.5, 1, 2], np.float16)
    assert passed(y, "nan", 1.0) == []  # no X is above NaN
    assert passed(y, "nan", 1.0, "nan-passes") == [0, 1, 2]  # no X is at or below NaN


def test_each_variant_is_a_candidate_of_a_behaviour_and_candidates_are_variants():
    named = {variant for candidates in CANDIDATES.values() for variant in candidates.values()}
    assert named == set(OP.variants)
    for behaviour, candidates in CANDIDATES.items():
        assert OP.variants[0] in candidates.values(), behaviour
        for name, variant in candidates.items():
            assert name not in OP.variants or name == variant, (behaviour, name)


def test_behaviours_of_a_description():
    assert behaviours(describe("FLOAT32", 0.0, 1.0)) == (NAN_INPUT,)
    assert behaviours(describe("FLOAT16", "nan", 1.0)) == (NAN_INPUT, FLOAT_NAN_BOUND, FLOAT16_BOUNDS)
    assert behaviours(describe("INT8", 0.0, 1.0)) == (INTEGER_BOUNDS,)
    assert behaviours(describe("UINT64", 0.0, "nan")) == (INTEGER_BOUNDS, INTEGER_NAN_BOUND)


# -- the comparisons against a brute force -------------------------------------------------------------------------
def _nearest(value: int, bits: int) -> Fraction:
    """Round to nearest even through Fraction arithmetic, a second derivation of round_integer."""
    if value == 0:
        return Fraction(0)
    exponent = abs(value).bit_length() - bits
    unit = Fraction(2) ** max(exponent, 0)
    quotient = Fraction(value) / unit
    down = math.floor(quotient)
    rest = quotient - down
    up = rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2 == 1)
    return (down + up) * unit


def test_round_integer_agrees_with_fraction_rounding():
    rng = np.random.default_rng(41)
    values = [0, 1, -1, 2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
    values += [int(v) for v in rng.integers(-(2**63), 2**63 - 1, size=300, dtype=np.int64)]
    values += [int(v) >> int(s) for v, s in zip(rng.integers(0, 2**63 - 1, size=300, dtype=np.int64),
                                                rng.integers(0, 40, size=300), strict=True)]
    for value in values:
        for bits in (24, 53):
            assert round_integer(value, bits) == _nearest(value, bits), (value, bits)


def _brute_keep(value: int | float, low: float, high: float, variant: str, dtype: DataType) -> bool:
    """Whether one element passes, from the readings' definitions, one element at a time."""
    reading = VARIANTS[variant]

    def converted(bound: float) -> Fraction | None:  # None: compares false
        if dtype.is_float:
            if dtype is DataType.FLOAT16 and reading.half != "exact" and not math.isnan(bound):
                if reading.half == "in-type":
                    bound = float(np.float16(min(max(bound, -65504.0), 65504.0)))
                elif reading.half == "overflowing":
                    with np.errstate(over="ignore"):
                        bound = float(np.float16(bound))
                else:
                    bound = _toward_zero_half(bound)
            return None if math.isnan(bound) else bound  # type: ignore[return-value]
        info = np.iinfo(dtype.numpy)
        if reading.integers in ("in-type", "rounded", "rounded-away"):
            if math.isnan(bound):
                table = {"INT32": -(2**31), "INT64": -(2**63), "UINT64": 2**63}
                return Fraction(table.get(dtype.name, 0) if reading.nan_bound == "indefinite" else 0)
            if math.isinf(bound):
                return Fraction(int(info.max) if bound > 0 else int(info.min))
            half_up = math.floor(Fraction(abs(bound)) + Fraction(1, 2)) * (1 if bound >= 0 else -1)
            whole = {"in-type": math.trunc(bound), "rounded": round(bound), "rounded-away": half_up}[reading.integers]
            return Fraction(min(max(whole, int(info.min)), int(info.max)))
        return None if math.isnan(bound) else bound  # type: ignore[return-value]

    if dtype.is_float:
        x = value
    else:
        bits = {"float32": 24, "float64": 53}.get(reading.integers)
        x = Fraction(int(value)) if bits is None or reading.integers in ("in-type", "rounded", "rounded-away") else _nearest(
            int(value), bits)
    lo, hi = converted(low), converted(high)

    def le(a, b):
        return b is not None and not (isinstance(a, float) and math.isnan(a)) and a <= b

    def lt(a, b):
        return b is not None and not (isinstance(a, float) and math.isnan(a)) and a < b

    if reading.nan == "nan-zero":
        return lt(lo, x) and lt(x, hi) if lo is not None and hi is not None else False
    return not (le(x, lo) or (hi is not None and not (isinstance(x, float) and math.isnan(x)) and x >= hi))


def _toward_zero_half(value: float) -> float:
    if math.isinf(value):
        return value
    candidates = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    below = candidates[candidates <= abs(value)]
    return math.copysign(float(below[-1]), value)


def _bounds_for(dtype: DataType, rng: np.random.Generator) -> list[float]:
    """Bounds that part the readings: fractional, around the type's ends and beyond, infinite, NaN, big."""
    t = np.float32
    if dtype.is_float:
        picks = [0.99995, 2.0015, -70000.0, 70000.0, 65504.0, 1e-8, -1.5, 0.0, -0.0]
    else:
        info = np.iinfo(dtype.numpy)
        picks = [-2.5, 3.5, 2.5, -0.7, 0.49, float(info.min), float(info.max), float(info.min) - 1e3,
                 float(info.max) * 1.5, 2**24 + 4, 2**53, -(2**60)]
    picks += [math.inf, -math.inf, math.nan]
    picks += [float(t(v)) for v in rng.normal(0, 40, size=6)]
    return [float(t(p)) for p in picks]


def _values_for(dtype: DataType, bounds: list[float], rng: np.random.Generator) -> np.ndarray:
    if dtype.is_float:  # each bound as the type holds it and its neighbours, the type's ends, zeros, NaN
        t = dtype.numpy.type
        top = float(np.finfo(dtype.numpy).max)
        with np.errstate(over="ignore"):
            values = [float(np.nextafter(t(b), t(d))) for b in bounds if math.isfinite(b) and abs(b) <= top
                      for d in (-np.inf, 0, np.inf)]
        values += [1.0, 1.0009765625, 2.0, 2.001953125, 5.96e-8, top, -top, np.inf, -np.inf, 0.0, -0.0, np.nan]
        return np.array(values, dtype.numpy)
    info = np.iinfo(dtype.numpy)
    near = []
    for b in bounds:
        if math.isfinite(b):
            for d in range(-3, 4):
                v = math.floor(b) + d
                if info.min <= v <= info.max:
                    near.append(v)
    near += [int(info.min), int(info.min) + 1, int(info.max) - 1, int(info.max), 0, 2**24 + 1, 2**24 + 3]
    near += [int(v) for v in rng.integers(int(info.min), int(info.max), size=20, dtype=dtype.numpy,
                                          endpoint=True)]
    return np.unique(np.array([v for v in near if info.min <= v <= info.max], dtype.numpy))


@pytest.mark.slow  # about 0.7 s a data type: a Python loop per element, pair of bounds and variant
@pytest.mark.parametrize("dtype", [*INTEGER_TYPES, "FLOAT16", "FLOAT32"])
def test_the_comparisons_agree_with_a_brute_force_for_every_reading(dtype):
    data_type = DataType.parse(dtype)
    rng = np.random.default_rng(len(dtype))
    bounds = _bounds_for(data_type, rng)
    x = _values_for(data_type, bounds, rng)
    pairs = [(bounds[i], bounds[j]) for i in range(len(bounds)) for j in range(len(bounds)) if (i * 7 + j) % 11 == 0]
    for low, high in pairs:
        for variant in OP.variants:
            c = compare(x, low, high, VARIANTS[variant])
            keep = c.above_min & c.below_max if VARIANTS[variant].nan == "nan-zero" else ~(
                c.at_or_below_min | c.at_or_above_max)
            expected = [_brute_keep(v.item(), low, high, variant, data_type) for v in x]
            wrong = [(x[i].item(), bool(keep[i])) for i in range(x.size) if bool(keep[i]) != expected[i]]
            assert not wrong, (dtype, low, high, variant, wrong[:5])


@pytest.mark.tier_scan
def test_every_reading_is_an_answer_of_every_bundled_case(scanned_cases, same_bits):
    """Contract §2: where the pages leave the answer open, every plausible reading is a candidate. For every ClipGrad
    (v0) case of the scanned tier, each variant's answer is the golden of a single-answer case or one of a candidate
    case's answers: a driver that follows any one reading passes every case."""
    checked = 0
    for case in scanned_cases:
        if case.op is not OP or case.expect_invalid:
            continue
        answers = [answer["OutputGradientTensor"] for answer in case.answers().values()]
        for variant in OP.variants:
            ours = OP.reference(case.description, case.inputs, variant).outputs["OutputGradientTensor"]
            assert any(same_bits(ours, answer) for answer in answers), (case.full_id, variant)
        checked += 1
    assert checked >= 30
