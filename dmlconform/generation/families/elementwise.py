"""Families of the element-wise select gradients, ReluGrad and ClipGrad1: dX = keep(X) ? dY : 0.

X is drawn so that every comparison the operator makes is exercised at its edge: ReluGrad's X holds ±0,
the smallest normals, ±inf and the type's extremes beside ordinary values of both signs; ClipGrad1's X
holds Min and Max themselves, their neighbours one step either side, values strictly between and outside,
and the type's extremes (for 64-bit integers these lie far beyond 2^53, where a comparison made through a
double goes wrong).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw, shape_for
from dmlconform.generation.families.common import (
    Cell,
    Plan,
    cell_plans,
    cells,
    generated,
    gradient_spec,
    python_scalar,
    tensor,
)
from dmlconform.generation.families.pairs import class_values, pairwise_plans
from dmlconform.generation.freeze import is_fp32_denormal
from dmlconform.generation.spec import FLUSHED, GRADIENT_FLUSHED, INPUT_FLUSHED, CaseSpec, TensorSpec
from dmlconform.generation.values import distinct_nonzero, gradients, next_toward, pick, specials, unique_sorted
from dmlconform.interactions.elementwise import RELATIONS
from dmlconform.interactions.value_classes import classes_of
from dmlconform.ops.base import Operator
from dmlconform.suite.tiers import Tier

RELU = "ACTIVATION_RELU_GRAD"
NAN_BEHAVIOUR = {RELU: "relu-nan-input", "ELEMENT_WISE_CLIP_GRAD1": "clip-nan-input"}


def _zeros(dtype: DataType) -> list[np.generic]:
    t = dtype.numpy.type
    return [t(0), t(-0.0)] if dtype.is_float else [t(0)]


def relu_x(dtype: DataType, count: int, draw: Draw) -> np.ndarray:
    """X for ReluGrad: a third of the elements at an edge (±0, ±1, ±tiny, ±inf, extremes), the rest distinct."""
    t = dtype.numpy.type
    edges = np.array([*_zeros(dtype), t(1), *specials(dtype, with_nan=False)]
                     + ([t(-1)] if dtype.is_signed else []), dtype=dtype.numpy)
    values = distinct_nonzero(dtype, count, draw, exponents=(-8, 8))
    at_edge = draw.indices(count, 3) == 0
    values[at_edge] = pick(edges, int(at_edge.sum()), draw)
    return values


def clip_bounds(dtype: DataType, draw: Draw) -> tuple[np.generic, np.generic]:
    """Min < Max with room between them: ordinary values, or one bound at the type's edge or at zero."""
    t = dtype.numpy.type
    style = draw.below(6)
    if dtype.is_float:
        low, high = sorted(distinct_nonzero(dtype, 2, draw, exponents=(-3, 3)).tolist())
        low, high = t(low), t(high)
        if style == 1:
            low = t(-0.0) if high > 0 else low
        elif style == 2:
            high = t(np.finfo(dtype.numpy).max)
        elif style == 3:
            low = t(-np.finfo(dtype.numpy).max)
        return low, high
    info = np.iinfo(dtype.numpy)
    low_limit, high_limit = int(info.min), int(info.max)
    if style == 1:
        return t(low_limit), t(draw.between(low_limit + 2, high_limit))
    if style == 2:
        return t(draw.between(low_limit, high_limit - 2)), t(high_limit)
    if style == 3:  # one value strictly inside
        low = draw.between(low_limit, high_limit - 2)
        return t(low), t(low + 2)
    a, b = sorted(int(v) for v in distinct_nonzero(dtype, 2, draw))
    if b - a < 2:
        a, b = (a, a + 2) if a + 2 <= high_limit else (a - 2, a)
    return t(a), t(b)


