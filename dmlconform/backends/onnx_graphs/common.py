"""Shared pieces of the ONNX graph builders: naming, constants, the model stamp and the select helper.

Every graph is stamped with IR version 10 and opset 21 explicitly: onnx 1.23's defaults (IR 14,
opset 28) are rejected by ONNX Runtime, and onnxruntime-directml 1.24 accepts IR <= 10, opset <= 21.
Only standard ONNX operators are used (the stock wheels have no training gradient ops).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import ModelProto, NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper

from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description

IR_VERSION = 10
OPSET = 21
OUTPUT = "OutputGradientTensor"

#: Narrow integer types are compared and selected in a wider signed type that holds every value exactly.
#: Measured on an H100 with onnxruntime-gpu 1.31.1: the CUDA provider has no Greater/Where (or no
#: LessOrEqual) kernel for INT8, INT16, UINT8, UINT16 or UINT32, so without widening those cases could only
#: be NOT_SUPPORTED there. One Cast back gives the same bits as computing in the narrow type.
WIDER = {DataType.INT8: DataType.INT32, DataType.INT16: DataType.INT32, DataType.UINT8: DataType.INT32,
         DataType.UINT16: DataType.INT32, DataType.UINT32: DataType.INT64}

#: Types the selects still compute in (after WIDER) that ORT's CPU kernel for Where lacks (notes/onnxruntime.md
#: §2.1 also lists INT16 and UINT16, which WIDER turns into INT32). For these the select is a multiply by the 0/1
#: mask, which is exact for integers. Floats never take the multiply: it would turn 0·NaN and 0·Inf into NaN
#: where a select gives 0.
WHERE_MISSING = frozenset({DataType.UINT64})


class GraphUnsupported(Exception):
    """The case is valid, but the standard-ONNX realisation cannot express it; the message says why."""


def onnx_type(dtype: DataType) -> int:
    return int(helper.np_dtype_to_tensor_dtype(dtype.numpy))


@dataclass
class Graph:
    """A built model plus how the case's tensors map onto it."""

    model: ModelProto
    #: Graph input names; each is the DML input tensor's name.
    inputs: list[str]
    #: Graph output name of OutputGradientTensor.
    output: str
    #: One line naming the realisation, for reports and docs.
    recipe: str
    #: Optional data check run before each run; returns a reason the data cannot be expressed, or None.
    check_inputs: Callable[[dict[str, np.ndarray]], str | None] | None = None


@dataclass
class GraphBuilder:
    """Accumulates nodes and constants and hands out unique value names."""

    name: str
    nodes: list[NodeProto] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)
    inputs: list[ValueInfoProto] = field(default_factory=list)
    _count: int = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def input(self, name: str, dtype: DataType, shape: Sequence[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, onnx_type(dtype), list(shape)))
        return name

    def const(self, value: np.ndarray | int | float, dtype: np.dtype | type | None = None, hint: str = "c") -> str:
        array = np.asarray(value) if dtype is None else np.asarray(value).astype(dtype)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(array.copy(order="C"), name))
        return name

    def ints(self, values: Sequence[int], hint: str = "i") -> str:
        return self.const(np.asarray(list(values), dtype=np.int64), hint=hint)

    def zero(self, dtype: DataType) -> str:
        return self.const(np.zeros((), dtype=dtype.numpy), hint="zero")

    def op(self, op_type: str, inputs: Sequence[str], hint: str | None = None, **attrs: Any) -> str:
        return self.op_multi(op_type, inputs, 1, hint, **attrs)[0]

    def op_multi(self, op_type: str, inputs: Sequence[str], outputs: int, hint: str | None = None,
                 **attrs: Any) -> list[str]:
        names = [self.fresh(hint or op_type.lower()) for _ in range(outputs)]
        # A node is named after its first output, so that an execution provider's placement log names it.
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=names[0], **attrs))
        return names

    def cast(self, value: str, to: DataType | int) -> str:
        target = onnx_type(to) if isinstance(to, DataType) else to
        return self.op("Cast", [value], "cast", to=target)

    def finish(self, output: str, dtype: DataType, shape: Sequence[int], recipe: str,
               check_inputs: Callable[[dict[str, np.ndarray]], str | None] | None = None,
               opset: int = OPSET) -> Graph:
        """The model (IR 10, opset 21 unless a construction needs an older one) whose single output is `output`,
        named OutputGradientTensor."""
        self.nodes.append(helper.make_node("Identity", [output], [OUTPUT], name=OUTPUT))
        graph = helper.make_graph(self.nodes, self.name, self.inputs,
                                  [helper.make_tensor_value_info(OUTPUT, onnx_type(dtype), list(shape))],
                                  initializer=self.initializers)
        model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="dmlconform")
        return Graph(model, [i.name for i in self.inputs], OUTPUT, recipe, check_inputs)


def tensor_value(array: np.ndarray) -> TensorProto:
    """A tensor attribute value (ConstantOfShape's `value`)."""
    return numpy_helper.from_array(array)


