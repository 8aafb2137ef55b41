"""Description rules refuse broken descriptions naming the DML field; parameters parse strictly."""

import pytest

from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.ops import OPERATORS, find_operator
from dmlconform.ops.base import Description, DescriptionError, ParamError, TensorDesc


def desc(op_name: str, params: dict, **tensors: tuple) -> Description:
    op = find_operator(op_name)
    parsed = op.parse_params(params, tensors[op.outputs[0]][0])
    return Description(op, parsed, {name: TensorDesc(dtype, tuple(shape)) for name, (dtype, shape) in tensors.items()})


POOL = {"Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1]}
RESAMPLE = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [2.0, 2.0],
            "InputPixelOffsets": [0.5, 0.5], "OutputPixelOffsets": [-0.5, -0.5]}
SLICE = {"InputWindowOffsets": [0, 1], "InputWindowSizes": [2, 3], "InputWindowStrides": [1, -2]}


def refused(description: Description) -> str:
    with pytest.raises(DescriptionError) as info:
        description.op.validate(description)
    return info.value.field


@pytest.mark.parametrize("description,field", [
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.UINT8, [2]), InputGradientTensor=(T.UINT8, [2]),
          OutputGradientTensor=(T.UINT8, [2])), "InputTensor.DataType"),
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.FLOAT32, [2]), InputGradientTensor=(T.FLOAT16, [2]),
          OutputGradientTensor=(T.FLOAT32, [2])), "InputGradientTensor.DataType"),
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.FLOAT32, [2, 1]), InputGradientTensor=(T.FLOAT32, [2]),
          OutputGradientTensor=(T.FLOAT32, [2])), "InputGradientTensor.DimensionCount"),
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.FLOAT32, [2]), InputGradientTensor=(T.FLOAT32, [3]),
          OutputGradientTensor=(T.FLOAT32, [2])), "InputGradientTensor.Sizes"),
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.FLOAT32, [1] * 9), InputGradientTensor=(T.FLOAT32, [1] * 9),
          OutputGradientTensor=(T.FLOAT32, [1] * 9)), "InputTensor.DimensionCount"),
    (desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.FLOAT32, [0]), InputGradientTensor=(T.FLOAT32, [0]),
          OutputGradientTensor=(T.FLOAT32, [0])), "InputTensor.Sizes"),
    (desc("ELEMENT_WISE_CLIP_GRAD1", {"Min": 0, "Max": 1, "MinMaxDataType": "INT32"}, InputTensor=(T.INT8, [2]),
          InputGradientTensor=(T.INT8, [2]), OutputGradientTensor=(T.INT8, [2])), "MinMaxDataType"),
    (desc("SLICE_GRAD", {**SLICE, "InputWindowStrides": [1, 0]}, InputGradientTensor=(T.INT8, [2, 2]),
          OutputGradientTensor=(T.INT8, [3, 4])), "InputWindowStrides[1]"),
    (desc("SLICE_GRAD", SLICE, InputGradientTensor=(T.INT8, [2, 2]), OutputGradientTensor=(T.INT8, [3, 3])),
     "InputWindowOffsets[1]"),
    (desc("SLICE_GRAD", SLICE, InputGradientTensor=(T.INT8, [2, 3]), OutputGradientTensor=(T.INT8, [3, 4])),
     "InputGradientTensor.Sizes[1]"),
    (desc("SLICE_GRAD", {**SLICE, "InputWindowSizes": [2]}, InputGradientTensor=(T.INT8, [2, 2]),
          OutputGradientTensor=(T.INT8, [3, 4])), "InputWindowSizes"),
    (desc("SLICE_GRAD", {**SLICE, "DimensionCount": 3}, InputGradientTensor=(T.INT8, [2, 2]),
          OutputGradientTensor=(T.INT8, [3, 4])), "DimensionCount"),
    (desc("MAX_POOLING_GRAD", POOL, InputTensor=(T.FLOAT32, [1, 1, 3, 3]), InputGradientTensor=(T.FLOAT32, [1, 2, 2, 2]),
          OutputGradientTensor=(T.FLOAT32, [1, 1, 3, 3])), "InputGradientTensor.Sizes[1]"),
    (desc("MAX_POOLING_GRAD", {**POOL, "Dilations": [1, 0]}, InputTensor=(T.FLOAT32, [1, 1, 3, 3]),
          InputGradientTensor=(T.FLOAT32, [1, 1, 2, 2]), OutputGradientTensor=(T.FLOAT32, [1, 1, 3, 3])), "Dilations[1]"),
    (desc("MAX_POOLING_GRAD", POOL, InputTensor=(T.FLOAT32, [1, 1, 3, 3]), InputGradientTensor=(T.FLOAT32, [1, 1, 2, 2]),
          OutputGradientTensor=(T.FLOAT32, [1, 1, 3, 4])), "OutputGradientTensor.Sizes"),
    (desc("MAX_POOLING_GRAD", POOL, InputTensor=(T.FLOAT32, [1, 1, 3, 3, 3]),
          InputGradientTensor=(T.FLOAT32, [1, 1, 2, 2, 2]), OutputGradientTensor=(T.FLOAT32, [1, 1, 3, 3, 3])),
     "DimensionCount"),
    (desc("RESAMPLE_GRAD1", {**RESAMPLE, "Scales": [2.0, 0.0]}, InputGradientTensor=(T.FLOAT32, [4, 4]),
          OutputGradientTensor=(T.FLOAT32, [2, 2])), "Scales[1]"),
    (desc("RESAMPLE_GRAD1", RESAMPLE, InputGradientTensor=(T.FLOAT32, [4, 4]), OutputGradientTensor=(T.FLOAT16, [2, 2])),
     "OutputGradientTensor.DataType"),
])
def test_each_rule_names_its_field(description, field):
    assert refused(description) == field


