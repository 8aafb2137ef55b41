"""Negative cases: one per documented constraint (and per axis where a rule is per axis), each breaking exactly one.

A small valid description of the operator is changed in one way; the freezer checks that the reference
refuses it for the very field the constraint names, so a case cannot pass for the wrong reason (a driver
that refuses everything passes every negative case, but then fails every positive one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Plan, described, generated
from dmlconform.generation.spec import CaseSpec
from dmlconform.ops.base import Operator
from dmlconform.suite.tiers import Tier


@dataclass(frozen=True)
class Base:
    """A valid description: data type, each tensor's sizes, parameters."""

    dtype: DataType
    shapes: dict[str, tuple[int, ...]]
    params: dict[str, Any]


BASES = {
    "ACTIVATION_RELU_GRAD": Base(DataType.FLOAT32, {"InputTensor": (2, 3), "InputGradientTensor": (2, 3),
                                                    "OutputGradientTensor": (2, 3)}, {}),
    "ELEMENT_WISE_CLIP_GRAD1": Base(DataType.FLOAT32, {"InputTensor": (2, 3), "InputGradientTensor": (2, 3),
                                                       "OutputGradientTensor": (2, 3)}, {"Min": -1.0, "Max": 1.0}),
    "ELEMENT_WISE_CLIP_GRAD": Base(DataType.FLOAT32, {"InputTensor": (2, 3), "InputGradientTensor": (2, 3),
                                                      "OutputGradientTensor": (2, 3)}, {"Min": -1.0, "Max": 1.0}),
    "SLICE_GRAD": Base(DataType.FLOAT32, {"InputGradientTensor": (2, 2), "OutputGradientTensor": (4, 4)},
                       {"InputWindowOffsets": [0, 0], "InputWindowSizes": [4, 4], "InputWindowStrides": [2, 2]}),
    "MAX_POOLING_GRAD": Base(DataType.FLOAT32, {"InputTensor": (1, 1, 4, 4), "InputGradientTensor": (1, 1, 2, 2),
                                                "OutputGradientTensor": (1, 1, 4, 4)},
                             {"Strides": [2, 2], "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0],
                              "Dilations": [1, 1]}),
    "AVERAGE_POOLING_GRAD": Base(DataType.FLOAT32, {"InputGradientTensor": (1, 1, 2, 2),
                                                    "OutputGradientTensor": (1, 1, 4, 4)},
                                 {"Strides": [2, 2], "WindowSize": [2, 2], "StartPadding": [0, 0],
                                  "EndPadding": [0, 0], "IncludePadding": False}),
    "RESAMPLE_GRAD1": Base(DataType.FLOAT32,
                           {"InputGradientTensor": (1, 1, 4, 4), "OutputGradientTensor": (1, 1, 2, 2)},
                           {"InterpolationMode": "NEAREST_NEIGHBOR", "RoundingDirection": "DECREASING",
                            "Scales": [1.0, 1.0, 2.0, 2.0], "InputPixelOffsets": [0.0, 0.0, 0.0, 0.0],
                            "OutputPixelOffsets": [0.0, 0.0, 0.0, 0.0]}),
    "RESAMPLE_GRAD": Base(DataType.FLOAT32,
                          {"InputGradientTensor": (1, 1, 4, 4), "OutputGradientTensor": (1, 1, 2, 2)},
                          {"InterpolationMode": "NEAREST_NEIGHBOR", "Scales": [1.0, 1.0, 2.0, 2.0],
                           "InputPixelOffsets": [0.0, 0.0, 0.0, 0.0], "OutputPixelOffsets": [0.0, 0.0, 0.0, 0.0]}),
}


#: Operators whose dimension arrays have one element per spatial dimension (the tensors' DimensionCount - 2).
POOLING = ("MAX_POOLING_GRAD", "AVERAGE_POOLING_GRAD")


@dataclass(frozen=True)
class Variant:
    """One way of breaking a constraint: a label for the case id, the field refused, the changed description."""

    label: str
    refuses: str
    dtypes: dict[str, DataType]
    shapes: dict[str, tuple[int, ...]]
    params: dict[str, Any]


def _start(op: Operator) -> Variant:
    base = BASES[op.name]
    return Variant("", "", {name: base.dtype for name in op.tensors}, dict(base.shapes), dict(base.params))


