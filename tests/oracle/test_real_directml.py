"""Outputs of the real DirectML.dll (1.15.4, from onnxruntime-directml 1.24.4, under Wine 8.0 on Mesa 25's
lavapipe: examples/dml_harness/), kept as evidence for the coordinate term of the `bound` rule.

They were captured through the native backend on examples/dml_harness (docs/tolerances.md §5b), for cases of the
bundled suites of the time; those cases are kept in data/directml-evidence.yaml (all but one edge case). DirectML evaluates ResampleGrad1's source coordinate in an order of its own, so
its LINEAR results sit up to 81 ULP from goldens computed with the contract's division; the rule's
coordinate slack must accept them, and the cases where the order cannot matter must stay exact.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.compare.comparator import judge
from dmlconform.ops import _resample_coordinates as coordinates
from dmlconform.suite.loader import load_paths
from tests.oracle.conftest import REPO

CAPTURED = REPO / "tests" / "oracle" / "data" / "directml-1.15.4-lavapipe-resample.npz"


@pytest.fixture(scope="module")
def captured() -> dict[str, np.ndarray]:
    with np.load(CAPTURED) as archive:
        return {key.replace("__", "/"): archive[key] for key in archive.files}


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    return {c.full_id: c for c in load_paths([REPO / "test_vectors" / "resample_grad1" / "edge.yaml",
                                              REPO / "test_vectors" / "standard" / "resample_grad1.yaml",
                                              REPO / "tests" / "oracle" / "data" / "directml-evidence.yaml"])}


def _verdict(case: Case, actual: np.ndarray, without_slack: bool = False):  # type: ignore[no-untyped-def]
    """The case's verdict on `actual`; `without_slack`: with every coordinate taken as exact (no C, and no weight
    factor counted because a coordinate may move)."""
    variant = "swapped"  # what DirectML follows (its behaviour fingerprint)
    answers = case.answers()
    answer = answers.get(variant, answers.get("expected"))["OutputGradientTensor"]  # type: ignore[index]
    with mock.patch.object(coordinates, "uncertainty", lambda n_out, *_, **__: np.zeros(n_out)) if without_slack \
            else contextlib.nullcontext():
        reference = case.op.reference(case.description, case.inputs, variant)
        accumulation = reference.accumulation["OutputGradientTensor"]
        accumulation = accumulation.dense if hasattr(accumulation, "dense") else accumulation
    tolerance = case.tolerance or case.op.default_tolerance(case.description, reference)
    return judge(answer, actual, case.dtype, tolerance, accumulation)


def test_every_captured_directml_output_passes(captured, cases):
    for case_id, actual in captured.items():
        verdict = _verdict(cases[case_id], actual)
        assert verdict.passed, (case_id, verdict.summary(), verdict.worst[:1])


def test_without_the_coordinate_term_real_directml_fails_a_linear_case(captured, cases):
    case_id = "directml-evidence/random-float32-linear-decreasing-rank2-17"
    verdict = _verdict(cases[case_id], captured[case_id], without_slack=True)
    assert not verdict.passed and verdict.max_ulp is not None and verdict.max_ulp >= 50


def test_real_directml_computes_coordinates_in_float32(captured, cases):
    # x = o / 0.1f: exact 29.99999955 floors to 29, every float32 order gives 30.0; DirectML routes to 30.
    actual = captured["resample_grad1.edge/coordinates-rounded-in-float32"]
    assert actual[30] == 4 and actual[29] == 0
    assert _verdict(cases["resample_grad1.edge/coordinates-rounded-in-float32"], actual).passed


def test_where_every_modelled_order_agrees_an_inexact_linear_coordinate_is_still_uncertain(captured, cases):
    # x(9) = 9.5/3 + 0.5 is 3.6666667 in all six modelled orders, yet DirectML's weight for it differs: its division
    # is not correctly rounded (D3D allows 2.5 ULP). Judged as exact there, its sum is 19 ULP outside the bound.
    case_id = "resample_grad1.standard/cells-float32-r2-9"
    assert _verdict(cases[case_id], captured[case_id]).passed
    verdict = _verdict(cases[case_id], captured[case_id], without_slack=True)
    assert not verdict.passed and verdict.max_ulp is not None and verdict.max_ulp >= 19


# -- the two stacks: lavapipe and an NVIDIA H100 (examples/dml_harness/results/DECISIONS.md) -------------------------
STACKS = REPO / "tests" / "oracle" / "data" / "directml-1.15.4-stacks-probes.npz"
#: Four of the seven full-tier LINEAR cases that both stacks failed under the earlier exact-coordinate rule (§7).
STACKS_LINEAR = REPO / "tests" / "oracle" / "data" / "directml-1.15.4-stacks-linear.npz"
PROBES = REPO / "examples" / "dml_harness" / "investigate" / "probes"
H100_NEAREST = ("resample_grad1.standard/cells-float16-r3-3", "resample_grad1.standard/cells-float16-r3-6",
                "resample_grad1.smoke/grid-nearest_neighbor-decreasing-down-int-negative-float16")


def _by_stack(path) -> dict[str, dict[str, np.ndarray]]:  # type: ignore[no-untyped-def]
    """Per stack ('h100', 'lavapipe'), DirectML's outputs by case id."""
    found: dict[str, dict[str, np.ndarray]] = {}
    with np.load(path) as archive:
        for key in archive.files:
            stack, _, case_id = key.partition("__")
            found.setdefault(stack, {})[case_id.replace("__", "/")] = archive[key]
    return found


