"""The simulated drivers on whole buffers (contract §9): small hand-made cases with layouts, on every path.

Each buffer bug dies on one of them, and every legitimate driver passes all of them: what the bundled tiers' layout
cases must also show (tests/oracle/test_mutants.py runs the drivers over them on every path).
"""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.runner import run_case
from dmlconform.surface.layout import TensorLayout
from dmlconform.surface.paths import ExecutionPath
from tests.oracle.conftest import REPO
from tests.oracle.drivers import (
    BUFFER_BUGS,
    BUGGY,
    LEGITIMATE,
    STRAIGHT,
    Knobs,
    SimulatedDriver,
    in_scope,
    is_buffer_variant,
)

ACCEPTED = (Status.PASS, Status.INVALID_OK)


def layout_case(op_name: str, params: dict, dtype: DataType, inputs: dict[str, np.ndarray],
                output_shape: tuple[int, ...], layouts: dict[str, TensorLayout], name: str) -> Case:
    op = find_operator(op_name)
    tensors = {tensor: TensorDesc(dtype, values.shape) for tensor, values in inputs.items()}
    tensors["OutputGradientTensor"] = TensorDesc(dtype, output_shape)
    desc = Description(op, op.parse_params(params, dtype), tensors, layouts)
    op.validate(desc)
    return Case("oracle", name, REPO / "tests", desc, inputs, op.reference(desc, inputs).outputs)


def witnesses() -> list[Case]:
    """Small cases with every kind of layout: X with gaps between rows at an offset, dY column-major, the output
    column-major with padding; a broadcast dY; a pooling and a resample case with strided inputs."""
    f32, f16 = DataType.FLOAT32, DataType.FLOAT16
    x = np.array([[-2, 0.5, 3], [0.25, -0.5, 2]], np.float32)
    dy = np.array([[5, -3, 0.5], [0.75, 2, -0.5]], np.float32)
    clip = layout_case("ELEMENT_WISE_CLIP_GRAD1", {"Min": -1.0, "Max": 1.0}, f32,
                       {"InputTensor": x, "InputGradientTensor": dy}, (2, 3),
                       {"InputTensor": TensorLayout((4, 1), None, 32),
                        "InputGradientTensor": TensorLayout((1, 2)),
                        "OutputGradientTensor": TensorLayout((1, 2), 64)}, "clip-strided")
    relu = layout_case("ACTIVATION_RELU_GRAD", {}, f16,
                       {"InputTensor": np.array([[1, -1, 2]], np.float16),
                        "InputGradientTensor": np.array([[3, 4, 5]], np.float16)}, (1, 3),
                       {"InputGradientTensor": TensorLayout((0, 2), None, 16)}, "relu-strided-f16")
    broadcast = layout_case("ACTIVATION_RELU_GRAD", {}, f32,
                            {"InputTensor": np.array([[1, -1, 2], [-3, 4, 0.5]], np.float32),
                             "InputGradientTensor": np.array([[7, 8, 9], [7, 8, 9]], np.float32)}, (2, 3),
                            {"InputGradientTensor": TensorLayout((0, 1))}, "relu-broadcast")
    pool = layout_case("MAX_POOLING_GRAD", {"Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
                                            "EndPadding": [0, 0], "Dilations": [1, 1]}, f32,
                       {"InputTensor": np.array([1, 5, 3, 2, 4, 6], np.float32).reshape(1, 1, 2, 3),
                        "InputGradientTensor": np.array([10, 20], np.float32).reshape(1, 1, 1, 2)}, (1, 1, 2, 3),
                       {"InputTensor": TensorLayout((6, 6, 1, 2), None, 48)}, "pool-strided")
    resample = layout_case("RESAMPLE_GRAD1", {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING",
                                              "Scales": [2.0], "InputPixelOffsets": [0.0],
                                              "OutputPixelOffsets": [0.0]}, f32,
                           {"InputGradientTensor": np.array([1, 2, 3, 4], np.float32)}, (2,),
                           {"InputGradientTensor": TensorLayout((2,)), "OutputGradientTensor": TensorLayout((3,))},
                           "resample-strided")
    return [clip, relu, broadcast, pool, resample]


def on_every_path(cases: list[Case]) -> list[Case]:
    return [derived for case in cases for path in ExecutionPath if (derived := case.on_path(path)) is not None]


@pytest.fixture(scope="module")
def witness_cases() -> list[Case]:
    return on_every_path(witnesses())


def test_the_witnesses_cover_every_path(witness_cases):
    assert {case.path for case in witness_cases} == set(ExecutionPath)
    assert all(case.uses_buffers for case in witness_cases if case.path is ExecutionPath.OPERATOR)


@pytest.mark.parametrize("knobs", LEGITIMATE, ids=lambda k: k.name)
def test_every_legitimate_driver_passes_every_witness_on_every_path(knobs, witness_cases):
    for case in witness_cases:
        result = run_case(case, SimulatedDriver(knobs), HIGHEST)
        assert result.status in ACCEPTED, f"{case.full_id}: {result.status.value} {result.message}"


@pytest.mark.parametrize("knobs", [k for k in BUGGY if k.name in BUFFER_BUGS], ids=lambda k: k.name)
def test_every_buffer_bug_dies_on_a_witness(knobs, witness_cases):
    failed = [case.full_id for case in witness_cases if in_scope(knobs, case)
              and run_case(case, SimulatedDriver(knobs), HIGHEST).status is Status.FAIL]
    assert failed, f"{knobs.name} survives every witness"


def test_a_buffer_bug_passes_where_it_cannot_show(witness_cases):
    """Out of its scope a buffer bug computes what `straight` computes (so its scope may skip those cases)."""
    for knobs in (k for k in BUGGY if k.name in BUFFER_BUGS):
        for case in witness_cases:
            if not in_scope(knobs, case):
                assert run_case(case, SimulatedDriver(knobs), HIGHEST).status in ACCEPTED, (knobs.name, case.full_id)


def _stores(knobs: Knobs, case: Case) -> list[tuple[str, int]]:
    trace: list[tuple[str, int]] = []
    SimulatedDriver(knobs, trace).run(case)
    return trace


@pytest.mark.parametrize("knobs", [k for k in LEGITIMATE if is_buffer_variant(k)], ids=lambda k: k.name)
def test_every_buffer_variant_stores_differently_from_straight(knobs, witness_cases):
    """A buffer variant's freedom is how it stores, not what: its stores differ from `straight`'s somewhere."""
    assert any(_stores(knobs, case) != _stores(STRAIGHT, case) for case in witness_cases if in_scope(knobs, case))
