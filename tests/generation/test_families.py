"""Family builders: what the descriptions promise shows in what they build."""

from collections import Counter
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.generation.build import build_tier, load_descriptions
from dmlconform.generation.description import Family
from dmlconform.generation.families import KINDS
from dmlconform.generation.families.negative import CONSTRAINTS
from dmlconform.generation.families.pooling import shape_geometry
from dmlconform.generation.writer import render
from dmlconform.ops import find_operator
from dmlconform.suite.tiers import Tier


def family(kind: str, op: str, counts: dict, **settings) -> Family:
    return Family(Path(__file__), find_operator(op), "f", kind, 7, counts, "test family", settings)


def built(fam: Family, tier: Tier):
    from dmlconform.generation.build import freeze_plan, plans

    return [freeze_plan(fam, plan, "d.npz") for plan in plans(fam, tier)]


def test_a_case_depends_on_its_key_not_on_how_many_cases_the_family_has():
    small = built(family("slice-cells", "SLICE_GRAD", {Tier.SMOKE: 1, Tier.STANDARD: 2}, elements={"smoke": 8},
                         strides=[1, -2]), Tier.STANDARD)
    large = built(family("slice-cells", "SLICE_GRAD", {Tier.SMOKE: 1, Tier.STANDARD: 3}, elements={"smoke": 8},
                         strides=[1, -2]), Tier.STANDARD)
    by_id = {case.id: case for case in large}
    for case in small:
        assert case.entry == by_id[case.id].entry
        assert all(np.array_equal(a, by_id[case.id].arrays[k]) for k, a in case.arrays.items())
    assert len(large) == 2 * len(small) == 2 * 88


@pytest.mark.slow
def test_generating_twice_gives_the_same_files():
    # One description (ReluGrad's: its pairwise and layout families' greedy choices included) keeps it quick; every
    # tier's bytes against the committed ones are tests/cli/test_generate.py's (CI's scan step).
    chosen = [d for d in load_descriptions() if d.suite == "relu_grad"]
    first, second = (render(Tier.SMOKE, build_tier(Tier.SMOKE, chosen)) for _ in range(2))
    assert len(chosen) == 1 and first.manifest == second.manifest and first.files == second.files


def test_benchdnn_shapes_convert_to_dml_geometry():
    # ih13 oh14 kh3 ph3: padding equal to the kernel, so the first window reads padding only; pad_r = 13 - 13 + 3 - 3.
    geometry, spatial, out = shape_geometry({"in": [13, 13], "out": [14, 14], "window": [3, 3], "start": [3, 3]})
    assert geometry.start == (3, 3) and geometry.end == (0, 0) and geometry.pooled(spatial) == out
    # iw30 ow14 kw3 sw2: benchdnn's right padding is 26 - 30 + 3 = -1, so EndPadding 0; the pooled size is 14 too.
    geometry, spatial, out = shape_geometry({"in": [20, 30], "out": [17, 14], "window": [4, 3], "strides": [1, 2]})
    assert geometry.end == (0, 0) and geometry.pooled(spatial) == (17, 14)
    # id10 od4 kd3 sd2 (benchdnn's negative_pd_r): right padding 6 - 10 + 3 = -1, so EndPadding 0.
    geometry, spatial, out = shape_geometry({"in": [10, 10, 10], "out": [4, 4, 4], "window": [3, 3, 3],
                                             "strides": [2, 2, 2]})
    assert geometry.end == (0, 0, 0) and geometry.pooled(spatial) == (4, 4, 4)
    # A window of 16 with stride 16 and padding 16 on an input of 16: windows 0 and 2 read padding only.
    geometry, spatial, out = shape_geometry({"in": [16, 16], "out": [3, 3], "window": [16, 16], "strides": [16, 16],
                                             "start": [16, 16]})
    assert geometry.end == (16, 16) and geometry.pooled(spatial) == out


