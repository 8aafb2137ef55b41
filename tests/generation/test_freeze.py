"""The freezer's checks: each one can fail, and a good case passes them all."""

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.generation import GenerationError
from dmlconform.generation.freeze import Rejected, edge_clamped_answer, freeze
from dmlconform.generation.spec import EDGE_CLAMPED, FLUSHED, CaseSpec, TensorSpec
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def t(values, dtype=F32) -> TensorSpec:
    array = np.array(values, dtype=dtype.numpy)
    return TensorSpec(dtype, array.shape, array=array)


def relu(x, dy, dtype=F32, **extra) -> CaseSpec:
    x, dy = t(x, dtype), t(dy, dtype)
    return CaseSpec("c", "ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": dy},
                    TensorSpec(dtype, dy.shape), **extra)


def test_a_good_case_freezes_into_an_entry_and_arrays():
    frozen = freeze(relu([1, -1, 2, 0], [5, 6, 7, 8]), "data/x.npz")
    assert frozen.entry["outputs"]["OutputGradientTensor"]["file"] == "data/x.npz:c.out"
    assert frozen.arrays["c.out"].tolist() == [5, 0, 7, 0]
    assert frozen.entry["inputs"]["InputTensor"] == {"dtype": "FLOAT32", "shape": [4], "file": "data/x.npz:c.InputTensor"}


def test_an_all_zero_output_is_rejected():
    with pytest.raises(Rejected, match="all zeros"):
        freeze(relu([-1, 0, -3], [5, 6, 7]), "d.npz")


def test_a_constant_output_is_rejected():
    with pytest.raises(Rejected, match="one value everywhere"):
        freeze(relu([1, 1, 1], [5, 5, 5]), "d.npz")


def test_a_gradient_with_repeated_values_or_zeros_is_rejected():
    with pytest.raises(Rejected, match="distinct values"):
        freeze(relu([1, -1, 2, 3], [5, 5, 6, 7]), "d.npz")
    gradient = np.arange(1, 301, dtype=np.float32)
    gradient[:10] = 0  # 10 of 300 elements: over 1 %
    x = np.ones(300, dtype=np.float32)
    spec = CaseSpec("c", "ACTIVATION_RELU_GRAD", {}, {"InputTensor": t(x), "InputGradientTensor": t(gradient)},
                    TensorSpec(F32, (300,)))
    with pytest.raises(Rejected, match="of the gradient is zero"):
        freeze(spec, "d.npz")


def test_fp32_denormals_need_a_denormal_case():
    tiny = np.float32(1e-40)
    with pytest.raises(Rejected, match="fp32 denormals"):
        freeze(relu([1, 2], [tiny, 3]), "d.npz")
    frozen = freeze(relu([1, 2], [tiny, 3], tags=("denormal",), candidates={"preserved": "nan-zero",
                                                                            "flushed": FLUSHED}), "d.npz")
    assert frozen.arrays["c.flushed"].tolist() == [0, 3] and frozen.arrays["c.preserved"][0] == tiny


def test_candidates_that_all_agree_are_rejected():
    with pytest.raises(Rejected, match="every candidate"):
        freeze(relu([1, -1], [5, 6], candidates={"nan-zero": "nan-zero", "nan-passes": "nan-passes"}), "d.npz")
    frozen = freeze(relu([1, np.nan], [5, 6], candidates={"nan-zero": "nan-zero", "nan-passes": "nan-passes"}), "d.npz")
    assert set(frozen.entry["candidates"]) == {"nan-zero", "nan-passes"}


def test_a_sum_that_could_overflow_in_fp16_is_rejected():
    params = {"Strides": [1, 1], "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0],
              "Dilations": [1, 1]}
    x = t([[[[1, 5, 2]]]], F16)
    big = t([[[[30000, 20000]]]], F16)
    spec = CaseSpec("c", "MAX_POOLING_GRAD", params, {"InputTensor": x, "InputGradientTensor": big},
                    TensorSpec(F16, (1, 1, 1, 3)))
    with pytest.raises(Rejected, match="overflow"):
        freeze(spec, "d.npz")


def test_a_negative_case_must_break_exactly_the_rule_it_names():
    good = {"InputWindowOffsets": [0], "InputWindowSizes": [4], "InputWindowStrides": [0]}
    spec = CaseSpec("c", "SLICE_GRAD", good, {"InputGradientTensor": t([1, 2])}, TensorSpec(F32, (4,)),
                    refuses="InputWindowStrides")
    assert freeze(spec, "d.npz").entry["expect"] == "invalid"
    spec.refuses = "InputWindowSizes"
    with pytest.raises(GenerationError, match="refuses InputWindowStrides"):
        freeze(spec, "d.npz")
    spec.params = {**good, "InputWindowStrides": [2]}
    with pytest.raises(GenerationError, match="the description is valid"):
        freeze(spec, "d.npz")


def test_a_valid_case_whose_description_breaks_a_rule_is_an_error_not_a_retry():
    spec = CaseSpec("c", "SLICE_GRAD", {"InputWindowOffsets": [0], "InputWindowSizes": [4], "InputWindowStrides": [0]},
                    {"InputGradientTensor": t([1, 2])}, TensorSpec(F32, (4,)))
    with pytest.raises(GenerationError, match="breaks InputWindowStrides") as info:
        freeze(spec, "d.npz")
    assert not isinstance(info.value, Rejected)


def test_edge_clamped_sends_a_padding_only_window_to_the_nearest_element():
    op = find_operator("MAX_POOLING_GRAD")
    params = op.parse_params({"Strides": [1, 2], "WindowSize": [1, 1], "StartPadding": [0, 0], "EndPadding": [0, 0],
                              "Dilations": [1, 1]}, F32)
    desc = Description(op, params, {"InputTensor": TensorDesc(F32, (1, 1, 1, 2)),
                                    "InputGradientTensor": TensorDesc(F32, (1, 1, 1, 3)),
                                    "OutputGradientTensor": TensorDesc(F32, (1, 1, 1, 2))})
    inputs = {"InputTensor": np.array([[[[1, 2]]]], np.float32),
              "InputGradientTensor": np.array([[[[10, 20, 30]]]], np.float32)}
    # The hand-written edge case max_pooling_grad.edge/padding-only-window-past-end has the same answer.
    assert edge_clamped_answer(op, desc, inputs).ravel().tolist() == [10, 50]
    spec = CaseSpec("c", "MAX_POOLING_GRAD", {k: list(v) for k, v in params.items()},
                    {"InputTensor": t(inputs["InputTensor"]), "InputGradientTensor": t(inputs["InputGradientTensor"])},
                    TensorSpec(F32, (1, 1, 1, 2)), candidates={"dropped": "nan-sticks", "edge-clamped": EDGE_CLAMPED})
    frozen = freeze(spec, "d.npz")
    assert frozen.arrays["c.dropped"].ravel().tolist() == [10, 0]