def select(b: GraphBuilder, keep: str, value: str, dtype: DataType) -> str:
    """keep ? value : 0, as a select (Where); as value · mask only for integer types Where lacks."""
    if dtype in WHERE_MISSING:
        if dtype.is_float:  # pragma: no cover - the set holds integers only; a float must never take this path
            raise AssertionError("a float select must not become a multiply")
        return b.op("Mul", [value, b.cast(keep, dtype)], "masked")
    return b.op("Where", [keep, value, b.zero(dtype)], "selected")


#: The `select-no-int64-math` constructions' widening: narrow types still compute in INT32, but UINT32 stays UINT32.
#: Measured with onnxruntime-directml 1.24.4 on Wine's vkd3d and lavapipe: the DirectML EP takes the graph of a Cast
#: to or from a 64-bit integer type, or of a 64-bit integer Mul, but DirectML refuses to compile it (E_INVALIDARG),
#: so neither UINT32 widened to INT64 nor UINT64's Mul by the mask can run there.
WIDER_NO_INT64 = {DataType.INT8: DataType.INT32, DataType.INT16: DataType.INT32, DataType.UINT8: DataType.INT32,
                  DataType.UINT16: DataType.INT32}
#: Types whose select is a GatherElements from [0, dY] (where Where has no CPU kernel and a multiply is avoided).
GATHER_SELECT = frozenset({DataType.UINT64})


def select_by_gather(b: GraphBuilder, keep: str, value: str, dtype: DataType, shape: Sequence[int]) -> str:
    """keep ? value : 0 as GatherElements([0, value], keep as INT32) over the flattened tensors: data movement only,
    so exact for every type, with no Where, Cast of the data or arithmetic. Flattened, so that the stacked tensor is
    2-D whatever the rank (DirectML takes at most 8 dimensions; an 8-D case stacked on a new axis had 9)."""
    row = b.ints([1, -1])
    stacked = b.op("Concat", [b.const(np.zeros((1, int(np.prod(shape))), dtype=dtype.numpy), hint="none"),
                              b.op("Reshape", [value, row], "gradient")], "stacked", axis=0)
    index = b.op("Reshape", [b.cast(keep, DataType.INT32), row], "which")
    picked = b.op("GatherElements", [stacked, index], "picked", axis=0)
    return b.op("Reshape", [picked, b.ints(shape)], "selected")


def widen(b: GraphBuilder, value: str, dtype: DataType, wider: Mapping[DataType, DataType] | None = None
          ) -> tuple[str, DataType]:
    """`value` in the type the select graphs compute in (WIDER unless told otherwise), with that type."""
    work = (WIDER if wider is None else wider).get(dtype, dtype)
    return (value if work is dtype else b.cast(value, work)), work


def select_gradient(name: str, desc: Description, keep: Callable[[GraphBuilder, str, DataType], str],
                    recipe: str, wider: Mapping[DataType, DataType] | None = None,
                    gather_select: frozenset[DataType] = frozenset()) -> Graph:
    """The element-wise select gradients: dX = keep(X) ? dY : 0, computed in the WIDER type and cast back.

    `wider` and `gather_select` give another construction: the widening table, and the types whose select is a
    GatherElements (select_by_gather) instead of Where or a Mul by the mask."""
    dtype, shape = desc.output.dtype, desc.output.shape
    b = GraphBuilder(name)
    x, work = widen(b, b.input("InputTensor", dtype, shape), dtype, wider)
    dy, _ = widen(b, b.input("InputGradientTensor", dtype, shape), dtype, wider)
    if work in gather_select:
        out = select_by_gather(b, keep(b, x, work), dy, work, shape)
        how = "GatherElements([0, dY], mask)"
    else:
        out = select(b, keep(b, x, work), dy, work)
        how = "Mul by mask" if "masked" in out else "Where"
    if work is not dtype:
        out = b.cast(out, dtype)
    wide = f" in {work.name}, cast back" if work is not dtype else ""
    return b.finish(out, dtype, shape, f"{recipe} -> {how}{wide}")


def flat(b: GraphBuilder, value: str) -> str:
    return b.op("Reshape", [value, b.ints([-1])], "flat")


def scatter_into_zeros(b: GraphBuilder, size: int, indices: str, updates: str, dtype: DataType,
                       reduction: str = "none") -> str:
    """A [size] tensor of zeros of `dtype` with `updates` written (or added) at flat `indices`."""
    zeros = b.op("ConstantOfShape", [b.ints([size])], "zeros",
                 value=tensor_value(np.zeros(1, dtype=dtype.numpy)))
    return b.op("ScatterElements", [zeros, indices, updates], "scattered", axis=0, reduction=reduction)


def iota(b: GraphBuilder, shape: Sequence[int]) -> str:
    """int64 tensor of `shape` holding each element's flat row-major index (ORT folds it at load)."""
    count = int(np.prod(shape))
    ramp = b.op("Range", [b.const(np.int64(0)), b.const(np.int64(count)), b.const(np.int64(1))], "ramp")
    return b.op("Reshape", [ramp, b.ints(shape)], "iota")
