"""Families of the element-wise select gradients, ReluGrad and ClipGrad1: dX = keep(X) ? dY : 0.

X is drawn so that every comparison the operator makes is exercised at its edge: ReluGrad's X holds ±0,
the smallest normals, ±inf and the type's extremes beside ordinary values of both signs; ClipGrad1's X
holds Min and Max themselves, their neighbours one step either side, values strictly between and outside,
and the type's extremes (for 64-bit integers these lie far beyond 2^53, where a comparison made through a
double goes wrong).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation import GenerationError
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
from dmlconform.generation.freeze import Rejected, flush_fp32_denormals, is_fp32_denormal
from dmlconform.generation.spec import FLUSHED, GRADIENT_FLUSHED, INPUT_FLUSHED, CaseSpec, TensorSpec
from dmlconform.generation.values import distinct_nonzero, gradients, next_toward, pick, specials, unique_sorted
from dmlconform.interactions.elementwise import RELATIONS
from dmlconform.interactions.value_classes import classes_of
from dmlconform.ops.base import Description, Operator, TensorDesc
from dmlconform.suite.tiers import Tier

RELU = "ACTIVATION_RELU_GRAD"
NAN_BEHAVIOUR = {RELU: "relu-nan-input", "ELEMENT_WISE_CLIP_GRAD1": "clip-nan-input",
                 "ELEMENT_WISE_CLIP_GRAD": "clip-grad-nan-input"}


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


def _x_for(op: Operator, dtype: DataType, count: int, draw: Draw, exact_bounds: bool = False
           ) -> tuple[np.ndarray, dict]:
    """X and the parameters; `exact_bounds`: ClipGrad (v0)'s bounds values of the type (where NaN in X is the
    case's open choice, no reading of the bounds may part)."""
    if op.name == RELU:
        return relu_x(dtype, count, draw), {}
    if op.name == CLIP_V0:
        return v0_x_for(dtype, count, draw, V0_STYLES[:2] if exact_bounds else None)
    low, high = clip_bounds(dtype, draw)
    return clip_x(dtype, count, draw, low, high), {"Min": python_scalar(low), "Max": python_scalar(high)}


def _case(family: Family, case_id: str, x: np.ndarray, dy: np.ndarray, params: dict, tags: tuple[str, ...],
          candidates: dict[str, str] | None = None, behaviour: str | None = None) -> CaseSpec:
    if family.op.name == CLIP_V0 and behaviour not in DENORMAL_BEHAVIOUR.values():
        candidates, behaviour = v0_choice(family.op, x, dy, params)
        tags = tuple(t for t in tags if t != "candidates") + (("candidates",) if candidates else ())
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
            x, params = _x_for(family.op, cell.dtype, count, draw, exact_bounds=True)
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
                if family.op.name == CLIP_V0:  # a bound at zero, so that flushing moves X across it
                    params = {"Min": 0.0, "Max": float_param(abs(float(params["Max"])) + 1)}
                elif family.op.name != RELU:
                    params = {"Min": 0.0, "Max": float(np.float32(abs(params["Max"]) + 1))}
                values, places = _denormals(count, draw)
                x[places] = values[places]
            if where in ("dy", "both"):
                values, places = _denormals(count, draw)
                dy[places] = values[places]
            _check_telling(family.op, x, dy, params, where)
            candidates = {"preserved": family.op.variants[0], "flushed": FLUSHED}
            if where == "both":
                candidates |= {INPUT_FLUSHED: INPUT_FLUSHED, GRADIENT_FLUSHED: GRADIENT_FLUSHED}
            return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ("denormal", "candidates"),
                         candidates, DENORMAL_BEHAVIOUR[where])

        yield Plan(case_id, (index,), make)


