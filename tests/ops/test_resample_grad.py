"""RESAMPLE_GRAD (v0) reference: the page's example, its support table and rules, and each reading of its three open
choices (offsets, NEAREST_NEIGHBOR rounding, LINEAR edges) shown by a case where it differs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops import find_operator
from dmlconform.ops._resample_coordinates import rounding_slack
from dmlconform.ops.base import Description, DescriptionError, ParamError, TensorDesc
from dmlconform.ops.resample_grad import DEFAULT, ROUNDINGS, reading, variant

OP = find_operator("RESAMPLE_GRAD")
RG1 = find_operator("RESAMPLE_GRAD1")
F32 = DataType.FLOAT32


def params(mode, scales, ipo, opo):
    return {"InterpolationMode": mode, "Scales": list(scales), "InputPixelOffsets": list(ipo),
            "OutputPixelOffsets": list(opo)}


def run(describe, dy, dx_shape, p, name=None):
    desc = describe("RESAMPLE_GRAD", p, DataType.from_numpy(dy.dtype), InputGradientTensor=dy.shape,
                    OutputGradientTensor=tuple(dx_shape))
    return OP.reference(desc, {"InputGradientTensor": dy}, name).outputs["OutputGradientTensor"]


PAGE_DY = np.array([4, 5, 6], np.float32).reshape(1, 1, 1, 3)


def page(describe, ipo, opo, name=None):
    """The page's example in 4-D (FL 3_0): Scales 0.5 (height) and 1.5 (width), offsets (ipo, opo) on both."""
    p = params("NEAREST_NEIGHBOR", [1, 1, 0.5, 1.5], [0, 0, ipo, ipo], [0, 0, opo, opo])
    return run(describe, PAGE_DY, (1, 1, 2, 2), p, name).reshape(2, 2).tolist()


@pytest.mark.parametrize("offsets", [(0.0, 0.5), (0.5, 0.0), (0.5, 0.5)])
@pytest.mark.parametrize("name", ["swapped", "literal"])
def test_the_page_example_under_directml_rounding(describe, offsets, name):
    """[4, 5, 6] -> [[9, 6], [0, 0]]: with round half up (DirectML's rule) the page's example holds where the forward
    samples x = o/S - 0.5 or (o - 0.5)/S, in either offset reading."""
    assert page(describe, *offsets, name) == [[9, 6], [0, 0]]


def test_the_page_example_is_not_what_half_pixel_offsets_give_directml(describe):
    """With Resample1's pixel-centre offsets (forward IPO 0.5, OPO -0.5; the gradient's fields swapped) DirectML's
    round half up picks row 1 and columns 0, 1, 1: the page's answer needs floor, half-down or half-even there."""
    assert page(describe, -0.5, 0.5) == [[0, 0], [4, 11]]
    reproduce = {r for r in ROUNDINGS if page(describe, -0.5, 0.5, variant(rounding=r)) == [[9, 6], [0, 0]]}
    assert reproduce == {"floor", "half-down", "half-even"}


def test_which_roundings_reproduce_the_page_example_and_with_which_offsets(describe):
    """Over forward offsets in {-0.5, 0, 0.5} on the two resampled axes: every rule but ceil reproduces the page's
    example with some offsets; with zero offsets only floor does, with half-pixel ones floor, half-down, half-even."""
    found: dict[str, set] = {r: set() for r in ROUNDINGS}
    for ipo, opo in itertools.product([-0.5, 0.0, 0.5], repeat=2):
        for r in ROUNDINGS:
            if page(describe, opo, ipo, variant(rounding=r)) == [[9, 6], [0, 0]]:  # swapped: forward (ipo, opo)
                found[r].add((ipo, opo))
    assert found["ceil"] == {(0.5, 0.5)}
    assert (0.0, 0.0) in found["floor"] and all((0.0, 0.0) not in found[r] for r in ROUNDINGS if r != "floor")
    assert {r for r in ROUNDINGS if (0.5, -0.5) in found[r]} == {"floor", "half-down", "half-even"}
    assert found["half-up"] == {(0.0, 0.5), (0.5, 0.0), (0.5, 0.5)}


