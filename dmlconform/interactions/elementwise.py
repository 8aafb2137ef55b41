"""ReluGrad's, ClipGrad1's and ClipGrad (v0)'s features: per element, which class X falls in (the clips: where it
lies against the bounds) and which class the gradient it selects is, with the data type, rank and (the clips) the kind
of bounds.

A select `keep(X) ? dY : 0` goes wrong in ways that need both values at one element: a select written as a
multiply by a mask turns an infinite or NaN dY beside a dropped X into NaN; a compare made in another type moves X
across a bound; a flush of denormals in the compare or in the move (D3D allows the first for fp32). So a site is an
element: X's class, dY's class (dmlconform/interactions/value_classes.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.interactions.common import dtype_feature, rank_feature, support_cells
from dmlconform.interactions.model import Feature, OperatorModel, Site
from dmlconform.interactions.value_classes import ALL_CLASSES, class_codes, classes_of

RELU = "ACTIVATION_RELU_GRAD"
CLIP = "ELEMENT_WISE_CLIP_GRAD1"
#: Where X lies against Min < Max (a case with Min >= Max selects nothing but NaN and has no `inside`).
RELATIONS = ("below", "at-min", "inside", "at-max", "above", "nan")
BOUNDS = ("ordinary", "at-type-edge")


def _used_classes(dtypes: list[DataType]) -> tuple[str, ...]:
    used = {name for dtype in dtypes for name in classes_of(dtype)}
    return tuple(name for name in ALL_CLASSES if name in used)


def _pairs(first: np.ndarray, second: np.ndarray) -> list[tuple[int, int]]:
    joined = np.unique(first.ravel().astype(np.uint16) * 64 + second.ravel().astype(np.uint16))
    return [(int(v) // 64, int(v) % 64) for v in joined]


class ReluGradModel(OperatorModel):
    op = RELU

    def __init__(self) -> None:
        classes = _used_classes([dtype for dtype, _ in support_cells(RELU)])
        self.features = (dtype_feature(RELU), rank_feature(RELU),
                         Feature("x", classes, "the class of X at the element"),
                         Feature("dy", classes, "the class of the gradient at the element"))

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        head = (DataType.from_numpy(dy.dtype).name, str(len(output_shape)))
        return {(*head, ALL_CLASSES[a], ALL_CLASSES[b]) for a, b in _pairs(class_codes(x), class_codes(dy))}

    def possible_sites(self) -> Iterator[Site]:
        for dtype, rank in support_cells(RELU):
            for x in classes_of(dtype):
                for dy in classes_of(dtype):
                    yield dtype.name, str(rank), x, dy


def bounds_kind(low: np.generic, high: np.generic) -> str:
    dtype = np.asarray(low).dtype
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    edge = float(low) <= float(info.min) or float(high) >= float(info.max)
    return BOUNDS[1] if edge else BOUNDS[0]


def relation_codes(x: np.ndarray, low: np.generic, high: np.generic) -> np.ndarray:
    out = np.full(x.shape, RELATIONS.index("inside"), dtype=np.uint8)
    out[x < low] = RELATIONS.index("below")
    out[x == low] = RELATIONS.index("at-min")
    out[x == high] = RELATIONS.index("at-max")
    out[x > high] = RELATIONS.index("above")
    if x.dtype.kind == "f":
        out[np.isnan(x)] = RELATIONS.index("nan")
    return out


class ClipGrad1Model(OperatorModel):
    op = CLIP

    def __init__(self) -> None:
        classes = _used_classes([dtype for dtype, _ in support_cells(CLIP)])
        self.features = (dtype_feature(CLIP), rank_feature(CLIP),
                         Feature("bounds", BOUNDS, "Min and Max ordinary, or one at the type's edge (or infinite)"),
                         Feature("x", RELATIONS, "where X lies against Min and Max at the element"),
                         Feature("dy", classes, "the class of the gradient at the element"))

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        low, high = (np.asarray(params[name]).astype(x.dtype)[()] for name in ("Min", "Max"))
        if not low < high:
            return set()  # outside the model: every element is dropped but NaN (hand-written edge cases)
        head = (DataType.from_numpy(dy.dtype).name, str(len(output_shape)), bounds_kind(low, high))
        return {(*head, RELATIONS[a], ALL_CLASSES[b]) for a, b in _pairs(relation_codes(x, low, high),
                                                                        class_codes(dy))}

    def possible_sites(self) -> Iterator[Site]:
        for dtype, rank in support_cells(CLIP):
            relations = RELATIONS if dtype.is_float else RELATIONS[:-1]
            for bounds in BOUNDS:
                for x in relations:
                    for dy in classes_of(dtype):
                        yield dtype.name, str(rank), bounds, x, dy


CLIP_V0 = "ELEMENT_WISE_CLIP_GRAD"
#: How ClipGrad (v0)'s FLOAT bounds sit against the tensors' type, least special first; a case takes the most special
#: of its two bounds. `fractional`: strictly between two values of the type (an integer type, or FLOAT16); `beyond-
#: type`: past the type's finite range (infinite, for an integer type or FLOAT16, which DirectML clamps).
V0_BOUNDS = ("ordinary", "at-type-edge", "fractional", "beyond-type")


def v0_bound_kind(bound: float, dtype: DataType) -> str:
    """Where one FLOAT bound lies against the data type (V0_BOUNDS)."""
    if dtype.is_float:
        top = float(np.finfo(dtype.numpy).max)
        if dtype is DataType.FLOAT32:
            return "at-type-edge" if math.isinf(bound) or abs(bound) == top else "ordinary"
        if math.isinf(bound) or abs(bound) > top:
            return "beyond-type"
        if abs(bound) == top:
            return "at-type-edge"
        return "ordinary" if float(np.float16(bound)) == bound else "fractional"
    info = np.iinfo(dtype.numpy)
    if math.isinf(bound) or not info.min <= bound <= info.max:
        return "beyond-type"
    if bound in (info.min, info.max):
        return "at-type-edge"
    return "ordinary" if float(bound).is_integer() else "fractional"


def v0_bounds_kind(low: float, high: float, dtype: DataType) -> str:
    return max((v0_bound_kind(low, dtype), v0_bound_kind(high, dtype)), key=V0_BOUNDS.index)


def v0_bounds_in_type(low: float, high: float, dtype: DataType) -> tuple[np.generic, np.generic]:
    """Min and Max as X meets them under the reference's default reading (DirectML's): in the tensors' type."""
    from dmlconform.ops.clip_grad import DEFAULT, half_bound, integer_bound

    t = dtype.numpy.type
    if dtype is DataType.FLOAT16:
        return t(half_bound(low, DEFAULT)), t(half_bound(high, DEFAULT))
    if dtype.is_float:
        return t(low), t(high)
    return t(integer_bound(low, dtype, DEFAULT)), t(integer_bound(high, dtype, DEFAULT))