def _check_telling(op: Operator, x: np.ndarray, dy: np.ndarray, params: dict, where: str) -> None:
    """Rejects a draw whose candidates would not differ where the case is for: X's denormals need one that the
    select keeps and flushing drops (a positive one, against a bound or ReluGrad's threshold at zero) beside a normal
    gradient; dY's, and both, a denormal gradient where X is kept whether it is flushed or not (what input-flushed,
    D3D11's rule, keeps and flushed drops)."""
    dtype = DataType.from_numpy(x.dtype)
    desc = Description(op, op.parse_params(params, dtype), {name: TensorDesc(dtype, x.shape) for name in op.tensors})
    kept, kept_flushed = (op.keep(values, desc, op.variants[0]) for values in (x, flush_fp32_denormals(x)))
    dy_denormal = is_fp32_denormal(dy)
    if where == "x" and not (kept & ~kept_flushed & ~dy_denormal).any():
        raise Rejected("no X denormal that flushing drops beside a normal gradient")
    if where in ("dy", "both") and not (kept & kept_flushed & dy_denormal).any():
        raise Rejected("no denormal gradient where X is kept, flushed or not")


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
    # What depends on the bounds alone is worked out once a case, not once an element (most of a generation's
    # candidates are ClipGrads': this loop was a tenth of `dmlconform generate`); the draws are taken as before.
    below_next, above_next = next_toward(low, -np.inf), next_toward(high, np.inf)
    beyond_low, beyond_high = _beyond(low, -1, dtype), _beyond(high, 1, dtype)
    inside = _inside(low, high, dtype)
    values = []
    with np.errstate(over="ignore"):
        for _ in range(count):
            relation = draw.choice(relations)
            if relation == "at-min":
                value = low
            elif relation == "at-max":
                value = high
            elif relation == "nan":
                value = t(np.nan)
            elif relation == "below":
                value = below_next if draw.chance(1, 3) else beyond_low(draw)
            elif relation == "above":
                value = above_next if draw.chance(1, 3) else beyond_high(draw)
            else:
                value = inside(draw)
            values.append(value)
    return np.array(values, dtype=dtype.numpy)


def _beyond(bound: np.generic, direction: int, dtype: DataType) -> Callable[[Draw], np.generic]:
    """Draws a value past `bound` (below it for direction -1, above for 1) in the type; call within
    np.errstate(over="ignore") (a float32 step may overflow, and then the neighbour is taken)."""
    t = dtype.numpy.type
    if dtype.is_float:
        infinity, base, fallback = t(direction * np.inf), float(bound), next_toward(bound, direction * np.inf)
        step = direction * (abs(base) + 1)

        def draw_float(draw: Draw) -> np.generic:
            if draw.chance(1, 4):
                return infinity
            value = t(base + step * draw.between(1, 8) / 4)
            return value if np.isfinite(value) else fallback
        return draw_float
    info = np.iinfo(dtype.numpy)
    far = int(info.min) if direction < 0 else int(info.max)
    start, most = int(bound), max(1, min(1000, abs(far - int(bound))))

    def draw_integer(draw: Draw) -> np.generic:
        return t(start + direction * draw.between(1, most))
    return draw_integer


def _inside(low: np.generic, high: np.generic, dtype: DataType) -> Callable[[Draw], np.generic]:
    """Draws a value strictly between the bounds in the type."""
    t = dtype.numpy.type
    if dtype.is_float:
        lo = max(float(low), -float(np.finfo(dtype.numpy).max))
        hi = min(float(high), float(np.finfo(dtype.numpy).max))
        span, fallback = hi - lo, next_toward(low, np.inf)

        def draw_float(draw: Draw) -> np.generic:
            value = t(lo + span * draw.fraction())
            return value if low < value < high else fallback
        return draw_float
    first, last = int(low) + 1, int(high) - 1

    def draw_integer(draw: Draw) -> np.generic:
        return t(draw.between(first, last))
    return draw_integer


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
    elif family.op.name == CLIP_V0:  # NaN in X only beside bounds no reading parts (one open choice a case)
        from dmlconform.interactions.elementwise import v0_bounds_in_type

        low_f, high_f = v0_bounds(dtype, draw, draw.choice(list(v0_styles(dtype)[:4])))
        x = clip_pairs_x(dtype, count, draw, *v0_bounds_in_type(low_f, high_f, dtype), nan)
        if nan:
            x = _only_nan_open(family.op, x, low_f, high_f)
        if dtype is DataType.FLOAT32:
            x = np.where(is_fp32_denormal(x), np.copysign(np.finfo(np.float32).tiny, x), x).astype(np.float32)
        params = {"Min": float_param(low_f), "Max": float_param(high_f)}
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