def test_required_level_follows_the_tables():
    slice_1d = desc("SLICE_GRAD", {"InputWindowOffsets": [0], "InputWindowSizes": [2], "InputWindowStrides": [1]},
                    InputGradientTensor=(T.FLOAT64, [2]), OutputGradientTensor=(T.FLOAT64, [2]))
    assert slice_1d.op.required_level(slice_1d) is L.L4_1
    relu_int = desc("ACTIVATION_RELU_GRAD", {}, InputTensor=(T.INT8, [2]), InputGradientTensor=(T.INT8, [2]),
                    OutputGradientTensor=(T.INT8, [2]))
    assert relu_int.op.required_level(relu_int) is L.L5_1


@pytest.mark.parametrize("op,params,field", [
    ("SLICE_GRAD", {**SLICE, "InputWindowOffsets": [0, -1]}, "InputWindowOffsets[1]"),
    ("SLICE_GRAD", {**SLICE, "InputWindowStrides": [1, 2**31]}, "InputWindowStrides[1]"),
    ("SLICE_GRAD", {**SLICE, "InputWindowSizes": "2,3"}, "InputWindowSizes"),
    ("SLICE_GRAD", {k: v for k, v in SLICE.items() if k != "InputWindowSizes"}, "InputWindowSizes"),
    ("RESAMPLE_GRAD1", {**RESAMPLE, "InterpolationMode": "CUBIC"}, "InterpolationMode"),
    ("RESAMPLE_GRAD1", {**RESAMPLE, "Scales": [2.0, "x"]}, "Scales[1]"),
    ("ELEMENT_WISE_CLIP_GRAD1", {"Min": 0, "Max": 300}, "Max"),
    ("ELEMENT_WISE_CLIP_GRAD1", {"Min": 0}, "Max"),
])
def test_unreadable_parameters_are_param_errors(op, params, field):
    with pytest.raises(ParamError) as info:
        find_operator(op).parse_params(params, T.UINT8)
    assert info.value.field == field


def test_enum_and_operator_prefixes_are_accepted():
    op = find_operator("DML_OPERATOR_RESAMPLE_GRAD1")
    parsed = op.parse_params({**RESAMPLE, "InterpolationMode": "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR",
                              "RoundingDirection": "DML_AXIS_DIRECTION_INCREASING"}, T.FLOAT32)
    assert parsed["InterpolationMode"] == "NEAREST_NEIGHBOR" and parsed["RoundingDirection"] == "INCREASING"
    assert set(OPERATORS) >= {"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD", "MAX_POOLING_GRAD",
                              "RESAMPLE_GRAD1", "RESAMPLE_GRAD"}