def test_the_page_example_suite_case_is_the_reference_bit_for_bit(edge_cases, same_bits):
    case = edge_cases["page-example"]
    expected = case.expected["OutputGradientTensor"]
    assert expected.reshape(2, 2).tolist() == [[9, 6], [0, 0]]
    assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], expected)


@pytest.fixture(scope="module")
def edge_cases() -> dict:
    from dmlconform.suite.loader import load_paths
    from tests.ops.conftest import REPO

    return {case.id: case for case in load_paths([REPO / "test_vectors" / "resample_grad" / "edge.yaml"])}


def test_support_table_rank_4_from_3_0_and_1_to_3_from_5_1(describe):
    four = describe("RESAMPLE_GRAD", params("LINEAR", [1, 1, 2, 2], [0] * 4, [0] * 4), "FLOAT16",
                    InputGradientTensor=(1, 1, 4, 4), OutputGradientTensor=(1, 1, 2, 2))
    assert OP.required_level(four) is FeatureLevel.L3_0
    for rank in (1, 2, 3):
        desc = describe("RESAMPLE_GRAD", params("LINEAR", [2] * rank, [0] * rank, [0] * rank), "FLOAT32",
                        InputGradientTensor=(4,) * rank, OutputGradientTensor=(2,) * rank)
        assert OP.required_level(desc) is FeatureLevel.L5_1
    assert OP.introduced is FeatureLevel.L3_0


def _refused(describe, p, dtype="FLOAT32", dy=(4,), dx=(2,), out_dtype=None):
    """The field named by the refusal of a description with these params, shapes and data types."""
    desc = describe("RESAMPLE_GRAD", p, dtype, validate=False, InputGradientTensor=dy, OutputGradientTensor=dx)
    if out_dtype is not None:
        tensors = {**desc.tensors, "OutputGradientTensor": TensorDesc(DataType.parse(out_dtype), tuple(dx))}
        desc = Description(OP, desc.params, tensors)
    with pytest.raises(DescriptionError) as info:
        OP.validate(desc)
    return info.value.field


ONE = params("NEAREST_NEIGHBOR", [2.0], [0.0], [0.0])


@pytest.mark.parametrize("dtype", ["INT32", "FLOAT64", "UINT8", "INT8"])
def test_data_types_outside_the_table_are_refused(describe, dtype):
    assert _refused(describe, ONE, dtype) == "InputGradientTensor.DataType"


def test_every_rule_is_refused_naming_its_field(describe):
    five = params("NEAREST_NEIGHBOR", [1, 1, 1, 1, 2], [0] * 5, [0] * 5)
    assert _refused(describe, five, dy=(1, 1, 1, 1, 4), dx=(1, 1, 1, 1, 2)) == "InputGradientTensor.DimensionCount"
    assert _refused(describe, ONE, out_dtype="FLOAT16") == "OutputGradientTensor.DataType"
    assert _refused(describe, ONE, dx=(1, 2)) == "OutputGradientTensor.DimensionCount"
    assert _refused(describe, ONE, dy=(0,)) == "InputGradientTensor.Sizes"
    assert _refused(describe, ONE, dy=(1, 4), dx=(1, 2)) == "DimensionCount"
    assert _refused(describe, params("NEAREST_NEIGHBOR", [1.0, 2.0], [0.0], [0.0, 0.0]), dy=(1, 4), dx=(1, 2)) \
        == "InputPixelOffsets"
    assert _refused(describe, {**ONE, "DimensionCount": 2}) == "DimensionCount"
    for scale in (0.0, -2.0, float("nan")):
        assert _refused(describe, params("LINEAR", [scale], [0.0], [0.0])) == "Scales[0]"
    assert _refused(describe, params("LINEAR", [2.0], [float("nan")], [0.0])) == "InputPixelOffsets[0]"
    assert _refused(describe, params("LINEAR", [2.0], [0.0], [float("nan")])) == "OutputPixelOffsets[0]"
    # (o + inf)/2 - inf = inf - inf: a NaN coordinate (in either reading of the offsets).
    assert _refused(describe, params("LINEAR", [2.0], [float("inf")], [float("-inf")])) == "Scales[0]"