# -- ClipGrad (v0): FLOAT bounds against every data type -----------------------------------------------------------
CLIP_V0 = "ELEMENT_WISE_CLIP_GRAD"
#: How a ClipGrad (v0) case's bounds are drawn (dmlconform/interactions/elementwise.py's V0_BOUNDS, and `wide`:
#: float32 values far above 2^24, where a 32- or 64-bit X converted to float32 or float64 rounds).
V0_STYLES = ("ordinary", "at-type-edge", "fractional", "beyond-type", "wide")
#: Fractions put beside an integer bound: ties (where rounding half to even and toward zero part), and others.
_FRACTIONS = (0.5, 0.25, 0.75, 0.125, 0.375, 0.625, 0.875, 0.0625)


def float_param(value: float) -> float | str:
    """A FLOAT bound as a suite writes it, exactly: NaN, the infinities and -0.0 by name."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0 and math.copysign(1.0, value) < 0:
        return "-0.0"
    return float(np.float32(value))


def v0_styles(dtype: DataType) -> tuple[str, ...]:
    if dtype is DataType.FLOAT32:
        return V0_STYLES[:2]
    if dtype is DataType.FLOAT16 or dtype.bits < 32:
        return V0_STYLES[:4]
    return V0_STYLES


def _f32(value: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def v0_bounds(dtype: DataType, draw: Draw, style: str) -> tuple[float, float]:
    """Min < Max (as float32 values, and as the type holds them) drawn in one style."""
    for _ in range(64):
        low, high = _v0_bounds(dtype, draw, style)
        from dmlconform.interactions.elementwise import v0_bounds_in_type

        in_low, in_high = v0_bounds_in_type(low, high, dtype)
        if low < high and in_low < in_high and (dtype.is_float or int(in_high) - int(in_low) >= 2):
            return low, high
    raise GenerationError(f"no {style} bounds for {dtype.name} in 64 draws")


def _v0_bounds(dtype: DataType, draw: Draw, style: str) -> tuple[float, float]:
    if dtype.is_float:
        a, b = sorted(float(v) for v in distinct_nonzero(dtype, 2, draw, exponents=(-3, 3)))
        top = float(np.finfo(dtype.numpy).max)
        if style == "at-type-edge":
            edge = math.inf if dtype is DataType.FLOAT32 and draw.chance(1, 2) else top
            return (-edge, b) if draw.chance(1, 2) else (a, edge)
        if style == "fractional":  # strictly between two FLOAT16 values: a tie, or nearer one of them
            ulp = float(np.spacing(np.float16(abs(a))))
            shift = draw.choice([0.5, 0.25, 0.75, 1 / 3, 0.625])
            low = _f32(a + math.copysign(shift * ulp, a))
            ulp_b = float(np.spacing(np.float16(abs(b))))
            high = _f32(b + math.copysign(draw.choice([0.5, 0.25, 0.75]) * ulp_b, b)) if draw.chance(1, 2) else b
            return low, high
        if style == "beyond-type":
            far = draw.choice([65519.0, 65520.0, 65536.0, 70000.0, 1e6, math.inf])
            return (-far, b) if draw.chance(1, 2) else (a, far) if draw.chance(1, 2) else (-far, far)
        return a, b
    info = np.iinfo(dtype.numpy)
    first, last = int(info.min), int(info.max)
    small = (max(first, -(2**20)), min(last, 2**20))
    a, b = sorted(int(v) for v in distinct_nonzero(dtype, 2, draw, int_range=small))
    if style == "at-type-edge":
        if dtype.bits <= 16 and draw.chance(1, 2):
            return float(a), float(last)  # 8- and 16-bit maxima are FLOATs; 32- and 64-bit ones are not
        return float(first), float(b)
    if style == "fractional":
        low = a + math.copysign(draw.choice(_FRACTIONS), draw.choice([-1, 1]))
        high = b + draw.choice(_FRACTIONS) if draw.chance(2, 3) else float(b)
        return _f32(low), _f32(high)
    if style == "beyond-type":
        below = draw.choice([first - 0.5, first - 1.0, first - 300.0, first * 2.0 - 1e3, -1e30, -math.inf])
        above = draw.choice([last + 1.0, last + 300.0, last * 2.0 + 1e3, 1e30, math.inf])
        pick = draw.below(3)
        return (_f32(below), float(b)) if pick == 0 else (float(a), _f32(above)) if pick == 1 else (
            _f32(below), _f32(above))
    if style == "wide":  # float32 values whose neighbourhood a float32 (or, 64-bit, a float64) X rounds in
        exponent = draw.between(25, dtype.bits - (2 if dtype.is_signed else 1))
        if dtype.bits == 64 and draw.chance(1, 2):
            exponent = draw.between(54, 62)
        big = float(2**exponent + draw.between(1, 2**23 - 1) * 2 ** (exponent - 23))
        big = big if big <= last else float(2**exponent)
        if dtype.is_signed and draw.chance(1, 3):
            return -big, float(b)
        return (float(a), big) if draw.chance(1, 2) else (_f32(big - 2 ** (exponent - 23) * draw.between(2, 64)), big)
    return float(a), float(b)


def v0_x(dtype: DataType, count: int, draw: Draw, low: float, high: float) -> np.ndarray:
    """X for ClipGrad (v0): half the elements where the readings of the bounds part (the integers or FLOAT16 values
    around each bound, what each conversion makes of it, their neighbours, the type's edges), a quarter strictly
    between the bounds as the type holds them, a quarter anywhere."""
    from dmlconform.interactions.elementwise import v0_bounds_in_type

    t = dtype.numpy.type
    in_low, in_high = v0_bounds_in_type(low, high, dtype)
    edges: list[np.generic] = [*_zeros(dtype), *specials(dtype, with_nan=False)]
    for bound, held in ((low, in_low), (high, in_high)):
        edges += [held, next_toward(held, -np.inf), next_toward(held, np.inf)]
        edges += _around(dtype, bound)
    edge_pool = unique_sorted(np.array(edges, dtype=dtype.numpy))
    if dtype.is_float:
        span = draw.unit(count)
        top = float(np.finfo(dtype.numpy).max)
        lo, hi = max(float(in_low), -top), min(float(in_high), top)
        with np.errstate(over="ignore", invalid="ignore"):
            between = (np.float64(lo) + (np.float64(hi) - np.float64(lo)) * span).astype(dtype.numpy)
    else:
        between = np.array([t(draw.between(int(in_low) + 1, int(in_high) - 1)) for _ in range(count)],
                           dtype=dtype.numpy)
    between = np.where((between > in_low) & (between < in_high), between, next_toward(in_low, np.inf))
    anywhere = distinct_nonzero(dtype, count, draw, exponents=(-8, 8))
    role = draw.indices(count, 4)
    values = np.where(role == 0, between, anywhere)
    values[role >= 2] = pick(edge_pool, int((role >= 2).sum()), draw)
    return values


def _around(dtype: DataType, bound: float) -> list[np.generic]:
    """The values of the type where the readings of one bound part."""
    t = dtype.numpy.type
    if not math.isfinite(bound) or dtype is DataType.FLOAT32:
        return []
    if dtype is DataType.FLOAT16:
        top = float(np.finfo(np.float16).max)
        if abs(bound) > top:
            return [t(math.copysign(top, bound))]
        with np.errstate(over="ignore"):
            near = np.float16(bound)
        return [near, next_toward(near, -np.inf), next_toward(near, np.inf)]
    info = np.iinfo(dtype.numpy)
    found = set()
    for whole in (math.floor(bound), math.ceil(bound)):
        found.update(whole + step for step in (-1, 0, 1))
    if abs(bound) >= 2**24:  # where a float32 (and, past 2^53, a float64) X lands on the bound or passes it
        for bits in (24, 53):
            half = 2 ** max(0, abs(int(bound)).bit_length() - bits - 1)
            found.update(int(bound) + sign * half + step for sign in (-1, 1) for step in (-1, 0, 1))
    return [t(v) for v in sorted(found) if info.min <= v <= info.max]


def v0_choice(op: Operator, x: np.ndarray, dy: np.ndarray, params: dict) -> tuple[dict[str, str], str | None]:
    """A ClipGrad (v0) case's candidates: none where every reading gives the same answer; else the open choice whose
    candidates give every answer some reading gives (dmlconform/ops/clip_grad.py). A draw where two choices are open
    at once is a builder's mistake: each family keeps them apart."""
    from dmlconform.ops.base import Description, TensorDesc
    from dmlconform.ops.clip_grad import CANDIDATES, FLOAT_NAN_BOUND, INTEGER_NAN_BOUND, behaviours

    dtype = DataType.from_numpy(x.dtype)
    desc = Description(op, op.parse_params(params, dtype), {name: TensorDesc(dtype, x.shape) for name in op.tensors})
    inputs = {"InputTensor": x, "InputGradientTensor": dy}
    answers = {variant: op.reference(desc, inputs, variant).outputs["OutputGradientTensor"]
               for variant in op.variants}

    def same(a: np.ndarray, b: np.ndarray) -> bool:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))

    if all(same(answers[op.variants[0]], answer) for answer in answers.values()):
        return {}, None
    first = (FLOAT_NAN_BOUND, INTEGER_NAN_BOUND)
    for behaviour in sorted(behaviours(desc), key=lambda b: b not in first):
        candidates = CANDIDATES[behaviour]
        given = [answers[variant] for variant in candidates.values()]
        if all(any(same(answer, g) for g in given) for answer in answers.values()):
            return dict(candidates), behaviour
    raise GenerationError(f"ClipGrad (v0) draw with Min {params['Min']}, Max {params['Max']} leaves several "
                          "choices open at once")