def clip_x(dtype: DataType, count: int, draw: Draw, low: np.generic, high: np.generic) -> np.ndarray:
    """X for ClipGrad1: half the elements at or next to a bound or an edge of the type, a quarter strictly
    between the bounds, a quarter anywhere."""
    t = dtype.numpy.type
    edges = [low, high, next_toward(low, -np.inf), next_toward(low, np.inf), next_toward(high, -np.inf),
             next_toward(high, np.inf), *_zeros(dtype), *specials(dtype, with_nan=False)]
    edge_pool = unique_sorted(np.array(edges, dtype=dtype.numpy))
    if dtype.is_float:
        span = draw.unit(count)
        with np.errstate(over="ignore", invalid="ignore"):
            between = (np.float64(low) + (np.float64(high) - np.float64(low)) * span).astype(dtype.numpy)
    else:
        between = np.array([t(draw.between(int(low) + 1, int(high) - 1)) for _ in range(count)], dtype=dtype.numpy)
    between = np.where((between > low) & (between < high), between, next_toward(low, np.inf))
    anywhere = distinct_nonzero(dtype, count, draw, exponents=(-8, 8))
    role = draw.indices(count, 4)
    values = np.where(role == 0, between, anywhere)
    values[role >= 2] = pick(edge_pool, int((role >= 2).sum()), draw)
    return values


def _x_for(op: Operator, dtype: DataType, count: int, draw: Draw) -> tuple[np.ndarray, dict]:
    if op.name == RELU:
        return relu_x(dtype, count, draw), {}
    low, high = clip_bounds(dtype, draw)
    return clip_x(dtype, count, draw, low, high), {"Min": python_scalar(low), "Max": python_scalar(high)}


def _case(family: Family, case_id: str, x: np.ndarray, dy: np.ndarray, params: dict, tags: tuple[str, ...],
          candidates: dict[str, str] | None = None, behaviour: str | None = None) -> CaseSpec:
    inputs = {"InputTensor": tensor(x), "InputGradientTensor": tensor(dy)}
    return CaseSpec(case_id, family.op.name, params, inputs, TensorSpec(tensor(dy).dtype, dy.shape),
                    tags=("generated", family.name, *tags), candidates=candidates or {}, behaviour=behaviour)


def select_cells(family: Family, tier: Tier) -> Iterator[Plan]:
    """Per (data type, rank) cell of the table: edge-heavy X, distinct gradients with the type's specials."""
    elements = family.per_tier("elements", tier)

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        shape = shape_for(draw, cell.rank, elements)
        count = int(np.prod(shape))
        x, params = _x_for(family.op, cell.dtype, count, draw)
        dy = gradients(cell.dtype, count, draw)
        return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ())

    return cell_plans(family, tier, make)


def select_large(family: Family, tier: Tier) -> Iterator[Plan]:
    """Large tensors from `generate:` specs (nothing stored but the expected output), one data type after another."""
    elements = family.per_tier("elements", tier)
    table = cells(family.op)
    for index in family.new_in(tier):
        cell = table[(index * 7) % len(table)]
        case_id = f"{family.name}-{cell.label}-{index}"

        def make(draw: Draw, cell=cell, case_id=case_id) -> CaseSpec:
            dtype = cell.dtype
            shape = shape_for(draw, cell.rank, elements)
            seed = draw.below(2**31)
            params: dict = {}
            if dtype.is_float:
                x_spec = {"dist": "normal", "seed": seed, "std": 2}
                dy_spec = gradient_spec(dtype, seed + 1)
                if family.op.name != RELU:
                    params = {"Min": -1.5, "Max": 2.25}
            else:
                signed = dtype.is_signed
                x_spec = {"dist": "ints", "seed": seed, "low": -50 if signed else 0, "high": 50 if signed else 100}
                dy_spec = gradient_spec(dtype, seed + 1)
                if family.op.name != RELU:
                    params = {"Min": -20, "Max": 30} if signed else {"Min": 20, "Max": 70}
            inputs = {"InputTensor": generated(dtype, shape, x_spec), "InputGradientTensor": generated(dtype, shape,
                                                                                                     dy_spec)}
            return CaseSpec(case_id, family.op.name, params, inputs, TensorSpec(dtype, shape),
                            tags=("generated", family.name, "large"))

        yield Plan(case_id, (index,), make)