class ClipGradModel(OperatorModel):
    """ClipGrad (v0): ClipGrad1's features, with the kind of FLOAT bounds widened to where they part the readings
    (a fractional bound, one beyond the type), and X's place taken against the bounds as the type holds them (the
    reference's default, DirectML's conversion), so that `at-min` is X on the integer a driver's bound became."""

    op = CLIP_V0

    def __init__(self) -> None:
        classes = _used_classes([dtype for dtype, _ in support_cells(CLIP_V0)])
        self.features = (dtype_feature(CLIP_V0), rank_feature(CLIP_V0),
                         Feature("bounds", V0_BOUNDS, "Min and Max as values of the type, one at its edge (or "
                                 "infinite, FLOAT32), one between two of its values, or one beyond its range"),
                         Feature("x", RELATIONS, "where X lies against Min and Max as the type holds them"),
                         Feature("dy", classes, "the class of the gradient at the element"))

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        dtype = DataType.from_numpy(x.dtype)
        low, high = float(params["Min"]), float(params["Max"])
        if math.isnan(low) or math.isnan(high):
            return set()  # outside the model: a NaN bound (hand-written edge cases and the readings family)
        in_low, in_high = v0_bounds_in_type(low, high, dtype)
        if not in_low < in_high:
            return set()  # every element is dropped but NaN (hand-written edge cases)
        head = (dtype.name, str(len(output_shape)), v0_bounds_kind(low, high, dtype))
        return {(*head, RELATIONS[a], ALL_CLASSES[b]) for a, b in _pairs(relation_codes(x, in_low, in_high),
                                                                        class_codes(dy))}

    def possible_sites(self) -> Iterator[Site]:
        for dtype, rank in support_cells(CLIP_V0):
            relations = RELATIONS if dtype.is_float else RELATIONS[:-1]
            kinds = V0_BOUNDS[:2] if dtype is DataType.FLOAT32 else V0_BOUNDS
            for bounds in kinds:
                for x in relations:
                    for dy in classes_of(dtype):
                        yield dtype.name, str(rank), bounds, x, dy
