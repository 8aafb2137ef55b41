"""Building a family's cases: a draw that the family itself or the freezer rejects is drawn again."""

from pathlib import Path

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.generation import GenerationError
from dmlconform.generation.build import ATTEMPTS, freeze_plan
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Plan
from dmlconform.generation.freeze import Rejected
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.ops import find_operator

F32 = DataType.FLOAT32


def family() -> Family:
    return Family(Path(__file__), find_operator("ACTIVATION_RELU_GRAD"), "f", "test", 7, {}, "test family")


def relu_case() -> CaseSpec:
    x, dy = np.float32([1, -1, 2, 3]), np.float32([5, 6, 7, 8])
    return CaseSpec("c", "ACTIVATION_RELU_GRAD", {}, {"InputTensor": TensorSpec(F32, x.shape, array=x),
                                                      "InputGradientTensor": TensorSpec(F32, dy.shape, array=dy)},
                    TensorSpec(F32, dy.shape))


def test_a_draw_the_family_rejects_is_drawn_again_with_the_next_attempt():
    draws: list[int] = []

    def make(draw: Draw) -> CaseSpec:
        draws.append(draw.below(2**31))
        if len(draws) < 3:
            raise Rejected("this draw cannot tell right from wrong")
        return relu_case()

    frozen = freeze_plan(family(), Plan("c", (1,), make), "data/x.npz")
    assert frozen.arrays["c.out"].tolist() == [5, 0, 7, 8]
    assert len(draws) == 3 and len(set(draws)) == 3  # each attempt its own draw


def test_a_family_that_rejects_every_draw_names_the_case_and_the_last_reason():
    def make(draw: Draw) -> CaseSpec:
        raise Rejected("no denormal gradient where X is kept")

    with pytest.raises(GenerationError, match=f"case c: no acceptable draw in {ATTEMPTS} attempts .*no denormal"):
        freeze_plan(family(), Plan("c", (1,), make), "data/x.npz")


def test_a_builders_error_is_not_drawn_again():
    calls: list[int] = []

    def make(draw: Draw) -> CaseSpec:
        calls.append(1)
        raise GenerationError("a builder's mistake")

    with pytest.raises(GenerationError, match="a builder's mistake"):
        freeze_plan(family(), Plan("c", (1,), make), "data/x.npz")
    assert len(calls) == 1