def _only_nan_open(op: Operator, x: np.ndarray, low: float, high: float) -> np.ndarray:
    """X with NaNs, where the readings of the bounds part nowhere: each element they would part (FLOAT16 beside a
    bound it cannot hold) moved to the middle of the bounds, which every reading keeps, so that NaN in X is the
    case's one open choice."""
    from dmlconform.interactions.elementwise import v0_bounds_in_type
    from dmlconform.ops.clip_grad import VARIANTS, compare

    masks = []
    for reading in VARIANTS.values():
        if reading.nan == VARIANTS[op.variants[0]].nan:
            c = compare(x, low, high, reading)
            masks.append(c.above_min & c.below_max)
    parted = np.any([mask != masks[0] for mask in masks[1:]], axis=0) & ~np.isnan(x)
    if parted.any():
        in_low, in_high = (float(v) for v in v0_bounds_in_type(low, high, DataType.from_numpy(x.dtype)))
        top = float(np.finfo(x.dtype).max)
        x = x.copy()
        x[parted] = x.dtype.type((max(in_low, -top) + min(in_high, top)) / 2)
    return x


def v0_x_for(dtype: DataType, count: int, draw: Draw, styles: tuple[str, ...] | None = None
             ) -> tuple[np.ndarray, dict]:
    style = draw.choice(list(styles or v0_styles(dtype)))
    low, high = v0_bounds(dtype, draw, style)
    return v0_x(dtype, count, draw, low, high), {"Min": float_param(low), "Max": float_param(high)}


