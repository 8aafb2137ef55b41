"""What every operator module provides: its description rules and its NumPy reference.

An operator is described the way DirectML describes it: tensor descriptions (data type and sizes)
keyed by DML struct field name, plus parameters keyed by DML struct field name. Description rules
run before any data is touched; a broken rule raises DescriptionError naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from dmlconform.compare.accumulation import Accumulation
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel, SupportTable
from dmlconform.surface.layout import DEFAULT as DEFAULT_LAYOUT
from dmlconform.surface.layout import LayoutRuleError, TensorLayout, check_layout
from dmlconform.values import parse_element


class DescriptionError(Exception):
    """The description breaks a documented rule: DirectML would refuse to create the operator."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ParamError(Exception):
    """A parameter cannot be read at all (wrong type, missing): the suite is malformed."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class TensorDesc:
    dtype: DataType
    shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


class ParamKind(Enum):
    UINTS = "array of non-negative integers"
    INTS = "array of integers"
    FLOATS = "array of numbers"
    ENUM = "name"
    SCALAR = "number in the tensors' data type"
    FLOAT = "number (a DML FLOAT: 32-bit, whatever the tensors' data type)"
    BOOL = "true or false (a DML BOOL)"


@dataclass(frozen=True)
class Param:
    name: str
    kind: ParamKind
    choices: tuple[str, ...] = ()
    enum_prefix: str = ""

    def parse(self, raw: object, dtype: DataType | None) -> Any:
        if self.kind is ParamKind.ENUM:
            text = str(raw).upper().removeprefix(self.enum_prefix) if isinstance(raw, str) else None
            if text not in self.choices:
                raise ParamError(self.name, f"{raw!r} is not one of {', '.join(self.choices)}")
            return text
        if self.kind is ParamKind.FLOAT:
            try:
                number = parse_element(raw, DataType.FLOAT32)
            except ValueError as exc:
                raise ParamError(self.name, str(exc)) from None
            return float(np.float32(number))  # a hex bit pattern comes back as a NumPy scalar
        if self.kind is ParamKind.BOOL:
            if not isinstance(raw, bool):
                raise ParamError(self.name, f"{raw!r} is not true or false")
            return raw
        if self.kind is ParamKind.SCALAR:
            if dtype is None:
                raise ParamError(self.name, "the tensors' data type is unknown")
            try:
                return parse_element(raw, dtype)
            except ValueError as exc:
                raise ParamError(self.name, str(exc)) from None
        if not isinstance(raw, list) or not raw:
            raise ParamError(self.name, f"expected a non-empty {self.kind.value}, got {raw!r}")
        values = []
        for i, item in enumerate(raw):
            if self.kind is ParamKind.FLOATS:
                if isinstance(item, bool) or not isinstance(item, int | float):
                    raise ParamError(f"{self.name}[{i}]", f"{item!r} is not a number")
                values.append(float(np.float32(item)))  # DML FLOAT fields are 32-bit
            else:
                if isinstance(item, bool) or not isinstance(item, int):
                    raise ParamError(f"{self.name}[{i}]", f"{item!r} is not an integer")
                limit = (0, 2**32 - 1) if self.kind is ParamKind.UINTS else (-(2**31), 2**31 - 1)
                if not limit[0] <= item <= limit[1]:
                    field_type = "UINT" if self.kind is ParamKind.UINTS else "INT"
                    raise ParamError(f"{self.name}[{i}]", f"{item} does not fit a DML {field_type}")
                values.append(item)
        return tuple(values)


@dataclass
class Reference:
    outputs: dict[str, np.ndarray]
    accumulation: dict[str, Accumulation] = field(default_factory=dict)


@dataclass(frozen=True)
class Description:
    op: Operator
    params: Mapping[str, Any]
    tensors: Mapping[str, TensorDesc]
    #: Tensors whose memory layout is not DirectML's default (contract §9): packed tensors are absent.
    layouts: Mapping[str, TensorLayout] = field(default_factory=dict)

    @property
    def output(self) -> TensorDesc:
        return self.tensors[self.op.outputs[0]]

    def layout(self, name: str) -> TensorLayout:
        return self.layouts.get(name, DEFAULT_LAYOUT)

    @property
    def has_layouts(self) -> bool:
        return any(not layout.is_default for layout in self.layouts.values())


class Operator:
    """Base of the five operator modules. Subclasses set the class attributes and override the hooks."""

    name: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ("OutputGradientTensor",)
    params: tuple[Param, ...] = ()
    support: SupportTable
    #: Names of the behaviours the reference can compute where the docs are silent; the first is the default, and
    #: where real DirectML was measured it is DirectML's answer (examples/dml_harness/results/DECISIONS.md).
    variants: tuple[str, ...] = ("default",)
    #: Parameter arrays whose common length is DimensionCount.
    dimension_arrays: tuple[str, ...] = ()
    #: Tensors that must have the same Sizes (every tensor of every in-scope operator shares DataType and
    #: DimensionCount; that is checked for all of them).
    same_sizes: tuple[str, ...] = ()
    #: In-place execution (contract §9): the output its page lets alias an input, and that input; None: not allowed.
    in_place: tuple[str, str] | None = None

    def __repr__(self) -> str:
        return f"<operator {self.name}>"

    def __reduce__(self) -> tuple[Callable[[str], Operator], tuple[str]]:
        # Operators are singletons compared by identity: a pickled case (sent to a worker process, or kept in the
        # parsed-suite cache) comes back with the process's own.
        from dmlconform.ops import find_operator

        return find_operator, (self.name,)

    @property
    def tensors(self) -> tuple[str, ...]:
        return self.inputs + self.outputs

    @property
    def introduced(self) -> FeatureLevel:
        return self.support.introduced

    def parse_params(self, raw: Mapping[str, object], dtype: DataType | None) -> dict[str, Any]:
        """Read parameters by DML field name. Unknown or missing names are ParamError (malformed suite)."""
        known = {p.name: p for p in self.params}
        derived = {"DimensionCount"} if self.dimension_arrays else set()
        if any(p.kind is ParamKind.SCALAR for p in self.params):
            derived.add("MinMaxDataType")
        for name in raw:
            if name not in known and name not in derived:
                allowed = ", ".join([*known, *sorted(derived)]) or "none"
                raise ParamError(str(name), f"unknown parameter for {self.name} (known: {allowed})")
        parsed: dict[str, Any] = {}
        for param in self.params:
            if param.name not in raw:
                raise ParamError(param.name, f"missing parameter of {self.name}")
            parsed[param.name] = param.parse(raw[param.name], dtype)
        if "DimensionCount" in raw:
            count = raw["DimensionCount"]
            if isinstance(count, bool) or not isinstance(count, int):
                raise ParamError("DimensionCount", f"{count!r} is not an integer")
            parsed["DimensionCount"] = count
        if "MinMaxDataType" in raw:
            try:
                parsed["MinMaxDataType"] = DataType.parse(raw["MinMaxDataType"])
            except ValueError as exc:
                raise ParamError("MinMaxDataType", str(exc)) from None
        return parsed

    # -- description rules -------------------------------------------------------------------------
    def validate(self, desc: Description) -> None:
        """Every documented constraint; raises DescriptionError naming the first field that breaks one."""
        self.check_support(desc)
        same_dtype(desc, self.tensors)
        same_rank(desc, self.tensors)
        if self.same_sizes:
            same_sizes(desc, self.same_sizes)
        self.check_dimension_count(desc)
        self.check_rules(desc)
        self.check_layouts(desc)

    def check_layouts(self, desc: Description) -> None:
        """DirectML's rules for each tensor's memory layout (dmlconform.surface.layout); after the operator's own, so
        that a layout case names a layout rule only when the rest of its description is valid."""
        for name, layout in desc.layouts.items():
            try:
                check_layout(name, desc.tensors[name], layout, output=name in self.outputs)
            except LayoutRuleError as exc:
                raise DescriptionError(exc.field, exc.message) from None

    def check_rules(self, desc: Description) -> None:
        """Operator-specific rules; override."""

    def check_support(self, desc: Description) -> None:
        dtypes = self.support.all_dtypes
        low, high = self.support.rank_range
        for name in self.tensors:
            tensor = desc.tensors[name]
            if tensor.dtype not in dtypes:
                names = ", ".join(d.name for d in sorted(dtypes, key=lambda d: d.value))
                raise DescriptionError(f"{name}.DataType", f"{tensor.dtype.name} is not supported by "
                                       f"{self.name} at any feature level (supported: {names})")
            if not low <= tensor.rank <= high:
                raise DescriptionError(f"{name}.DimensionCount", f"{tensor.rank} is outside the supported "
                                       f"dimension counts {low} to {high}")
            if any(size < 1 for size in tensor.shape):
                raise DescriptionError(f"{name}.Sizes", f"{list(tensor.shape)} has a size below 1")
            if self.support.required_level(tensor.dtype, tensor.rank) is None:
                raise DescriptionError(f"{name}", f"{tensor.dtype.name} with {tensor.rank} dimensions is not "
                                       f"supported together at any feature level")

    def check_dimension_count(self, desc: Description) -> None:
        if not self.dimension_arrays:
            return
        lengths = {name: len(desc.params[name]) for name in self.dimension_arrays}
        first = self.dimension_arrays[0]
        for name, length in lengths.items():
            if length != lengths[first]:
                raise DescriptionError(name, f"has {length} elements but {first} has {lengths[first]}; "
                                       "all must have DimensionCount elements")
        explicit = desc.params.get("DimensionCount")
        if explicit is not None and explicit != lengths[first]:
            raise DescriptionError("DimensionCount", f"{explicit} disagrees with the {lengths[first]} "
                                   f"elements of {first}")
        expected = self.expected_dimension_count(desc)
        if lengths[first] != expected:
            raise DescriptionError("DimensionCount", f"{lengths[first]} (from {first}) must be {expected}, "
                                   f"{self.dimension_count_rule}")

    dimension_count_rule = "the tensors' DimensionCount"

    def expected_dimension_count(self, desc: Description) -> int:
        return desc.output.rank

    # -- reference ---------------------------------------------------------------------------------
    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        raise NotImplementedError

    def default_tolerance(self, desc: Description, ref: Reference) -> Tolerance:
        return Tolerance.exact()

    def required_level(self, desc: Description) -> FeatureLevel | None:
        levels = [self.support.required_level(desc.tensors[n].dtype, desc.tensors[n].rank) for n in self.tensors]
        if any(level is None for level in levels):
            return None
        return max(levels, key=lambda level: level.value)  # type: ignore[arg-type, return-value]


# -- rules shared by several operators -------------------------------------------------------------
def _same(desc: Description, names: Sequence[str], field: str, read: Callable[[TensorDesc], object]) -> None:
    first = read(desc.tensors[names[0]])
    for name in names[1:]:
        value = read(desc.tensors[name])
        if value != first:
            raise DescriptionError(f"{name}.{field}", f"{value} differs from {names[0]}.{field} {first}")


def same_dtype(desc: Description, names: Sequence[str]) -> None:
    _same(desc, names, "DataType", lambda t: t.dtype.name)


def same_rank(desc: Description, names: Sequence[str]) -> None:
    _same(desc, names, "DimensionCount", lambda t: t.rank)


def same_sizes(desc: Description, names: Sequence[str]) -> None:
    _same(desc, names, "Sizes", lambda t: list(t.shape))


def check_min_max_dtype(desc: Description) -> None:
    explicit = desc.params.get("MinMaxDataType")
    if explicit is not None and explicit is not desc.output.dtype:
        raise DescriptionError("MinMaxDataType", f"{explicit.name} must match OutputGradientTensor.DataType "
                               f"{desc.output.dtype.name}")


def check_at_least_one(desc: Description, names: Sequence[str]) -> None:
    """Every element of these UINT arrays is at least 1 (a pooling's strides, window and dilations)."""
    for name in names:
        for i, value in enumerate(desc.params[name]):
            if value < 1:
                raise DescriptionError(f"{name}[{i}]", f"{value} must be at least 1")


def check_batch_and_channels(desc: Description, other: str) -> None:
    """InputGradientTensor's BatchCount and ChannelCount are `other`'s: pooling works within a plane."""
    dy, sizes = desc.tensors["InputGradientTensor"].shape, desc.tensors[other].shape
    for i, label in enumerate(("BatchCount", "ChannelCount")):
        if dy[i] != sizes[i]:
            raise DescriptionError(f"InputGradientTensor.Sizes[{i}]", f"{label} {dy[i]} differs from {other}'s "
                                   f"{sizes[i]}")

