"""AVERAGE_POOLING_GRAD reference: the page's example, a brute-force loop under every reading, the rules refused by
field, each reading's difference shown by a case, the bound's quotient roundings, and vectors other projects
published (forward ones through the adjoint)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import RuleKind
from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.average_pooling_grad import DIVISION_ROUNDINGS, pooled_size, round_exact
from dmlconform.ops.base import DescriptionError

OP = find_operator("AVERAGE_POOLING_GRAD")
F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def geometry(window, strides=None, start=None, end=None, include=False):
    dims = len(window)
    return {"Strides": list(strides or [1] * dims), "WindowSize": list(window), "StartPadding": list(start or [0] * dims),
            "EndPadding": list(end or [0] * dims), "IncludePadding": include}


def run(describe, dy, dx_shape, params, variant=None, dtype=None):
    desc = describe("AVERAGE_POOLING_GRAD", params, dtype or DataType.from_numpy(dy.dtype), InputGradientTensor=dy.shape,
                    OutputGradientTensor=dx_shape)
    return OP.reference(desc, {"InputGradientTensor": dy}, variant), desc


def brute_force(dy, dx_shape, p, reading):
    """dX by the page's definition, one window at a time, in float64: the divisor counted position by position."""
    out = np.zeros(dx_shape)
    spatial = dx_shape[2:]
    for n, c, *o in itertools.product(*(range(s) for s in dy.shape)):
        positions = [[oi * s - a + k for k in range(w)] for oi, s, a, w in
                     zip(o, p["Strides"], p["StartPadding"], p["WindowSize"], strict=True)]
        inside = [[q for q in axis if 0 <= q < size] for axis, size in zip(positions, spatial, strict=True)]

        def count(low, high, positions=positions):
            return math.prod(sum(1 for q in axis if lo <= q < hi) for axis, lo, hi in zip(positions, low, high,
                                                                                          strict=True))

        start, end = p["StartPadding"], p["EndPadding"]
        in_bounds = count([0] * len(spatial), spatial)
        padded_end = [s + e for s, e in zip(spatial, end, strict=True)]
        if not p["IncludePadding"]:
            divisor = in_bounds
        elif reading == "full-window":
            divisor = math.prod(p["WindowSize"])
        elif reading == "in-bounds-overhang":
            past = any(axis[-1] >= hi for axis, hi in zip(positions, padded_end, strict=True))
            divisor = in_bounds if past else math.prod(p["WindowSize"])
        elif reading == "end-padding-as-start":
            divisor = count([-a for a in start], [s + a for s, a in zip(spatial, start, strict=True)])
        else:
            divisor = count([-a for a in start], padded_end)
        for place in itertools.product(*inside):
            out[(n, c, *place)] += float(dy[(n, c, *o)]) / divisor
    return out


# -- the page ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("include", [False, True])
def test_the_pages_example(describe, include):
    """2x2 windows, stride 1, no padding: dY [[1, 2], [3, 4]] -> [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]."""
    dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    ref, _ = run(describe, dy, (1, 1, 3, 3), geometry([2, 2], include=include))
    assert ref.outputs["OutputGradientTensor"].reshape(3, 3).tolist() == [[0.25, 0.75, 0.5], [1, 2.5, 1.5],
                                                                         [0.75, 1.75, 1]]


def test_pooled_size_is_the_forward_pages_formula():
    assert pooled_size(3, 2, 1, 0, 0) == 2  # the page's example
    assert pooled_size(7, 4, 3, 0, 1) == 2  # (7 + 1 - 4) // 3 + 1
    assert pooled_size(2, 5, 1, 1, 0) == -1  # no whole window fits the padded input