def _with_rank(op: Operator, variant: Variant, rank: int) -> Variant:
    """Every tensor all ones at `rank` dimensions, the dimension arrays resized to match."""
    shapes = {name: (1,) * rank for name in op.tensors}
    params = dict(variant.params)
    pool = op.name in POOLING
    spatial = rank - 2 if pool else rank
    for name in op.dimension_arrays:
        params[name] = [params[name][0]] * spatial if spatial > 0 else params[name]
    if op.name == "SLICE_GRAD":
        params |= {"InputWindowOffsets": [0] * rank, "InputWindowSizes": [1] * rank, "InputWindowStrides": [1] * rank}
    if pool and spatial > 0:
        params |= {"Strides": [1] * spatial, "WindowSize": [1] * spatial}
    if op.name in ("RESAMPLE_GRAD1", "RESAMPLE_GRAD"):
        params |= {"Scales": [1.0] * rank}
    return replace(variant, shapes=shapes, params=params)


def unsupported_data_type(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for dtype in sorted(set(DataType) - op.support.all_dtypes, key=lambda d: d.value):
        params = dict(start.params)
        if "Min" in params and not dtype.is_float:
            params |= {"Min": 0, "Max": 1}
        yield replace(start, label=dtype.name.lower(), refuses=f"{op.tensors[0]}.DataType",
                      dtypes={name: dtype for name in op.tensors}, params=params)


def rank_outside(op: Operator) -> Iterator[Variant]:
    low, high = op.support.rank_range
    ranks = [high + 1]
    if low > 1 or not op.dimension_arrays:
        ranks.insert(0, low - 1)
    for rank in ranks:
        if rank < 0 or (rank == 0 and op.dimension_arrays):
            continue
        yield replace(_with_rank(op, _start(op), rank), label=f"rank{rank}", refuses=f"{op.tensors[0]}.DimensionCount")


def mixed_data_types(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    other = DataType.FLOAT16
    for name in op.tensors[1:]:
        yield replace(start, label=name, refuses=f"{name}.DataType", dtypes={**start.dtypes, name: other})


def mixed_ranks(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for name in op.tensors[1:]:
        shape = start.shapes[name]
        changed = (*shape[:-1], 1, shape[-1]) if op.name in POOLING and len(shape) == 4 else (1, *shape)
        yield replace(start, label=name, refuses=f"{name}.DimensionCount", shapes={**start.shapes, name: changed})


def mixed_sizes(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for name in op.same_sizes[1:]:
        shape = start.shapes[name]
        yield replace(start, label=name, refuses=f"{name}.Sizes", shapes={**start.shapes, name: (*shape[:-1],
                                                                                               shape[-1] + 1)})


def zero_size(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    name = op.tensors[0]
    shape = start.shapes[name]
    yield replace(start, label=name, refuses=f"{name}.Sizes", shapes={**start.shapes, name: (*shape[:-1], 0)})


def dimension_arrays(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for name in op.dimension_arrays[1:]:
        yield replace(start, label=f"{name}-longer", refuses=name,
                      params={**start.params, name: [*start.params[name], start.params[name][-1]]})
    longer = {name: [*start.params[name], start.params[name][-1]] for name in op.dimension_arrays}
    yield replace(start, label="all-longer", refuses="DimensionCount", params={**start.params, **longer})
    count = len(start.params[op.dimension_arrays[0]])
    yield replace(start, label="explicit-count", refuses="DimensionCount",
                  params={**start.params, "DimensionCount": count + 1})


def min_max_data_type(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    yield replace(start, label="float16", refuses="MinMaxDataType",
                  params={**start.params, "MinMaxDataType": "FLOAT16"})


def per_axis(field: str, bad: object) -> Callable[[Operator], Iterator[Variant]]:
    """The parameter `field` set to `bad` on one axis at a time."""
    def variants(op: Operator) -> Iterator[Variant]:
        start = _start(op)
        for axis in range(len(start.params[field])):
            values = list(start.params[field])
            values[axis] = bad
            yield replace(start, label=f"axis{axis}", refuses=f"{field}[{axis}]",
                          params={**start.params, field: values})
    return variants


def resample_coordinate_nan(op: Operator) -> Iterator[Variant]:
    """Scale and OutputPixelOffset both infinite on one axis: x = (o − inf)/inf is NaN. (Either alone is valid:
    the pages do not exclude infinities, and the coordinate clamps to an edge.)"""
    start = _start(op)
    for axis in range(len(start.params["Scales"])):
        scales, offsets = list(start.params["Scales"]), list(start.params["OutputPixelOffsets"])
        scales[axis], offsets[axis] = float("inf"), float("inf")
        yield replace(start, label=f"axis{axis}", refuses=f"Scales[{axis}]",
                      params={**start.params, "Scales": scales, "OutputPixelOffsets": offsets})


def slice_window_past_end(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for axis in range(2):
        offsets = list(start.params["InputWindowOffsets"])
        offsets[axis] = 1
        yield replace(start, label=f"axis{axis}", refuses=f"InputWindowOffsets[{axis}]",
                      params={**start.params, "InputWindowOffsets": offsets})


def slice_gradient_too_large(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for axis in range(2):
        shape = list(start.shapes["InputGradientTensor"])
        shape[axis] += 1
        yield replace(start, label=f"axis{axis}", refuses=f"InputGradientTensor.Sizes[{axis}]",
                      shapes={**start.shapes, "InputGradientTensor": tuple(shape)})


def pool_batch_or_channels(op: Operator) -> Iterator[Variant]:
    start = _start(op)
    for axis, label in ((0, "batch"), (1, "channels")):
        shape = list(start.shapes["InputGradientTensor"])
        shape[axis] = 2
        yield replace(start, label=label, refuses=f"InputGradientTensor.Sizes[{axis}]",
                      shapes={**start.shapes, "InputGradientTensor": tuple(shape)})


CONSTRAINTS: dict[str, Callable[[Operator], Iterator[Variant]]] = {
    "unsupported-data-type": unsupported_data_type,
    "rank-outside-table": rank_outside,
    "mixed-data-types": mixed_data_types,
    "mixed-ranks": mixed_ranks,
    "mixed-sizes": mixed_sizes,
    "zero-size": zero_size,
    "dimension-arrays": dimension_arrays,
    "min-max-data-type": min_max_data_type,
    "stride-zero": per_axis("InputWindowStrides", 0),
    "window-size-zero": per_axis("InputWindowSizes", 0),
    "window-past-end": slice_window_past_end,
    "gradient-beyond-window": slice_gradient_too_large,
    "pool-stride-zero": per_axis("Strides", 0),
    "pool-window-zero": per_axis("WindowSize", 0),
    "pool-dilation-zero": per_axis("Dilations", 0),
    "batch-or-channels-differ": pool_batch_or_channels,
    "scale-zero": per_axis("Scales", 0.0),
    "scale-negative": per_axis("Scales", -2.0),
    "scale-nan": per_axis("Scales", float("nan")),
    "coordinate-nan": resample_coordinate_nan,
    "output-offset-nan": per_axis("OutputPixelOffsets", float("nan")),
    "input-offset-nan": per_axis("InputPixelOffsets", float("nan")),
}


def _spec(op: Operator, case_id: str, variant: Variant, tags: tuple[str, ...]) -> CaseSpec:
    inputs = {}
    for number, name in enumerate(op.inputs):
        inputs[name] = generated(variant.dtypes[name], variant.shapes[name],
                                 {"dist": "iota", "start": 1 + 10 * number})
    output = op.outputs[0]
    params = dict(variant.params)
    if "Min" in params and not variant.dtypes[output].is_float:
        params |= {"Min": int(params["Min"]), "Max": int(params["Max"])}
    return CaseSpec(case_id, op.name, params, inputs, described(variant.dtypes[output], variant.shapes[output]),
                    tags=tags, refuses=variant.refuses)


def negative(family: Family, tier: Tier) -> Iterator[Plan]:
    """Every listed constraint, broken in each of its ways (one case per way)."""
    names = family.setting("constraints", list)
    for name in names:
        if name not in CONSTRAINTS:
            raise family.error("constraints", f"{name!r} is not one of {', '.join(CONSTRAINTS)}")
        for variant in CONSTRAINTS[name](family.op):
            case_id = f"{family.name}-{name}" + (f"-{variant.label}" if variant.label else "")

            def make(draw: Draw, variant=variant, case_id=case_id) -> CaseSpec:
                return _spec(family.op, case_id, variant, ("generated", family.name, "invalid"))

            yield Plan(case_id, (), make)


KINDS = {"negative": negative}