@pytest.fixture(scope="module")
def stacks() -> dict[str, dict[str, np.ndarray]]:
    return _by_stack(STACKS)


def test_a_linear_coordinate_with_a_scale_that_is_not_a_power_of_two_is_uncertain_even_where_exact(cases):
    """Each of these cases has a coordinate that every modelled order computes alike and whose real value is a float32
    value, e.g. (13 + 0.5)/0.75 + 0.5 = 18.5; DirectML's weights put it a ULP off on both stacks. Both stacks' outputs
    pass, and each fails where such a coordinate counts as exact whatever the scale (the rule before)."""
    linear = _by_stack(STACKS_LINEAR)
    assert set(linear) == {"h100", "lavapipe"}
    for stack, outputs in linear.items():
        assert len(outputs) == 4
        for case_id, actual in outputs.items():
            assert _verdict(cases[case_id], actual).passed, (stack, case_id)
            with mock.patch.object(coordinates, "inverts_exactly", lambda _: True):
                before = _verdict(cases[case_id], actual)
            assert not before.passed, (stack, case_id)


@pytest.fixture(scope="module")
def probe_cases() -> dict[str, Case]:
    return {c.full_id: c for c in load_paths([PROBES])}


def _as_exact_as_six_orders_say() -> contextlib.AbstractContextManager:
    """The NEAREST rule before the H100: a coordinate counted as exact wherever the six correctly rounded orders
    agree, whether or not its real value is a float32 value."""
    return mock.patch.object(coordinates, "exactly_representable", lambda n_out, *_: np.ones(n_out, dtype=bool))


def test_the_h100s_nearest_picks_pass_and_needed_d3ds_division(stacks, cases):
    smoke = {c.full_id: c for c in load_paths([REPO / "test_vectors" / "smoke" / "resample_grad1.yaml"])}
    for case_id in H100_NEAREST:
        case = cases.get(case_id) or smoke[case_id]
        actual = stacks["h100"][case_id]
        assert _verdict(case, actual).passed, case_id
        with _as_exact_as_six_orders_say():
            assert not _verdict(case, actual).passed, case_id


@pytest.mark.slow
def test_every_knife_edge_pick_of_both_stacks_passes_and_the_stacks_pick_differently(stacks, probe_cases):
    knives = sorted(case_id for case_id in probe_cases if "knife" in case_id)
    assert len(knives) == 120
    needed = {}
    for stack in ("h100", "lavapipe"):
        needed[stack] = 0
        for case_id in knives:
            case, actual = probe_cases[case_id], stacks[stack][case_id]
            assert _verdict(case, actual).passed, (stack, case_id)
            with _as_exact_as_six_orders_say():
                needed[stack] += not _verdict(case, actual).passed
    assert needed["h100"] >= 5 and needed["lavapipe"] >= 1, needed  # cases the old rule failed, per stack
    differ = [c for c in knives if not np.array_equal(stacks["h100"][c], stacks["lavapipe"][c])]
    assert len(differ) >= 10  # each stack evaluates coordinates its own way


def test_the_h100_flushes_fp32_denormals_exactly_where_d3d11_lets_it_and_lavapipe_keeps_them(stacks, probe_cases):
    """Each probe holds denormals in X only, dY only or both (ReluGrad, ClipGrad1 against bounds at and around 0,
    SliceGrad, MaxPoolingGrad, ResampleGrad1): the H100's outputs are bit for bit those of a driver that flushes
    where it compares or sums and keeps what a select or a copy moves; lavapipe's those of one that keeps all."""
    from tests.oracle.drivers import LEGITIMATE, STRAIGHT, SimulatedDriver

    in_arithmetic = next(k for k in LEGITIMATE if k.fp32_denormals == "flushed-in-arithmetic")
    denormals = sorted(case_id for case_id in probe_cases if "denormal" in case_id)
    assert len(denormals) == 24
    for stack, knobs in (("h100", in_arithmetic), ("lavapipe", STRAIGHT)):
        for case_id in denormals:
            case = probe_cases[case_id]
            model = SimulatedDriver(knobs).run(case).outputs["OutputGradientTensor"]
            actual = stacks[stack][case_id]
            assert np.array_equal(model.view(np.uint32), actual.view(np.uint32)), (stack, case_id)
    every_flush = next(k for k in LEGITIMATE if k.fp32_denormals == "flushed")
    assert any(not np.array_equal(SimulatedDriver(every_flush).run(probe_cases[c]).outputs["OutputGradientTensor"]
                                  .view(np.uint32), stacks["h100"][c].view(np.uint32)) for c in denormals)