def select_nan(family: Family, tier: Tier) -> Iterator[Plan]:
    """NaN in X, which the pages leave open: each reference variant's reading is a candidate."""
    elements = family.per_tier("elements", tier)
    floats = [c for c in cells(family.op) if c.dtype.is_float]
    for index in family.new_in(tier):
        cell = floats[(index * 5) % len(floats)]
        case_id = f"{family.name}-{cell.label}-{index}"

        def make(draw: Draw, cell=cell, case_id=case_id) -> CaseSpec:
            shape = shape_for(draw, cell.rank, max(4, elements))
            count = int(np.prod(shape))
            x, params = _x_for(family.op, cell.dtype, count, draw)
            nan_places = draw.shuffled(range(count))[: max(1, count // 5)]
            x[nan_places] = np.nan
            dy = gradients(cell.dtype, count, draw, with_specials=False)
            return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ("nan", "candidates"),
                         {variant: variant for variant in family.op.variants}, NAN_BEHAVIOUR[family.op.name])

        yield Plan(case_id, (index,), make)


#: What an fp32-denormal case holds, and the behaviour it reports (docs/reference/operators.md; D3D11 lets fp32
#: arithmetic flush denormals, comparisons included, while moves of data must keep them).
DENORMAL_PLACES = ("x", "dy", "both")
DENORMAL_BEHAVIOUR = {"x": "fp32-denormal-input", "dy": "fp32-denormal-gradient",
                      "both": "fp32-denormal-input-and-gradient"}


def _denormals(count: int, draw: Draw) -> tuple[np.ndarray, np.ndarray]:
    """fp32 denormals of both signs, and where a third of `count` elements get them."""
    tiny = np.finfo(np.float32).tiny
    values = (draw.unit(count) * tiny).astype(np.float32)
    values[values == 0] = np.float32(np.finfo(np.float32).smallest_subnormal)
    signs = np.where(draw.indices(count, 2) == 0, np.float32(-1), np.float32(1))
    places = np.array(draw.shuffled(range(count))[: max(1, count // 3)])
    return values * signs, places


def select_denormals(family: Family, tier: Tier) -> Iterator[Plan]:
    """fp32 denormals in X only, in dY only, or in both, so that a flush where X is compared is told apart from a
    flush of the gradient the select moves: `preserved` (the pages' arithmetic), `flushed` (every denormal a zero
    of its sign), and for both, `input-flushed` (X flushed in the comparison, the gradient kept: D3D11's rule for
    an arithmetic compare and a data-moving select, as an H100 does) and `gradient-flushed`."""
    elements = family.per_tier("elements", tier)
    f32 = [c for c in cells(family.op) if c.dtype is DataType.FLOAT32]
    for index in family.new_in(tier):
        cell = f32[(index * 3) % len(f32)]
        where = DENORMAL_PLACES[index % len(DENORMAL_PLACES)]
        case_id = f"{family.name}-{where}-{cell.label}-{index}"

        def make(draw: Draw, cell=cell, where=where, case_id=case_id) -> CaseSpec:
            shape = shape_for(draw, cell.rank, max(4, elements))
            count = int(np.prod(shape))
            x, params = _x_for(family.op, cell.dtype, count, draw)
            dy = gradients(cell.dtype, count, draw, with_specials=False)
            # X's edge values may hold the smallest denormal (the neighbour of a bound at zero): where X is not
            # meant to, the smallest normal of the same sign stands in, on the same side of every bound.
            x = np.where(is_fp32_denormal(x), np.copysign(np.finfo(np.float32).tiny, x), x).astype(np.float32)
            if where in ("x", "both"):
                if family.op.name != RELU:  # a bound at zero, so that flushing moves X across it
                    params = {"Min": 0.0, "Max": float(np.float32(abs(params["Max"]) + 1))}
                values, places = _denormals(count, draw)
                x[places] = values[places]
            if where in ("dy", "both"):
                values, places = _denormals(count, draw)
                dy[places] = values[places]
            candidates = {"preserved": family.op.variants[0], "flushed": FLUSHED}
            if where == "both":
                candidates |= {INPUT_FLUSHED: INPUT_FLUSHED, GRADIENT_FLUSHED: GRADIENT_FLUSHED}
            return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ("denormal", "candidates"),
                         candidates, DENORMAL_BEHAVIOUR[where])

        yield Plan(case_id, (index,), make)


def select_one_element(family: Family, tier: Tier) -> Iterator[Plan]:
    """One element (every dimension 1, rank 1 to 8) in each data type, X on the side that keeps the gradient."""
    dtypes = sorted(family.op.support.all_dtypes, key=lambda d: d.value)
    for index in family.new_in(tier):
        dtype = dtypes[index % len(dtypes)]
        case_id = f"{family.name}-{dtype.name.lower()}-{index}"

        def make(draw: Draw, dtype=dtype, case_id=case_id) -> CaseSpec:
            shape = (1,) * (1 + draw.below(8))
            x, params = _x_for(family.op, dtype, 1, draw)
            dy = gradients(dtype, 1, draw, with_specials=False)
            return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ("one-element",))

        yield Plan(case_id, (index,), make)


KINDS = {"select-cells": select_cells, "select-one-element": select_one_element, "select-large": select_large,
         "select-nan": select_nan, "select-denormals": select_denormals}


#: Classes whose values repeat (each placed at most once in a gradient, which must hold distinct values).
_REPEATING = ("-inf", "-max", "-0", "+0", "+max", "+inf", "nan", "min", "max", "0")
_ZEROS = ("-0", "+0", "0")


def pairs_gradient(dtype: DataType, count: int, draw: Draw, denormals: bool) -> np.ndarray:
    """Distinct gradients whose classes vary: each repeating class (±inf, ±max, ±0, NaN; an integer type's edges and
    0) at most once — a zero only where it stays within the freezer's share — the rest distinct normals and, where
    allowed, denormals of both signs."""
    values = distinct_nonzero(dtype, count, draw, exponents=(-6, 6))
    classes = [name for name in classes_of(dtype) if name in _REPEATING]
    zeros_allowed = count // 100
    chosen = []
    for name in draw.shuffled(classes):
        if name in _ZEROS:
            if zeros_allowed == 0:
                continue
            zeros_allowed -= 1
        chosen.append(name)
    places = draw.shuffled(range(count))
    for place, name in zip(places, chosen, strict=False):
        values[place] = class_values(dtype, name, 1, draw)[0]
    if dtype.is_float and denormals:
        rest = places[len(chosen):]
        steps = draw.shuffled(range(1, 1 + max(len(rest), 64)))
        for place, step in zip(rest[: len(rest) // 4], steps, strict=False):
            sign = -1.0 if draw.chance(1, 2) else 1.0
            values[place] = dtype.numpy.type(sign * step * float(np.finfo(dtype.numpy).smallest_subnormal))
    return values


def _pairs_shape(draw: Draw, family: Family) -> tuple[DataType, tuple[int, ...]]:
    table = cells(family.op)
    dtype = DataType(draw.choice(sorted({cell.dtype_value for cell in table})))
    rank = draw.choice([cell.rank for cell in table if cell.dtype_value == dtype.value])
    return dtype, shape_for(draw, rank, 240)


def relu_pairs_x(dtype: DataType, count: int, draw: Draw, nan: bool, denormals: bool) -> np.ndarray:
    classes = [name for name in classes_of(dtype) if (nan or name != "nan")
               and (denormals or "denormal" not in name)]
    return np.concatenate([class_values(dtype, draw.choice(classes), 1, draw) for _ in range(count)])


def clip_pairs_bounds(dtype: DataType, draw: Draw, at_edge: bool) -> tuple[np.generic, np.generic]:
    t = dtype.numpy.type
    low, high = sorted(distinct_nonzero(dtype, 2, draw, exponents=(-3, 3)).tolist())
    if not dtype.is_float and high - low < 2:
        high = low + 2
    low, high = t(low), t(high)
    if at_edge:
        info = np.finfo(dtype.numpy) if dtype.is_float else np.iinfo(dtype.numpy)
        edge_low = t(-np.inf) if dtype.is_float and draw.chance(1, 2) else t(info.min)
        edge_high = t(np.inf) if dtype.is_float and draw.chance(1, 2) else t(info.max)
        if draw.chance(1, 2):
            low = edge_low
        else:
            high = edge_high
    return low, high


def clip_pairs_x(dtype: DataType, count: int, draw: Draw, low: np.generic, high: np.generic,
                 nan: bool) -> np.ndarray:
    t = dtype.numpy.type
    bottom, top = (t(-np.inf), t(np.inf)) if dtype.is_float else (t(np.iinfo(dtype.numpy).min),
                                                                  t(np.iinfo(dtype.numpy).max))
    relations = [name for name in RELATIONS if (nan or name != "nan") and (dtype.is_float or name != "nan")
                 and not (name == "below" and low == bottom) and not (name == "above" and high == top)]
    values = []
    for _ in range(count):
        relation = draw.choice(relations)
        if relation == "at-min":
            value = low
        elif relation == "at-max":
            value = high
        elif relation == "nan":
            value = t(np.nan)
        elif relation == "below":
            value = next_toward(low, -np.inf) if draw.chance(1, 3) else _beyond(low, -1, draw, dtype)
        elif relation == "above":
            value = next_toward(high, np.inf) if draw.chance(1, 3) else _beyond(high, 1, draw, dtype)
        else:
            value = _inside(low, high, draw, dtype)
        values.append(value)
    return np.array(values, dtype=dtype.numpy)


def _beyond(bound: np.generic, direction: int, draw: Draw, dtype: DataType) -> np.generic:
    t = dtype.numpy.type
    if dtype.is_float:
        if draw.chance(1, 4):
            return t(direction * np.inf)
        with np.errstate(over="ignore"):
            value = t(float(bound) + direction * (abs(float(bound)) + 1) * draw.between(1, 8) / 4)
        return value if np.isfinite(value) else next_toward(bound, direction * np.inf)
    info = np.iinfo(dtype.numpy)
    far = int(info.min) if direction < 0 else int(info.max)
    step = draw.between(1, max(1, min(1000, abs(far - int(bound)))))
    return t(int(bound) + direction * step)


def _inside(low: np.generic, high: np.generic, draw: Draw, dtype: DataType) -> np.generic:
    t = dtype.numpy.type
    if dtype.is_float:
        lo = max(float(low), -float(np.finfo(dtype.numpy).max))
        hi = min(float(high), float(np.finfo(dtype.numpy).max))
        value = t(lo + (hi - lo) * float(draw.unit(1)[0]))
        return value if low < value < high else next_toward(low, np.inf)
    return t(draw.between(int(low) + 1, int(high) - 1))


def pairs_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """A small case whose elements pair X's classes (ClipGrad1: X's place against Min and Max) with the gradient's
    (dmlconform/interactions/elementwise.py). fp32 takes NaN in X or denormals, never both in one case (each needs
    its own candidate answers)."""
    dtype, shape = _pairs_shape(draw, family)
    count = int(np.prod(shape))
    nan = dtype.is_float and draw.chance(1, 2)
    denormals = dtype is not DataType.FLOAT32 or not nan
    fp32_denormals = dtype is DataType.FLOAT32 and denormals
    dy = pairs_gradient(dtype, count, draw, denormals)
    if family.op.name == RELU:
        x = relu_pairs_x(dtype, count, draw, nan, denormals)
        params: dict = {}
    else:
        at_edge = draw.chance(1, 2)
        low, high = clip_pairs_bounds(dtype, draw, at_edge)
        x = clip_pairs_x(dtype, count, draw, low, high, nan)
        if dtype is DataType.FLOAT32:  # X's denormals would move it across a bound at zero: not this family's
            x = np.where(is_fp32_denormal(x), np.copysign(np.finfo(np.float32).tiny, x), x).astype(np.float32)
        params = {"Min": python_scalar(low), "Max": python_scalar(high)}
    tags: tuple[str, ...] = ("pairwise",)
    candidates: dict[str, str] | None = None
    behaviour = None
    if dtype.is_float and bool(np.isnan(x).any()):
        tags += ("nan", "candidates")
        candidates = {variant: variant for variant in family.op.variants}
        behaviour = NAN_BEHAVIOUR[family.op.name]
    elif fp32_denormals:
        in_x, in_dy = bool(is_fp32_denormal(x).any()), bool(is_fp32_denormal(dy).any())
        if in_x or in_dy:
            where = "both" if in_x and in_dy else "x" if in_x else "dy"
            tags += ("denormal", "candidates")
            candidates = {"preserved": family.op.variants[0], "flushed": FLUSHED}
            if where == "both":
                candidates |= {INPUT_FLUSHED: INPUT_FLUSHED, GRADIENT_FLUSHED: GRADIENT_FLUSHED}
            behaviour = DENORMAL_BEHAVIOUR[where]
    return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, tags, candidates, behaviour)


KINDS["select-pairs"] = pairwise_plans(pairs_candidate)