def test_the_v0_struct_has_no_rounding_direction():
    with pytest.raises(ParamError) as info:
        OP.parse_params({**ONE, "RoundingDirection": "DECREASING"}, F32)
    assert info.value.field == "RoundingDirection"
    with pytest.raises(ParamError) as info:
        OP.parse_params({k: v for k, v in ONE.items() if k != "Scales"}, F32)
    assert info.value.field == "Scales"


def test_variant_names_stand_for_their_readings():
    assert OP.variants[0] == "swapped" and reading("swapped") == DEFAULT
    assert DEFAULT.rounding == "half-up" and DEFAULT.edges == "clamped"
    for name in OP.variants:
        assert reading(name).name == name
    assert reading("literal+floor") == DEFAULT.__class__("literal", "floor", "clamped")
    assert reading("edges-dropped").edges == "dropped"
    assert reading("no-such-reading") == DEFAULT and reading(None) == DEFAULT
    assert len(set(OP.variants)) == len(OP.variants) == 12


QUARTERS = np.array([2.0**k for k in range(14)], np.float32)


@pytest.mark.parametrize(("rounding", "picks"), [
    ("floor", [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3]),
    ("ceil", [0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3]),
    ("half-up", [0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]),
    ("half-down", [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]),
    ("half-even", [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3]),
])
def test_each_rounding_reading_picks_its_own_elements(describe, rounding, picks):
    """x = o/4 = 0, .25, .5, ..., 3.25 (the probe DirectML answered with half-up): dY = 2^o, so each dX element's
    bits say which gradients landed on it."""
    out = run(describe, QUARTERS, (4,), params("NEAREST_NEIGHBOR", [4.0], [0.0], [0.0]), variant(rounding=rounding))
    expected = np.zeros(4)
    np.add.at(expected, picks, QUARTERS.astype(np.float64))
    assert out.tolist() == expected.tolist()


def test_the_offset_readings_differ_where_the_offsets_do(describe):
    """LINEAR scale 2, IPO -1, OPO 0.5, dY = 1, 2, 4, 8: swapped x = (o + 1)/2 - .5 = 0, .5, 1, 1.5 gives
    [1 + 1, 1 + 4 + 4, 4, 0]; literal x = (o - .5)/2 + 1 = .75, 1.25, 1.75, 2.25 gives [.25, .75 + 1.5 + 1, .5 + 3 + 6, 2]."""
    dy = np.array([1, 2, 4, 8], np.float32)
    p = params("LINEAR", [2.0], [-1.0], [0.5])
    assert run(describe, dy, (4,), p, "swapped").tolist() == [2, 9, 4, 0]
    assert run(describe, dy, (4,), p, "literal").tolist() == [0.25, 3.25, 9.5, 2]
    equal = params("LINEAR", [2.0], [0.25], [0.25])
    assert run(describe, dy, (3,), equal, "swapped").tolist() == run(describe, dy, (3,), equal, "literal").tolist()


def test_the_edge_readings_differ_where_a_linear_tap_leaves_the_input(describe):
    """x = o - 1.5 = -1.5, -.5, .5, 1.5, 2.5, 3.5 over 4 elements: clamped puts every tap on an element; dropped loses
    both taps of -1.5, the left one of -.5 and the right one of 3.5. NEAREST_NEIGHBOR has no taps to drop."""
    dy = np.array([1, 2, 4, 8, 16, 32], np.float32)
    p = params("LINEAR", [1.0], [0.75], [0.75])
    assert run(describe, dy, (4,), p).tolist() == [5, 6, 12, 40]
    assert run(describe, dy, (4,), p, "edges-dropped").tolist() == [3, 6, 12, 24]
    nearest = params("NEAREST_NEIGHBOR", [1.0], [0.75], [0.75])
    assert run(describe, dy, (4,), nearest).tolist() == run(describe, dy, (4,), nearest, "edges-dropped").tolist()


