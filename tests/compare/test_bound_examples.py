"""The worked examples of docs/tolerances.md §7, recomputed, so that the page stays true."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from dmlconform.case import Case
from dmlconform.compare import bound
from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from tests.oracle.drivers import LEGITIMATE, SimulatedDriver

F16, F32 = DataType.FLOAT16, DataType.FLOAT32


def _step(x: np.ndarray, steps: int) -> np.ndarray:
    out = x.copy()
    for _ in range(abs(steps)):
        out = np.nextafter(out, np.array(np.inf if steps > 0 else -np.inf, dtype=x.dtype))
    return out


def test_fp16_max_pooling_example():
    gradients = np.array([0.1, 0.2, 0.3], dtype=np.float16)
    v = float(sum(float(g) for g in gradients))
    assert v == 0.5999755859375
    golden = np.array([v], dtype=np.float16)
    assert golden.view(np.uint16)[0] == 0x38CD
    args = (np.array([3]), np.array([v]), np.array([0]), np.array([0.0]), F16)
    allowance = float(bound.allowance(golden, *args)[0])
    assert round(allowance, 8) == 0.00083063 and round(allowance / float(np.spacing(golden[0])), 2) == 1.70
    from dmlconform.compare.accumulation import Accumulation

    accumulation = Accumulation(np.array([v]), np.array([v]), np.array([3]), 0)
    verdicts = {steps: judge(golden, _step(golden, steps), F16, Tolerance.bound(), accumulation).passed
                for steps in (-2, -1, 0, 1, 2)}
    assert verdicts == {-2: False, -1: True, 0: True, 1: True, 2: False}
    in_fp16 = set()
    for order in itertools.permutations(gradients):
        total = np.float16(0)
        for g in order:
            total = np.float16(total + g)
        in_fp16.add(int(np.array([total]).view(np.uint16)[0]))
    assert in_fp16 == {0x38CC, 0x38CD}


def test_fp32_resample_example():
    op = find_operator("RESAMPLE_GRAD1")
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [1.5, 1.5],
              "InputPixelOffsets": [0.25, 0.25], "OutputPixelOffsets": [0.25, 0.25]}
    desc = Description(op, op.parse_params(params, F32), {"InputGradientTensor": TensorDesc(F32, (3, 3)),
                                                          "OutputGradientTensor": TensorDesc(F32, (2, 2))})
    op.validate(desc)
    dy = np.array([[-0.78, -0.26, 0.01], [-0.28, 1.29, 1.01], [-2.71, -1.89, -0.17]], dtype=np.float32)
    reference = op.reference(desc, {"InputGradientTensor": dy})
    acc = reference.accumulation["OutputGradientTensor"]
    golden = reference.outputs["OutputGradientTensor"]
    assert acc.count[0, 0] == 16 and np.asarray(acc.weight_factors)[0, 0] == 2
    assert round(float(acc.value[0, 0]), 8) == -0.74055568 and round(float(acc.abs_sum[0, 0]), 7) == 2.3197224
    slack = np.asarray(acc.coordinate_slack)
    assert round(float(slack[0, 0]), 10) == 7.9107e-6 and int(np.asarray(acc.coordinate_terms)[0, 0]) == 18
    allowance = float(bound.allowance(golden[:1, 0], acc.count[:1, 0], acc.abs_sum[:1, 0],
                                      np.asarray(acc.weight_factors)[:1, 0], acc.abs_gradient_sum[:1, 0], F32,
                                      None, slack[:1, 0], np.asarray(acc.coordinate_terms)[:1, 0])[0])
    assert round(allowance, 9) == 1.3056e-5 and round(allowance / float(np.spacing(np.abs(golden[0, 0]))), 1) == 219.1
    case = Case("doc", "fp32-example", Path("docs"), desc, {"InputGradientTensor": dy}, reference.outputs)
    moves = set()
    for knobs in LEGITIMATE:
        out = SimulatedDriver(knobs).run(case).outputs["OutputGradientTensor"]
        moves.add(int(out[0, 0].view(np.int32)) - int(golden[0, 0].view(np.int32)))
    assert moves <= set(range(-14, 14)) and len(moves) >= 3  # within 14 ULP of the golden, 219.1 allowed
