"""A right answer passes beyond the bundled cases: seeded random sums in the regimes that stress the rule.

Each trial builds a MaxPoolingGrad or ResampleGrad1 case (1 to 4 dimensions, fp16 or fp32) whose
gradients are ordinary, near or inside the subnormal range, spread over many binades, or large and
cancelling; every legitimate way of summing must pass it. These are the regimes that showed the two
refinements of the contract's formula were needed (docs/tolerances.md §4 and §5).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, DescriptionError, TensorDesc
from dmlconform.runner import run_case
from tests.oracle.drivers import LEGITIMATE, SimulatedDriver

SUMMATION_VARIANTS = [k for k in LEGITIMATE if k.summation != LEGITIMATE[0].summation]
REGIMES = ("normal", "subnormal", "binades", "cancelling")


def _gradients(rng: np.random.Generator, shape: tuple[int, ...], dtype: DataType, regime: str) -> np.ndarray:
    info = np.finfo(dtype.numpy)
    base = rng.standard_normal(shape)
    if regime == "subnormal":
        values = base * float(info.smallest_subnormal) * rng.choice([1, 3, 40, 1000, 2 ** 12])
    elif regime == "binades":
        values = base * 10.0 ** rng.integers(-7 if dtype is DataType.FLOAT16 else -30, 4, size=shape)
    elif regime == "cancelling":
        values = rng.integers(-3, 4, size=shape) * 1000 + base
    else:
        values = base
    return values.astype(dtype.numpy)


def _resample_case(rng: np.random.Generator, trial: int, dtype: DataType, regime: str) -> Case | None:
    op = find_operator("RESAMPLE_GRAD1")
    rank = int(rng.integers(1, 5))
    dy_shape = tuple(int(rng.integers(1, 6)) for _ in range(rank))
    dx_shape = tuple(int(rng.integers(1, 6)) for _ in range(rank))
    offsets = [float(rng.choice([0.0, 0.25, 0.1, -0.3, 0.5])) for _ in range(rank)]
    params = {"InterpolationMode": str(rng.choice(["LINEAR", "LINEAR", "NEAREST_NEIGHBOR"])),
              "RoundingDirection": str(rng.choice(["DECREASING", "INCREASING"])),
              "Scales": [float(rng.choice([0.3, 0.5, 0.7, 1.3, 1.7, 2.5, 3.0, 1 / 3, 0.6])) for _ in range(rank)],
              "InputPixelOffsets": offsets, "OutputPixelOffsets": offsets}
    tensors = {"InputGradientTensor": TensorDesc(dtype, dy_shape), "OutputGradientTensor": TensorDesc(dtype, dx_shape)}
    return _case(op, params, tensors, {"InputGradientTensor": _gradients(rng, dy_shape, dtype, regime)}, trial)


def _max_pooling_case(rng: np.random.Generator, trial: int, dtype: DataType, regime: str) -> Case | None:
    op = find_operator("MAX_POOLING_GRAD")
    spatial = int(rng.integers(2, 4))
    x_shape = (1, 2, *(int(rng.integers(2, 7)) for _ in range(spatial)))
    window = [int(rng.integers(1, 4)) for _ in range(spatial)]
    params = {"Strides": [int(rng.integers(1, 3)) for _ in range(spatial)], "WindowSize": window,
              "StartPadding": [int(rng.integers(0, w)) for w in window], "EndPadding": [0] * spatial,
              "Dilations": [1] * spatial}
    dy_shape = (1, 2, *(int(rng.integers(1, 7)) for _ in range(spatial)))
    x = rng.integers(0, 3, size=x_shape).astype(dtype.numpy)  # few values: many ties, many overlaps
    tensors = {"InputTensor": TensorDesc(dtype, x_shape), "InputGradientTensor": TensorDesc(dtype, dy_shape),
               "OutputGradientTensor": TensorDesc(dtype, x_shape)}
    return _case(op, params, tensors, {"InputTensor": x, "InputGradientTensor": _gradients(rng, dy_shape, dtype,
                                                                                                 regime)}, trial)


def _case(op, params, tensors, inputs, trial) -> Case | None:  # type: ignore[no-untyped-def]
    dtype = tensors["OutputGradientTensor"].dtype
    desc = Description(op, op.parse_params(params, dtype), tensors)
    try:
        op.validate(desc)
    except DescriptionError:
        return None
    golden = op.reference(desc, inputs).outputs
    return Case("soundness", f"{op.name}-{trial}", Path("random"), desc, inputs, golden)


def _trials(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        dtype = DataType.FLOAT16 if rng.random() < 0.6 else DataType.FLOAT32
        regime = str(rng.choice(REGIMES))
        build = _resample_case if rng.random() < 0.7 else _max_pooling_case
        case = build(rng, len(cases), dtype, regime)
        if case is not None:
            cases.append(case)
    return cases


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.slow
def test_every_legitimate_summation_passes_random_sums_in_every_regime(seed):
    failures = []
    for case in _trials(seed, 60):
        for knobs in SUMMATION_VARIANTS:
            result = run_case(case, SimulatedDriver(knobs), HIGHEST)
            if result.status is not Status.PASS:
                failures.append(f"{knobs.name} on {case.full_id} {case.dtype.name}: {result.message} "
                                f"{result.worst[:1]}")
    assert not failures, "\n".join(failures[:10])


def test_a_separable_weight_may_round_once_per_factor():
    """Witness for p = 2f: a 2-D LINEAR fp16 case whose element (1, 0) takes one term whose weight has two
    factors. A driver that rounds each factor to fp16 and multiplies them in fp16 lands 1.22e-4 away from
    the golden: outside the contract text's p = 2 allowance (1.16e-4), inside p = 2f = 4. Found by a search
    over random cases (tests/oracle/test_bound_soundness.py's regimes, 2-D, fp16)."""
    op = find_operator("RESAMPLE_GRAD1")
    f16 = DataType.FLOAT16
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [1.7, 0.7],
              "InputPixelOffsets": [0.0, -0.3], "OutputPixelOffsets": [0.0, -0.3]}
    tensors = {"InputGradientTensor": TensorDesc(f16, (2, 2)), "OutputGradientTensor": TensorDesc(f16, (2, 2))}
    dy = np.array([[-0.54736328125, 0.288330078125], [-0.54833984375, 0.94677734375]], dtype=np.float16)
    case = _case(op, params, tensors, {"InputGradientTensor": dy}, 0)
    assert case is not None
    accumulation = op.reference(case.description, case.inputs).accumulation["OutputGradientTensor"]
    assert accumulation.count[1, 0] == 1 and np.asarray(accumulation.weight_factors)[1, 0] == 2

    per_axis = next(k for k in LEGITIMATE if k.name == "per-axis-weights-in-data-type")
    output = SimulatedDriver(per_axis).run(case).outputs["OutputGradientTensor"]
    golden = case.expected["OutputGradientTensor"]  # type: ignore[index]
    error = abs(float(output[1, 0]) - float(golden[1, 0]))
    u, m = f16.unit_roundoff, float(accumulation.abs_sum[1, 0])
    contract_text_allowance = 2 * u / (1 - 2 * u) * m + 0.5 * float(np.spacing(golden[1, 0]))
    assert error > contract_text_allowance
    assert run_case(case, SimulatedDriver(per_axis), HIGHEST).status is Status.PASS