#: The readings family's cases, in the order the tiers take them: first one that parts each reading from the
#: default (the smoke tier's share), then every other (data type, style) where readings part. (A NaN bound leaves an
#: all-zero candidate, `Min < X < Max` with NaN, which the freezer refuses: those are hand-written, edge.yaml.)
_V0_FIRST = ((DataType.INT32, "fractional"), (DataType.FLOAT16, "fractional"), (DataType.INT64, "wide"),
             (DataType.UINT8, "beyond-type"), (DataType.FLOAT16, "beyond-type"), (DataType.UINT32, "wide"))
V0_READINGS: tuple[tuple[DataType, str], ...] = _V0_FIRST + tuple(
    (dtype, style) for dtype in (DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT64,
                                 DataType.UINT32, DataType.UINT16, DataType.UINT8, DataType.FLOAT16)
    for style in ("fractional", "beyond-type", "wide")
    if (style != "wide" or (not dtype.is_float and dtype.bits >= 32)) and (dtype, style) not in _V0_FIRST)


def clip_grad_readings(family: Family, tier: Tier) -> Iterator[Plan]:
    """Cases whose FLOAT bounds part the readings of ClipGrad (v0) (dmlconform/ops/clip_grad.py): fractional bounds,
    bounds beyond the type, float32 values far above 2^24 (32- and 64-bit X rounds through float32 or float64); each
    a candidate case of the one choice it leaves open."""
    elements = family.per_tier("elements", tier)
    for index in family.new_in(tier):
        if index >= len(V0_READINGS):
            break
        dtype, style = V0_READINGS[index]
        case_id = f"{family.name}-{dtype.name.lower()}-{style}-{index}"

        def make(draw: Draw, dtype=dtype, style=style, case_id=case_id) -> CaseSpec:
            shape = shape_for(draw, 1 + draw.below(4), elements)
            count = int(np.prod(shape))
            dy = gradients(dtype, count, draw, with_specials=False)
            targets = _parted_by(dtype, style)
            for _ in range(64):  # until the draw parts the readings it is for (most draws do at once)
                low, high = v0_bounds(dtype, draw, style)
                x, params = v0_x(dtype, count, draw, low, high), {"Min": float_param(low), "Max": float_param(high)}
                if _parts(family.op, x, dy, params, targets):
                    break
            else:
                raise GenerationError(f"case {case_id}: no draw of 64 parts {', '.join(targets)} from the default")
            return _case(family, case_id, x.reshape(shape), dy.reshape(shape), params, ("readings",))

        yield Plan(case_id, (index,), make)


def _parted_by(dtype: DataType, style: str) -> tuple[str, ...]:
    """The readings a readings case of this style is drawn to part from the default."""
    if dtype is DataType.FLOAT16:
        return ("exact", "bound-half-toward-zero") if style == "fractional" else ("bound-half-overflowing",)
    if style == "wide":
        return ("x-in-float32", "x-in-float64") if dtype.bits == 64 else ("x-in-float32",)
    return ("exact", "bound-rounded", "bound-rounded-away") if style == "fractional" else ("exact",)


def _parts(op: Operator, x: np.ndarray, dy: np.ndarray, params: dict, variants: tuple[str, ...]) -> bool:
    from dmlconform.ops.base import Description, TensorDesc

    dtype = DataType.from_numpy(x.dtype)
    desc = Description(op, op.parse_params(params, dtype), {name: TensorDesc(dtype, x.shape) for name in op.tensors})
    keep = {v: op.keep(x, desc, v) for v in (op.variants[0], *variants)}
    return all(not np.array_equal(keep[v], keep[op.variants[0]]) for v in variants)


KINDS["clip-grad-readings"] = clip_grad_readings