@pytest.mark.parametrize(("rounding", "direction"), [("floor", "DECREASING"), ("ceil", "INCREASING")])
def test_floor_and_ceil_are_resample_grad1s_directions(describe, rounding, direction):
    rng = np.random.default_rng(30)
    for _ in range(30):
        rank = int(rng.integers(1, 4))
        scales = [float(rng.choice([0.5, 0.75, 4 / 3, 2.0, 3.0])) for _ in range(rank)]
        ipo, opo = ([float(v) for v in rng.choice([-0.5, 0.0, 0.25, 0.5], size=rank)] for _ in range(2))
        dx = tuple(int(v) for v in rng.integers(1, 6, size=rank))
        dy = rng.standard_normal(tuple(max(1, int(n * s)) for n, s in zip(dx, scales, strict=True))).astype(np.float32)
        v0 = run(describe, dy, dx, params("NEAREST_NEIGHBOR", scales, ipo, opo), variant(rounding=rounding))
        desc = describe("RESAMPLE_GRAD1", {**params("NEAREST_NEIGHBOR", scales, ipo, opo),
                                           "RoundingDirection": direction}, F32, InputGradientTensor=dy.shape,
                        OutputGradientTensor=dx)
        assert np.array_equal(v0, RG1.reference(desc, {"InputGradientTensor": dy}).outputs["OutputGradientTensor"])


def test_half_up_is_floor_with_the_input_offset_half_a_pixel_lower(describe):
    """dml-semantics §5.3: Resample1(S, IPO, OPO) is Resample2(DECREASING, S, IPO - 0.5, OPO) wherever the coordinates
    are exact (here: offsets and scales whose coordinates are float32 values in both forms)."""
    dy = np.arange(1, 13, dtype=np.float32)
    for scale, ipo, opo in ((4.0, 0.0, 0.0), (2.0, 0.5, -0.5), (0.5, 0.25, 0.25), (1.0, -0.25, 0.0)):
        v0 = run(describe, dy, (7,), params("NEAREST_NEIGHBOR", [scale], [ipo], [opo]), "literal")
        desc = describe("RESAMPLE_GRAD1", {**params("NEAREST_NEIGHBOR", [scale], [ipo - 0.5], [opo]),
                                           "RoundingDirection": "DECREASING"}, F32, InputGradientTensor=dy.shape,
                        OutputGradientTensor=(7,))
        rg1 = RG1.reference(desc, {"InputGradientTensor": dy}, "literal").outputs["OutputGradientTensor"]
        assert np.array_equal(v0, rg1), (scale, ipo, opo)


def test_a_float32_half_up_sum_that_rounds_leaves_the_pick_open_and_an_exact_tie_does_not(describe):
    """x = 0.49999997: floor(x + 0.5) is 0, but x + 0.5 in float32 is 1.0 (picks 1), so the pick is open; at the tie
    x = 2.5 the sum 3.0 is exact and the pick fixed (half-down's x - 0.5 never rounds here)."""
    x = np.array([np.float32(0.5) - np.float32(2.0**-25), 2.5, 0.25], np.float32).astype(np.float64)
    assert rounding_slack(x, "half-up").tolist()[1:] == [0, 0] and rounding_slack(x, "half-up")[0] > 0
    assert not rounding_slack(x, "half-down").any() and not rounding_slack(x, "floor").any()
    assert not rounding_slack(x, "DECREASING").any()
    c = -(0.25 - 2.0**-26)  # x(0) = (0 - c)/1 - c = 0.49999997
    p = params("NEAREST_NEIGHBOR", [1.0], [c], [c])
    desc = describe("RESAMPLE_GRAD", p, F32, InputGradientTensor=(1,), OutputGradientTensor=(2,))
    (x0, delta), = OP.uncertain_coordinates(desc)
    assert x0[0] == np.float32(0.5) - np.float32(2.0**-25) and delta[0] > 0
    (_, floor_delta), = OP.uncertain_coordinates(desc, "floor")
    assert floor_delta[0] == 0