def test_padding_only_windows_become_candidate_cases():
    # MaxPoolingGrad's benchdnn shapes alone: a case depends on its family, not on the others built beside it (the
    # description's pairwise and layout families drew 95 % of this test's time building the whole description).
    (description,) = [d for d in load_descriptions() if d.suite == "max_pooling_grad"]
    (suite,) = build_tier(Tier.STANDARD, [replace(description, families=tuple(
        family for family in description.families if family.name == "benchdnn"))])
    assert suite.name == "max_pooling_grad.standard"
    pooling = suite.cases
    kernel_in_padding = [c for c in pooling if "kip-both-1" in c.id]
    assert kernel_in_padding and kernel_in_padding[0].entry["behaviour"] == "maxpool-padding-only-window"
    assert set(kernel_in_padding[0].entry["candidates"]) == {"dropped", "edge-clamped"}


def test_every_constraint_is_listed_by_some_description_and_refused_as_named():
    listed = Counter()
    for description in load_descriptions():
        for fam in description.families:
            if fam.kind == "negative":
                listed.update(fam.settings["constraints"])
    assert set(listed) == set(CONSTRAINTS)
    refuse = family("negative", "SLICE_GRAD", {Tier.STANDARD: 1}, constraints=["stride-zero", "window-past-end"])
    cases = built(refuse, Tier.STANDARD)
    assert [c.id for c in cases] == ["f-stride-zero-axis0", "f-stride-zero-axis1", "f-window-past-end-axis0",
                                     "f-window-past-end-axis1"]
    assert all(c.entry["expect"] == "invalid" for c in cases)


def test_every_kind_is_used_by_a_bundled_description():
    used = {fam.kind for description in load_descriptions() for fam in description.families}
    assert used == set(KINDS)


@cache
def _bundled(tier: Tier = Tier.STANDARD) -> tuple[Case, ...]:
    """The bundled tier, loaded once for the tests that read its generated cases (none changes them)."""
    from dmlconform.cli import bundled_suites
    from dmlconform.suite.loader import load_paths

    return tuple(load_paths([bundled_suites()], tier))