# -- a second derivation -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reading", OP.variants)
@pytest.mark.parametrize("dims", [2, 3])
def test_every_reading_matches_a_brute_force_loop(describe, reading, dims):
    rng = np.random.default_rng(40 + dims)
    for _ in range(40):
        window = [int(v) for v in rng.integers(1, 5, size=dims)]
        strides = [int(v) for v in rng.integers(1, 4, size=dims)]
        start = [int(rng.integers(0, k + 2)) for k in window]
        end = [int(rng.integers(0, k + 2)) for k in window]
        spatial = [int(v) for v in rng.integers(1, 7 if dims == 2 else 5, size=dims)]
        out = [max(1, pooled_size(n, k, s, a, e) + int(rng.integers(-1, 3)))
               for n, k, s, a, e in zip(spatial, window, strides, start, end, strict=True)]
        p = geometry(window, strides, start, end, bool(rng.integers(0, 2)))
        dy = rng.normal(size=(2, 2, *out)).astype(np.float32)
        ref, _ = run(describe, dy, (2, 2, *spatial), p, reading)
        expected = brute_force(dy, (2, 2, *spatial), p, reading)
        terms = ref.accumulation["OutputGradientTensor"]
        assert np.allclose(terms.value, expected, rtol=1e-13, atol=1e-13)
        assert np.array_equal(ref.outputs["OutputGradientTensor"], terms.value.astype(np.float32))


def neighbours(exact: Fraction, dtype) -> tuple:
    """The values of `dtype` either side of `exact` (low <= exact < high), found by a walk over the type's values."""
    low = dtype(float(exact))
    while Fraction(float(low)) > exact:
        low = np.nextafter(low, dtype(-np.inf))
    while Fraction(float(np.nextafter(low, dtype(np.inf)))) <= exact:
        low = np.nextafter(low, dtype(np.inf))
    return low, np.nextafter(low, dtype(np.inf))


def nearest_even(exact: Fraction, dtype) -> float:
    low, high = neighbours(exact, dtype)
    below, above = exact - Fraction(float(low)), Fraction(float(high)) - exact
    if below != above:
        return float(low if below < above else high)
    return float(low if int(low.view(f"u{low.itemsize}")) % 2 == 0 else high)


@pytest.mark.parametrize(("dtype", "gradients", "divisor"), [
    # The standard tier's grid-2d-overlap-pad-none-exclude-dy+0-float32, element (1, 4): four windows of 6 meet.
    (np.float32, ["0x1.dba772p-1", "-0x1.afe59ep+0", "-0x1.b2e6a6p+0", "0x1.5dee54p-3"], 6),
    # An fp16 tie found by a search over random gradients (one the float64 sums round the odd way, in either order).
    (np.float16, ["-0x1.7acp+0", "-0x1.cc4p-1", "-0x1.6d4p-3", "0x1.bf4p+0"], 6),
])
def test_a_sum_on_a_rounding_midpoint_rounds_once_to_even(describe, dtype, gradients, divisor):
    """Σ dy/d is the golden rounded once from the exact sum: where that sum lies exactly halfway between two values of
    the type (often, for quotients by small integers), ties go to the even one. A float64 sum of float64 quotients
    (dy/6 is no float64) lands a hair off the midpoint and rounds either way (here, left to right: the odd one)."""
    values = [float.fromhex(v) for v in gradients]
    dy = np.array(values, dtype).reshape(1, 1, 2, 2)
    # Windows of 2x3, strides (1, 2), over 3x5: the four windows meet at element (1, 2), each dividing by 6.
    ref, _ = run(describe, dy, (1, 1, 3, 5), geometry([2, 3], [1, 2]))
    exact = sum(Fraction(v) for v in values) / divisor
    low, high = neighbours(exact, dtype)
    assert exact == (Fraction(float(low)) + Fraction(float(high))) / 2, "not a tie: the case proves nothing"
    assert float(ref.outputs["OutputGradientTensor"][0, 0, 1, 2]) == nearest_even(exact, dtype)
    assert float(dtype(sum(np.float64(v) / divisor for v in values))) != nearest_even(exact, dtype)


