"""A case in DirectML's own terms: its DML_*_OPERATOR_DESC with the fields in struct order, as text for `show`
and as a DxDispatch model (microsoft/DirectML, DxDispatch/doc/Guide.md) for a repro bundle.

Field order follows the DirectML structs: the tensor descs, then MinMaxDataType and the scalars (ClipGrad1),
else the enums, DimensionCount, the arrays and the single FLOATs and BOOLs (ClipGrad v0's Min and Max,
AveragePoolingGrad's IncludePadding, last in its struct). DxDispatch reads each field by its struct name, enums by
their full or abbreviated name, a BOOL as JSON true or false only, and a DML_SCALAR_UNION as a number or as an object
naming its member (`{"UInt16": bits}`), which is how FLOAT16 and non-finite bounds are written here, bit-exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dmlconform.case import Case
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Param, ParamKind

#: The dispatchable's name in a DxDispatch model.
DISPATCHABLE = "operator"


def operator_type(case: Case) -> str:
    return f"DML_OPERATOR_{case.op.name}"


def desc_struct(case: Case) -> str:
    return f"DML_{case.op.name}_OPERATOR_DESC"


def _scalar_params(case: Case) -> list[Param]:
    return [p for p in case.op.params if p.kind is ParamKind.SCALAR]


def dimension_count(case: Case) -> int | None:
    if not case.op.dimension_arrays:
        return None
    explicit = case.description.params.get("DimensionCount")
    return int(explicit) if explicit is not None else len(case.description.params[case.op.dimension_arrays[0]])


def desc_fields(case: Case) -> list[tuple[str, Any]]:
    """(DML field name, value) in struct order; tensors as {DataType, Sizes}, enums by their full DML names,
    scalars as NumPy scalars of the tensors' data type."""
    params = case.description.params
    fields: list[tuple[str, Any]] = []
    for name in case.op.tensors:
        tensor = case.description.tensors[name]
        fields.append((name, {"DataType": tensor.dtype.name, "Sizes": list(tensor.shape)}))
    scalars = _scalar_params(case)
    if scalars:
        explicit = params.get("MinMaxDataType")
        fields.append(("MinMaxDataType", (explicit or case.dtype).name))
        fields += [(p.name, scalar_value(params[p.name], case.dtype)) for p in scalars]
        return fields
    fields += [(p.name, p.enum_prefix + params[p.name]) for p in case.op.params if p.kind is ParamKind.ENUM]
    count = dimension_count(case)
    if count is not None:
        fields.append(("DimensionCount", count))
    for param in case.op.params:
        if param.kind is ParamKind.BOOL:
            fields.append((param.name, bool(params[param.name])))  # a DML BOOL: TRUE or FALSE
        elif param.kind is ParamKind.FLOAT:
            fields.append((param.name, float(params[param.name])))
        elif param.kind not in (ParamKind.ENUM, ParamKind.SCALAR):
            fields.append((param.name, list(params[param.name])))
    return fields


def scalar_value(value: Any, dtype: DataType) -> np.generic:
    if isinstance(value, np.generic):
        return value.astype(dtype.numpy)
    with np.errstate(over="ignore"):
        return dtype.numpy.type(value)


def scalar_text(value: np.generic) -> str:
    if isinstance(value, np.floating):
        bits = int(np.array(value).view(f"u{value.dtype.itemsize}"))
        return f"{value!s} (0x{bits:0{value.dtype.itemsize * 2}x})"
    return str(int(value))


def describe(case: Case) -> list[str]:
    """The operator desc as C-like lines, for a terminal."""
    lines = [f"{operator_type(case)} with {desc_struct(case)} {{"]
    for name, value in desc_fields(case):
        if isinstance(value, dict):
            text = (f"DML_TENSOR_DESC {{ DataType DML_TENSOR_DATA_TYPE_{value['DataType']}, "
                    f"Sizes {{{', '.join(map(str, value['Sizes']))}}} }}")
        elif name == "MinMaxDataType":
            text = f"DML_TENSOR_DATA_TYPE_{value}"
        elif isinstance(value, np.generic):
            text = scalar_text(value)
        elif isinstance(value, bool):
            text = "TRUE" if value else "FALSE"
        elif isinstance(value, float):
            text = scalar_text(np.float32(value))  # a single DML FLOAT, with its bits
        elif isinstance(value, list):
            text = "{" + ", ".join(_number_text(v) for v in value) + "}"
        else:
            text = str(value)
        lines.append(f"    {name} = {text};")
    lines.append("}")
    return lines


def _number_text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- DxDispatch ------------------------------------------------------------------------------------------------
def scalar_union_json(value: np.generic) -> Any:
    """A DML_SCALAR_UNION as DxDispatch reads it, exactly: FLOAT16 by its bits, non-finite floats by name."""
    if isinstance(value, np.float16):
        return {"UInt16": int(np.array(value).view(np.uint16))}
    if isinstance(value, np.floating):
        member = "Float32" if isinstance(value, np.float32) else "Float64"
        number = float(value)
        if math.isnan(number):
            return {member: "nan"}
        if math.isinf(number):
            return {member: "inf" if number > 0 else "-inf"}
        return number  # a float32 or float64 value is a double exactly, and JSON keeps a double exactly
    return int(value)


def _json_float(value: float) -> float | str:
    """A FLOAT as DxDispatch reads it: a number, or one of the strings nan, inf and -inf."""
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"


def _json_array(value: Any) -> Any:
    """FLOAT fields, alone (ClipGrad v0's Min and Max) or in arrays: non-finite values as strings."""
    if isinstance(value, float):
        return _json_float(value)
    if not isinstance(value, list):
        return value
    return [_json_float(v) if isinstance(v, float) else v for v in value]


def dxdispatch_model(case: Case, input_files: dict[str, str], output_file: str) -> dict[str, Any]:
    """A DxDispatch model that dispatches the case's operator once on the bundle's inputs, prints the output
    and writes it to `output_file` (.npy, with the output's Sizes). The output buffer starts as NaN (0 for
    integers), so elements the operator never writes stand out."""
    resources: dict[str, Any] = {}
    for name in case.op.inputs:
        dtype = case.description.tensors[name].dtype
        resources[name] = {"initialValuesDataType": dtype.name, "initialValues": {"sourcePath": input_files[name]}}
    for name in case.op.outputs:
        tensor = case.description.tensors[name]
        fill: Any = "nan" if tensor.dtype.is_float else 0
        resources[name] = {"initialValuesDataType": tensor.dtype.name,
                           "initialValues": {"valueCount": math.prod(tensor.shape), "value": fill}}
    desc = {name: scalar_union_json(value) if isinstance(value, np.generic) else _json_array(value)
            for name, value in desc_fields(case)}
    output = case.op.outputs[0]
    return {
        "resources": resources,
        "dispatchables": {DISPATCHABLE: {"type": operator_type(case), "desc": desc}},
        "commands": [
            {"type": "dispatch", "dispatchable": DISPATCHABLE, "bindings": {n: n for n in case.op.tensors}},
            {"type": "print", "resource": output},
            {"type": "writeFile", "targetPath": output_file, "resource": output,
             "dimensions": list(case.description.tensors[output].shape)},
        ],
    }
