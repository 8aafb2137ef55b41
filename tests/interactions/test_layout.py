"""The layout feature every model shares (interactions/layout.py): a tensor's kind, a case's, and the combinations
a valid case can hold."""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.interactions.layout import LAYOUTS, case_kind, tensor_kind
from dmlconform.interactions.model import Interaction
from dmlconform.interactions.registry import models
from dmlconform.surface.layout import TensorLayout


@pytest.mark.parametrize(("shape", "layout", "kind"), [
    ((2, 3), TensorLayout(), "packed"),
    ((2, 3), TensorLayout((3, 1)), "packed"),                 # explicit row-major strides
    ((2, 3, 4, 5), TensorLayout((60, 1, 15, 3)), "permuted"),  # NHWC
    ((2, 3), TensorLayout((1, 2)), "permuted"),                # column-major
    ((1, 3), TensorLayout((7, 1)), "packed"),                  # a dimension of one element moves nothing
    ((2, 3), TensorLayout((0, 1)), "broadcast"),
    ((1, 3), TensorLayout((0, 1)), "packed"),                  # a stride of 0 on one element is no broadcast
    ((2, 3), TensorLayout((4, 1)), "padded"),                  # a row stride larger than the row
    ((6,), TensorLayout((2,)), "padded"),                      # gaps between elements
    ((2, 3), TensorLayout(None, 40), "padded"),                # TotalTensorSizeInBytes above the 24 needed
    ((2, 3), TensorLayout(None, 24), "packed"),
    ((2, 3), TensorLayout(None, None, 48), "offset"),
    ((2, 3), TensorLayout((1, 2), None, 48), "permuted"),      # the first property that holds names it
])
def test_a_tensor_s_kind(shape, layout, kind):
    assert tensor_kind(shape, 4, layout) == kind


def test_a_case_s_kind_is_its_tensors_or_mixed():
    shapes = {"X": (2, 3), "dY": (2, 3), "dX": (2, 3)}
    sizes = dict.fromkeys(shapes, 2)
    assert case_kind(shapes, sizes, None) == "packed"
    assert case_kind(shapes, sizes, {"X": TensorLayout((0, 1))}) == "broadcast"
    assert case_kind(shapes, sizes, {"X": TensorLayout(offset=16), "dX": TensorLayout(offset=32)}) == "offset"
    assert case_kind(shapes, sizes, {"X": TensorLayout((0, 1)), "dX": TensorLayout(offset=16)}) == "mixed"


#: Models whose universe takes over half a second to derive.
SLOW_MODELS = ("MAX_POOLING_GRAD", "RESAMPLE_GRAD1")


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.slow) if op in SLOW_MODELS else op
                                for op in ("ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD",
                                           "MAX_POOLING_GRAD", "RESAMPLE_GRAD1", "ELEMENT_WISE_CLIP_GRAD")])
def test_every_model_ends_with_the_layout_and_a_single_dimension_is_never_permuted(op):
    for model in (models()[op],):
        assert model.all_features[-1].name == "layout" and model.all_features[-1].values == LAYOUTS
        assert model.interactions(2)[-1].features[-1:] == ("layout",)
        assert model.possible(Interaction(("layout",))) == {(kind,) for kind in LAYOUTS}
        by_rank = model.possible(Interaction(("rank", "layout")))
        ranks = {rank for rank, _ in by_rank}
        for rank in ranks:
            expected = {kind for kind in LAYOUTS if not (rank == "1" and kind == "permuted")}
            assert {kind for r, kind in by_rank if r == rank} == expected
        dtypes = model.possible(Interaction(("dtype",)))
        assert model.possible(Interaction(("dtype", "layout"))) == {(d, k) for (d,) in dtypes for k in LAYOUTS}


def test_a_case_s_sites_carry_its_layout():
    model = models()["ACTIVATION_RELU_GRAD"]
    x = np.array([[1, -1, 2], [1, -1, 2]], np.float32)
    dy = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    inputs = {"InputTensor": x, "InputGradientTensor": dy}
    packed = model.layout_sites({}, inputs, (2, 3))
    assert {site[-1] for site in packed} == {"packed"} and {site[:-1] for site in packed} == model.sites({}, inputs,
                                                                                                       (2, 3))
    laid = model.layout_sites({}, inputs, (2, 3), {"InputTensor": TensorLayout((0, 1)),
                                                   "OutputGradientTensor": TensorLayout((1, 2))})
    assert {site[-1] for site in laid} == {"mixed"}
    assert {site[-1] for site in model.layout_sites({}, inputs, (2, 3),
                                                    {"OutputGradientTensor": TensorLayout((4, 1))})} == {"padded"}