@pytest.mark.parametrize(("dtype", "exact", "expected"), [
    (np.float16, Fraction(65520), np.inf),  # the largest value + ½ ULP rounds to infinity
    (np.float16, Fraction(65520) - Fraction(1, 2**40), 65504.0),
    (np.float16, -Fraction(65520), -np.inf),
    (np.float32, Fraction(2**128 - 2**103), np.inf),
    (np.float32, Fraction(2**128 - 2**103 - 1), float(np.finfo(np.float32).max)),
    (np.float16, Fraction(3, 2**26), 2.0**-24),  # ¾ of the smallest subnormal: nearest
    (np.float16, Fraction(1, 2**25), 0.0),  # ½ of it: a tie, to the even 0
    (np.float16, Fraction(3, 2**25), 2 * 2.0**-24),  # 1½ of it: a tie, to the even 2
    (np.float32, Fraction(1, 3), float(np.float32(1 / 3))),
])
def test_round_exact_rounds_to_nearest_even_and_overflows_past_half_an_ulp(dtype, exact, expected):
    got = round_exact(exact, np.dtype(dtype))
    assert got.dtype == np.dtype(dtype) and float(got) == expected


# -- rules ---------------------------------------------------------------------------------------------------
def describe_raw(params, dy_shape, dx_shape, dy_dtype=F32, dx_dtype=F32):
    from dmlconform.ops.base import Description, TensorDesc

    return Description(OP, OP.parse_params(params, dx_dtype), {"InputGradientTensor": TensorDesc(dy_dtype, dy_shape),
                                                               "OutputGradientTensor": TensorDesc(dx_dtype, dx_shape)})


BASE = geometry([2, 2])


