"""What DxDispatch accepts in a model, as read from microsoft/DirectML's DxDispatch (doc/Guide.md,
src/model/JsonParsers.cpp, JsonParsersGenerated.cpp and NpyReaderWriter.cpp), written down as a checker.

DxDispatch cannot run here (Windows, D3D12); this checks a model against everything its parser demands of the
gradient operators dmlconform knows: the document's three members, each buffer's initializer, each .npy file's type and
size, every DML_*_OPERATOR_DESC field by its struct name and type, the bind points of each operator, and the
commands it knows (dispatch, print, writeFile).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

DATA_TYPES = ("FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8", "FLOAT64", "UINT64",
              "INT64")
#: NumPy type characters as NpyReaderWriter.cpp maps them onto DML_TENSOR_DATA_TYPE.
NPY_TYPES = {"<f2": "FLOAT16", "<f4": "FLOAT32", "<f8": "FLOAT64", "|i1": "INT8", "<i2": "INT16", "<i4": "INT32",
             "<i8": "INT64", "|u1": "UINT8", "<u2": "UINT16", "<u4": "UINT32", "<u8": "UINT64"}
#: DML_SCALAR_UNION members DxDispatch reads for each data type (FLOAT16 by its bits).
SCALAR_MEMBERS = {"FLOAT16": "UInt16", "FLOAT32": "Float32", "FLOAT64": "Float64", "UINT8": "UInt8", "UINT16": "UInt16",
                  "UINT32": "UInt32", "UINT64": "UInt64", "INT8": "Int8", "INT16": "Int16", "INT32": "Int32",
                  "INT64": "Int64"}
TENSOR, UINT, UINTS, INTS, FLOATS, DTYPE, SCALAR = "tensor", "uint", "uints", "ints", "floats", "dtype", "scalar"
#: One FLOAT field, read by ParseFloat32Field as an array's elements are (ParseFloatingPointNumber).
FLOAT = "float"
#: A BOOL field, read by ParseBoolField: a JSON true or false, nothing else (ParseBool throws "Expected a bool.").
BOOL = "bool"
ENUMS = {"InterpolationMode": ("NEAREST_NEIGHBOR", "LINEAR"), "RoundingDirection": ("INCREASING", "DECREASING")}
ENUM_PREFIX = {"InterpolationMode": "DML_INTERPOLATION_MODE_", "RoundingDirection": "DML_AXIS_DIRECTION_"}
#: Every field of each desc, in struct order, as ParseDml*OperatorDesc reads them; and the bind points.
STRUCTS: dict[str, list[tuple[str, str]]] = {
    "ACTIVATION_RELU_GRAD": [("InputTensor", TENSOR), ("InputGradientTensor", TENSOR),
                             ("OutputGradientTensor", TENSOR)],
    "ELEMENT_WISE_CLIP_GRAD1": [("InputTensor", TENSOR), ("InputGradientTensor", TENSOR),
                                ("OutputGradientTensor", TENSOR), ("MinMaxDataType", DTYPE), ("Min", SCALAR),
                                ("Max", SCALAR)],
    "ELEMENT_WISE_CLIP_GRAD": [("InputTensor", TENSOR), ("InputGradientTensor", TENSOR),
                               ("OutputGradientTensor", TENSOR), ("Min", FLOAT), ("Max", FLOAT)],
    "SLICE_GRAD": [("InputGradientTensor", TENSOR), ("OutputGradientTensor", TENSOR), ("DimensionCount", UINT),
                   ("InputWindowOffsets", UINTS), ("InputWindowSizes", UINTS), ("InputWindowStrides", INTS)],
    "MAX_POOLING_GRAD": [("InputTensor", TENSOR), ("InputGradientTensor", TENSOR), ("OutputGradientTensor", TENSOR),
                         ("DimensionCount", UINT), ("Strides", UINTS), ("WindowSize", UINTS),
                         ("StartPadding", UINTS), ("EndPadding", UINTS), ("Dilations", UINTS)],
    "RESAMPLE_GRAD1": [("InputGradientTensor", TENSOR), ("OutputGradientTensor", TENSOR),
                       ("InterpolationMode", "enum"), ("RoundingDirection", "enum"), ("DimensionCount", UINT),
                       ("Scales", FLOATS), ("InputPixelOffsets", FLOATS), ("OutputPixelOffsets", FLOATS)],
    "RESAMPLE_GRAD": [("InputGradientTensor", TENSOR), ("OutputGradientTensor", TENSOR),
                      ("InterpolationMode", "enum"), ("DimensionCount", UINT), ("Scales", FLOATS),
                      ("InputPixelOffsets", FLOATS), ("OutputPixelOffsets", FLOATS)],
    "AVERAGE_POOLING_GRAD": [("InputGradientTensor", TENSOR), ("OutputGradientTensor", TENSOR),
                             ("DimensionCount", UINT), ("Strides", UINTS), ("WindowSize", UINTS),
                             ("StartPadding", UINTS), ("EndPadding", UINTS), ("IncludePadding", BOOL)],
}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON (RapidJSON refuses it)")


def load_model(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(), parse_constant=_reject_constant)


def _data_type(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    name = value.removeprefix("DML_TENSOR_DATA_TYPE_")
    return name if name in DATA_TYPES else None


def _buffer(name: str, resource: object, folder: Path, problems: list[str]) -> int:
    """Problems with one buffer resource; its element count (0 if unknown)."""
    if not isinstance(resource, dict) or "initialValues" not in resource:
        problems.append(f"resource {name}: needs an object with initialValues")
        return 0
    declared = resource.get("initialValuesDataType")
    if declared is not None and _data_type(declared) is None:
        problems.append(f"resource {name}: initialValuesDataType {declared!r} is not a DML_TENSOR_DATA_TYPE")
    values = resource["initialValues"]
    if isinstance(values, list):
        if declared is None or not values:
            problems.append(f"resource {name}: an array initializer needs initialValuesDataType and values")
        return len(values)
    if not isinstance(values, dict):
        problems.append(f"resource {name}: initialValues must be an array or an object")
        return 0
    kinds = [k for k in ("value", "valueStart", "sourcePath") if k in values]
    if len(kinds) != 1:
        problems.append(f"resource {name}: give exactly one of value, valueStart, sourcePath (got {kinds})")
        return 0
    if kinds[0] != "sourcePath":
        count = values.get("valueCount")
        if declared is None or not isinstance(count, int) or count <= 0:
            problems.append(f"resource {name}: a generated buffer needs initialValuesDataType and valueCount > 0")
            return 0
        fill = values.get("value", values.get("valueStart"))
        if isinstance(fill, str) and (fill.lower() not in ("nan", "inf", "-inf") or
                                      not _data_type(declared).startswith("FLOAT")):  # type: ignore[union-attr]
            problems.append(f"resource {name}: value {fill!r} is not a number of {declared}")
        return count
    path = folder / values["sourcePath"]
    if not path.is_file() or path.suffix != ".npy":
        problems.append(f"resource {name}: sourcePath {values['sourcePath']} is not a .npy file beside the model")
        return 0
    array = np.load(path, allow_pickle=False)
    descr = array.dtype.str
    if descr not in NPY_TYPES or (np.isfortran(array) and array.ndim > 1):
        problems.append(f"resource {name}: {path.name} holds {descr}, which DxDispatch does not read")
    elif declared is not None and NPY_TYPES[descr] != _data_type(declared):
        problems.append(f"resource {name}: {path.name} holds {NPY_TYPES[descr]}, initialValuesDataType says {declared}")
    if array.size == 0:
        problems.append(f"resource {name}: {path.name} is empty")
    return int(array.size)


def _field(op: str, name: str, kind: str, value: object, desc: dict[str, Any], problems: list[str]) -> None:
    where = f"{op}.{name}"

    def integers(low: int, high: int) -> bool:
        return isinstance(value, list) and bool(value) and all(
            isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in value)

    if kind == TENSOR:
        ok = isinstance(value, dict) and _data_type(value.get("DataType")) is not None and isinstance(
            value.get("Sizes"), list) and all(isinstance(s, int) and 0 < s < 2**32 for s in value["Sizes"])
        if not ok:
            problems.append(f"{where}: not a DML_TENSOR_DESC with DataType and Sizes")
    elif kind == UINT and not (isinstance(value, int) and 0 <= value < 2**32):
        problems.append(f"{where}: {value!r} is not a UINT")
    elif kind == UINTS and not integers(0, 2**32 - 1):
        problems.append(f"{where}: {value!r} is not an array of UINT")
    elif kind == INTS and not integers(-(2**31), 2**31 - 1):
        problems.append(f"{where}: {value!r} is not an array of INT")
    elif kind == FLOATS and not (isinstance(value, list) and value and all(
            (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)) or v in ("nan", "inf", "-inf")
            for v in value)):
        problems.append(f"{where}: {value!r} is not an array of FLOAT")
    elif kind == FLOAT and not ((isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(
            value)) or value in ("nan", "inf", "-inf")):
        problems.append(f"{where}: {value!r} is not a FLOAT")
    elif kind == "enum" and value not in ENUMS[name] and (not isinstance(value, str) or value.removeprefix(
            ENUM_PREFIX[name]) not in ENUMS[name]):
        problems.append(f"{where}: {value!r} is not a value of its enum")
    elif kind == BOOL and not isinstance(value, bool):
        problems.append(f"{where}: {value!r} is not a BOOL (true or false)")
    elif kind == DTYPE and _data_type(value) is None:
        problems.append(f"{where}: {value!r} is not a DML_TENSOR_DATA_TYPE")
    elif kind == SCALAR:
        dtype = _data_type(desc.get("MinMaxDataType")) or ""
        member = SCALAR_MEMBERS.get(dtype)
        if isinstance(value, dict):
            if list(value) != [member]:
                problems.append(f"{where}: a DML_SCALAR_UNION of {dtype} is written {{{member!r}: ...}}")
        elif not isinstance(value, int | float) or isinstance(value, bool):
            problems.append(f"{where}: {value!r} is neither a number nor a DML_SCALAR_UNION object")


def check_model(path: Path) -> list[str]:
    """Every way the model at `path` falls short of what DxDispatch parses; [] when none."""
    problems: list[str] = []
    try:
        model = load_model(path)
    except ValueError as exc:
        return [f"{path.name}: {exc}"]
    if not isinstance(model, dict) or not isinstance(model.get("resources"), dict) or not isinstance(
            model.get("dispatchables"), dict) or not isinstance(model.get("commands"), list):
        return ["the model needs an object 'resources', an object 'dispatchables' and an array 'commands'"]
    sizes = {name: _buffer(name, resource, path.parent, problems) for name, resource in model["resources"].items()}
    ops: dict[str, dict[str, Any]] = {}
    for name, dispatchable in model["dispatchables"].items():
        op = str(dispatchable.get("type", "")).removeprefix("DML_OPERATOR_") if isinstance(dispatchable, dict) else ""
        desc = dispatchable.get("desc", dispatchable.get("Desc")) if isinstance(dispatchable, dict) else None
        if op not in STRUCTS or not isinstance(desc, dict):
            problems.append(f"dispatchable {name}: not one of the gradient operators with a desc")
            continue
        expected = [field for field, _ in STRUCTS[op]]
        if list(desc) != expected:
            problems.append(f"dispatchable {name}: fields {list(desc)}, the struct has {expected}")
        for field, kind in STRUCTS[op]:
            if field in desc:
                _field(op, field, kind, desc[field], desc, problems)
        ops[name] = {"op": op, "desc": desc}
    for number, command in enumerate(model["commands"]):
        kind = command.get("type") if isinstance(command, dict) else None
        if kind == "dispatch":
            target = ops.get(command.get("dispatchable"))
            bindings = command.get("bindings")
            if target is None or not isinstance(bindings, dict):
                problems.append(f"command {number}: dispatch of an unknown dispatchable, or without bindings")
                continue
            points = [field for field, kind in STRUCTS[target["op"]] if kind == TENSOR]
            if sorted(bindings) != sorted(points):
                problems.append(f"command {number}: binds {sorted(bindings)}, the operator's bind points are {points}")
            for point, resource in bindings.items():
                tensor = target["desc"].get(point)
                if resource not in sizes:
                    problems.append(f"command {number}: {point} binds unknown resource {resource!r}")
                elif isinstance(tensor, dict) and sizes[resource] != (math.prod(tensor["Sizes"]) if isinstance(
                        tensor.get("Sizes"), list) else 0):  # Sizes [] (rank 0, a negative case) is one element
                    problems.append(f"command {number}: {point} has {math.prod(tensor['Sizes'])} elements, resource "
                                    f"{resource} {sizes[resource]}")
        elif kind in ("print", "writeFile"):
            if command.get("resource") not in sizes:
                problems.append(f"command {number}: {kind} of unknown resource {command.get('resource')!r}")
            if kind == "writeFile":
                dims = command.get("dimensions")
                if not isinstance(command.get("targetPath"), str) or (dims is not None and math.prod(dims) != sizes.get(
                        command.get("resource"), -1)):
                    problems.append(f"command {number}: writeFile needs a targetPath (and dimensions of its size)")
        else:
            problems.append(f"command {number}: unknown type {kind!r} (dispatch, print, writeFile)")
    return problems