#: The numbers the projects published, as printed there (test_vectors/resample_grad/published.yaml cites each file).
ORT_SCALES = [2.7128, 2.9550, 2.7612, 1.4533, 2.9550, 3.2189, 3.0078, 1.5830,
              2.7612, 3.0078, 2.8106, 1.4792, 1.4533, 1.5830, 1.4792, 0.7785] * 2
ORT_ALIGN_SIZES = [2.9388, 3.9184, 3.9184, 2.9388, 3.9184, 5.2245, 5.2245, 3.9184,
                   3.9184, 5.2245, 5.2245, 3.9184, 2.9388, 3.9184, 3.9184, 2.9388] * 2
ORT_ALIGN_SCALES = [1.96, 2.24, 2.24, 1.96, 2.24, 2.56, 2.56, 2.24, 2.24, 2.56, 2.56, 2.24, 1.96, 2.24, 2.24, 1.96] * 2
BURN_UP = ([4, 2, 4, 2, 2] + [2, 1, 2, 1, 1] * 6) * 2
BURN_DOWN = ([1, 1, 1, 0, 1, 1, 1, 0] + [0] * 8) * 4
PUBLISHED = {  # case id: (published dX, how many decimals it was printed with; None: exact)
    "ort-resize-grad-with-sizes": ([4.0] * 32, None),
    "ort-resize-grad-with-sizes-half": ([4.0] * 32, None),
    "ort-resize-grad-with-scales": (ORT_SCALES, 4),
    "ort-resize-grad-with-scales-half": (ORT_SCALES, 4),
    "ort-resize-grad-with-sizes-and-align-corners": (ORT_ALIGN_SIZES, 4),
    "ort-resize-grad-with-scales-and-align-corners": (ORT_ALIGN_SCALES, 4),
    "burn-nearest-upsample": (BURN_UP, None),
    "burn-nearest-downsample": (BURN_DOWN, None),
}


def test_the_reference_reproduces_the_published_gradients(same_bits):
    """ONNX Runtime's ResizeGrad and Burn's nearest interpolate backward tests: every golden of published.yaml is the
    reference's answer bit for bit (DirectML's reading, `swapped`, where the offsets differ) and the published number
    to the digits it was printed with (float16 ones to within their own rounding)."""
    from dmlconform.suite.loader import load_paths
    from tests.ops.conftest import REPO

    cases = {case.id: case for case in load_paths([REPO / "test_vectors" / "resample_grad" / "published.yaml"])}
    assert set(cases) == set(PUBLISHED)
    for case_id, (published, decimals) in PUBLISHED.items():
        case = cases[case_id]
        golden = (case.candidates["swapped"] if case.candidates else case.expected)["OutputGradientTensor"]
        assert same_bits(OP.reference(case.description, case.inputs).outputs["OutputGradientTensor"], golden)
        allowed = 0.0 if decimals is None else 0.5 * 10.0**-decimals
        if golden.dtype == np.float16:
            allowed += float(np.spacing(np.float16(max(published))))
        assert np.max(np.abs(golden.astype(np.float64).reshape(-1) - np.array(published))) <= allowed, case_id


def test_the_published_nearest_gradients_fail_floor_and_ceil():
    """Burn's upsample (floor(o · 7/8) and floor(o · 5/7)) is round half up of DirectML's x = o/S - 0.5; its
    coordinates hold no tie, so the other half rules give it too, but floor and ceil do not."""
    from dmlconform.suite.loader import load_paths
    from tests.ops.conftest import REPO

    (case,) = [c for c in load_paths([REPO / "test_vectors" / "resample_grad" / "published.yaml"])
               if c.id == "burn-nearest-upsample"]
    for rounding in ROUNDINGS:
        out = OP.reference(case.description, case.inputs, variant(rounding=rounding)).outputs["OutputGradientTensor"]
        assert (out.reshape(-1).tolist() == BURN_UP) == rounding.startswith("half-"), rounding