@pytest.mark.parametrize(("params", "dy", "dx", "types", "field"), [
    ({**BASE, "Strides": [1, 0]}, (1, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "Strides[1]"),
    ({**BASE, "WindowSize": [0, 2]}, (1, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "WindowSize[0]"),
    (BASE, (2, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "InputGradientTensor.Sizes[0]"),
    (BASE, (1, 2, 2, 2), (1, 3, 3, 3), (F32, F32), "InputGradientTensor.Sizes[1]"),
    (BASE, (1, 1, 2, 2), (1, 1, 3, 3), (F32, F16), "OutputGradientTensor.DataType"),
    (BASE, (1, 1, 2, 2), (1, 1, 3, 3), (DataType.FLOAT64, DataType.FLOAT64), "InputGradientTensor.DataType"),
    (BASE, (1, 1, 2, 2), (1, 1, 3, 3), (DataType.INT32, DataType.INT32), "InputGradientTensor.DataType"),
    (BASE, (1, 1, 2, 2), (1, 1, 1, 3, 3), (F32, F32), "OutputGradientTensor.DimensionCount"),
    (geometry([2]), (1, 1, 2), (1, 1, 3), (F32, F32), "InputGradientTensor.DimensionCount"),
    (geometry([1, 1, 1, 2]), (1, 1, 1, 1, 1, 2), (1, 1, 1, 1, 1, 3), (F32, F32), "InputGradientTensor.DimensionCount"),
    (geometry([1, 2, 2]), (1, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "DimensionCount"),
    ({**BASE, "DimensionCount": 3}, (1, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "DimensionCount"),
    ({**BASE, "EndPadding": [0, 0, 0]}, (1, 1, 2, 2), (1, 1, 3, 3), (F32, F32), "EndPadding"),
    (BASE, (1, 1, 2, 2), (1, 1, 3, 0), (F32, F32), "OutputGradientTensor.Sizes"),
], ids=["stride-zero", "window-zero", "batch", "channels", "mixed-types", "float64", "int32", "mixed-ranks", "rank3",
        "rank6", "arrays-not-spatial", "explicit-count", "arrays-differ", "zero-size"])
def test_every_rule_is_refused_naming_its_field(params, dy, dx, types, field):
    with pytest.raises(DescriptionError) as raised:
        OP.validate(describe_raw(params, dy, dx, *types))
    assert raised.value.field == field, raised.value


def test_support_table_is_the_pages(describe):
    assert {d.name for d in OP.support.all_dtypes} == {"FLOAT32", "FLOAT16"}
    assert OP.support.rank_range == (4, 5) and OP.introduced.label == "3_0"
    for dtype, rank in itertools.product((F32, F16), (4, 5)):
        assert OP.support.required_level(dtype, rank).label == "3_0"


def test_a_gradient_of_another_size_is_computed_not_refused(describe):
    """The page says "typically" the pooled size: the reference computes others (DirectML 1.15.4 does too; the suites
    list a refusal as a candidate)."""
    dy = np.ones((1, 1, 1, 1), np.float32)
    ref, _ = run(describe, dy, (1, 1, 1, 4), geometry([1, 2], [1, 2]))
    assert ref.outputs["OutputGradientTensor"].ravel().tolist() == [0.5, 0.5, 0, 0]


# -- the readings, each shown by a case ------------------------------------------------------------------------
def outputs_by_reading(describe, dy, dx_shape, p):
    return {v: run(describe, dy, dx_shape, p, v)[0].outputs["OutputGradientTensor"].ravel().tolist()
            for v in OP.variants}


def test_a_window_past_the_padded_input_separates_oc_ap1s_readings(describe):
    """Width 7, window 4, stride 3, EndPadding 1, dY one larger than the pooled 2: window 2 covers 6..9 (6 in the
    input, 7 padding): divided by 2 (clipped), 4 (full) or 1 (in the input only)."""
    dy = np.array([8, 16, 24], np.float32).reshape(1, 1, 1, 3)
    got = outputs_by_reading(describe, dy, (1, 1, 1, 7), geometry([1, 4], [1, 3], [0, 0], [0, 1], True))
    assert got["clipped-to-padding"] == [2, 2, 2, 6, 4, 4, 16]
    assert got["full-window"] == [2, 2, 2, 6, 4, 4, 10]
    assert got["in-bounds-overhang"] == [2, 2, 2, 6, 4, 4, 28]
    assert got["end-padding-as-start"] == got["in-bounds-overhang"]  # StartPadding 0: the padded input is [0, 7)


def test_asymmetric_padding_separates_oc_ap3s_readings(describe):
    dy = np.array([3, 6, 9, 12, 15], np.float32).reshape(1, 1, 1, 5)
    got = outputs_by_reading(describe, dy, (1, 1, 1, 4), geometry([1, 3], [1, 1], [0, 1], [0, 2], True))
    assert got["clipped-to-padding"] == got["full-window"] == got["in-bounds-overhang"] == [3, 6, 9, 12]
    assert got["end-padding-as-start"] == [3, 6, 9, 14.5]


def test_without_include_padding_every_reading_agrees(describe):
    rng = np.random.default_rng(3)
    dy = rng.normal(size=(1, 2, 4, 3)).astype(np.float32)
    got = outputs_by_reading(describe, dy, (1, 2, 5, 4), geometry([3, 2], [2, 1], [2, 0], [3, 1], False))
    assert all(v == got["clipped-to-padding"] for v in got.values())


@pytest.mark.parametrize("include", [False, True])
def test_a_window_of_padding_only_reaches_nothing_in_every_reading(describe, include):
    """OC-AP2: window 0 covers -2, -1; its NaN gradient must reach no element, whatever its divisor."""
    dy = np.array([np.nan, 4, 5], np.float32).reshape(1, 1, 1, 3)
    got = outputs_by_reading(describe, dy, (1, 1, 1, 3), geometry([1, 2], [1, 2], [0, 2], [0, 2], include))
    expected = [2, 2, 2.5] if include else [2, 2, 5]
    assert all(v == expected for v in got.values())


# -- accumulation data and the tolerance --------------------------------------------------------------------------
def test_accumulation_data_counts_windows_and_quotients(describe):
    dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    ref, desc = run(describe, dy, (1, 1, 3, 3), geometry([2, 2]))
    terms = ref.accumulation["OutputGradientTensor"].dense
    assert terms.count.reshape(3, 3).tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    assert np.all(terms.weight_factors == 1) and np.all(terms.quotient_roundings == DIVISION_ROUNDINGS)
    assert terms.abs_sum[0, 0, 1, 1] == pytest.approx(2.5) and terms.abs_gradient_sum[0, 0, 1, 1] == 10
    assert OP.default_tolerance(desc, ref).kind is RuleKind.BOUND


def test_a_divisor_of_one_is_a_copy_judged_exactly(describe):
    """x/1.0f is x in D3D (its floating-point rules say so): windows of one element, stride 1, copy dY."""
    dy = np.array([1.1, -2.3, 7.7], np.float32).reshape(1, 1, 1, 3)
    ref, desc = run(describe, dy, (1, 1, 1, 3), geometry([1, 1]))
    terms = ref.accumulation["OutputGradientTensor"].dense
    assert np.all(terms.weight_factors == 0) and np.all(terms.quotient_roundings == 0)
    assert OP.default_tolerance(desc, ref).kind is RuleKind.EXACT


def test_a_divisor_fp16_cannot_hold_costs_one_more_rounding(describe):
    dy = np.ones((1, 1, 1, 1), np.float16)
    ref, _ = run(describe, dy, (1, 1, 1, 2049), geometry([1, 2049]))  # 2049 is not an fp16 value
    assert np.all(ref.accumulation["OutputGradientTensor"].dense.quotient_roundings == DIVISION_ROUNDINGS + 1)


def _quotients(dy: np.ndarray, divisor: int, how: str) -> np.ndarray:
    f32 = dy.astype(np.float32)
    if how == "divide":
        return (f32.astype(np.float64) / divisor).astype(np.float32)
    if how == "reciprocal":
        return (f32 * np.float32(1.0 / divisor)).astype(np.float32)
    q = (f32.astype(np.float64) / divisor).astype(np.float32)
    step = np.nextafter(q, np.float32(np.inf) * np.sign(q))
    return np.where(q.astype(np.float64) * divisor != f32.astype(np.float64), np.nextafter(step, step * 2), q)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("how", ["divide", "reciprocal", "two-ulp-off"])
def test_a_legitimate_division_passes_and_a_wrong_divisor_fails(describe, dtype, how):
    """Windows of 3 apart: every element one quotient. dy/3 correctly rounded, dy·fl(1/3), or (D3D's 2.5-ULP
    division) 2 ULP off, each in float32 and for fp16 converted once, passes; dy/4 or dy/2 fails."""
    rng = np.random.default_rng(5)
    dy = rng.uniform(-8, 8, size=(1, 1, 1, 64)).astype(dtype)
    ref, desc = run(describe, dy, (1, 1, 1, 192), geometry([1, 3], [1, 3]))
    golden = ref.outputs["OutputGradientTensor"]
    tolerance = OP.default_tolerance(desc, ref)
    terms = ref.accumulation["OutputGradientTensor"]
    ours = np.repeat(_quotients(dy, 3, how), 3, axis=3).astype(dtype)
    assert judge(golden, ours, desc.output.dtype, tolerance, terms).passed
    for wrong in (2, 4):
        bad = np.repeat(_quotients(dy, wrong, "divide"), 3, axis=3).astype(dtype)
        assert not judge(golden, bad, desc.output.dtype, tolerance, terms).passed


def test_fp16_computed_in_fp32_and_converted_toward_zero_passes(describe):
    """DirectML 1.15.4 on lavapipe: FLOAT16 divided in float32 and converted toward zero (D3D's conversion rule),
    down to the denormals: 0.75 * 2^-24 rounds to 2^-24, truncates to 0; both pass (the bound is symmetric, so
    2 * 2^-24, one subnormal the other way, passes too), 3 * 2^-24 does not."""
    dy = np.array([3 * 2.0**-24], np.float16).reshape(1, 1, 1, 1)
    ref, desc = run(describe, dy, (1, 1, 1, 4), geometry([1, 4], [1, 4]))
    golden, terms = ref.outputs["OutputGradientTensor"], ref.accumulation["OutputGradientTensor"]
    tolerance = OP.default_tolerance(desc, ref)
    for value, passes in ((2.0**-24, True), (0.0, True), (3 * 2.0**-24, False), (-(2.0**-24), False)):
        actual = np.full(golden.shape, value, np.float16)
        assert judge(golden, actual, F16, tolerance, terms).passed is passes, value


# -- vectors other projects published -------------------------------------------------------------------------------
#: deephealthproject/eddl tests/layers/pool/test_avgpool.cpp: 5x5 input (below), AvgPool2D forward and AvgPool2D_back
#: with dY ones; (window, stride, padding name, forward, backward) as printed there.
EDDL_IMAGE = np.array([[0, 1, 0, 4, 5], [2, 3, 2, 1, 3], [4, 4, 0, 4, 3], [2, 5, 2, 6, 4], [1, 0, 0, 5, 7]], float)
EDDL = [
    (2, 2, "valid", [1.5, 1.75, 3.75, 3.0],
     [0.25] * 4 + [0] + [0.25] * 4 + [0] + [0.25] * 4 + [0] + [0.25] * 4 + [0] * 6),
    (2, 2, "same", [1.5, 1.75, 2.0, 3.75, 3.0, 1.75, 0.25, 1.25, 1.75], [0.25] * 25),
    (3, 1, "valid", [1.77778, 2.11111, 2.44444, 2.66667, 3.0, 2.77778, 2.0, 2.88889, 3.44444],
     [0.111111, 0.222222, 0.333333, 0.222222, 0.111111, 0.222222, 0.444444, 0.666667, 0.444444, 0.222222,
      0.333333, 0.666667, 1.0, 0.666667, 0.333333, 0.222222, 0.444444, 0.666667, 0.444444, 0.222222,
      0.111111, 0.222222, 0.333333, 0.222222, 0.111111]),
    (3, 1, "same", [0.666667, 0.888889, 1.22222, 1.66667, 1.44444, 1.55556, 1.77778, 2.11111, 2.44444, 2.22222,
                    2.22222, 2.66667, 3.0, 2.77778, 2.33333, 1.77778, 2.0, 2.88889, 3.44444, 3.22222, 0.888889,
                    1.11111, 2.0, 2.66667, 2.44444],
     [0.444444, 0.666667, 0.666667, 0.666667, 0.444444] + [0.666667, 1, 1, 1, 0.666667] * 3
     + [0.444444, 0.666667, 0.666667, 0.666667, 0.444444]),
    (3, 2, "valid", [1.77778, 2.44444, 2.0, 3.44444],
     [0.111111, 0.111111, 0.222222, 0.111111, 0.111111] * 2 + [0.222222, 0.222222, 0.444444, 0.222222, 0.222222]
     + [0.111111, 0.111111, 0.222222, 0.111111, 0.111111] * 2),
    (3, 2, "same", [0.666667, 1.22222, 1.44444, 2.22222, 3.0, 2.33333, 0.888889, 2.0, 2.44444],
     [0.111111, 0.222222, 0.111111, 0.222222, 0.111111, 0.222222, 0.444444, 0.222222, 0.444444, 0.222222] * 2
     + [0.111111, 0.222222, 0.111111, 0.222222, 0.111111]),
]


def _same_padding(extent: int, window: int, stride: int) -> tuple[int, int, int]:
    """TF's SAME: out = ceil(in / stride); the total padding, the smaller half first (EDDL's forward vectors divide
    its padded windows by the whole window: IncludePadding TRUE)."""
    out = -(-extent // stride)
    total = max(0, (out - 1) * stride + window - extent)
    return out, total // 2, total - total // 2


def forward_through_the_adjoint(describe, x, out, p):
    """The forward average pooling of x, one output at a time: <x, AvgPoolGrad(e_o)> (the gradient of a one-hot dY is
    row o of the forward operator)."""
    y = np.zeros(out)
    for o in np.ndindex(*out):
        e = np.zeros((1, 1, *out), np.float32)
        e[(0, 0, *o)] = 1
        ref, _ = run(describe, e, (1, 1, *x.shape), p)
        y[o] = float(np.sum(ref.accumulation["OutputGradientTensor"].value.reshape(x.shape) * x))
    return y


@pytest.mark.parametrize(("window", "stride", "padding", "forward", "backward"), EDDL,
                         ids=[f"k{w}-s{s}-{p}" for w, s, p, _, _ in EDDL])
def test_eddls_published_vectors(describe, window, stride, padding, forward, backward):
    """The reference's backward, and the forward read through it, reproduce EDDL's vectors to their printed digits."""
    if padding == "same":
        out, start, end = _same_padding(5, window, stride)
    else:
        out, start, end = (5 - window) // stride + 1, 0, 0
    p = geometry([window, window], [stride, stride], [start, start], [end, end], include=True)
    ref, _ = run(describe, np.ones((1, 1, out, out), np.float32), (1, 1, 5, 5), p)
    assert np.allclose(ref.accumulation["OutputGradientTensor"].value.ravel(), backward, atol=6e-7)
    assert np.allclose(forward_through_the_adjoint(describe, EDDL_IMAGE, (out, out), p).ravel(), forward, atol=6e-6)


#: tracel-ai/burn crates/burn-autodiff/src/tests/avgpool2d.rs: x.grad of avg_pool2d (dY ones), printed to 5 digits.
BURN = [
    ((6, 6), [3, 3], [1, 1], [0, 0], True,
     [0.11111, 0.22222, 0.33333, 0.33333, 0.22222, 0.11111, 0.22222, 0.44444, 0.66667, 0.66667, 0.44444, 0.22222]
     + [0.33333, 0.66667, 1.0, 1.0, 0.66667, 0.33333] * 2
     + [0.22222, 0.44444, 0.66667, 0.66667, 0.44444, 0.22222, 0.11111, 0.22222, 0.33333, 0.33333, 0.22222, 0.11111]),
    ((4, 6), [3, 4], [1, 2], [1, 2], True, [0.33333] * 6 + [0.5] * 12 + [0.33333] * 6),
    ((4, 6), [3, 4], [1, 2], [1, 2], False,
     [0.625, 0.625, 0.41667, 0.41667, 0.625, 0.625] + [0.875, 0.875, 0.58333, 0.58333, 0.875, 0.875] * 2
     + [0.625, 0.625, 0.41667, 0.41667, 0.625, 0.625]),
]


@pytest.mark.parametrize(("spatial", "window", "strides", "padding", "include", "expected"), BURN,
                         ids=["simple", "complex", "complex-dont-include-pad"])
def test_burns_published_vectors(describe, spatial, window, strides, padding, include, expected):
    out = [pooled_size(n, k, s, a, a) for n, k, s, a in zip(spatial, window, strides, padding, strict=True)]
    p = geometry(window, strides, padding, padding, include)
    ref, _ = run(describe, np.ones((1, 1, *out), np.float32), (1, 1, *spatial), p)
    assert np.allclose(ref.accumulation["OutputGradientTensor"].value.ravel(), expected, atol=6e-6)


def test_onnx_runtimes_asymmetric_padding_forward_vector(describe):
    """microsoft/onnxruntime#27375 (AveragePool_CountIncludePad_AsymmetricPads): ones(2, 2), pads [0, 0, 1, 1],
    kernel 2, count_include_pad 1 -> [[1, 0.5], [0.5, 0.25]]; before the fix [[1, 0.5], [1, 0.5]]."""
    p = geometry([2, 2], [1, 1], [0, 0], [1, 1], include=True)
    assert forward_through_the_adjoint(describe, np.ones((2, 2)), (2, 2), p).tolist() == [[1, 0.5], [0.5, 0.25]]


def test_the_verdicts_know_the_readings():
    from dmlconform.verdicts import AVERAGE_POOLING_READINGS

    assert tuple(OP.variants) == AVERAGE_POOLING_READINGS