@pytest.mark.slow
def test_fp32_denormals_come_in_x_only_in_dy_only_and_in_both_each_with_its_candidates():
    from dmlconform.generation.freeze import is_fp32_denormal

    seen = Counter()
    for case in _bundled():
        if case.behaviour not in ("fp32-denormal-input", "fp32-denormal-gradient", "fp32-denormal-input-and-gradient") \
                or "generated" not in case.tags:
            continue
        x, dy = (is_fp32_denormal(case.inputs[n]).any() for n in ("InputTensor", "InputGradientTensor"))
        where = {(True, False): "fp32-denormal-input", (False, True): "fp32-denormal-gradient",
                 (True, True): "fp32-denormal-input-and-gradient"}[(bool(x), bool(dy))]
        assert case.behaviour == where, case.full_id  # an X edge value (the neighbour of 0) must not sneak in
        expected = {"preserved", "flushed"} | ({"input-flushed", "gradient-flushed"} if x and dy else set())
        assert set(case.candidates) == expected, case.full_id
        seen[(case.op.name, case.behaviour)] += 1
    # The selects (ReluGrad, ClipGrad1, ClipGrad v0), three placements each; MaxPoolingGrad's pairwise family may add
    # its own (X's denormals)
    for op in ("ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "ELEMENT_WISE_CLIP_GRAD"):
        assert len({key for key in seen if key[0] == op}) == 3, (op, seen)


def test_a_denormal_draw_whose_candidates_would_not_differ_where_it_is_for_is_drawn_again():
    """ClipGrad (v0)'s first smoke draw of `both` held its one denormal gradient beside X's denormal, which flushing
    moves onto the bound at 0: input-flushed, flushed and gradient-flushed gave one answer. Such draws are rejected."""
    from dmlconform.generation.families.elementwise import _check_telling
    from dmlconform.generation.freeze import Rejected

    op, params = find_operator("ELEMENT_WISE_CLIP_GRAD"), {"Min": 0.0, "Max": 3.0}
    tiny, dy = np.float32(1e-40), np.array([1e-40, 0.5, 2.0, 9.0], dtype=np.float32)
    x_at_the_gradient = np.array([tiny, 5.0, 5.0, 1.0], dtype=np.float32)
    with pytest.raises(Rejected, match="denormal gradient"):
        _check_telling(op, x_at_the_gradient, dy, params, "both")
    _check_telling(op, np.array([tiny, 5.0, 1.0, 1.0], dtype=np.float32), np.roll(dy, 2), params, "both")
    with pytest.raises(Rejected, match="X denormal"):  # a negative denormal is dropped flushed or not
        _check_telling(op, np.array([-tiny, 1.0, 5.0, 2.0], dtype=np.float32), dy[::-1].copy(), params, "x")
    _check_telling(op, np.array([tiny, 1.0, 5.0, 2.0], dtype=np.float32), dy[::-1].copy(), params, "x")
    relu = find_operator("ACTIVATION_RELU_GRAD")
    with pytest.raises(Rejected, match="denormal gradient"):  # X negative where the denormal gradient is
        _check_telling(relu, np.array([-1.0, 2.0], dtype=np.float32), np.float32([1e-40, 3.0]), {}, "dy")


@pytest.mark.slow
def test_the_input_flushed_candidate_flushes_the_comparison_and_keeps_the_selected_gradient():
    from dmlconform.generation.freeze import is_fp32_denormal

    checked = 0
    for case in _bundled():
        if case.behaviour != "fp32-denormal-input-and-gradient":
            continue
        x, dy = case.inputs["InputTensor"], case.inputs["InputGradientTensor"]
        answer = case.candidates["input-flushed"]["OutputGradientTensor"]
        flushed_x = np.where(is_fp32_denormal(x), np.float32(0), x)
        kept = case.op.reference(case.description, {"InputTensor": flushed_x, "InputGradientTensor": dy})
        assert np.array_equal(answer.view(np.uint32), kept.outputs["OutputGradientTensor"].view(np.uint32))
        assert is_fp32_denormal(answer).any(), case.full_id  # some gradient denormal went through the select
        checked += 1
    assert checked >= 2


@pytest.mark.slow
def test_knife_edge_cases_hold_open_picks_and_a_wrong_rounding_direction_still_fails():
    """Every knife-edge case has first-axis coordinates the D3D rule leaves open (what a stack's own division shows
    there), and every NEAREST one fails a driver that swaps the rounding direction (the second axis)."""
    import dataclasses

    from dmlconform.compare.comparator import judge
    from dmlconform.ops import _resample_coordinates as coordinates

    cases = [c for c in _bundled() if "knife-edge" in c.tags and c.op.name == "RESAMPLE_GRAD1"]
    assert len(cases) >= 40
    nearest = 0
    for case in cases:
        p = case.description.params
        (x, delta), _ = case.op.uncertain_coordinates(case.description)
        if p["InterpolationMode"] == "LINEAR":
            assert delta.any(), case.full_id
            continue
        assert coordinates.ambiguous_picks(x, delta, p["RoundingDirection"]).any(), case.full_id
        other = {"DECREASING": "INCREASING", "INCREASING": "DECREASING"}[p["RoundingDirection"]]
        swapped = dataclasses.replace(case.description, params={**p, "RoundingDirection": other})
        wrong = case.op.reference(swapped, case.inputs).outputs["OutputGradientTensor"]
        reference = case.reference()
        verdict = judge(case.expected["OutputGradientTensor"], wrong, case.dtype,
                        case.op.default_tolerance(case.description, reference),
                        reference.accumulation["OutputGradientTensor"])
        assert not verdict.passed, case.full_id
        nearest += 1
    assert nearest >= 20


def _v0_family_specs(kind: str) -> list:
    """ResampleGrad (v0)'s smoke and standard cases of one family kind, drawn as the generator draws them (its first
    draw: the freezer may take a later one)."""
    from dmlconform.generation.build import plans
    from dmlconform.generation.draw import Draw

    description = next(d for d in load_descriptions() if d.op.name == "RESAMPLE_GRAD")
    return [plan.make(Draw(family.seed, *plan.key, 0)) for family in description.families if family.kind == kind
            for tier in (Tier.SMOKE, Tier.STANDARD) for plan in plans(family, tier)]


def _v0_case(spec):
    from dmlconform.generation.freeze import _describe

    op = find_operator(spec.op)
    return op, _describe(op, spec), {name: t.array for name, t in spec.inputs.items()}


@pytest.mark.slow
def test_v0_knife_edges_sit_at_half_integers_and_floor_still_fails():
    """ResampleGrad (v0) picks floor(x + 0.5): its knife-edge family puts first-axis coordinates where that pick is
    open (near half-integers), and its second axis still fails a driver that floors (or rounds half to even)."""
    from dmlconform.compare.comparator import judge
    from dmlconform.ops import _resample_coordinates as coordinates

    specs = _v0_family_specs("resample-knife-edges")
    assert len(specs) >= 16
    nearest = 0
    for spec in specs:
        op, desc, inputs = _v0_case(spec)
        (x, delta), _ = op.uncertain_coordinates(desc)
        if desc.params["InterpolationMode"] == "LINEAR":
            assert delta.any(), spec.id
            continue
        assert coordinates.ambiguous_picks(x, delta, "half-up").any(), spec.id
        reference = op.reference(desc, inputs)
        for wrong_rule in ("floor", "half-even"):
            wrong = op.reference(desc, inputs, wrong_rule).outputs["OutputGradientTensor"]
            verdict = judge(wrong, reference.outputs["OutputGradientTensor"], desc.output.dtype,
                            op.default_tolerance(desc, reference), reference.accumulation["OutputGradientTensor"])
            assert not verdict.passed or wrong_rule == "half-even", (spec.id, wrong_rule)
        nearest += 1
    assert nearest >= 8


@pytest.mark.slow
def test_v0_reading_families_carry_every_reading_and_each_differs_somewhere():
    """The `resample-readings` families: every rounding (NEAREST_NEIGHBOR) or edge rule (LINEAR) a candidate named by
    it, for every cell of the support table, and every pair of readings told apart by some case."""
    for kind_choice, readings in (("rounding", ("floor", "ceil", "half-up", "half-down", "half-even")),
                                  ("edges", ("clamped", "dropped"))):
        specs = [s for s in _v0_family_specs("resample-readings") if kind_choice in s.tags]
        assert {(s.output.dtype.name, len(s.output.shape)) for s in specs} == {
            (dtype, rank) for dtype in ("FLOAT16", "FLOAT32") for rank in (1, 2, 3, 4)}
        apart = set()
        for spec in specs:
            assert set(spec.candidates) == set(readings), spec.id
            op, desc, inputs = _v0_case(spec)
            answers = {name: op.reference(desc, inputs, variant).outputs["OutputGradientTensor"]
                       for name, variant in spec.candidates.items()}
            apart |= {(a, b) for a in answers for b in answers if a < b and not np.array_equal(answers[a], answers[b])}
        assert apart == {(a, b) for a in readings for b in readings if a < b}, kind_choice


@pytest.mark.slow
def test_pooling_behaviours_separate_the_gradient_size_from_windows_beyond_the_input():
    from dmlconform.ops.max_pooling_grad import pooled_size

    seen = Counter()
    for case in _bundled():
        if case.op.name != "MAX_POOLING_GRAD" or "generated" not in case.tags or case.expect_invalid:
            continue
        p = case.description.params
        x, dy = case.inputs["InputTensor"].shape, case.inputs["InputGradientTensor"].shape
        formula = [pooled_size(n, *g) for n, *g in zip(x[2:], p["WindowSize"], p["Strides"], p["StartPadding"],
                                                       p["EndPadding"], p["Dilations"], strict=True)]
        sized = list(dy[2:]) == [max(1, n) for n in formula]
        if not sized:
            assert case.behaviour == "maxpool-gradient-not-pooled-size" and case.refusal_candidate == "refused"
        elif min(formula) < 1:
            assert case.behaviour == "maxpool-window-beyond-padded-input" and case.refusal_candidate == "refused"
        else:
            assert case.refusal_candidate is None, case.full_id
        seen[case.behaviour] += 1
    assert seen["maxpool-gradient-not-pooled-size"] and seen["maxpool-window-beyond-padded-input"]


def test_clip_grad_v0_cases_name_the_one_choice_their_bounds_leave_open():
    from dmlconform.generation import GenerationError
    from dmlconform.generation.families.elementwise import _only_nan_open, float_param, v0_choice
    from dmlconform.ops.clip_grad import CANDIDATES, FLOAT16_BOUNDS, INTEGER_BOUNDS, NAN_INPUT

    op = find_operator("ELEMENT_WISE_CLIP_GRAD")
    x = np.array([-4, -3, -2, 0, 3, 4], np.int32)
    dy = np.arange(1, 7, dtype=np.int32)
    assert v0_choice(op, x, dy, {"Min": -2.0, "Max": 3.0}) == ({}, None)  # every reading agrees: single answer
    assert v0_choice(op, x, dy, {"Min": -2.5, "Max": 3.5}) == (CANDIDATES[INTEGER_BOUNDS], INTEGER_BOUNDS)
    half = np.array([np.nan, 1.0, 1.5, 2.0], np.float16)
    hdy = np.array([1, 2, 3, 4], np.float16)
    bounds = {"Min": 0.99995, "Max": 2.0015}  # 1.0 and 2.001953125 in FLOAT16: X = 1.0 parts the readings
    assert v0_choice(op, np.nan_to_num(half, nan=1.25), hdy, bounds) == (CANDIDATES[FLOAT16_BOUNDS], FLOAT16_BOUNDS)
    with pytest.raises(GenerationError, match="several choices open"):
        v0_choice(op, half, hdy, bounds)  # NaN and the bound's readings at once: a builder's mistake
    settled = _only_nan_open(op, half, 0.99995, 2.0015)
    assert np.isnan(settled[0]) and settled[1] != 1.0
    assert v0_choice(op, settled, hdy, bounds) == (CANDIDATES[NAN_INPUT], NAN_INPUT)
    assert [float_param(v) for v in (float("nan"), float("inf"), -float("inf"), -0.0, 0.1)] == [
        "nan", "inf", "-inf", "-0.0", float(np.float32(0.1))]


def test_clip_grad_v0_readings_family_parts_every_reading_from_the_default_in_the_smoke_tier():
    from dmlconform.generation.freeze import freeze  # noqa: F401  (built() freezes every case)
    from dmlconform.suite.loader import load_suite  # noqa: F401

    fam = family("clip-grad-readings", "ELEMENT_WISE_CLIP_GRAD", {Tier.SMOKE: 6}, elements={"smoke": 16})
    cases = built(fam, Tier.SMOKE)
    parted = set()
    for case in cases:
        assert case.entry["behaviour"] in ("clip-grad-integer-bounds", "clip-grad-float16-bounds"), case.id
        answers = {name: case.arrays[f"{case.id}.{name}"] for name in case.entry["candidates"]}
        default = answers["bound-in-type"]
        parted |= {name for name, answer in answers.items()
                   if not np.array_equal(answer, default, equal_nan=answer.dtype.kind == "f")}
    assert parted == {"exact", "x-in-float32", "x-in-float64", "bound-rounded", "bound-rounded-away",
                      "bound-half-overflowing", "bound-half-toward-zero"}
